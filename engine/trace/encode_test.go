package trace

import (
	"bytes"
	"encoding/json"
	"testing"

	"pgregory.net/rapid"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/row"
)

// rowTexts are raw rows as a record may carry them: compact, spaced,
// escaped, HTML characters (encoding/json must not escape them here),
// U+2028 (which it always escapes), empty and invalid.
var rowTexts = []string{
	`{"id":"a","ts":1}`,
	`{"id" : "a b", "ts": [1, 2]}`,
	`{"s":"<&>"}`,
	"{\"s\":\"\u2028\"}",
	`{"s":"\u00e9\n"}`,
	`{"n":1e400,"m":-0}`,
	`[]`, `1`, `"x"`, `null`,
	"",
	`{"a":`,
	`{"a":1} {}`,
	`{"s":"\ud800"}`,
}

// encodeWant is what json.Encoder (SetEscapeHTML false) writes: the
// Encoder's reference.
func encodeWant(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return b.Bytes(), err
}

// The Encoder writes json.Encoder's bytes for any record and table, and
// refuses what it refuses.
func TestEncoderIsJSONEncoder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var rows []json.RawMessage
		if rapid.Bool().Draw(t, "rows set") {
			rows = []json.RawMessage{}
			for range rapid.IntRange(0, 5).Draw(t, "rows") {
				if rapid.IntRange(0, 9).Draw(t, "nil row") == 0 {
					rows = append(rows, nil)
					continue
				}
				rows = append(rows, json.RawMessage(rapid.SampledFrom(rowTexts).Draw(t, "row")))
			}
		}
		name := rapid.String().Draw(t, "name")
		rate := rapid.Float64().Draw(t, "rate")
		rec := Record{
			BatchID: rapid.Int64().Draw(t, "batch"),
			Replay:  rapid.Bool().Draw(t, "replay"),
			Crashed: rapid.SampledFrom([]string{"", "after-commit", "<x>\u2028\"", "\xff"}).Draw(t, "crashed"),
			Rows:    rows,
			Progress: engine.Progress{
				ID: rapid.String().Draw(t, "id"), Name: &name, BatchID: 3, ProcessedRowsPerSecond: &rate,
				DurationMs: map[string]int64{"b": 1, "a": 2},
				Sources:    []engine.SourceProgress{{Description: "<m>", StartOffset: json.RawMessage(`{"a" : 1}`)}},
			},
		}
		var got bytes.Buffer
		enc := NewEncoder(&got)
		err := enc.Record(&rec)
		want, werr := encodeWant(&rec)
		if (err != nil) != (werr != nil) {
			t.Fatalf("record: error %v, json.Encoder %v", err, werr)
		}
		if err == nil && !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("record:\n got %s\nwant %s", got.Bytes(), want)
		}
		// Rows promised compact (Options.RowsCompact) are copied
		// unscanned, to the same bytes.
		compact := true
		for _, r := range rows {
			compact = compact && (r == nil || row.ValidCompact(r))
		}
		if compact && werr == nil {
			got.Reset()
			rec.rowsCompact = true
			if err := enc.Record(&rec); err != nil || !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("record with rowsCompact: error %v\n got %s\nwant %s", err, got.Bytes(), want)
			}
		}
		got.Reset()
		err = enc.Table(rows)
		want, werr = encodeWant(struct {
			Table []json.RawMessage `json:"table"`
		}{rows})
		if (err != nil) != (werr != nil) {
			t.Fatalf("table: error %v, json.Encoder %v", err, werr)
		}
		if err == nil && !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("table:\n got %s\nwant %s", got.Bytes(), want)
		}
	})
}

package steps

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
)

// render writes steps back as STEPS.jsonl, one line per step.
func render(steps []Step, q *query.Query) []byte {
	var b bytes.Buffer
	for _, st := range steps {
		switch st.Kind {
		case RestartStep:
			b.WriteString(`{"restart": true}`)
		case TickStep:
			b.WriteString(`{"tick": true}`)
		case CrashStep:
			if st.CrashBatch >= 0 {
				fmt.Fprintf(&b, `{"crash": %q, "batch": %d}`, st.Crash, st.CrashBatch)
			} else {
				b.WriteString(`{"crash": "` + string(st.Crash) + `"}`)
			}
		case RowsStep:
			b.WriteString(`{"sources": {`)
			first := true
			for _, name := range q.SourceNames() { // query order: deterministic
				rows, ok := st.Rows[name]
				if !ok {
					continue
				}
				if !first {
					b.WriteByte(',')
				}
				first = false
				n, _ := json.Marshal(name)
				b.Write(n)
				b.WriteString(": [")
				for i, r := range rows {
					if i > 0 {
						b.WriteByte(',')
					}
					b.Write(r.Data)
				}
				b.WriteByte(']')
			}
			b.WriteString("}")
			if st.Once {
				b.WriteString(`, "once": true`)
			}
			b.WriteString("}")
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func FuzzParseSteps(f *testing.F) {
	queries := []*query.Query{
		mustQuery(f, singleQuery),
		mustQuery(f, multiQuery),
		mustQuery(f, allColQuery),
		mustQuery(f, "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 5s}\n"),
	}
	seeds := []string{
		`{"rows": [{"value":10,"event_time":10},{"value":10,"event_time":10}]}` + "\n" + `{"restart": true}`,
		`{"sources": {"web": [{"id":1,"ts":"2024-01-01T00:00:00Z"}], "mobile": []}}`,
		"# comment\n\n{\"crash\": \"after-commit\"}\r\n",
		`{"rows": [{"a":1,"b":[1,{"c":null}]}]}` + "\n" + `{"rows": [{"b":2,"a":"x"}]}`,
		`{"rows": [{"id":"x","ts":1.5}]}`,
		`{"rows": null}`,
		`{"rows": [], "rows": []}`,
	}
	for _, s := range seeds {
		for m := range uint8(len(queries)) {
			f.Add([]byte(s), m)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		q := queries[int(mode)%len(queries)]
		steps, err := Parse("fuzz.jsonl", data, q)
		if err != nil {
			var se *query.Error
			if !errors.As(err, &se) || se.Line < 1 {
				t.Fatalf("error %T %v lacks a line", err, err)
			}
			return
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		prev := 0
		dec := row.NewDecoder(q.Keys, q.EventTimeColumn())
		for _, st := range steps {
			if st.Line <= prev || st.Line > lines {
				t.Fatalf("line %d after %d (file has %d)", st.Line, prev, lines)
			}
			prev = st.Line
			switch st.Kind {
			case RestartStep:
			case CrashStep:
				if crashpoint.Index(st.Crash) < 0 {
					t.Fatalf("crash point %q", st.Crash)
				}
			case RowsStep:
				if st.Rows == nil {
					t.Fatal("rows step without a map")
				}
				for name, rows := range st.Rows {
					if _, ok := q.SourceIndex(name); !ok || rows == nil {
						t.Fatalf("source %q rows %v", name, rows)
					}
					for _, r := range rows {
						var c bytes.Buffer
						if err := json.Compact(&c, r.Data); err != nil || !bytes.Equal(c.Bytes(), r.Data) {
							t.Fatalf("Data not compact JSON: %s", r.Data)
						}
						var again row.Row
						if err := dec.Decode(r.Data, &again); err != nil || !bytes.Equal(again.Key, r.Key) || again.EventTime != r.EventTime {
							t.Fatalf("Data %s re-decodes differently: %v", r.Data, err)
						}
					}
				}
			default:
				t.Fatalf("kind %v", st.Kind)
			}
		}
		// Rendering the steps and parsing them again gives the same steps.
		text := render(steps, q)
		again, err := Parse("render.jsonl", text, q)
		if err != nil {
			t.Fatalf("re-parse: %v\n%s", err, text)
		}
		if len(again) != len(steps) {
			t.Fatalf("re-parse: %d steps, want %d", len(again), len(steps))
		}
		for i := range steps {
			a, b := steps[i], again[i]
			if a.Kind != b.Kind || a.Crash != b.Crash || len(a.Rows) != len(b.Rows) {
				t.Fatalf("step %d changed: %+v vs %+v", i, a, b)
			}
			for name, rows := range a.Rows {
				brows := b.Rows[name]
				if len(rows) != len(brows) {
					t.Fatalf("step %d source %q: %d rows, want %d", i, name, len(brows), len(rows))
				}
				for j := range rows {
					if !bytes.Equal(rows[j].Data, brows[j].Data) || !bytes.Equal(rows[j].Key, brows[j].Key) {
						t.Fatalf("step %d row %d changed", i, j)
					}
				}
			}
		}
	})
}

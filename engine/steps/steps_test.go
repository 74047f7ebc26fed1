package steps

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
)

func mustQuery(t testing.TB, yaml string) *query.Query {
	t.Helper()
	q, err := query.Parse("query.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

const (
	singleQuery = "dedup: {api: dropDuplicates, keys: [value, event_time]}\nwatermark: {column: event_time, delay: 10 seconds}\n"
	multiQuery  = "sources:\n  - name: web\n    watermark: {column: ts, delay: 10 seconds}\n  - name: mobile\n    watermark: {column: ts, delay: 20 seconds}\ndedup: {api: dropDuplicates, keys: [id]}\n"
	allColQuery = "dedup: {api: dropDuplicates}\n"
)

func TestParseWorkedExample(t *testing.T) {
	q := mustQuery(t, singleQuery)
	input := `{"rows": [{"value":10,"event_time":10},{"value":10,"event_time":10},{"value":11,"event_time":11}]}
{"rows": [{"value":25,"event_time":25}]}

# a comment
   # an indented comment
{"restart": true}
{"crash": "after-sink-write"}
{"rows": [{"value":10, "event_time":10}]}` // no final newline
	steps, err := Parse("steps.jsonl", []byte(input), q)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 5 {
		t.Fatalf("got %d steps, want 5", len(steps))
	}
	wantKinds := []Kind{RowsStep, RowsStep, RestartStep, CrashStep, RowsStep}
	wantLines := []int{1, 2, 6, 7, 8}
	for i, st := range steps {
		if st.Kind != wantKinds[i] || st.Line != wantLines[i] {
			t.Errorf("step %d: kind %v line %d, want %v line %d", i, st.Kind, st.Line, wantKinds[i], wantLines[i])
		}
	}
	rows := steps[0].Rows["default"]
	if len(rows) != 3 || len(steps[0].Rows) != 1 {
		t.Fatalf("step 0 rows: %+v", steps[0].Rows)
	}
	if !bytes.Equal(rows[0].Key, rows[1].Key) || bytes.Equal(rows[0].Key, rows[2].Key) {
		t.Error("keys of the worked example are wrong")
	}
	if rows[2].EventTime != 11_000_000 {
		t.Errorf("event time %d", rows[2].EventTime)
	}
	if string(rows[0].Data) != `{"value":10,"event_time":10}` {
		t.Errorf("Data %s", rows[0].Data)
	}
	// Data is compacted: insignificant space goes, everything else stays.
	if got := string(steps[4].Rows["default"][0].Data); got != `{"value":10,"event_time":10}` {
		t.Errorf("Data %s, want compacted", got)
	}
	if steps[3].Crash != crashpoint.AfterSinkWrite {
		t.Errorf("crash %q", steps[3].Crash)
	}
	if steps[2].Rows != nil || steps[2].Crash != "" {
		t.Errorf("restart step carries data: %+v", steps[2])
	}
}

func TestParseSources(t *testing.T) {
	q := mustQuery(t, multiQuery)
	input := "{\"sources\": {\"mobile\": [{\"id\":1,\"ts\":\"2024-01-01T00:00:00Z\"}], \"web\": []}}\r\n{\"sources\": {}}\n"
	steps, err := Parse("steps.jsonl", []byte(input), q)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 {
		t.Fatalf("%d steps", len(steps))
	}
	s0 := steps[0]
	if s0.Kind != RowsStep || len(s0.Rows["mobile"]) != 1 {
		t.Errorf("step 0: %+v", s0)
	}
	if web, ok := s0.Rows["web"]; !ok || web == nil || len(web) != 0 {
		t.Errorf("web: named with no rows must be present and empty, got %v %v", web, ok)
	}
	if got := s0.Rows["mobile"][0].EventTime; got != 1704067200_000_000 {
		t.Errorf("event time %d", got)
	}
	if steps[1].Kind != RowsStep || len(steps[1].Rows) != 0 {
		t.Errorf("step 1: %+v", steps[1])
	}
}

func TestParseSingleSourceByName(t *testing.T) {
	q := mustQuery(t, singleQuery)
	steps, err := Parse("s", []byte(`{"sources": {"default": [{"value":1,"event_time":1}]}}`), q)
	if err != nil || len(steps[0].Rows["default"]) != 1 {
		t.Fatalf("%v %+v", err, steps)
	}
	steps, err = Parse("s", []byte(`{"rows": []}`), q)
	if err != nil || steps[0].Rows["default"] == nil || len(steps[0].Rows["default"]) != 0 {
		t.Fatalf("empty rows: %v %+v", err, steps)
	}
}

func TestParseAllColumns(t *testing.T) {
	q := mustQuery(t, allColQuery)
	steps, err := Parse("s", []byte("{\"rows\": [{\"b\":1,\"a\":2}]}\n{\"rows\": [{\"a\":2,\"b\":1}, {\"a\":3,\"b\":1}]}\n"), q)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := steps[0].Rows["default"][0], steps[1].Rows["default"][0], steps[1].Rows["default"][1]
	if !bytes.Equal(a.Key, b.Key) || bytes.Equal(a.Key, c.Key) {
		t.Error("all-columns keys ignore field order or miss a column")
	}
	if len(a.Key) == 0 {
		t.Error("empty key")
	}
}

func TestEmptyAndCommentsOnly(t *testing.T) {
	q := mustQuery(t, singleQuery)
	for _, in := range []string{"", "\n\n", "# only\n  \n\t\n", "\xef\xbb\xbf# bom\n"} {
		steps, err := Parse("s", []byte(in), q)
		if err != nil || len(steps) != 0 {
			t.Errorf("%q: %v %v", in, steps, err)
		}
	}
	steps, err := Parse("s", []byte("\xef\xbb\xbf{\"restart\": true}\n"), q)
	if err != nil || len(steps) != 1 {
		t.Errorf("BOM before the first step: %v %v", steps, err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name  string
		query string
		input string
		want  string
	}{
		{"syntax", singleQuery, "{\"rows\": x}", `steps.jsonl:1: invalid JSON at column 10: invalid character 'x' looking for beginning of value`},
		{"syntax indented", singleQuery, "\n  {\"rows\": x}", `steps.jsonl:2: invalid JSON at column 12: invalid character 'x' looking for beginning of value`},
		{"truncated", singleQuery, `{"rows": [`, `steps.jsonl:1: invalid JSON at column 10: unexpected end of JSON input`},
		{"not an object", singleQuery, `[1]`, `steps.jsonl:1: want a JSON object, got an array (a step is {"rows": [...]}, {"sources": {...}}, {"restart": true} or {"crash": "POINT"})`},
		{"two values", singleQuery, `{"restart": true} {"restart": true}`, `steps.jsonl:1: invalid JSON at column 19: invalid character '{' after top-level value`},
		{"empty object", singleQuery, `{}`, `steps.jsonl:1: empty step: want exactly one of rows, sources, restart, crash, tick`},
		{"unknown field", singleQuery, `{"row": []}`, `steps.jsonl:1: unknown field "row" (want exactly one of rows, sources, restart, crash, tick)`},
		{"two kinds", singleQuery, `{"restart": true, "crash": "after-commit"}`, `steps.jsonl:1: "restart" and "crash" on one line: want exactly one of rows, sources, restart, crash, tick`},
		{"duplicate field", singleQuery, `{"rows": [], "rows": []}`, `steps.jsonl:1: field "rows" given twice (a step is {"rows": [...]}, {"sources": {...}}, {"restart": true} or {"crash": "POINT"})`},
		{"restart false", singleQuery, `{"restart": false}`, `steps.jsonl:1: restart: want true, got false (a restart step is {"restart": true})`},
		{"restart string", singleQuery, `{"restart": "yes"}`, `steps.jsonl:1: restart: want true, got "yes" (a restart step is {"restart": true})`},
		{"crash unknown", singleQuery, `{"crash": "after-sink"}`, `steps.jsonl:1: crash: unknown crash point "after-sink" (want after-offsets-write, after-state-commit, after-sink-write, after-commit)`},
		{"crash not string", singleQuery, `{"crash": 1}`, `steps.jsonl:1: crash: want a crash point string (one of after-offsets-write, after-state-commit, after-sink-write, after-commit), got a number`},
		{"crash batch negative", singleQuery, `{"crash": "after-commit", "batch": -1}`, `steps.jsonl:1: batch: want a batch id (a whole number >= 0), got -1`},
		{"crash batch not number", singleQuery, `{"crash": "after-commit", "batch": "2"}`, `steps.jsonl:1: batch: want a batch id (a whole number >= 0), got "2"`},
		{"once on a restart", singleQuery, `{"restart": true, "once": true}`, `steps.jsonl:1: once: only a rows or sources step takes once ({"rows": [...], "once": true})`},
		{"once false", singleQuery, `{"rows": [], "once": false}`, `steps.jsonl:1: once: want true, got false`},
		{"tick not true", singleQuery, `{"tick": 1}`, `steps.jsonl:1: tick: want true, got 1 (a tick step is {"tick": true})`},
		{"batch without crash", singleQuery, `{"restart": true, "batch": 2}`, `steps.jsonl:1: batch: only a crash step takes a batch id ({"crash": "POINT", "batch": N})`},
		{"rows not array", singleQuery, `{"rows": {"value":1}}`, `steps.jsonl:1: rows: want an array of row objects, got an object`},
		{"rows null", singleQuery, `{"rows": null}`, `steps.jsonl:1: rows: want an array of row objects, got null`},
		{"row not object", singleQuery, `{"rows": [{"value":1,"event_time":1}, 5]}`, `steps.jsonl:1: rows[1]: row is a number, want a JSON object`},
		{"missing key", "dedup: {api: dropDuplicates, keys: [id]}\n", "\n\n" + `{"rows": [{"id":1}, {"value":2}]}`, `steps.jsonl:3: rows[1]: missing key column "id"`},
		{"missing event time", singleQuery, `{"rows": [{"value":1}]}`, `steps.jsonl:1: rows[0]: missing key column "event_time"`},
		{"missing event time not key", "dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 1s}\n", `{"rows": [{"id":1}]}`, `steps.jsonl:1: rows[0]: missing event-time column "ts"`},
		{"bad event time", singleQuery, `{"rows": [{"value":1,"event_time":"soon"}]}`, `steps.jsonl:1: rows[0]: event-time column "event_time": invalid RFC 3339 timestamp "soon": too short (want e.g. 2024-01-02T03:04:05.678Z)`},
		{"bool event time", singleQuery, `{"rows": [{"value":1,"event_time":true}]}`, `steps.jsonl:1: rows[0]: event-time column "event_time": want a number (seconds since the epoch) or an RFC 3339 string, got true`},
		{"duplicate key column", singleQuery, `{"rows": [{"value":1,"value":2,"event_time":1}]}`, `steps.jsonl:1: rows[0]: column "value" appears twice in the row`},
		{"rows with several sources", multiQuery, `{"rows": []}`, `steps.jsonl:1: rows: the query has 2 sources (web, mobile): name them with {"sources": {"web": [...], ...}}`},
		{"unknown source", multiQuery, `{"sources": {"ios": []}}`, `steps.jsonl:1: sources: unknown source "ios" (the query's sources: web, mobile)`},
		{"unknown source single", singleQuery, `{"sources": {"web": []}}`, `steps.jsonl:1: sources: unknown source "web" (the query's sources: default)`},
		{"source twice", multiQuery, `{"sources": {"web": [], "web": []}}`, `steps.jsonl:1: sources: field "web" given twice (want {"SOURCE": [ROW, ...], ...})`},
		{"sources not object", multiQuery, `{"sources": [[]]}`, `steps.jsonl:1: sources: want a JSON object, got an array (want {"SOURCE": [ROW, ...], ...})`},
		{"source rows not array", multiQuery, `{"sources": {"web": {"id":1}}}`, `steps.jsonl:1: sources.web: want an array of row objects, got an object`},
		{"source row error", multiQuery, `{"sources": {"web": [{"id":1,"ts":1}], "mobile": [{"id":2,"ts":2},{"ts":3}]}}`, `steps.jsonl:1: sources.mobile[1]: missing key column "id"`},
		{"schema extra field", allColQuery, "{\"rows\": [{\"a\":1,\"b\":2}]}\n{\"rows\": [{\"a\":1,\"b\":2,\"c\":3}]}", `steps.jsonl:2: rows[0]: field "c" is not in the schema set by the first row (line 1 rows[0]: a, b); with dedup.keys empty every row must have the same fields`},
		{"schema missing field", allColQuery, `{"rows": [{"a":1,"b":2}, {"b":2}]}`, `steps.jsonl:1: rows[1]: missing field "a" of the schema set by the first row (line 1 rows[0]: a, b); with dedup.keys empty every row must have the same fields`},
		{"schema duplicate field", allColQuery, `{"rows": [{"a":1,"a":2}]}`, `steps.jsonl:1: rows[0]: column "a" appears twice in the row`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := mustQuery(t, tc.query)
			steps, err := Parse("steps.jsonl", []byte(tc.input), q)
			if err == nil {
				t.Fatalf("no error (steps %+v), want %q", steps, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n got %s\nwant %s", err, tc.want)
			}
			var se *query.Error
			if !errors.As(err, &se) {
				t.Errorf("error %T is not *query.Error", err)
			}
		})
	}
}

func TestParseNilQuery(t *testing.T) {
	if _, err := Parse("s", []byte(`{"restart": true}`), nil); err == nil {
		t.Error("nil query accepted")
	}
	if _, err := Parse("s", []byte(`{"restart": true}`), &query.Query{}); err == nil {
		t.Error("query without sources accepted")
	}
}

func TestBigLine(t *testing.T) {
	q := mustQuery(t, "dedup: {api: dropDuplicates, keys: [id]}\n")
	var b strings.Builder
	b.WriteString(`{"rows": [`)
	const n = 60_000
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":`)
		b.WriteString(strings.Repeat("1", 1+i%10))
		b.WriteString(`,"pad":"` + strings.Repeat("x", 40) + `"}`)
	}
	b.WriteString("]}\n{\"restart\": true}\n")
	if b.Len() < 3<<20 {
		t.Fatalf("test line too small: %d bytes", b.Len())
	}
	steps, err := Parse("big.jsonl", []byte(b.String()), q)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || len(steps[0].Rows["default"]) != n || steps[1].Line != 2 {
		t.Fatalf("got %d steps", len(steps))
	}
}

func TestParseFile(t *testing.T) {
	q := mustQuery(t, singleQuery)
	dir := t.TempDir()
	path := filepath.Join(dir, "steps.jsonl")
	if err := os.WriteFile(path, []byte("{\"restart\": true}\n{\"crash\": \"nope\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ParseFile(path, q)
	if err == nil || !strings.HasPrefix(err.Error(), path+":2: crash: unknown crash point") {
		t.Errorf("ParseFile error %v", err)
	}
	if _, err := ParseFile(filepath.Join(dir, "missing"), q); err == nil {
		t.Error("missing file accepted")
	}
}

// TestKindNames: every kind has a name. (The crash points a crash step
// names, and their order, are package crashpoint's, tested there.)
func TestKindNames(t *testing.T) {
	for _, k := range []Kind{RowsStep, RestartStep, CrashStep, 0} {
		if k.String() == "" {
			t.Errorf("Kind %d has no name", k)
		}
	}
}

// Rows decoded by the steps parser carry the same keys the query's
// decoder gives the same bytes.
func TestRowsMatchDecoder(t *testing.T) {
	q := mustQuery(t, singleQuery)
	steps, err := Parse("s", []byte(`{"rows": [{"value": 1.0, "event_time": "1970-01-01T00:00:01Z", "extra": [1, 2]}]}`), q)
	if err != nil {
		t.Fatal(err)
	}
	r := steps[0].Rows["default"][0]
	var want row.Row
	if err := row.NewDecoder(q.Keys, q.EventTimeColumn()).Decode([]byte(`{"value":1,"event_time":1,"extra":[1,2]}`), &want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Key, want.Key) || r.EventTime != want.EventTime {
		t.Errorf("key %q / %d, want %q / %d", r.Key, r.EventTime, want.Key, want.EventTime)
	}
}

// TestInferSchema: exec's inference over a steps file sets the schema
// Spark's JSON source infers, leaves a file without fields untyped, and
// refuses a key column no row has.
func TestInferSchema(t *testing.T) {
	for _, c := range []struct{ query, steps, want string }{
		{"dedup: {api: dropDuplicates, keys: [k]}\n", `{"rows": [{"k":"1"},{"k":1,"x":1.5}]}` + "\n" + `{"restart": true}` + "\n", "k STRING, x DOUBLE"},
		{"dedup: {api: dropDuplicatesWithinWatermark, keys: [k]}\nwatermark: {column: t, delay: 5 seconds}\n",
			`{"rows": [{"k":"a","t":1,"v":null},{"k":"b","t":2,"v":null},{"k":"a","t":2.5,"v":3}]}` + "\n" + `{"rows": [{"k":"c","t":9,"v":4},{"k":"d","t":10,"v":"x"}]}` + "\n",
			"k STRING, t DOUBLE, v STRING"},
		{"dedup: {api: dropDuplicates}\n", `{"rows": [{}]}` + "\n", "<nil>"},
		{"dedup: {api: dropDuplicates}\n", "", "<nil>"},
		{"sources:\n  - name: a\n  - name: b\ndedup: {api: dropDuplicates, keys: [k]}\n", `{"sources": {"a": [{"k":1}], "b": [{"k":"x","z":true}]}}` + "\n", "k STRING, z BOOLEAN"},
	} {
		q, err := query.Parse("q.yaml", []byte(c.query))
		if err != nil {
			t.Fatal(err)
		}
		if err := InferSchema("s.jsonl", strings.NewReader(c.steps), q); err != nil {
			t.Fatalf("%s: %v", c.steps, err)
		}
		got := "<nil>"
		if q.Schema != nil {
			got = q.Schema.String()
			if !q.SchemaInferred {
				t.Error("SchemaInferred not set")
			}
		}
		if got != c.want {
			t.Errorf("%s: schema %s, want %s", c.steps, got, c.want)
		}
		if _, err := Parse("s.jsonl", []byte(c.steps), q); err != nil {
			t.Errorf("%s: rows do not read under the inferred schema: %v", c.steps, err)
		}
		// A run's Reader given an inferrer (InferAlong) learns the same
		// schema from the rows it reads, here under the inferred one, and
		// in the spaced-out form that takes the decoder's slow path.
		// The steps are the ones a Reader without it reads.
		for _, text := range []string{c.steps, strings.ReplaceAll(strings.ReplaceAll(c.steps, ":", " : "), ",", " , ")} {
			read := func(inf *row.Inferrer) []Step {
				r, err := NewReader("s.jsonl", strings.NewReader(text), q)
				if err != nil {
					t.Fatal(err)
				}
				if inf != nil {
					r.InferAlong(inf)
				}
				var all []Step
				for {
					st, err := r.Next()
					if err == io.EOF {
						return all
					} else if err != nil {
						t.Fatalf("%s: %v", text, err)
					}
					all = append(all, st)
				}
			}
			inf := row.NewInferrer()
			if got, want := read(inf), read(nil); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: steps read with InferAlong\n%+v\nwithout\n%+v", text, got, want)
			}
			along := "<nil>"
			if s := inf.Schema(); s != nil && len(s.Fields) > 0 {
				along = s.String()
			}
			if along != c.want {
				t.Errorf("%s: InferAlong's schema %s, want %s", text, along, c.want)
			}
		}
	}
	q, _ := query.Parse("q.yaml", []byte("dedup: {api: dropDuplicates, keys: [id]}\n"))
	err := InferSchema("s.jsonl", strings.NewReader(`{"rows": [{"k":1}]}`+"\n"), q)
	if err == nil || !strings.Contains(err.Error(), `s.jsonl: [UNRESOLVED_COLUMN] column "id" is in no row`) {
		t.Errorf("a key column in no row: %v", err)
	}
}

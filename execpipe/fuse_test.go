package execpipe

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/query"
	"pgregory.net/rapid"
)

// twoPassesFor is what exec did before inference and the check were one
// pass: inferSteps, then checkSteps under the inferred schema.
func twoPassesFor(path string, q *query.Query) error {
	if q.Schema == nil {
		if err := inferSteps(path, q); err != nil {
			return err
		}
	}
	return checkSteps(path, q)
}

// sameAnswer runs the fused pass with n workers and the two passes on
// fresh copies of the query over the same file, and fails unless they
// give the same error (or none) and the same schema. It returns the
// fused pass's error.
// tb is what sameAnswer needs of a *testing.T or a *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func sameAnswer(t tb, queryYAML, path string, n int) error {
	t.Helper()
	q1, err := query.Parse("q.yaml", []byte(queryYAML))
	if err != nil {
		t.Fatal(err)
	}
	q2, _ := query.Parse("q.yaml", []byte(queryYAML))
	got, want := inferCheckStepsN(path, q1, n), twoPassesFor(path, q2)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%d workers: fused pass says %v, the two passes %v\nfile:\n%s", n, got, want, readFile(t, path))
	}
	if (q1.Schema == nil) != (q2.Schema == nil) || q1.Schema != nil && q1.Schema.String() != q2.Schema.String() || q1.SchemaInferred != q2.SchemaInferred {
		t.Fatalf("%d workers: fused pass infers %s, the two passes %s", n, q1.Schema, q2.Schema)
	}
	return got
}

func readFile(t tb, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const fuseQuery = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\n"

// The fused pass of inference and the check gives the two passes' answer,
// whatever the order of the rows that fix the schema: the cases check rows
// before the key column is in the schema, types that widen after rows
// were checked, errors of both passes on one file, and the merge sink's
// own columns.
func TestInferCheckMatchesTwoPasses(t *testing.T) {
	merge := "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: merge, keys: [id, region]}\n"
	cases := []struct {
		name, query, steps string
		want               string // in the error; "" for none
	}{
		{"clean", fuseQuery, `{"rows": [{"id":"a","ts":1},{"id":"b","ts":2}]}` + "\n" + `{"rows": [{"id":"a","ts":3}]}`, ""},
		{"bad event time on the last line", fuseQuery, `{"rows": [{"id":"a","ts":1}]}` + "\n" + `{"tick": true}` + "\n" + `{"rows": [{"id":"b","ts":true}]}`, `s.jsonl:3: rows[0]: event-time column "ts"`},
		{"refused before the key column is known", fuseQuery, `{"rows": [{"ts":1},{"ts":false}]}` + "\n" + `{"rows": [{"id":"a","ts":2}]}`, `s.jsonl:1: rows[1]: event-time column "ts"`},
		{"refused before a widening", fuseQuery, `{"rows": [{"id":1,"ts":1},{"id":2,"ts":"x"}]}` + "\n" + `{"rows": [{"id":"a","ts":2}]}`, `s.jsonl:1: rows[1]: event-time column "ts"`},
		{"two bad lines, the lower wins", fuseQuery, `{"rows": [{"id":1,"ts":1}]}` + "\n" + `{"rows": [{"id":2,"ts":null},{"id":3,"ts":[1]}]}` + "\n" + `{"rows": [{"id":"z","ts":{}}]}`, `s.jsonl:2: rows[1]`},
		{"inference error beats an earlier check error", fuseQuery, `{"rows": [{"id":1,"ts":true}]}` + "\n" + `{"rows": [{"id":1,"ID":2,"ts":1}]}`, "differ only in case"},
		{"no key column in any row", fuseQuery, `{"rows": [{"ts":1}]}`, "UNRESOLVED_COLUMN"},
		{"only empty rows", fuseQuery, `{"rows": [{}, {}]}`, `missing key column "id"`},
		{"not compact", fuseQuery, `{"rows": [ {"id" : "a", "ts" : 1} , {"id" : "b" , "ts" : "soon"} ]}`, `rows[1]: event-time column "ts"`},
		{"escaped names take the slow path", fuseQuery, `{"rows": [{"i\u0064":"a","ts":1},{"id":"b","ts":"soon"}]}`, `rows[1]`},
		{"merge sink columns", merge, `{"rows": [{"id":1,"region":"eu"}]}` + "\n" + `{"rows": [{"id":2}]}`, `s.jsonl:2: rows[0]: sink.keys: missing key column "region"`},
		{"all-columns key", "dedup: {api: dropDuplicates, keys: []}\n", `{"rows": [{"a":1}]}` + "\n" + `{"rows": [{"a":"x"}]}`, ""},
		{"bad line", fuseQuery, `{"rows": [{"id":1,"ts":1}]}` + "\n" + `{"rows": [}`, "invalid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(path, []byte(c.steps+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for n := 1; n <= 3; n++ {
				err := sameAnswer(t, c.query, path, n)
				switch {
				case c.want == "" && err != nil:
					t.Fatalf("%d workers: %v", n, err)
				case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
					t.Fatalf("%d workers: got %v, want %q", n, err, c.want)
				}
			}
		})
	}
}

// The same over random files: rows whose columns come and go and whose
// values change type from line to line, some of them refused.
func TestInferCheckMatchesTwoPassesRandom(t *testing.T) {
	dir := t.TempDir()
	values := []string{`1`, `-7`, `"a"`, `"b"`, `2.5`, `true`, `null`, `{"x":1}`, `[1, 2]`, `"2024-01-02T03:04:05Z"`, `1e400`, `123456789012345678901234`}
	queries := []string{fuseQuery, "dedup: {api: dropDuplicates, keys: [id, x]}\nsink: {kind: merge, keys: [id, region]}\n"}
	i := 0
	rapid.Check(t, func(rt *rapid.T) {
		var b strings.Builder
		lines := rapid.IntRange(1, 8).Draw(rt, "lines")
		for range lines {
			switch rapid.IntRange(0, 9).Draw(rt, "kind") {
			case 0:
				b.WriteString(`{"tick": true}`)
			case 1:
				b.WriteString(`{"rows": [{"id":1,"ts":1}], "bogus": 1}`)
			default:
				b.WriteString(`{"rows": [`)
				for r := range rapid.IntRange(0, 4).Draw(rt, "rows") {
					if r > 0 {
						b.WriteString(", ")
					}
					b.WriteByte('{')
					k := 0
					for _, col := range []string{"id", "ts", "x", "region"} {
						if rapid.IntRange(0, 5).Draw(rt, "absent") == 0 {
							continue
						}
						if k > 0 {
							b.WriteByte(',')
						}
						k++
						fmt.Fprintf(&b, "%q:%s", col, rapid.SampledFrom(values).Draw(rt, "value"))
					}
					b.WriteByte('}')
				}
				b.WriteString(`]}`)
			}
			b.WriteByte('\n')
		}
		i++
		path := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			rt.Fatal(err)
		}
		q := rapid.SampledFrom(queries).Draw(rt, "query")
		sameAnswer(rt, q, path, rapid.IntRange(1, 3).Draw(rt, "workers"))
	})
}

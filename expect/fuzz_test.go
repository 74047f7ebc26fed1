package expect

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParse: a bad expectations file is an *Error with its line, never a
// panic; a good one keeps its batch ids strictly increasing and its counts
// non-negative.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"batch": 0, "emitted": ["a",1,[1,"x"]], "numOutputRows": 2, "numRowsTotal": 2}` + "\n# c\n" + `{"batch": 3}`,
		`{"run": {"executions": 4, "numDroppedDuplicateRows": 1}}`,
		`{"table": [{"id":1},{"id":2}]}`,
		`{"table": []}` + "\n" + `{"table": []}`,
		`{"batch": 2}` + "\n" + `{"batch": 1}`,
		`{"batch": -1}`,
		`{"batch": 0, "batch": 1}`,
		`{"batch": 0, "numOutputRow": 1}`,
		`{"run": {}, "table": []}`,
		"{\"batch\": 0, \"emitted\": [\"\xff\"]}",
		`{"numOutputRows": 1}`,
		`{"unique": ["id", "ts"]}` + "\n" + `{"no-loss": true}` + "\n" + `{"max-state-keys": 10}` + "\n" + `{"late-rows": "<= 0"}`,
		`{"late-rows": ">3"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Parse("fuzz.jsonl", bytes.NewReader(data))
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("error %T %v lacks a line", err, err)
			}
			return
		}
		for i, b := range e.Batches {
			if b.BatchID < 0 || (i > 0 && e.Batches[i-1].BatchID >= b.BatchID) {
				t.Fatalf("batch ids %d", b.BatchID)
			}
			if b.Counts.check() != nil {
				t.Fatalf("negative count accepted: %+v", b.Counts)
			}
		}
		for _, p := range e.Properties {
			if p.N < 0 || (p.Kind == Unique && len(p.Columns) == 0) || p.Line < 1 {
				t.Fatalf("property %+v", p)
			}
		}
	})
}

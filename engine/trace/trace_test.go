package trace_test

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
)

// TestResumeBehindTrims: a run resumed over the same steps file with the
// same checkpoint reads lines the checkpoint has already committed; their
// rows are never read again, so the sources let them go at once
// (exec-format.md: exec holds the rows of the batches not yet committed,
// not the file), not when the run catches up with the checkpoint.
func TestResumeBehindTrims(t *testing.T) {
	q, err := query.Parse("q.yaml", []byte("dedup: {api: dropDuplicates, keys: [id]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	const lines, perLine = 100, 500
	var file bytes.Buffer
	for l := range lines {
		file.WriteString(`{"rows": [`)
		for i := range perLine {
			if i > 0 {
				file.WriteString(",")
			}
			// Ten keys: the state stays small, the rows do not.
			fmt.Fprintf(&file, `{"id":"k%d","line":%d,"pad":"%s"}`, i%10, l, strings.Repeat("x", 150))
		}
		file.WriteString("]}\n")
	}
	ckpt := fsys.NewMem()
	// run reads the file one line at a time (steps.Reader, as exec does);
	// before line `at` is given, observe runs.
	run := func(at int, observe func()) *trace.Result {
		t.Helper()
		rd, err := steps.NewReader("s.jsonl", bytes.NewReader(file.Bytes()), q)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		res, err := trace.RunSteps(q, func() (steps.Step, error) {
			n++
			if n == at {
				observe()
			}
			return rd.Next()
		}, trace.Options{Checkpoint: ckpt, Emit: func(*trace.Record) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	run(0, nil)
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	// Before the last line: the resumed run has read 99 lines the
	// checkpoint committed (still behind it: the last line is not in).
	run(lines, func() {
		runtime.GC()
		runtime.ReadMemStats(&m1)
	})
	held := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	// 99 lines' rows: about 8 MB of Data and 4 MB of rows; one line's:
	// about 120 KB, and the reader's buffers.
	t.Logf("heap held behind the checkpoint: %d bytes (file %d)", held, file.Len())
	if limit := int64(file.Len() / 8); held > limit {
		t.Errorf("a resumed run behind its checkpoint holds %d bytes of heap after 99 of %d lines (%d bytes), more than %d: it keeps committed rows", held, lines, file.Len(), limit)
	}
}

package execpipe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/steps"
)

// readAhead gives the steps in order, then the first error, then io.EOF
// for good; stop ends it even when nobody reads.
func TestReadAhead(t *testing.T) {
	bad := errors.New("line 3: bad")
	src := func() func() (steps.Step, error) {
		n := 0
		return func() (steps.Step, error) {
			n++
			if n == 3 {
				return steps.Step{}, bad
			}
			if n > 3 {
				t.Error("next called after its error")
			}
			return steps.Step{Line: n}, nil
		}
	}
	next, stop := readAhead(src())
	for want := 1; want <= 2; want++ {
		if st, err := next(); err != nil || st.Line != want {
			t.Fatalf("step %d: %+v %v", want, st, err)
		}
	}
	if _, err := next(); err != bad {
		t.Fatalf("third: %v, want the error", err)
	}
	for range 2 {
		if _, err := next(); err != io.EOF {
			t.Fatalf("after the error: %v, want io.EOF", err)
		}
	}
	stop()
	stop() // twice is fine

	// Stopped before anything was read: the goroutine does not hang on
	// its full channel.
	_, stop = readAhead(src())
	stop()
}

// The parallel passes give the sequential passes' answers: the first bad
// line's error, whichever goroutine finds it, and the inferred schema.
func TestParallelPassesAreSequential(t *testing.T) {
	// Four workers even on one CPU: with one, both sides would be the
	// sequential pass and the test could not fail.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	good := `{"rows": [{"id":"a","ts":1,"n":1},{"id":"b","ts":2.5,"n":"x"}]}`
	lines := []string{
		good,
		`{"rows": [{"id":"c","ts":3,"n":12345678901234567890}]}`,
		"# a comment\n",
		`{"restart": true}`,
		`{"rows": [{"id":"d","ts":"bad","n":1}]}`,
		`{"rows": [{"id":"e","ts":4,"n":1}], "bogus": 1}`,
		`{"rows": [{"id":"f","ts":5,"N":1}]}`,
		`{"rows": [}`,
		"{\"rows\": [{\"id\":\"\xff\",\"ts\":1}]}",
		`{"rows": [{"ts":6}]}`,
	}
	queries := []string{
		"dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 5s}\n",
		"schema: [{name: id, type: string}, {name: ts, type: double}, {name: n, type: bigint}]\ndedup: {api: dropDuplicates, keys: [id]}\n",
		"dedup: {api: dropDuplicates}\n",
	}
	dir := t.TempDir()
	for _, yaml := range queries {
		for bad := range lines {
			// Good lines around two from the list, many times over, so
			// that several goroutines have work.
			var file []byte
			for i := range 40 {
				l := good
				switch i {
				case 25:
					l = lines[bad]
				case 31: // a second bad line: the first one's error wins
					l = lines[(bad+3)%len(lines)]
				}
				file = append(append(file, l...), '\n')
			}
			path := filepath.Join(dir, "s.jsonl")
			if err := os.WriteFile(path, file, 0o644); err != nil {
				t.Fatal(err)
			}
			seqQ, _ := query.Parse("q.yaml", []byte(yaml))
			parQ, _ := query.Parse("q.yaml", []byte(yaml))
			f, _ := os.Open(path)
			seqErr := steps.InferSchema(path, f, seqQ)
			f.Close()
			parErr := inferSteps(path, parQ)
			if fmt.Sprint(seqErr) != fmt.Sprint(parErr) || fmt.Sprint(seqQ.Schema) != fmt.Sprint(parQ.Schema) {
				t.Fatalf("%q line %d: infer: sequential %v %v, parallel %v %v", yaml, bad, seqQ.Schema, seqErr, parQ.Schema, parErr)
			}
			if seqErr != nil {
				continue
			}
			f, _ = os.Open(path)
			r, err := steps.NewReader(path, f, seqQ)
			if err != nil {
				t.Fatal(err)
			}
			seqErr = r.Check()
			f.Close()
			if parErr := checkSteps(path, seqQ); fmt.Sprint(seqErr) != fmt.Sprint(parErr) {
				t.Fatalf("%q line %d: check: sequential %v, parallel %v", yaml, bad, seqErr, parErr)
			}
		}
	}
}

// parallelLines keeps the lowest line's error even when a later line
// fails first.
func TestParallelLinesLowestWins(t *testing.T) {
	var file []byte
	for range 6 {
		file = append(file, `{"tick": true}`+"\n"...)
	}
	q, err := query.Parse("q.yaml", []byte("dedup: {api: dropDuplicates, keys: [id]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := steps.NewReader("s.jsonl", bytes.NewReader(file), q)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	err = parallelLines(r, 2, func(_ int, _ *steps.LineParser, l steps.Line) error {
		switch l.No {
		case 1:
			<-release // fails only once line 2 has failed
			return errors.New("line 1")
		case 2:
			defer close(release)
			return errors.New("line 2")
		}
		return nil
	})
	if err == nil || err.Error() != "line 1" {
		t.Fatalf("got %v, want line 1's error", err)
	}
}

package main

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

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

// A write that fails behind the engine stops the run with exit 1 and
// names the output.
func TestExecWriteFails(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	bin := binary(t)
	ex := "../../examples/worked-example/"
	_, errOut, code := run(bin, "exec", "--query", ex+"query.yaml", "--input", ex+"steps.jsonl", "--out", "/dev/full")
	if code != 1 || !strings.Contains(errOut, "exec: write /dev/full:") || !strings.Contains(errOut, "no space left on device") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

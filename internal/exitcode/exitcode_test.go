package exitcode

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dedupsim/dedupsim/internal/atomicfile"
)

// TestOutput: an error writing outputs keeps a status it carries, a
// refused path is bad input, anything else a failure; the message is the
// error's own.
func TestOutput(t *testing.T) {
	coded := &Error{Code: BadInput, Err: errors.New("already coded")}
	for _, tc := range []struct {
		err  error
		code int
	}{
		{errors.New("disk full"), Failed},
		{fmt.Errorf("x: %w", atomicfile.ErrUnsafePath), BadInput},
		{fmt.Errorf("wrapped: %w", coded), BadInput},
		{&Error{Code: Failed, Err: atomicfile.ErrUnsafePath}, Failed},
	} {
		got := Output(tc.err)
		code, ok := Status(got)
		if !ok || code != tc.code || got.Error() != tc.err.Error() {
			t.Errorf("Output(%v) = %v (status %d, %v), want exit %d and the same message", tc.err, got, code, ok, tc.code)
		}
	}
	if _, ok := Status(errors.New("plain")); ok {
		t.Error("a plain error carries no status")
	}
	if e := Bad(errors.New("b")); e.(*Error).ExitStatus() != BadInput {
		t.Error("Bad is not exit 2")
	}
	if e := Fail(errors.New("f")); e.(*Error).ExitStatus() != Failed {
		t.Error("Fail is not exit 1")
	}
}

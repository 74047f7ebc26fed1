// Package exitcode is the one carrier of an exit status (docs/exit-codes.md)
// from the packages that know why something failed (the exec pipeline, the
// batch and sweep runner, the command-line tool's own checks) to main,
// which exits with it: 2 for bad input, 1 for any other failure.
package exitcode

import (
	"errors"

	"github.com/dedupsim/dedupsim/internal/atomicfile"
)

// The exit statuses an *Error carries.
const (
	Failed   = 1 // a run or a write failed, or runs missed their expectations
	BadInput = 2 // the user's input: flags, files, a corrupt or locked checkpoint, a refused path
)

// Error is a failure with the exit status the command-line tool gives it.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ExitStatus is the exit status of the failure.
func (e *Error) ExitStatus() int { return e.Code }

// Bad is err as bad input (exit 2).
func Bad(err error) error { return &Error{Code: BadInput, Err: err} }

// Fail is err as a failure (exit 1).
func Fail(err error) error { return &Error{Code: Failed, Err: err} }

// Status is the exit status err carries, if any: an *Error's anywhere in
// its chain.
func Status(err error) (int, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Code, true
	}
	return 0, false
}

// Output classes an error writing outputs (reports, --out, --report): an
// error that already carries an exit status keeps it; a refused path (a
// link planted in the output folder, an unsafe scenario name) is bad
// input; anything else fails (1).
func Output(err error) error {
	if _, ok := Status(err); ok {
		return err
	}
	if errors.Is(err, atomicfile.ErrUnsafePath) {
		return Bad(err)
	}
	return Fail(err)
}

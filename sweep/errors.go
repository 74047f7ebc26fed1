package sweep

import (
	"errors"

	"github.com/dedupsim/dedupsim/internal/atomicfile"
)

// Exit statuses of an *Error (docs/exit-codes.md).
const (
	ExitFailed   = 1 // a run or a write failed, or runs missed their expectations
	ExitBadInput = 2 // the user's input: flags, scenarios, shards, a refused path
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

// exitStatus is what carries an exit status: an *Error, or an error type
// of the caller with the same method.
type exitStatus interface {
	error
	ExitStatus() int
}

func badInput(err error) error { return &Error{Code: ExitBadInput, Err: err} }
func failure(err error) error  { return &Error{Code: ExitFailed, Err: err} }

// OutputError classes an error writing reports: an error that carries an
// exit status keeps it; a refused path (a link planted in the output
// folder, an unsafe scenario name) is bad input; anything else fails (1).
func OutputError(err error) error {
	var es exitStatus
	if errors.As(err, &es) {
		return err
	}
	if errors.Is(err, atomicfile.ErrUnsafePath) {
		return badInput(err)
	}
	return failure(err)
}

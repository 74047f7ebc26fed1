package execpipe

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sparkver"
	"github.com/dedupsim/dedupsim/engine/trace"
	"github.com/dedupsim/dedupsim/internal/atomicfile"
)

// Error is a failed run with its exit status (docs/exit-codes.md): Code 2
// for bad input (flags, query, steps file, a corrupt or locked
// checkpoint; the message names file, line and field), 1 for any other
// failure. The pipeline knows which of its steps refused what; the
// command line only passes the status on.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// badInput is err as bad input (exit 2).
func badInput(err error) error { return &Error{Code: 2, Err: err} }

// outputError is the status of a failed write of --report's files: an
// unsafe path (atomicfile.ErrUnsafePath) is bad input, any other failure 1.
func outputError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, atomicfile.ErrUnsafePath) {
		return badInput(err)
	}
	return &Error{Code: 1, Err: err}
}

// classify turns a run error into an exit status (docs/exit-codes.md): a
// query the checkpoint refuses, a corrupt or locked checkpoint, or a
// checkpoint ahead of the steps file is bad input (2); anything else that
// fails the run is 1.
func classify(queryPath, inputPath, ckptDir string, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := checkpointProblem(ckptDir, err); ok {
		return e
	}
	var inc *engine.IncompatibleError
	if errors.As(err, &inc) {
		return badInput(fmt.Errorf("%s: %v", queryPath, inc))
	}
	var qe *query.Error
	if errors.As(err, &qe) {
		return badInput(qe)
	}
	var ae *trace.AheadError
	if errors.As(err, &ae) {
		return badInput(fmt.Errorf("%s: %v", inputPath, ae))
	}
	var se *trace.StepError
	if errors.As(err, &se) {
		return &Error{Code: 1, Err: fmt.Errorf("%s:%d: %v", inputPath, se.Line, se.Err)}
	}
	return &Error{Code: 1, Err: err}
}

// checkpointProblem is the one form of a refused checkpoint for every
// verb: "checkpoint error: DIR/FILE: WHAT" for a damaged one, "checkpoint
// DIR is in use by another process" for a locked one; both exit 2.
func checkpointProblem(ckptDir string, err error) (error, bool) {
	var iu *checkpoint.InUseError
	if errors.As(err, &iu) {
		return badInput(iu), true
	}
	if ce, ok := engine.CheckpointError(err); ok {
		return badInput(fmt.Errorf("checkpoint error: %s: %s", filepath.Join(ckptDir, filepath.FromSlash(ce.File)), ce.Msg)), true
	}
	return nil, false
}

// applySparkVersion gives the query --spark-version (none: the query's own
// spark_version, if any), and checks its spark_conf against the line. A
// version the query file names too must be the same.
func applySparkVersion(q *query.Query, flag string) error {
	if flag != "" {
		v, err := sparkver.Parse(flag)
		if err != nil {
			return badInput(fmt.Errorf("--spark-version: %w", err))
		}
		if err := q.SetSparkVersion(v); err != nil {
			return badInput(err)
		}
		return nil
	}
	if err := q.CheckSparkVersion(); err != nil {
		return badInput(err)
	}
	return nil
}

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
	"github.com/dedupsim/dedupsim/internal/exitcode"
)

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
		return exitcode.Bad(fmt.Errorf("%s: %v", queryPath, inc))
	}
	var qe *query.Error
	if errors.As(err, &qe) {
		return exitcode.Bad(qe)
	}
	var ae *trace.AheadError
	if errors.As(err, &ae) {
		return exitcode.Bad(fmt.Errorf("%s: %v", inputPath, ae))
	}
	var se *trace.StepError
	if errors.As(err, &se) {
		return &exitcode.Error{Code: 1, Err: fmt.Errorf("%s:%d: %v", inputPath, se.Line, se.Err)}
	}
	return &exitcode.Error{Code: 1, Err: err}
}

// checkpointProblem is the one form of a refused checkpoint for every
// verb: "checkpoint error: DIR/FILE: WHAT" for a damaged one, "checkpoint
// DIR is in use by another process" for a locked one; both exit 2.
func checkpointProblem(ckptDir string, err error) (error, bool) {
	var iu *checkpoint.InUseError
	if errors.As(err, &iu) {
		return exitcode.Bad(iu), true
	}
	if ce, ok := engine.CheckpointError(err); ok {
		if ckptDir == "" {
			ckptDir = "(temporary checkpoint)"
		}
		return exitcode.Bad(fmt.Errorf("checkpoint error: %s: %s", filepath.Join(ckptDir, filepath.FromSlash(ce.File)), ce.Msg)), true
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
			return exitcode.Bad(fmt.Errorf("--spark-version: %w", err))
		}
		if err := q.SetSparkVersion(v); err != nil {
			return exitcode.Bad(err)
		}
		return nil
	}
	if err := q.CheckSparkVersion(); err != nil {
		return exitcode.Bad(err)
	}
	return nil
}

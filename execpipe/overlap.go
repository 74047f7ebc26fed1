package execpipe

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/schema"
	"github.com/dedupsim/dedupsim/engine/steps"
)

// exec checks the whole steps file before its run (openSteps), so that a
// bad line anywhere leaves the checkpoint and --out untouched. Where
// nothing the run writes outlives it unless the run is kept (a temporary
// checkpoint in memory, --out renamed into place at the end, no --check,
// --record or --report, warnings held back), the run need not wait for
// the pass: it starts at once, beside the pass, on the schema inferred
// from the file's first rows, and is kept only when the pass then finds
// no bad line and the same query (the same schema, resolved the same
// way) from every row. Otherwise the run is stopped and dropped, and exec
// answers as it does after the pass alone: the pass's error, or the run
// again on the schema of every row. The answer is the same either way;
// only the wall time differs (on the 500 k-row trace of make bench-spark
// the pass is about a fifth of exec's CPU time).

// canOverlap reports whether exec's run may start beside the pass over
// its input (runOverlapped): every output of the run is dropped unseen if
// the pass then refuses the file.
func canOverlap(o Options, q *query.Query) bool {
	if o.CheckpointDir != "" || q.ShufflePartitions > maxMemoryScratchPartitions ||
		o.CheckPath != "" || o.RecordPath != "" || o.ReportDir != "" ||
		o.OutPath == "" || !regularFile(o.InputPath) || passWorkers() < 2 {
		return false
	}
	// --out must be a file renamed into place at the end (absent or
	// regular), not a device written as the run goes.
	st, err := os.Lstat(o.OutPath)
	return errors.Is(err, os.ErrNotExist) || err == nil && st.Mode().IsRegular()
}

// sniffLines and sniffBytes bound the lines the schema of an overlapped
// run is inferred from: the first lines with rows, a few at most.
const (
	sniffLines = 4
	sniffBytes = 8 << 20
)

// runOverlapped is exec's run started beside the pass over its input (see
// above). q is the query as parsed; the pass infers its schema (when it
// declares none) and checks every row under it, while the run reads a copy
// parsed again (qs) whose schema sniff inferred from the first rows.
func runOverlapped(o Options, q *query.Query) error {
	_, err := overlapRun(o, q)
	return err
}

// overlapOutcome is what became of an overlapped run.
type overlapOutcome int

const (
	// runKept: the pass agreed with the run, which is exec's answer.
	runKept overlapOutcome = iota
	// runAgain: the file's schema is not its first rows': the run was
	// dropped and run again on the file's.
	runAgain
	// passRefused: the pass refused the file; the run was dropped.
	passRefused
	// runWaited: no schema could be sniffed; the run waited for the pass.
	runWaited
)

// overlapRun is runOverlapped, saying what became of the run.
func overlapRun(o Options, q *query.Query) (overlapOutcome, error) {
	qs, err := query.ParseFile(o.QueryPath)
	if err == nil {
		err = applySparkVersion(qs, o.SparkVersion)
	}
	if err != nil {
		// The file changed between the two reads: run as without overlap.
		return runWaited, runChecked(o, q, true)
	}
	pass := checkSteps
	if q.Schema == nil {
		pass = inferCheckSteps
	}
	var (
		stop          atomic.Bool
		sniffed       = make(chan struct{})
		sniffedSchema *schema.Schema
		passDone      = make(chan error, 1)
	)
	go func() {
		err := pass(o.InputPath, q)
		<-sniffed
		if err != nil || !sameSchema(q, sniffedSchema) {
			stop.Store(true) // the run will be dropped: end it soon
		}
		passDone <- err
	}()
	// verdict waits for the pass: whether the run is kept. The run asks
	// before it commits --out (keep), exec after the run in any case.
	var (
		verdictOnce sync.Once
		passErr     error
	)
	verdict := func() bool {
		verdictOnce.Do(func() { passErr = <-passDone })
		return passErr == nil && sameSchema(q, sniffedSchema)
	}
	ok := sniff(o.InputPath, qs)
	// Read by the pass's goroutine once sniffed is closed; the run does
	// not change a query's schema.
	sniffedSchema = qs.Schema
	close(sniffed)
	if !ok {
		if err := <-passDone; err != nil {
			return passRefused, stepsProblem(err)
		}
		return runWaited, runChecked(o, q, false)
	}
	var (
		warnMu sync.Mutex
		warns  []string
	)
	warn := func(s string) {
		warnMu.Lock()
		warns = append(warns, s)
		warnMu.Unlock()
	}
	runErr := runOn(o, qs, &stop, warn, verdict)
	verdict()
	if passErr != nil {
		return passRefused, stepsProblem(passErr)
	}
	if !sameSchema(q, sniffedSchema) {
		// The first rows' schema is not the file's: run again on the
		// file's, as the pass alone would have.
		return runAgain, runChecked(o, q, false)
	}
	for _, w := range warns {
		printWarning(w)
	}
	return runKept, runErr
}

// sameSchema reports whether the run on the query read again (qs) with
// the schema sniffed is the run on q: both were parsed from the same file,
// and the names a query resolves against its schema follow from the
// schema alone (steps.SetInferred), so the same schema makes the same
// query. A declared schema is the same in both.
func sameSchema(q *query.Query, sniffed *schema.Schema) bool {
	return reflect.DeepEqual(q.Schema, sniffed)
}

// sniff infers qs's schema from the first lines of the steps file at path
// that hold rows (qs declares one: nothing to do). It reports false when
// it cannot tell (an error, no rows within the first lines, or the first
// lines too long): the run then waits for the pass.
func sniff(path string, qs *query.Query) bool {
	if qs.Schema != nil {
		return true
	}
	f, r, err := openStepsReader(path, qs)
	if err != nil {
		return false
	}
	defer f.Close()
	lp, inf := r.LineParser(), row.NewInferrer()
	read := 0
	for range sniffLines {
		l, err := r.NextLine()
		if err != nil {
			return false
		}
		if read += len(l.Text); read > sniffBytes {
			return false
		}
		if lp.Infer(l, inf) != nil {
			return false
		}
		if s := inf.Schema(); s != nil && len(s.Fields) > 0 {
			return steps.SetInferred(path, inf, qs) == nil
		}
	}
	return false
}

// errStopped ends a run whose pass found it could not be kept.
var errStopped = errors.New("exec: run stopped: the steps file's pass refused it")

// runOn runs q (checked or not) over the steps file on a temporary
// checkpoint and writes --out, as Run does after the pass; stop, when it
// is set, ends the run before its next step. Warnings go to warn; keep
// (nil: none) is asked before --out is committed (execSteps).
func runOn(o Options, q *query.Query, stop *atomic.Bool, warn func(string), keep func() bool) (err error) {
	next, closeInput, err := openRun(o.InputPath, q)
	if err != nil {
		return err
	}
	defer closeInput()
	if stop != nil {
		inner := next
		next = func() (steps.Step, error) {
			if stop.Load() {
				return steps.Step{}, errStopped
			}
			return inner()
		}
	}
	out, err := createOut(o.OutPath)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			out.discard()
		}
	}()
	dir, ckpt, release, err := openCheckpoint(o, q)
	if err != nil {
		return err
	}
	defer release()
	return execSteps(q, next, ckpt, dir, o, nil, out, warn, keep)
}

// runChecked is Run after the pass: check tells whether the pass is still
// to run (openSteps) or has run on q.
func runChecked(o Options, q *query.Query, check bool) error {
	if check {
		if err := passSteps(o.InputPath, q); err != nil {
			return err
		}
	}
	return runOn(o, q, nil, printWarning, nil)
}

// printWarning writes a warning of the run to standard error (a variable:
// tests collect them).
var printWarning = func(s string) { fmt.Fprintln(os.Stderr, "dedupsim: warning: "+s) }

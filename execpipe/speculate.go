package execpipe

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/steps"
)

// exec checks the whole steps file before its run (openSteps), so that a
// bad line anywhere leaves the checkpoint and --out untouched. Where
// nothing the run writes outlives it unless the run is kept (a temporary
// checkpoint in memory, --out renamed into place at the end, no --check,
// --record or --report), that pass is not needed first: the run reads
// every row anyway, and refuses what the pass would refuse. So the run
// starts at once, on the declared schema or on the one inferred from the
// file's first rows, inferring the schema of every row as it reads them
// (steps.Reader.InferAlong), and is kept only when it ends without an
// error and, for an inferred schema, with the same schema from every row.
// Otherwise its output is dropped and exec answers as with the pass
// first: the pass's error, or the run on the file's schema. The answer is
// the same either way (an error of the run is found again, or the pass's
// comes first, as it always did); a file whose first rows give its schema
// and that has no bad line skips the pass's decoding of every line.

// canSpeculate reports whether exec's run may go without the pass before
// it (runSpeculative): every output of the run is dropped unseen unless
// it is kept.
func canSpeculate(o Options, q *query.Query) bool {
	if o.CheckpointDir != "" || q.ShufflePartitions > maxMemoryScratchPartitions ||
		o.CheckPath != "" || o.RecordPath != "" || o.ReportDir != "" ||
		o.OutPath == "" || !regularFile(o.InputPath) {
		return false
	}
	// --out must be a file renamed into place at the end (absent or
	// regular), not a device written as the run goes.
	st, err := os.Lstat(o.OutPath)
	return errors.Is(err, os.ErrNotExist) || err == nil && st.Mode().IsRegular()
}

// sniffLines and sniffBytes bound the lines the schema of a speculative
// run is inferred from: the first lines with rows, a few at most.
const (
	sniffLines = 4
	sniffBytes = 8 << 20
)

// speculation is what became of a speculative run.
type speculation int

const (
	// runKept: the run is exec's answer.
	runKept speculation = iota
	// schemaDiffered: the file's schema is not its first rows'; the run
	// was dropped and run again, after the pass, on the file's.
	schemaDiffered
	// runFailed: the run failed; exec answered as with the pass first.
	runFailed
	// noSniff: no schema could be inferred from the first lines; the pass
	// ran first.
	noSniff
)

// runSpeculative is exec's run without the pass before it (see above), q
// as parsed. The run reads a copy of the query parsed again (qs), so that
// q is the pass's if the run is not kept.
func runSpeculative(o Options, q *query.Query) (speculation, error) {
	qs, err := query.ParseFile(o.QueryPath)
	if err == nil {
		err = applySparkVersion(qs, o.SparkVersion)
	}
	if err != nil || !sniff(o.InputPath, qs) {
		// The query file changed since it was read, or the first lines
		// tell nothing: the pass first.
		return noSniff, runChecked(o, q)
	}
	sniffed := qs.Schema
	var along *row.Inferrer
	if qs.SchemaInferred {
		along = row.NewInferrer()
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
	// keep is asked before --out is committed, once every row was read:
	// along then holds the schema of every row.
	same := true
	keep := func() bool {
		same = along == nil || reflect.DeepEqual(along.Schema(), sniffed)
		return same
	}
	if err := runOn(o, qs, along, warn, keep); err != nil {
		if !same {
			return schemaDiffered, runChecked(o, q)
		}
		return runFailed, runChecked(o, q)
	}
	for _, w := range warns {
		printWarning(w)
	}
	return runKept, nil
}

// sniff infers qs's schema from the first lines of the steps file at path
// that hold rows (qs declares one: nothing to do). It reports false when
// it cannot tell (an error, no rows within the first lines, or the first
// lines too long).
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

// runOn runs q over the steps file on a temporary checkpoint and writes
// --out, as Run does after the pass. along (nil: none) is given every row
// the run reads; warnings go to warn; keep (nil: none) is asked, after the
// last step was read, before --out is committed (execSteps).
func runOn(o Options, q *query.Query, along *row.Inferrer, warn func(string), keep func() bool) (err error) {
	next, closeInput, err := openRun(o.InputPath, q, along)
	if err != nil {
		return err
	}
	var closeOnce sync.Once
	closeIn := func() { closeOnce.Do(closeInput) }
	defer closeIn()
	if keep != nil {
		k := keep
		// The reader's goroutine is done with along once it is stopped.
		keep = func() bool { closeIn(); return k() }
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

// runChecked is Run with the pass first (passSteps), for a query without
// --check, --record and --report.
func runChecked(o Options, q *query.Query) error {
	if err := passSteps(o.InputPath, q); err != nil {
		return err
	}
	return runOn(o, q, nil, printWarning, nil)
}

// errDropped ends a speculative run that is not kept (execSteps' keep).
var errDropped = errors.New("exec: the run on the schema of the first rows was dropped")

// printWarning writes a warning of the run to standard error (a variable:
// tests collect them).
var printWarning = func(s string) { fmt.Fprintln(os.Stderr, "dedupsim: warning: "+s) }

// Package execpipe is the exec verb's pipeline: it checks a steps file
// against a query (the passes before the run, on every core), runs the
// query over it on a checkpoint (reading one step ahead, writing one batch
// record behind, the collector paced for the run), writes the records
// atomically, and meets or records expectations; or it runs the same pair
// on a real Apache Spark. The command line (cmd/dedupsim) parses and
// checks the flags and calls Run: the pipeline is here so that the CLI
// stays an adapter and the pipeline's parts can be tested on their own.
//
// Run reports every failure as an *exitcode.Error carrying the exit status of
// docs/exit-codes.md (2 for bad input, 1 for any other failure), so that
// the caller does not have to know which of its steps failed how.
package execpipe

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/state/stores"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
	"github.com/dedupsim/dedupsim/internal/exitcode"
)

// Options are one exec run, as exec's flags give them (docs/exec-format.md).
// Run checks the values the pipeline needs; the command line checks the
// flags before (which are given, overlaps of inputs and outputs, the
// engine's name) so that its own messages come first.
type Options struct {
	// QueryPath and InputPath are the query (YAML) and the steps file
	// (JSON Lines): --query and --input, both required.
	QueryPath, InputPath string
	// CheckpointDir is --checkpoint: created if absent, resumed if it
	// holds an earlier run; "" runs on a temporary checkpoint, in memory
	// (or, for many partitions, a folder), gone at the end.
	CheckpointDir string
	// OutPath is --out, written atomically; "" is standard output.
	OutPath string
	// Format is "jsonl" (the exec interface; "" too) or "table" (for
	// people).
	Format string
	// Engine is "dedupsim" ("" too) or "spark" (a real pyspark runs the
	// pair: docs/conformance.md).
	Engine string
	// Seed seeds the query and run ids.
	Seed uint64
	// CheckPath, RecordPath and ReportDir are --check (an expectations
	// file or a Delta table), --record and --report (docs/expectations.md).
	CheckPath, RecordPath, ReportDir string
	// SparkVersion is --spark-version (spark-semantics.md §17): "" follows
	// the query's spark_version, if any.
	SparkVersion string
	// Version is dedupsim's version, as --report's junit.xml names it.
	Version string
	// StepSummary, when set, appends --check's summary.md to a GitHub
	// Actions step summary (whole names the file that holds all of it):
	// the command line's, shared with its other verbs, so that one writer
	// keeps GitHub's size limit.
	StepSummary func(md []byte, whole string) error
}

// Run runs exec with o. Everything the user gave is checked before
// anything is written that outlives a refusal (before the run, or, for a
// run whose outputs are kept only once it ends well, as it runs:
// speculate.go); --out and --record are written atomically, and left
// unchanged when the run fails. Warnings and
// --check's differences go to standard error. A failure is an *exitcode.Error: its
// exit status.
func Run(o Options) (err error) {
	defer func() {
		// The few refusals that come without a status (a steps file the
		// reader refuses as it opens it) are bad input, as the command
		// line has always taken an error without one.
		var e *exitcode.Error
		if err != nil && !errors.As(err, &e) {
			err = exitcode.Bad(err)
		}
	}()
	switch {
	case o.QueryPath == "" || o.InputPath == "":
		return exitcode.Bad(errors.New("exec: --query and --input are required"))
	case o.Format == "":
		o.Format = "jsonl"
	case o.Format != "jsonl" && o.Format != "table":
		return exitcode.Bad(fmt.Errorf("exec: --format %q (want jsonl or table)", o.Format))
	}
	switch o.Engine {
	case "", "dedupsim":
	case "spark":
		return runSpark(o)
	default:
		return exitcode.Bad(fmt.Errorf("exec: --engine %q (want dedupsim or spark)", o.Engine))
	}
	data, err := query.ReadFile(o.QueryPath)
	if err != nil {
		return exitcode.Bad(err)
	}
	q, err := query.Parse(o.QueryPath, data)
	if err != nil {
		return exitcode.Bad(err)
	}
	if err := applySparkVersion(q, o.SparkVersion); err != nil {
		return err
	}
	// Fewer collections, with a bounded headroom (gc.go), from the
	// passes before the run to the end.
	gc := newGCPacer()
	defer gc.restore()
	if canSpeculate(o, q) {
		_, err := runSpeculative(o, q, data)
		return err
	}
	return runChecked(o, q)
}

// runOn runs q over the steps file on the checkpoint and writes --out,
// --check's and --record's results: exec after the pass, or without it
// (runSpeculative). d (nil: none) follows the schema of the rows the run
// reads, and stops it when that drifts from the sniffed one; warnings go
// to warn; keep (nil: none) is asked, after the last step was
// read, before --out is committed (execSteps).
func runOn(o Options, q *query.Query, d *drift, warn func(string), keep func() bool) (err error) {
	next, closeInput, err := openRun(o.InputPath, q, d)
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
	var hook *expectHook
	defer func() {
		if err != nil {
			out.discard()
			hook.discard()
		}
	}()
	if hook, err = newExpectHook(o, q); err != nil {
		return err
	}
	dir, ckpt, release, err := openCheckpoint(o, q)
	if err != nil {
		return err
	}
	defer release()
	return execSteps(q, next, ckpt, dir, o, hook, out, warn, keep)
}

// runChecked is exec with the pass first (passSteps).
func runChecked(o Options, q *query.Query) error {
	if err := passSteps(o.InputPath, q); err != nil {
		return err
	}
	return runOn(o, q, nil, printWarning, nil)
}

// printWarning writes a warning of the run to standard error (a variable:
// tests collect them).
var printWarning = func(s string) { fmt.Fprintln(os.Stderr, "dedupsim: warning: "+s) }

// openCheckpoint opens exec's checkpoint (--checkpoint, created if absent;
// without it a temporary one, scratchCheckpoint), takes its lock and
// removes the temp files a killed writer left. release unlocks it and
// removes a temporary folder. dir is "" for a checkpoint in memory.
func openCheckpoint(o Options, q *query.Query) (dir string, ckpt fsys.FS, release func(), err error) {
	dir = o.CheckpointDir
	scratch := dir == ""
	if scratch && q.ShufflePartitions <= maxMemoryScratchPartitions {
		return "", scratchCheckpoint(), func() {}, nil
	}
	removeTemp := func() {}
	if scratch {
		if dir, err = os.MkdirTemp("", "dedupsim-ckpt-"); err != nil {
			return "", nil, nil, &exitcode.Error{Code: 1, Err: fmt.Errorf("exec: %w", err)}
		}
		removeTemp = func() { os.RemoveAll(dir) }
	} else if st, serr := os.Stat(dir); serr == nil && !st.IsDir() {
		return "", nil, nil, exitcode.Bad(fmt.Errorf("exec: --checkpoint %s is not a folder", dir))
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, nil, exitcode.Bad(fmt.Errorf("exec: --checkpoint: %w", err))
	}
	disk := fsys.NewOS(dir)
	if scratch {
		// Removed when exec ends, read by no other process nor after a
		// power cut (the run's own restart and crash steps read it back
		// through the page cache, which fsync does not change): its fsyncs
		// (about 25 a batch) would only make the run wait on the disk.
		disk = fsys.NewScratchOS(dir)
	}
	unlock, err := checkpoint.Lock(disk, dir)
	if err != nil {
		removeTemp()
		return "", nil, nil, classify(o.QueryPath, o.InputPath, dir, err)
	}
	release = func() {
		unlock()
		removeTemp()
	}
	if err := checkpoint.RemoveTemps(disk); err != nil {
		release()
		return "", nil, nil, &exitcode.Error{Code: 1, Err: fmt.Errorf("exec: %w", err)}
	}
	return dir, disk, release, nil
}

// scratchSpillAbove is the size from which a file of exec's temporary
// checkpoint in memory leaves the heap for a temporary host file
// (fsys.Mem.SpillAbove).
const scratchSpillAbove = 1 << 10

// maxMemoryScratchPartitions is the most shuffle partitions whose temporary
// checkpoint exec keeps in memory. A partition keeps up to
// MinVersionsToRetain + MinDeltasForSnapshot state files (110 by
// default), each on the heap while under scratchSpillAbove, with its
// bookkeeping spilled or not: at 256 partitions about 35 MB (measured: 150
// one-row batches, 97 MB of RSS against 64 MB on the disk). Above it
// (measured: 2,000 partitions, 224,206 files, 244 MB of RSS in memory
// against 66 MB on the disk) the temporary checkpoint is a folder of the
// temp directory, as with --checkpoint but never fsynced.
const maxMemoryScratchPartitions = 256

// scratchCheckpoint is the checkpoint of a run without --checkpoint (up to
// maxMemoryScratchPartitions): read by no other process and gone when exec
// ends, so it is kept in memory, every file of 1 KiB or more spilled to
// unlinked host files (a Pebble store's working databases go to the temp
// directory too, stores.Open). On the disk it cost a create, a rename and
// a close per file, about 25 files a batch, and a removal of the folder at
// the end: on the 500 k-row trace of make bench-spark, a third of exec's
// system time.
func scratchCheckpoint() *fsys.Mem {
	m := fsys.NewMem()
	m.SpillAbove(scratchSpillAbove)
	return m
}

// execSteps runs q over the steps next yields on the checkpoint in dir and
// writes every batch record, then the table, to out in o's format; out is
// committed only when everything was written. hook (nil: none) watches
// every record for --check and --record; the run's warnings go to warn.
// keep (nil: none) is asked before out is committed: false drops the
// run's output (errDropped).
func execSteps(q *query.Query, next func() (steps.Step, error), ckpt fsys.FS, dir string, o Options, hook *expectHook, out *outFile, warn func(string), keep func() bool) error {
	bw := bufio.NewWriterSize(out, 256<<10)
	enc := trace.NewEncoder(bw)
	tw := &tableWriter{w: bw}
	var wb *writeBehind
	if o.Format != "table" && regularFile(o.InputPath) {
		wb = newWriteBehind(enc)
	}
	emit := func(r *trace.Record) error {
		if err := hook.observe(r); err != nil {
			return err
		}
		switch {
		case o.Format == "table":
			return tw.Record(r)
		case wb == nil:
			return enc.Record(r)
		}
		return wb.send(r)
	}
	res, err := trace.RunSteps(q, next, trace.Options{
		Checkpoint: ckpt, Seed: o.Seed, Emit: emit, NewStateProvider: stores.Open, OnBatch: hook.onBatch,
		Warn: warn,
		// next is a steps.Reader's, whose rows are compact: the encoder
		// copies them without scanning each again.
		RowsCompact: true,
	})
	if wb != nil {
		if werr := wb.close(); werr != nil {
			return &exitcode.Error{Code: 1, Err: fmt.Errorf("exec: write %s: %w", out.name, werr)}
		}
	}
	if err != nil {
		return classify(o.QueryPath, o.InputPath, dir, err)
	}
	if o.Format == "table" {
		err = tw.End(res)
	} else if res.HasTable {
		err = enc.WriteTable(res)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && keep != nil && !keep() {
		return errDropped // out is discarded by the caller
	}
	if err == nil {
		err = out.commit()
	}
	if err != nil {
		return &exitcode.Error{Code: 1, Err: fmt.Errorf("exec: write %s: %w", out.name, err)}
	}
	return hook.finish(res)
}

// writeBehind encodes and writes batch records in a goroutine, one record
// behind the engine, so that a batch's output is written while the next
// batch runs. Records go out in order; memory holds one more batch's
// output. After a write fails, send refuses the next record (the run
// stops) and close returns the write's error.
type writeBehind struct {
	ch     chan *trace.Record
	done   chan struct{}
	err    error // the goroutine's; read after done
	failed atomic.Bool
}

// errWriteFailed stops the run after a failed write; close has the cause.
var errWriteFailed = errors.New("the output could not be written")

func newWriteBehind(enc *trace.Encoder) *writeBehind {
	w := &writeBehind{ch: make(chan *trace.Record, 1), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for r := range w.ch {
			if w.err == nil {
				if w.err = enc.Record(r); w.err != nil {
					w.failed.Store(true)
				}
			}
		}
	}()
	return w
}

// send queues r, which the caller no longer changes.
func (w *writeBehind) send(r *trace.Record) error {
	if w.failed.Load() {
		return errWriteFailed
	}
	w.ch <- r
	return nil
}

// close waits for every queued record to be written; call it once.
func (w *writeBehind) close() error {
	close(w.ch)
	<-w.done
	return w.err
}

// passSteps is the pass before the run of a regular file: the schema
// inferred when q declares none, and every line checked, so that a bad
// line anywhere is found before the checkpoint or --out is touched. It
// streams: memory holds a few lines (parallelLines). An input that cannot
// be read twice (a pipe) is checked as it runs; its errors still leave
// --out alone.
func passSteps(path string, q *query.Query) error {
	st, err := os.Stat(path)
	if err == nil && st.IsDir() {
		return exitcode.Bad(fmt.Errorf("exec: --input %s is a directory", path))
	}
	if err == nil && st.Mode().IsRegular() {
		check := checkSteps
		if q.Schema == nil {
			// No declared schema: infer one from every row, as Spark's
			// JSON source does, and check the rows under it, in one pass
			// where it can.
			check = inferCheckSteps
		}
		if err := check(path, q); err != nil {
			return stepsProblem(err)
		}
	}
	return nil
}

// openRun opens the steps file for the run, reading ahead when it is a
// regular file; d (nil: none) is given every row the run reads
// (steps.Reader.InferAlong) and may stop the run after a step (drift).
func openRun(path string, q *query.Query, d *drift) (next func() (steps.Step, error), closeFn func(), err error) {
	open := func() (*steps.Reader, *os.File, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, exitcode.Bad(fmt.Errorf("exec: --input: %w", err))
		}
		r, err := steps.NewReader(path, f, q)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return r, f, nil
	}
	r, f, err := open()
	if err != nil {
		return nil, nil, err
	}
	read := r.Next
	if d != nil {
		r.InferAlong(d.along)
		read = func() (steps.Step, error) {
			st, err := r.Next()
			if err == nil && d.gone() {
				return steps.Step{}, errDropped
			}
			return st, err
		}
	}
	if !regularFile(path) {
		// A pipe's read can block until its writer sends more: a goroutine
		// waiting in it would hold up the end of a run that failed.
		return read, func() { f.Close() }, nil
	}
	next, stop := readAhead(read)
	return next, func() { stop(); f.Close() }, nil
}

// regularFile reports whether path is a regular file, whose reads end: the
// run reads ahead and writes behind only then (a pipe's read can wait for
// its writer, so the run stays sequential and stops at once on an error).
func regularFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// readAhead calls next in a goroutine, one step ahead of its caller, so
// that the next line is read and decoded while the engine runs the batch
// of the one before (exec's wall time on two cores: the decoding hides
// behind the engine). The steps come in the same order, so the run and
// its output are the same; memory holds one more line. stop ends the
// goroutine and waits for it: after stop, next is not called again.
func readAhead(next func() (steps.Step, error)) (ahead func() (steps.Step, error), stop func()) {
	type item struct {
		st  steps.Step
		err error
	}
	ch := make(chan item, 1)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for {
			st, err := next()
			select {
			case ch <- item{st, err}:
			case <-quit:
				return
			}
			if err != nil {
				return // io.EOF or the Reader's first error: it is done
			}
		}
	}()
	ahead = func() (steps.Step, error) {
		it, ok := <-ch
		if !ok {
			return steps.Step{}, io.EOF
		}
		return it.st, it.err
	}
	var once sync.Once
	stop = func() {
		once.Do(func() { close(quit) })
		<-done
	}
	return ahead, stop
}

// stepsProblem is a pass's refusal of the steps file: bad input (exit 2);
// a file that cannot be opened is named as --input.
func stepsProblem(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "open" {
		return exitcode.Bad(fmt.Errorf("exec: --input: %w", err))
	}
	return exitcode.Bad(err)
}

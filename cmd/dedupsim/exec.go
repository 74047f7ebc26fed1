package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sparkver"
	"github.com/dedupsim/dedupsim/engine/state/stores"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
	"github.com/spf13/cobra"
)

// execLong is exec's --help text.
const execLong = `exec runs one streaming dedup query over the micro-batches of a steps file and prints,
one JSON line per batch execution (replays included), what the sink received and Spark's
StreamingQueryProgress. For table, merge and append sinks a final {"table": [...]} line
follows. With --checkpoint holding an earlier run, the query resumes from it under Spark's
restart rules; the steps file is then the source's whole history.

The whole input is checked before anything runs or any file is written; --out is written
atomically (nothing of it changes unless the run succeeds). A checkpoint has one writer:
a second process on it is refused.

Exit status (docs/exit-codes.md): 0 on success, 2 on bad input (flags, query, steps file,
a corrupt or locked checkpoint; one line naming file, line and field), 1 on any other
failure.` + execSparkHelp

// execOptions are exec's flags.
type execOptions struct {
	queryPath, inputPath, ckptDir, outPath, format string
	engine                                         string
	seed                                           uint64
	checkPath, recordPath                          string // docs/expectations.md
	reportDir                                      string // --report (exec_expect.go)
	sparkVersion                                   string // --spark-version (spark-semantics.md §17)
	expect                                         *expectHook
}

func newExecCmd() *cobra.Command {
	var o execOptions
	cmd := &cobra.Command{
		Use:   "exec --query QUERY.yaml --input STEPS.jsonl [--checkpoint DIR] [--out OUT.jsonl]",
		Short: "Run one dedup query over explicit micro-batches and print every batch",
		Long:  execLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExec(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.queryPath, "query", "", "query file (YAML)")
	f.StringVar(&o.inputPath, "input", "", "steps file (JSON Lines)")
	f.StringVar(&o.ckptDir, "checkpoint", "", "checkpoint folder (default: a temporary one, removed at the end)")
	f.StringVar(&o.outPath, "out", "", "where batch records go, written atomically (default: standard output)")
	f.Uint64Var(&o.seed, "seed", 0, "seed for the query and run ids")
	f.StringVar(&o.format, "format", "jsonl", "output format: jsonl (the exec interface) or table (for people)")
	f.StringVar(&o.checkPath, "check", "", "expectations file the run must meet (docs/expectations.md); exit 1 with the differences")
	f.StringVar(&o.recordPath, "record", "", "write this run's outcome as an expectations file")
	f.StringVar(&o.reportDir, "report", "", "with --check: write junit.xml and summary.md (one test per expectation line) into this folder")
	f.StringVar(&o.engine, "engine", "dedupsim", "dedupsim, or spark: run the pair on a real Apache Spark (pyspark)")
	f.StringVar(&o.sparkVersion, "spark-version", "", "the Spark version to follow (3.5, 4.0, 4.1, 4.2 or 4.3, or a full version such as 4.3.0): pinned confs, key order, checks; same as the query's spark_version")
	return cmd
}

// runExec is exec's RunE.
func runExec(o execOptions) (err error) {
	// Everything the user gave is checked before anything is written.
	switch {
	case o.queryPath == "" || o.inputPath == "":
		return badInput(errors.New("exec: --query and --input are required"))
	case o.format != "jsonl" && o.format != "table":
		return badInput(fmt.Errorf("exec: --format %q (want jsonl or table)", o.format))
	}
	if err := refuseOverlap("exec",
		[]namedPath{readsFile("--query", o.queryPath), readsFile("--input", o.inputPath), checkInput(o.checkPath), readsDir("--checkpoint", o.ckptDir)},
		append([]namedPath{writesFile("--out", o.outPath), writesFile("--record", o.recordPath)}, writesInFolder("--report", o.reportDir, "junit.xml", "summary.md")...)); err != nil {
		return badInput(err)
	}
	if err := checkEngine(o.engine); err != nil {
		return err
	} else if o.engine == "spark" {
		return runExecSpark(o)
	}
	q, err := query.ParseFile(o.queryPath)
	if err != nil {
		return badInput(err)
	}
	if err := applySparkVersion(q, o.sparkVersion); err != nil {
		return err
	}
	// Fewer collections, with a bounded headroom (exec_gc.go), from the
	// passes before the run to the end.
	gc := newGCPacer()
	defer gc.restore()
	next, closeInput, err := openSteps(o.inputPath, q)
	if err != nil {
		return err
	}
	defer closeInput()
	out, err := createOut(o.outPath)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			out.discard()
			o.expect.discard()
		}
	}()
	if o.expect, err = newExpectHook(o, q); err != nil {
		return err
	}
	dir, ckpt, release, err := openCheckpoint(o)
	if err != nil {
		return err
	}
	defer release()
	return execSteps(q, next, ckpt, dir, o, out)
}

// openCheckpoint opens exec's checkpoint (--checkpoint, created if absent,
// or a temporary folder that is never fsynced), takes its lock and removes the temp files a
// killed writer left. release unlocks it and removes a temporary folder.
func openCheckpoint(o execOptions) (dir string, ckpt *fsys.OS, release func(), err error) {
	dir = o.ckptDir
	removeTemp := func() {}
	scratch := dir == ""
	if scratch {
		if dir, err = os.MkdirTemp("", "dedupsim-ckpt-"); err != nil {
			return "", nil, nil, &exitError{code: 1, err: fmt.Errorf("exec: %w", err)}
		}
		removeTemp = func() { os.RemoveAll(dir) }
	} else if st, serr := os.Stat(dir); serr == nil && !st.IsDir() {
		return "", nil, nil, badInput(fmt.Errorf("exec: --checkpoint %s is not a folder", dir))
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, nil, badInput(fmt.Errorf("exec: --checkpoint: %w", err))
	}
	ckpt = fsys.NewOS(dir)
	if scratch {
		// Removed when exec ends, read by no other process nor after a
		// power cut (the run's own restart and crash steps read it back
		// through the page cache, which fsync does not change): its fsyncs
		// (about 25 a batch) would only make the run wait on the disk.
		ckpt = fsys.NewScratchOS(dir)
	}
	unlock, err := checkpoint.Lock(ckpt, dir)
	if err != nil {
		removeTemp()
		return "", nil, nil, classify(o.queryPath, o.inputPath, dir, err)
	}
	release = func() {
		unlock()
		removeTemp()
	}
	if err := checkpoint.RemoveTemps(ckpt); err != nil {
		release()
		return "", nil, nil, &exitError{code: 1, err: fmt.Errorf("exec: %w", err)}
	}
	return dir, ckpt, release, nil
}

// execSteps runs q over the steps next yields on the checkpoint in dir and
// writes every batch record, then the table, to out in o's format; out is
// committed only when everything was written.
func execSteps(q *query.Query, next func() (steps.Step, error), ckpt *fsys.OS, dir string, o execOptions, out *outFile) error {
	bw := bufio.NewWriterSize(out, 256<<10)
	enc := trace.NewEncoder(bw)
	tw := &tableWriter{w: bw}
	var wb *writeBehind
	if o.format != "table" && regularFile(o.inputPath) {
		wb = newWriteBehind(enc)
	}
	emit := func(r *trace.Record) error {
		if err := o.expect.observe(r); err != nil {
			return err
		}
		switch {
		case o.format == "table":
			return tw.Record(r)
		case wb == nil:
			return enc.Record(r)
		}
		return wb.send(r)
	}
	res, err := trace.RunSteps(q, next, trace.Options{
		Checkpoint: ckpt, Seed: o.seed, Emit: emit, NewStateProvider: stores.Open, OnBatch: o.expect.onBatch,
		Warn: func(s string) { fmt.Fprintln(os.Stderr, "dedupsim: warning: "+s) },
		// next is a steps.Reader's, whose rows are compact: the encoder
		// copies them without scanning each again.
		RowsCompact: true,
	})
	if wb != nil {
		if werr := wb.close(); werr != nil {
			return &exitError{code: 1, err: fmt.Errorf("exec: write %s: %w", out.name, werr)}
		}
	}
	if err != nil {
		return classify(o.queryPath, o.inputPath, dir, err)
	}
	if o.format == "table" {
		err = tw.End(res)
	} else if res.HasTable {
		err = enc.WriteTable(res)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = out.commit()
	}
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("exec: write %s: %w", out.name, err)}
	}
	return o.expect.finish(res)
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

// openSteps infers the rows' schema when the query declares none and
// checks the whole steps file (one pass, inferCheckSteps), then opens it
// again for the run, so that a bad line anywhere is found before the
// checkpoint or --out is touched. Every pass streams: memory holds a few
// lines (parallelLines), and in the run up to three (readAhead). An input that cannot be read twice (a
// pipe) is checked as it runs; its errors still leave --out alone.
func openSteps(path string, q *query.Query) (next func() (steps.Step, error), closeFn func(), err error) {
	open := func() (*steps.Reader, *os.File, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, badInput(fmt.Errorf("exec: --input: %w", err))
		}
		r, err := steps.NewReader(path, f, q)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return r, f, nil
	}
	st, err := os.Stat(path)
	if err == nil && st.IsDir() {
		return nil, nil, badInput(fmt.Errorf("exec: --input %s is a directory", path))
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
			return nil, nil, stepsProblem(err)
		}
	}
	r, f, err := open()
	if err != nil {
		return nil, nil, err
	}
	if !regularFile(path) {
		// A pipe's read can block until its writer sends more: a goroutine
		// waiting in it would hold up the end of a run that failed.
		return r.Next, func() { f.Close() }, nil
	}
	next, stop := readAhead(r.Next)
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
		return badInput(fmt.Errorf("exec: --input: %w", err))
	}
	return badInput(err)
}

// outFile is --out: a temp file next to the target, renamed over it when
// the run succeeds (never written through a symbolic link, never left
// half-written), or standard output, or a device named by the user.
type outFile struct {
	io.Writer
	name   string
	target string   // "" when not renamed (stdout, a device)
	tmp    *os.File // the temp file, or a device
}

func createOut(path string) (*outFile, error) {
	if path == "" {
		return &outFile{Writer: os.Stdout, name: "standard output"}, nil
	}
	st, err := os.Lstat(path)
	switch {
	case err == nil && st.Mode()&os.ModeSymlink != 0:
		return nil, badInput(fmt.Errorf("exec: --out %s is a symbolic link: refusing to write through it (give the real path)", path))
	case err == nil && st.IsDir():
		return nil, badInput(fmt.Errorf("exec: --out %s is a directory", path))
	case err == nil && !st.Mode().IsRegular():
		// A device or a pipe (/dev/null): written as it is, nothing to
		// replace atomically.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, badInput(fmt.Errorf("exec: --out: %w", err))
		}
		return &outFile{Writer: f, name: path, tmp: f}, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, badInput(fmt.Errorf("exec: --out: %w", err))
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, badInput(fmt.Errorf("exec: --out %s: folder %s does not exist", path, dir))
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, badInput(fmt.Errorf("exec: --out: %w", err))
	}
	return &outFile{Writer: tmp, name: path, target: path, tmp: tmp}, nil
}

// commit makes the output final: fsync, rename over the target, fsync of
// its folder.
func (o *outFile) commit() error {
	if o.tmp == nil {
		return nil
	}
	if o.target == "" {
		return o.tmp.Close()
	}
	if err := o.tmp.Sync(); err != nil {
		return err
	}
	if err := o.tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(o.tmp.Name(), o.target); err != nil {
		return err
	}
	o.tmp = nil
	if d, err := os.Open(filepath.Dir(o.target)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// discard drops the temp file of a failed run: the target is unchanged.
func (o *outFile) discard() {
	if o.tmp == nil {
		return
	}
	o.tmp.Close()
	if o.target != "" {
		os.Remove(o.tmp.Name())
	}
	o.tmp = nil
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
		return &exitError{code: 1, err: fmt.Errorf("%s:%d: %v", inputPath, se.Line, se.Err)}
	}
	return &exitError{code: 1, err: err}
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

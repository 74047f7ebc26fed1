// Package trace runs a query over a steps trace (the `dedupsim exec`
// format): rows appended to in-memory sources, each line followed by a
// trigger that runs the data batch and every no-data batch Spark would run;
// clean restarts; and crashes at named points followed by a restart from the
// checkpoint. The golden tests, the CLI and the simulator's shrinker share
// it, so every failure ends as a file that replays here.
package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/internal/intmath"
)

// Options configure a run.
type Options struct {
	// Checkpoint is the checkpoint folder (required).
	Checkpoint fsys.FS
	// Seed seeds query and run ids.
	Seed uint64
	// NewStateProvider overrides the state store factory (nil: memory).
	NewStateProvider func(store string, fs fsys.FS) (state.Provider, error)
	// Out receives one JSON line per batch execution and the final table
	// line; nil discards.
	Out io.Writer
	// OnBatch observes every execution record, for tests.
	OnBatch func(*engine.BatchRecord)
	// Warn receives warnings (pinned settings, an armed crash never fired).
	Warn func(string)
	// Emit, when set, receives each record as soon as its batch execution
	// is over, instead of Result.Records, which then stays empty: a run
	// then holds one batch of input and output at a time, not the whole
	// run. An error from Emit ends the run with it.
	Emit func(*Record) error
	// RowsCompact promises that every row next gives has Data that is one
	// JSON value with no insignificant space (row.ValidCompact), as a
	// steps.Reader's rows are: the Encoder then copies the rows of the
	// records as they are instead of scanning each one again.
	RowsCompact bool
}

// AheadError is a checkpoint that has planned more rows of a source than
// the whole steps file holds: the steps file is not the source's whole
// history (it is shorter, or the checkpoint is another input's).
type AheadError struct {
	// File is the checkpoint's offsets file that records the position.
	File   string
	Source string
	// Position is the checkpoint's offset; Rows how many rows the steps
	// file gave the source.
	Position, Rows int64
}

func (e *AheadError) Error() string {
	return fmt.Sprintf("the checkpoint has planned source %q up to row %d (%s) but the steps file holds only %d rows for it: with --checkpoint, the steps file must be the source's whole history, like a Kafka topic",
		e.Source, e.Position, e.File, e.Rows)
}

// Record is one OUT.jsonl line.
type Record struct {
	BatchID  int64             `json:"batchId"`
	Replay   bool              `json:"replay,omitempty"`
	Crashed  string            `json:"crashed,omitempty"`
	Rows     []json.RawMessage `json:"rows"`
	Progress engine.Progress   `json:"progress"`
	// rowsCompact: every row is row.ValidCompact (Options.RowsCompact).
	rowsCompact bool
}

// Result is what a run produced.
type Result struct {
	Records []Record
	// Table is the sink table's final content for table, merge and append.
	Table    []json.RawMessage
	HasTable bool
	// Txn lists the table sink's committed writes (appId, version) in
	// commit order; HasTxn is set for that kind only.
	Txn      []sink.Txn
	HasTxn   bool
	Restarts int
	Crashes  int
}

// StepError is an error caused by one line of the steps file.
type StepError struct {
	Line int
	Err  error
}

func (e *StepError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *StepError) Unwrap() error { return e.Err }

// clock is exec's processing time: the largest event time appended so far
// (exec-format.md: "now" for merge is the largest event time seen).
type clock struct{ ms int64 }

func (c *clock) NowMs() int64 { return c.ms }

// NewSink builds the query's sink, in memory (sink.Descriptor.New). A kind
// the parser never saw (a Query built in code with no sink kind) is the
// parser's default, foreachBatch.
func NewSink(q *query.Query) sink.Sink {
	d, ok := sink.Lookup(q.Sink.Kind)
	if !ok {
		d, _ = sink.Lookup(sink.KindForeachBatch)
	}
	return d.New(q.SinkSettings())
}

// Run executes steps for q.
func Run(q *query.Query, stepList []steps.Step, opt Options) (*Result, error) {
	i := 0
	return RunSteps(q, func() (steps.Step, error) {
		if i == len(stepList) {
			return steps.Step{}, io.EOF
		}
		i++
		return stepList[i-1], nil
	}, opt)
}

// RunSteps executes the steps that next returns until it returns io.EOF
// (a steps.Reader's Next reads a file one line at a time). Rows stay in
// memory only until the batch that read them is committed.
func RunSteps(q *query.Query, next func() (steps.Step, error), opt Options) (*Result, error) {
	if opt.Checkpoint == nil {
		return nil, errors.New("trace: no checkpoint")
	}
	res := &Result{}
	srcs := make([]*source.Memory, len(q.Sources))
	generic := make([]source.Source, len(q.Sources))
	for i, s := range q.Sources {
		srcs[i] = source.NewMemory(s.Name)
		generic[i] = srcs[i]
	}
	out := NewSink(q)
	clk := &clock{}
	armed, armedLine, armedBatch := crashpoint.Point(""), 0, int64(-1)
	var emitErr error
	emit := func(rec *engine.BatchRecord) {
		r := Record{BatchID: rec.BatchID, Replay: rec.Replay, Crashed: string(rec.Crashed), Rows: make([]json.RawMessage, len(rec.Output)), Progress: rec.Progress, rowsCompact: opt.RowsCompact}
		for i, o := range rec.Output {
			r.Rows[i] = o.Data
		}
		if opt.Emit != nil {
			if emitErr == nil {
				emitErr = opt.Emit(&r)
			}
		} else {
			res.Records = append(res.Records, r)
		}
		if opt.OnBatch != nil {
			opt.OnBatch(rec)
		}
	}
	cfg := engine.Config{
		Query: q, Checkpoint: opt.Checkpoint, Sources: generic, Sink: out, Clock: clk,
		NewID: ids.Seeded(opt.Seed), NewStateProvider: opt.NewStateProvider, OnBatch: emit,
		Crash: func(p crashpoint.Point, id int64) bool {
			if armed != "" && p == armed && (armedBatch < 0 || armedBatch == id) {
				armed = ""
				return true
			}
			return false
		},
	}
	warn := func(s string) {
		if opt.Warn != nil {
			opt.Warn(s)
		}
	}
	start := func() (*engine.Engine, error) {
		e, err := engine.Start(cfg)
		if err != nil {
			return nil, err
		}
		for _, w := range e.Warnings() {
			warn(w)
		}
		return e, nil
	}
	eng, err := start()
	if err != nil {
		return nil, err
	}
	// On an error return, stop whatever engine is running so its state
	// provider (Pebble databases) is released.
	stopped := false
	defer func() {
		if !stopped && eng != nil {
			eng.Stop()
		}
	}()
	// trigger is AddData + processAllAvailable, surviving crashes: a dead
	// driver is restarted from the checkpoint and the trigger goes on, so
	// the failed batch is re-run as Spark would.
	// With once, a single RunOnce stands for one processing-time trigger,
	// and a crash ends the trigger (the restarted driver re-runs the batch
	// at its next trigger).
	// trim drops the rows no restart can read again: those up to the end
	// of the last committed batch.
	trim := func() error {
		if eng == nil {
			return nil
		}
		for i, o := range eng.Committed() {
			if err := srcs[i].Trim(o); err != nil {
				return err
			}
		}
		return nil
	}
	trigger := func(once bool) error {
		if behind(eng, srcs) {
			// Resuming: this input is already covered by the checkpoint.
			// What it committed is never read again (a restart replays
			// from the last commit on), so it goes now, not when the run
			// catches up: a re-run over the same file holds the rows of
			// the batches not yet committed, as a first run does.
			return trim()
		}
		defer func() { trim() }()
		for {
			var err error
			if once {
				_, err = eng.RunOnce()
			} else {
				err = eng.ProcessAllAvailable()
			}
			if emitErr != nil {
				return emitErr
			}
			var crash *engine.CrashError
			if !errors.As(err, &crash) {
				return err
			}
			res.Crashes++
			if eng, err = start(); err != nil || once {
				return err
			}
		}
	}
	for {
		st, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch st.Kind {
		case steps.RowsStep:
			for i, s := range q.Sources {
				rows := st.Rows[s.Name]
				if q.EventTimeColumn() != "" {
					for _, r := range rows {
						if !r.EventTimeNull {
							clk.ms = max(clk.ms, intmath.FloorDiv(r.EventTime, 1000))
						}
					}
				}
				srcs[i].Take(rows) // the step's rows are the source's now, read only
			}
			if err := trigger(st.Once); err != nil {
				return nil, &StepError{Line: st.Line, Err: err}
			}
		case steps.TickStep:
			if err := trigger(true); err != nil {
				return nil, &StepError{Line: st.Line, Err: err}
			}
		case steps.RestartStep:
			stopped = true
			if err := eng.Stop(); err != nil {
				return nil, &StepError{Line: st.Line, Err: err}
			}
			res.Restarts++
			if eng, err = start(); err != nil {
				return nil, &StepError{Line: st.Line, Err: err}
			}
			stopped = false
		case steps.CrashStep:
			if armed != "" {
				warn(fmt.Sprintf("line %d: crash at %s armed on line %d never fired", st.Line, armed, armedLine))
			}
			armed, armedLine, armedBatch = st.Crash, st.Line, st.CrashBatch
		}
	}
	if err := ahead(eng, srcs, q); err != nil {
		return nil, err
	}
	if armed != "" {
		warn(fmt.Sprintf("crash at %s armed on line %d never fired: no batch ran after it", armed, armedLine))
	}
	stopped = true
	if err := eng.Stop(); err != nil {
		return nil, err
	}
	if t, ok := out.(sink.Tabled); ok {
		res.Table, res.HasTable = t.Table(), true
		if res.Table == nil {
			res.Table = []json.RawMessage{}
		}
	}
	if t, ok := out.(*sink.Table); ok {
		res.Txn, res.HasTxn = t.Txns(), true
	}
	if opt.Out != nil {
		if err := res.Write(opt.Out); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// ahead reports, at the end of the steps, a source whose rows the
// checkpoint had planned beyond all the steps gave it.
func ahead(e *engine.Engine, srcs []*source.Memory, q *query.Query) error {
	for i, o := range e.Position() {
		n, err := source.ParseOffset(o)
		if err == nil && srcs[i].Len() < n {
			return &AheadError{File: e.PositionFile(), Source: q.Sources[i].Name, Position: int64(n), Rows: int64(srcs[i].Len())}
		}
	}
	return nil
}

// behind reports whether some source has fewer rows than the checkpoint
// already planned, i.e. a resumed run is still re-reading old history.
func behind(e *engine.Engine, srcs []*source.Memory) bool {
	for i, o := range e.Position() {
		n, err := source.ParseOffset(o)
		if err == nil && srcs[i].Len() < n {
			return true
		}
	}
	return false
}

// Write prints the records and the table line as OUT.jsonl.
func (r *Result) Write(w io.Writer) error {
	enc := NewEncoder(w)
	for i := range r.Records {
		if err := enc.Record(&r.Records[i]); err != nil {
			return err
		}
	}
	if r.HasTable {
		return enc.WriteTable(r)
	}
	return nil
}

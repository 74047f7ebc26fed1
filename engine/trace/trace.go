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
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/steps"
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
}

// Record is one OUT.jsonl line.
type Record struct {
	BatchID  int64             `json:"batchId"`
	Replay   bool              `json:"replay,omitempty"`
	Crashed  string            `json:"crashed,omitempty"`
	Rows     []json.RawMessage `json:"rows"`
	Progress engine.Progress   `json:"progress"`
}

// Result is what a run produced.
type Result struct {
	Records []Record
	// Table is the sink table's final content for table, merge and append.
	Table    []json.RawMessage
	HasTable bool
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

// NewSink builds the query's sink.
func NewSink(q *query.Query) sink.Sink {
	switch q.Sink.Kind {
	case "table":
		return &sink.Table{AppID: q.Sink.AppID, PerRun: q.Sink.GenerateAppID}
	case "merge":
		keys := q.Sink.Keys
		if len(keys) == 0 {
			keys = q.Keys
		}
		dec := row.NewDecoder(keys, q.EventTimeColumn())
		return &sink.Merge{HasLookback: q.Sink.HasLookback, LookbackMs: q.Sink.LookbackMs, Key: func(r row.Row) []byte {
			var d row.Row
			if err := dec.Decode(r.Data, &d); err != nil {
				return r.Key // validated rows decode; fall back to the dedup key
			}
			return d.Key
		}}
	case "append":
		return &sink.Append{}
	}
	return &sink.ForeachBatch{}
}

// Run executes steps for q.
func Run(q *query.Query, stepList []steps.Step, opt Options) (*Result, error) {
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
	armed, armedLine, armedBatch := engine.CrashPoint(""), 0, int64(-1)
	emit := func(rec *engine.BatchRecord) {
		r := Record{BatchID: rec.BatchID, Replay: rec.Replay, Crashed: string(rec.Crashed), Rows: make([]json.RawMessage, len(rec.Output)), Progress: rec.Progress}
		for i, o := range rec.Output {
			r.Rows[i] = o.Data
		}
		res.Records = append(res.Records, r)
		if opt.OnBatch != nil {
			opt.OnBatch(rec)
		}
	}
	cfg := engine.Config{
		Query: q, Checkpoint: opt.Checkpoint, Sources: generic, Sink: out, Clock: clk,
		NewID: ids.Seeded(opt.Seed), NewStateProvider: opt.NewStateProvider, OnBatch: emit,
		Crash: func(p engine.CrashPoint, id int64) bool {
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
	trigger := func(once bool) error {
		if behind(eng, srcs) {
			return nil // resuming: this input is already covered by the checkpoint
		}
		for {
			var err error
			if once {
				_, err = eng.RunOnce()
			} else {
				err = eng.ProcessAllAvailable()
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
	for _, st := range stepList {
		switch st.Kind {
		case steps.RowsStep:
			for i, s := range q.Sources {
				for _, r := range st.Rows[s.Name] {
					srcs[i].Append(r)
					if q.EventTimeColumn() != "" && !r.EventTimeNull {
						clk.ms = max(clk.ms, floorDiv(r.EventTime, 1000))
					}
				}
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
			armed, armedLine, armedBatch = engine.CrashPoint(st.Crash), st.Line, st.CrashBatch
		}
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
	if opt.Out != nil {
		if err := res.Write(opt.Out); err != nil {
			return nil, err
		}
	}
	return res, nil
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
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range r.Records {
		if err := enc.Encode(&r.Records[i]); err != nil {
			return err
		}
	}
	if r.HasTable {
		return enc.Encode(struct {
			Table []json.RawMessage `json:"table"`
		}{r.Table})
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Package driver is the engine process: one streaming dedup query run as a
// real driver over Kafka (`dedupsim engine`), with its checkpoint on disk,
// killed with SIGKILL by a supervisor (live.RunProcess) or by itself at an
// armed crash point, and restarted on the same checkpoint under Spark's
// restart rules (spark-semantics.md §9). The CLI parses the flags (Flags)
// and calls Run; tests that need a child process re-exec their own binary
// into Run (drivertest).
package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink/durable"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/engine/sparkver"
	"github.com/dedupsim/dedupsim/engine/state/stores"
	"github.com/dedupsim/dedupsim/live/records"
)

// Options configure one engine process. Flags.Options builds them from
// the command line and checks every value's domain; Run trusts them.
type Options struct {
	Query       string   // the query YAML file
	Checkpoint  string   // the checkpoint folder (created when missing)
	Brokers     []string // Kafka bootstrap addresses
	InputTopics []string // one per query source, in the query's order
	OutputTopic string   // the plain or transactional sink's topic
	// Sink is plain, transactional, table or merge.
	Sink            string
	Table           string // the table or merge sink's Pebble folder
	AppID           string // the transactional or table sink's app id ("": the default)
	StartingOffsets string // where a new checkpoint starts
	// Trigger is the processing-time trigger interval (0: the next batch
	// as soon as the last ends); KafkaTimeout bounds one Kafka call.
	Trigger, KafkaTimeout time.Duration
	// FetchOffset is the Kafka source's fetchOffset.numRetries and
	// fetchOffset.retryIntervalMs (nil: Spark's defaults).
	FetchOffset *kafkasource.FetchOffset
	MaxBatches  int  // stop after this many executions (0: no limit)
	UntilIdle   bool // stop at the first trigger with no new data
	// Clock is processing time (nil: the wall clock).
	Clock engine.Clock
	// Crash, when set, is the crash point the process kills itself at,
	// armed from CrashFrom until CrashUntil (Unix ms; 0: never disarmed).
	Crash                 *CrashAt
	CrashFrom, CrashUntil int64
	// Records, when set, is the records file (live/records) appended to.
	Records string
	// SparkVersion is --spark-version: the Spark version the query
	// follows (spark-semantics.md §17); empty: the query's own, if any.
	SparkVersion string
	// Stdout receives one JSON Line per batch execution; Stderr warnings.
	Stdout, Stderr io.Writer
}

// Exit statuses of the engine process (docs/exit-codes.md).
const (
	ExitFailed   = 1 // any failure but bad input: a supervisor restarts the process
	ExitBadInput = 2 // flags, the query, a corrupt or locked checkpoint: a supervisor must not restart it
	ExitKilled   = 137
)

// Error is a failure of Run with the process's exit status.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func badInput(err error) error { return &Error{Code: ExitBadInput, Err: err} }
func failed(err error) error   { return &Error{Code: ExitFailed, Err: err} }

// Line is the JSON line printed per batch execution.
type Line struct {
	BatchID int64  `json:"batchId"`
	Replay  bool   `json:"replay,omitempty"`
	Input   int    `json:"numInputRows"`
	Output  int    `json:"numOutputRows"`
	RunID   string `json:"runId"`
	Skipped int    `json:"sinkSkippedBatches,omitempty"` // so far in this run
}

// Run runs the query until ctx is done (SIGINT/SIGTERM in the CLI: a stop
// between batches), MaxBatches executions, or with UntilIdle the first
// trigger that finds no new data. Every error is an *Error.
func Run(ctx context.Context, o Options) error {
	if o.Clock == nil {
		o.Clock = WallClock{}
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	q, err := query.ParseFile(o.Query)
	if err != nil {
		return badInput(err)
	}
	if o.SparkVersion != "" {
		v, err := sparkver.Parse(o.SparkVersion)
		if err != nil {
			return badInput(fmt.Errorf("engine: --spark-version: %w", err))
		}
		if err := q.SetSparkVersion(v); err != nil {
			return badInput(err)
		}
	} else if err := q.CheckSparkVersion(); err != nil {
		return badInput(err)
	}
	if len(q.Sources) != len(o.InputTopics) {
		return badInput(fmt.Errorf("engine: %s has %d sources and %d --input-topic were given: give one topic per source, in the query's order",
			o.Query, len(q.Sources), len(o.InputTopics)))
	}
	if err := os.MkdirAll(o.Checkpoint, 0o755); err != nil {
		return failed(err)
	}
	ckpt := fsys.NewOS(o.Checkpoint)
	// One writer per checkpoint, for the life of the process (the kernel
	// drops the lock of a killed process, so a supervisor's restart after
	// SIGKILL finds it free).
	release, err := checkpoint.Lock(ckpt, o.Checkpoint)
	if err != nil {
		return o.engineError(err)
	}
	defer release()
	if err := checkpoint.RemoveTemps(ckpt); err != nil {
		return failed(err)
	}
	p := &process{o: o, q: q, ckpt: ckpt, enc: json.NewEncoder(o.Stdout)}
	defer p.close()
	if err := p.open(); err != nil {
		return err
	}
	if err := p.start(); err != nil {
		return err
	}
	return p.loop(ctx)
}

// process is one run of the engine with its sources, sink and records.
type process struct {
	o    Options
	q    *query.Query
	ckpt fsys.FS

	srcs  []*kafkasource.Source
	out   *durable.Sink
	recs  *records.Writer // nil: no records file
	eng   *engine.Engine
	runID string
	enc   *json.Encoder

	executed int
	recErr   error // the first failed records write
	crashing bool  // the armed point fired after the sink write: die once reported
}

// open opens the sources, the sink and the records file.
func (p *process) open() error {
	for i, topic := range p.o.InputTopics {
		src, err := kafkasource.New(kafkasource.Config{Brokers: p.o.Brokers, Topic: topic,
			StartingOffsets: p.o.StartingOffsets, InitialOffsetsFS: p.ckpt,
			InitialOffsetsPath: fmt.Sprintf("sources/%d/0", i), Timeout: p.o.KafkaTimeout, FetchOffset: p.o.FetchOffset})
		if err != nil {
			return badInput(fmt.Errorf("engine: %w", err))
		}
		p.srcs = append(p.srcs, src)
	}
	out, err := durable.Open(p.o.Sink, p.q, durable.Config{Brokers: p.o.Brokers, Topic: p.o.OutputTopic, AppID: p.o.AppID, TableDir: p.o.Table, Timeout: p.o.KafkaTimeout})
	if err != nil {
		return failed(fmt.Errorf("engine: %w", err))
	}
	p.out = out
	if p.o.Records != "" {
		if p.recs, err = records.Create(p.o.Records); err != nil {
			return failed(fmt.Errorf("engine: records: %w", err))
		}
	}
	return nil
}

// start starts the engine on the checkpoint and resumes the sources where
// it stands.
func (p *process) start() error {
	generic := make([]source.Source, len(p.srcs))
	for i, s := range p.srcs {
		generic[i] = s
	}
	e, err := engine.Start(engine.Config{
		Query: p.q, Checkpoint: p.ckpt, Sources: generic, Sink: &recordingSink{Sink: p.out, p: p},
		Clock: p.o.Clock, NewID: ids.Seeded(rand.Uint64()), NewStateProvider: stores.Open,
		Crash: p.crash, BeforeSink: p.beforeSink, OnBatch: p.onBatch,
	})
	if err != nil {
		return p.o.engineError(err)
	}
	p.eng = e
	p.runID = e.RunID()
	for _, w := range e.Warnings() {
		fmt.Fprintln(p.o.Stderr, "dedupsim engine: warning: "+w)
	}
	if err := p.record(&records.Record{Kind: records.KindStart, WallMs: time.Now().UnixMilli(), RunID: p.runID}); err != nil {
		return failed(fmt.Errorf("engine: records: %w", err))
	}
	for i, s := range p.srcs {
		if err := s.Resume(e.Position()[i]); err != nil {
			return p.o.engineError(err)
		}
	}
	return nil
}

// loop runs a batch per trigger until a stop.
func (p *process) loop(ctx context.Context) error {
	interval := p.o.Trigger
	if interval <= 0 {
		interval = 100 * time.Millisecond // idle poll
	}
	// A real-time batch always runs: without a trigger interval, batches
	// are spaced by the query's batch duration, as Spark's are.
	rt := p.eng.Query().RealTimeMs
	if rt > 0 && p.o.Trigger <= 0 {
		interval = time.Duration(rt) * time.Millisecond
	}
	for ctx.Err() == nil {
		began := time.Now()
		ran, err := p.eng.RunOnce()
		if err != nil {
			return p.o.engineError(err)
		}
		if p.recErr != nil {
			return failed(fmt.Errorf("engine: records: %w", p.recErr))
		}
		if p.o.MaxBatches > 0 && p.executed >= p.o.MaxBatches {
			return nil
		}
		// A real-time batch always runs: idle is one that read nothing.
		if p.o.UntilIdle && (!ran || p.eng.Query().RealTimeMs > 0 && p.eng.LastBatchEmpty()) {
			return nil
		}
		wait := interval - time.Since(began)
		if ran && p.o.Trigger <= 0 && rt == 0 {
			wait = 0 // no trigger interval: run the next batch at once
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(max(wait, 0)):
		}
	}
	return nil
}

// close stops the engine and closes what open opened, in reverse order.
func (p *process) close() {
	if p.eng != nil {
		p.eng.Stop()
	}
	if p.recs != nil {
		p.recs.Close()
	}
	if p.out != nil {
		p.out.Close()
	}
	for _, s := range p.srcs {
		s.Close()
	}
}

// record appends r to the records file, if there is one.
func (p *process) record(r *records.Record) error {
	if p.recs == nil {
		return nil
	}
	return p.recs.Write(r)
}

// crash is the engine's crash hook: at the armed point the process writes
// a crash record and kills itself. At after-sink-write and after-commit
// the engine first reports the execution (OnBatch, Crashed set), so that
// record is written before the kill too; nothing else runs in between.
func (p *process) crash(pt crashpoint.Point, id int64) bool {
	now := time.Now().UnixMilli()
	c := p.o.Crash
	if c == nil || pt != c.Point || (c.Batch >= 0 && c.Batch != id) ||
		(p.o.CrashUntil != 0 && now >= p.o.CrashUntil) || now < p.o.CrashFrom {
		return false
	}
	p.record(&records.Record{Kind: records.KindCrash, WallMs: time.Now().UnixMilli(), RunID: p.runID, BatchID: id, Crashed: string(pt)})
	if pt != crashpoint.AfterSinkWrite && pt != crashpoint.AfterCommit {
		die(pt, id)
	}
	p.crashing = true
	return true
}

func (p *process) beforeSink(r *engine.BatchRecord) {
	if p.recErr == nil {
		p.recErr = p.record(records.Executed(r, p.runID, time.Now().UnixMilli()))
	}
}

func (p *process) onBatch(r *engine.BatchRecord) {
	p.executed++
	p.enc.Encode(Line{BatchID: r.BatchID, Replay: r.Replay, Input: len(r.Input), Output: len(r.Output),
		RunID: p.runID, Skipped: p.out.Skipped()})
	if p.recErr == nil {
		p.recErr = p.record(records.Completed(r, p.runID, time.Now().UnixMilli()))
	}
	if p.crashing {
		die(r.Crashed, r.BatchID)
	}
}

// engineError classifies a failure of the engine: a corrupt or locked
// checkpoint, or a query the checkpoint refuses, is bad input (and a
// supervisor must not restart it); anything else fails the run (and a
// supervisor restarts the process).
func (o *Options) engineError(err error) error {
	var iu *checkpoint.InUseError
	if errors.As(err, &iu) {
		return badInput(iu)
	}
	if ce, ok := engine.CheckpointError(err); ok {
		return badInput(fmt.Errorf("checkpoint error: %s: %s", filepath.Join(o.Checkpoint, filepath.FromSlash(ce.File)), ce.Msg))
	}
	var inc *engine.IncompatibleError
	if errors.As(err, &inc) {
		return badInput(fmt.Errorf("%s: %v", o.Query, inc))
	}
	return failed(fmt.Errorf("engine: %w", err))
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sink/kafkasink"
	"github.com/dedupsim/dedupsim/engine/sink/pebblesink"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/engine/state/stores"
	"github.com/dedupsim/dedupsim/live"
)

// crashEnv arms a crash point like --crash-at; crashUntilEnv disarms it
// from a wall-clock time on, like --crash-until.
const (
	crashEnv      = "DEDUPSIM_CRASH_AT"
	crashFromEnv  = "DEDUPSIM_CRASH_FROM"
	crashUntilEnv = "DEDUPSIM_CRASH_UNTIL"
)

// wallClock is the engine's clock in a real run.
type wallClock struct{}

func (wallClock) NowMs() int64 { return time.Now().UnixMilli() }

// scaledClock is a harness's compressed timeline: processing time virt0
// at wall time wall0, running scale times faster than the wall clock.
type scaledClock struct {
	virt0, wall0 int64
	scale        float64
}

func (c scaledClock) NowMs() int64 {
	return c.virt0 + int64(math.Floor(float64(time.Now().UnixMilli()-c.wall0)*c.scale))
}

// maxClockScale bounds --clock's SCALE: a harness compresses hours into
// minutes, not years into milliseconds.
const maxClockScale = 1e6

// parseClock parses --clock VIRT0:WALL0:SCALE.
func parseClock(s string) (engine.Clock, error) {
	if s == "" {
		return wallClock{}, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("--clock %q: want VIRT0_MS:WALL0_MS:SCALE", s)
	}
	v, err1 := strconv.ParseInt(parts[0], 10, 64)
	w, err2 := strconv.ParseInt(parts[1], 10, 64)
	sc, err3 := strconv.ParseFloat(parts[2], 64)
	if err1 != nil || err2 != nil || err3 != nil || !(sc > 0) || math.IsInf(sc, 0) {
		return nil, fmt.Errorf("--clock %q: want VIRT0_MS:WALL0_MS:SCALE with integer times and a positive scale", s)
	}
	if v < row.MinEventTimeMicros/1000 || v > row.MaxEventTimeMicros/1000 || w < 0 || w > row.MaxEventTimeMicros/1000 || sc > maxClockScale {
		return nil, fmt.Errorf("--clock %q: VIRT0_MS and WALL0_MS must be times in years 0000-9999 (WALL0 from 1970) and SCALE at most %g", s, float64(maxClockScale))
	}
	return scaledClock{virt0: v, wall0: w, scale: sc}, nil
}

// crashSpec is a parsed --crash-at POINT[:BATCH]; batch -1 is any batch.
type crashSpec struct {
	point engine.CrashPoint
	batch int64
}

func parseCrashAt(s string) (*crashSpec, error) {
	if s == "" {
		return nil, nil
	}
	name, batch, hasBatch := strings.Cut(s, ":")
	c := &crashSpec{point: engine.CrashPoint(name), batch: -1}
	if !slices.Contains(engine.CrashPoints, c.point) {
		var names []string
		for _, p := range engine.CrashPoints {
			names = append(names, string(p))
		}
		return nil, fmt.Errorf("crash point %q: want one of %s, optionally :BATCH", name, strings.Join(names, ", "))
	}
	if hasBatch {
		n, err := strconv.ParseInt(batch, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("crash point %q: batch %q is not a batch id", s, batch)
		}
		c.batch = n
	}
	return c, nil
}

// die ends the process at once, with no cleanup: SIGKILL to itself (what
// a crashed driver looks like to the broker and the checkpoint), and
// os.Exit(137) should the signal somehow not land.
func die(p engine.CrashPoint, id int64) {
	fmt.Fprintf(os.Stderr, "dedupsim engine: crash at %s of batch %d\n", p, id)
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	os.Exit(137)
}

// engineLine is the one JSON line printed per batch execution.
type engineLine struct {
	BatchID int64  `json:"batchId"`
	Replay  bool   `json:"replay,omitempty"`
	Input   int    `json:"numInputRows"`
	Output  int    `json:"numOutputRows"`
	RunID   string `json:"runId"`
	Skipped int    `json:"sinkSkippedBatches,omitempty"` // so far in this run
}

// engineSink is the engine process's sink with what a harness needs to
// know of each write: how many rows it kept.
type engineSink struct {
	sink.Sink
	close func() error
	// kept reports how many of n delivered rows the last AddBatch kept.
	kept func(n int) int
}

// openEngineSink builds the --sink: a Kafka sink on outTopic, or a table or
// merge sink persisted with Pebble in tableDir.
func openEngineSink(kind string, q *query.Query, brokers []string, outTopic, appID, tableDir string, timeout time.Duration) (*engineSink, error) {
	base := kafkasink.Config{Brokers: brokers, Topic: outTopic, Timeout: timeout}
	switch kind {
	case "transactional":
		txn, err := kafkasink.NewTransactional(kafkasink.TransactionalConfig{Config: base, AppID: appID})
		if err != nil {
			return nil, err
		}
		skipped := 0
		return &engineSink{Sink: txn, close: func() error { txn.Close(); return nil }, kept: func(n int) int {
			if txn.Skipped > skipped {
				skipped = txn.Skipped
				return 0
			}
			return n
		}}, nil
	case "plain":
		p, err := kafkasink.NewPlain(kafkasink.PlainConfig{Config: base})
		if err != nil {
			return nil, err
		}
		return &engineSink{Sink: p, close: func() error { p.Close(); return nil }, kept: func(n int) int { return n }}, nil
	case "table", "merge":
		qq := *q
		qq.Sink.Kind = query.SinkKind(kind)
		if appID != "" {
			qq.Sink.AppID = appID
		}
		t, err := pebblesink.Open(tableDir, &qq)
		if err != nil {
			return nil, err
		}
		return &engineSink{Sink: t, close: t.Close, kept: func(int) int { return t.LastKept() }}, nil
	}
	return nil, fmt.Errorf("sink %q: want plain, transactional, table or merge", kind)
}

// recordingSink appends a write record once the inner sink accepted a
// batch, before the engine goes on to the commit log.
type recordingSink struct {
	*engineSink
	rec   *live.RecordWriter
	runID *string
}

func (s *recordingSink) AddBatch(b sink.Batch) error {
	if err := s.engineSink.AddBatch(b); err != nil {
		return err
	}
	kept := s.kept(len(b.Rows))
	if s.rec == nil {
		return nil
	}
	return s.rec.Write(&live.EngineRecord{Kind: live.RecordWrite, WallMs: time.Now().UnixMilli(), RunID: *s.runID, BatchID: b.ID, Kept: kept})
}

func newEngineCmd() *cobra.Command {
	var (
		queryPath, ckptDir, bootstrap, outTopic, sinkKind  string
		startingOffsets, crashAt, appID, tableDir, recPath string
		clockSpec                                          string
		inTopics                                           []string
		trigger                                            time.Duration
		maxBatches                                         int
		untilIdle                                          bool
		timeout                                            time.Duration
		crashFrom, crashUntil                              int64
		runEngine                                          func(cmd *cobra.Command) error
	)
	cmd := &cobra.Command{
		Use:   "engine --query QUERY.yaml --checkpoint DIR --bootstrap HOST:PORT --input-topic IN [--input-topic IN2] (--output-topic OUT | --sink table|merge --table DIR)",
		Short: "Run the dedup engine as a long-running process over Kafka",
		Long: `engine runs one streaming dedup query as a real driver process: it reads one input topic per
query source (read_committed, Spark's Kafka source offsets; --input-topic once per source, in
the query's order), keeps its checkpoint in DIR, and writes every batch to its sink:
  transactional  the output topic, exactly once (rows and an (app id, batch id) marker in one
                 Kafka transaction; a batch already committed is skipped)
  plain          the output topic, at least once (a replayed batch is written again)
  table, merge   a table kept with Pebble in --table DIR: the idempotent table sink (txnAppId /
                 txnVersion) or MERGE ... WHEN NOT MATCHED THEN INSERT, as the query's sink section
                 configures them
Restarted on the same checkpoint it resumes under Spark's restart rules, re-running a planned
batch that has no commit.

It prints one JSON line per batch execution and runs until SIGINT/SIGTERM, --max-batches
executions, or, with --until-idle, the first trigger that finds no new data. --records FILE
appends lines a harness needs to check what a killed process did: each execution as its sink
is called (rows read, where, their fate, the output, watermarks), the sink write, and the
completion with the StreamingQueryProgress; each in one write, so a SIGKILL loses at most the
line being written.

--crash-at POINT[:BATCH] (or the environment variable DEDUPSIM_CRASH_AT) makes the process
kill itself with SIGKILL, no cleanup, at that crash point (of that batch, or of the first
batch reaching it): after-offsets-write, after-state-commit, after-sink-write, after-commit.
--crash-from MS and --crash-until MS (or DEDUPSIM_CRASH_FROM, DEDUPSIM_CRASH_UNTIL) arm it only
from and until those Unix times in ms.

Exit status (docs/exit-codes.md): 0 when stopped, 2 on bad input (flags, the query, a corrupt
checkpoint, a checkpoint in use by another process: a supervisor must not restart it), 1 on
any other failure (a supervisor restarts it), 137 (killed) at a crash point.`,
		Args: cobra.NoArgs,
	}
	// Failures other than bad input exit 1 (a supervisor restarts on 1, not
	// on 2).
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		err := runEngine(cmd)
		var ee *exitError
		if err != nil && !errors.As(err, &ee) {
			return &exitError{code: 1, err: err}
		}
		return err
	}
	runEngine = func(cmd *cobra.Command) error {
		// SIGINT/SIGTERM stop the process between batches; caught from the
		// start, so a stop during start-up is a clean stop too.
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		tableSink := sinkKind == "table" || sinkKind == "merge"
		switch {
		case queryPath == "" || ckptDir == "" || bootstrap == "" || len(inTopics) == 0:
			return badInput(errors.New("engine: --query, --checkpoint, --bootstrap and --input-topic are required"))
		case !tableSink && sinkKind != "plain" && sinkKind != "transactional":
			return badInput(fmt.Errorf("engine: --sink %q: want plain, transactional, table or merge", sinkKind))
		case tableSink && tableDir == "":
			return badInput(fmt.Errorf("engine: --sink %s needs --table DIR", sinkKind))
		case !tableSink && outTopic == "":
			return badInput(fmt.Errorf("engine: --sink %s needs --output-topic", sinkKind))
		}
		if !cmd.Flags().Changed("crash-at") {
			crashAt = os.Getenv(crashEnv)
		}
		for _, w := range []struct {
			flag, env string
			v         *int64
		}{{"crash-from", crashFromEnv, &crashFrom}, {"crash-until", crashUntilEnv, &crashUntil}} {
			if v := os.Getenv(w.env); v != "" && !cmd.Flags().Changed(w.flag) {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return badInput(fmt.Errorf("engine: %s=%q: want Unix time in ms", w.env, v))
				}
				*w.v = n
			}
		}
		crash, err := parseCrashAt(crashAt)
		if err != nil {
			return badInput(fmt.Errorf("engine: %w", err))
		}
		clock, err := parseClock(clockSpec)
		if err != nil {
			return badInput(fmt.Errorf("engine: %w", err))
		}
		if err := checkEngineFlags(engineFlags{maxBatches: maxBatches, trigger: trigger, timeout: timeout,
			crashFrom: crashFrom, crashUntil: crashUntil, crashSet: crash != nil, bootstrap: bootstrap,
			inTopics: inTopics, outTopic: outTopic, appID: appID, appIDSet: cmd.Flags().Changed("app-id")}); err != nil {
			return badInput(fmt.Errorf("engine: %w", err))
		}
		q, err := query.ParseFile(queryPath)
		if err != nil {
			return badInput(err)
		}
		if len(q.Sources) != len(inTopics) {
			return badInput(fmt.Errorf("engine: %s has %d sources and %d --input-topic were given: give one topic per source, in the query's order",
				queryPath, len(q.Sources), len(inTopics)))
		}
		if err := os.MkdirAll(ckptDir, 0o755); err != nil {
			return err
		}
		brokers := strings.Split(bootstrap, ",")
		ckpt := fsys.NewOS(ckptDir)
		// One writer per checkpoint, for the life of the process (the
		// kernel drops the lock of a killed process, so a supervisor's
		// restart after SIGKILL finds it free).
		release, err := checkpoint.Lock(ckpt, ckptDir)
		if err != nil {
			return engineError(ckptDir, queryPath, err)
		}
		defer release()
		if err := checkpoint.RemoveTemps(ckpt); err != nil {
			return err
		}

		var srcs []*kafkasource.Source
		var generic []source.Source
		defer func() {
			for _, s := range srcs {
				s.Close()
			}
		}()
		for i, topic := range inTopics {
			src, err := kafkasource.New(kafkasource.Config{Brokers: brokers, Topic: topic,
				StartingOffsets: startingOffsets, InitialOffsetsFS: ckpt,
				InitialOffsetsPath: fmt.Sprintf("sources/%d/0", i), Timeout: timeout})
			if err != nil {
				return badInput(fmt.Errorf("engine: %w", err))
			}
			srcs = append(srcs, src)
			generic = append(generic, src)
		}
		out, err := openEngineSink(sinkKind, q, brokers, outTopic, appID, tableDir, timeout)
		if err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		defer out.close()
		var recs *live.RecordWriter
		if recPath != "" {
			if recs, err = live.CreateRecords(recPath); err != nil {
				return fmt.Errorf("engine: records: %w", err)
			}
			defer recs.Close()
		}
		var runID string
		snk := &recordingSink{engineSink: out, rec: recs, runID: &runID}

		enc := json.NewEncoder(cmd.OutOrStdout())
		var executed int
		var recErr error
		crashing := false
		e, err := engine.Start(engine.Config{
			Query: q, Checkpoint: ckpt, Sources: generic, Sink: snk,
			Clock: clock, NewID: ids.Seeded(rand.Uint64()), NewStateProvider: stores.Open,
			// At a crash point the process writes a crash record and
			// kills itself. At after-sink-write and after-commit the
			// engine first reports the execution (OnBatch, Crashed set),
			// so that record is written before the kill too; nothing
			// else runs in between.
			Crash: func(p engine.CrashPoint, id int64) bool {
				now := time.Now().UnixMilli()
				if crash == nil || p != crash.point || (crash.batch >= 0 && crash.batch != id) ||
					(crashUntil != 0 && now >= crashUntil) || now < crashFrom {
					return false
				}
				if recs != nil {
					recs.Write(&live.EngineRecord{Kind: live.RecordCrash, WallMs: time.Now().UnixMilli(), RunID: runID, BatchID: id, Crashed: string(p)})
				}
				if p != engine.AfterSinkWrite && p != engine.AfterCommit {
					die(p, id)
				}
				crashing = true
				return true
			},
			BeforeSink: func(r *engine.BatchRecord) {
				if recs != nil && recErr == nil {
					recErr = recs.Write(executedRecord(r, runID))
				}
			},
			OnBatch: func(r *engine.BatchRecord) {
				executed++
				enc.Encode(engineLine{BatchID: r.BatchID, Replay: r.Replay, Input: len(r.Input), Output: len(r.Output),
					RunID: runID, Skipped: skippedOf(out)})
				if recs != nil && recErr == nil {
					recErr = recs.Write(batchRecord(r, runID))
				}
				if crashing {
					die(r.Crashed, r.BatchID)
				}
			},
		})
		if err != nil {
			return engineError(ckptDir, queryPath, err)
		}
		defer e.Stop()
		runID = e.RunID()
		for _, w := range e.Warnings() {
			fmt.Fprintln(cmd.ErrOrStderr(), "dedupsim engine: warning: "+w)
		}
		if recs != nil {
			if err := recs.Write(&live.EngineRecord{Kind: live.RecordStart, WallMs: time.Now().UnixMilli(), RunID: runID}); err != nil {
				return fmt.Errorf("engine: records: %w", err)
			}
		}
		for i, s := range srcs {
			if err := s.Resume(e.Position()[i]); err != nil {
				return engineError(ckptDir, queryPath, err)
			}
		}

		interval := trigger
		if interval <= 0 {
			interval = 100 * time.Millisecond // idle poll
		}
		for ctx.Err() == nil {
			began := time.Now()
			ran, err := e.RunOnce()
			if err != nil {
				return engineError(ckptDir, queryPath, err)
			}
			if recErr != nil {
				return fmt.Errorf("engine: records: %w", recErr)
			}
			if maxBatches > 0 && executed >= maxBatches {
				return nil
			}
			if !ran && untilIdle {
				return nil
			}
			wait := interval - time.Since(began)
			if ran && trigger <= 0 {
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
	f := cmd.Flags()
	f.StringVar(&queryPath, "query", "", "query YAML")
	f.StringVar(&ckptDir, "checkpoint", "", "checkpoint directory (created when missing)")
	f.StringVar(&bootstrap, "bootstrap", "", "Kafka bootstrap addresses, comma-separated")
	f.StringArrayVar(&inTopics, "input-topic", nil, "topic a source reads; once per query source, in the query's order")
	f.StringVar(&outTopic, "output-topic", "", "topic the plain or transactional sink writes")
	f.StringVar(&sinkKind, "sink", "transactional", "plain, transactional, table or merge")
	f.StringVar(&tableDir, "table", "", "directory of the table or merge sink's Pebble store")
	f.StringVar(&appID, "app-id", "", "transactional or table sink's app id (default: the query's, else the checkpoint's query id)")
	f.StringVar(&startingOffsets, "starting-offsets", "earliest", "where a new checkpoint starts: earliest, latest or a JSON offset")
	f.DurationVar(&trigger, "trigger-interval", 0, "processing-time trigger interval (0: next batch as soon as the last ends)")
	f.StringVar(&crashAt, "crash-at", "", "crash point POINT[:BATCH] at which the process kills itself (also "+crashEnv+")")
	f.Int64Var(&crashFrom, "crash-from", 0, "Unix time in ms before which --crash-at is not armed (also "+crashFromEnv+")")
	f.Int64Var(&crashUntil, "crash-until", 0, "Unix time in ms from which --crash-at is disarmed (also "+crashUntilEnv+"; 0: never)")
	f.StringVar(&recPath, "records", "", "append a JSON line per sink write and batch execution to this file")
	f.StringVar(&clockSpec, "clock", "", "processing-time clock VIRT0_MS:WALL0_MS:SCALE: VIRT0 at wall time WALL0, SCALE times faster (a harness's compressed timeline; default the wall clock)")
	f.IntVar(&maxBatches, "max-batches", 0, "stop after this many batch executions (0: no limit)")
	f.BoolVar(&untilIdle, "until-idle", false, "stop at the first trigger with no new data")
	f.DurationVar(&timeout, "kafka-timeout", 30*time.Second, "bound on one Kafka call of the source or sink")
	return cmd
}

// Bounds of the engine's numeric flags.
const (
	maxEngineDuration = 24 * time.Hour
	maxMaxBatches     = 1 << 31
)

// engineFlags are the engine verb's flags that have a domain to check.
type engineFlags struct {
	maxBatches            int
	trigger, timeout      time.Duration
	crashFrom, crashUntil int64
	crashSet              bool
	bootstrap, outTopic   string
	inTopics              []string
	appID                 string
	appIDSet              bool
}

// checkEngineFlags refuses every numeric or duration flag outside its
// range, and empty names, with the range in human units.
func checkEngineFlags(f engineFlags) error {
	switch {
	case f.maxBatches < 0 || f.maxBatches > maxMaxBatches:
		return fmt.Errorf("--max-batches %d: want 0 (no limit) or a count in [1, %d]", f.maxBatches, maxMaxBatches)
	case f.trigger < 0 || f.trigger > maxEngineDuration || (f.trigger > 0 && f.trigger < time.Millisecond):
		return fmt.Errorf("--trigger-interval %v: want 0 (the next batch as soon as the last ends) or a duration in [1ms, 24h]", f.trigger)
	case f.timeout < time.Millisecond || f.timeout > maxEngineDuration:
		return fmt.Errorf("--kafka-timeout %v: want a duration in [1ms, 24h]", f.timeout)
	case f.crashFrom < 0:
		return fmt.Errorf("--crash-from %d: want a Unix time in ms, >= 0", f.crashFrom)
	case f.crashUntil < 0:
		return fmt.Errorf("--crash-until %d: want a Unix time in ms, >= 0 (0: never disarmed)", f.crashUntil)
	case f.crashSet && f.crashUntil != 0 && f.crashUntil <= f.crashFrom:
		return fmt.Errorf("--crash-until %d is not after --crash-from %d: the crash point could never fire", f.crashUntil, f.crashFrom)
	case f.appIDSet && f.appID == "":
		return errors.New("--app-id: must not be empty (leave it out for the default)")
	}
	for _, b := range strings.Split(f.bootstrap, ",") {
		if strings.TrimSpace(b) == "" || strings.ContainsAny(b, " \t\n") {
			return fmt.Errorf("--bootstrap %q: want HOST:PORT[,HOST:PORT...] with no empty or spaced entry", f.bootstrap)
		}
	}
	for _, t := range f.inTopics {
		if t == "" {
			return errors.New("--input-topic: a topic name must not be empty")
		}
	}
	return nil
}

// engineError classifies a failure of the engine verb: a corrupt or
// locked checkpoint, or a query the checkpoint refuses, is bad input (2,
// and a supervisor must not restart it); anything else fails the run (1,
// and a supervisor restarts the process).
func engineError(ckptDir, queryPath string, err error) error {
	if e, ok := checkpointProblem(ckptDir, err); ok {
		return e
	}
	var inc *engine.IncompatibleError
	if errors.As(err, &inc) {
		return badInput(fmt.Errorf("%s: %v", queryPath, inc))
	}
	return &exitError{code: 1, err: fmt.Errorf("engine: %w", err)}
}

// skippedOf is the transactional or table sink's count of batches skipped
// as already committed in this run.
func skippedOf(s *engineSink) int {
	switch v := s.Sink.(type) {
	case *kafkasink.Transactional:
		return v.Skipped
	case *pebblesink.Sink:
		return v.Skipped
	}
	return 0
}

// executedRecord is the records-file line of a batch about to reach its
// sink.
func executedRecord(r *engine.BatchRecord, runID string) *live.EngineRecord {
	rec := &live.EngineRecord{Kind: live.RecordExecuted, WallMs: time.Now().UnixMilli(), RunID: runID, BatchID: r.BatchID,
		Replay: r.Replay, Input: make([]json.RawMessage, len(r.Input)), Outcomes: make([]string, len(r.Input)),
		Rows: make([]json.RawMessage, len(r.Output)), LateWatermarkMs: r.LateWatermarkMs, WatermarkMs: r.WatermarkMs}
	for i := range r.Input {
		in := &r.Input[i]
		rec.Input[i] = in.Data
		rec.Outcomes[i] = r.Outcomes[i].String()
		if in.Positioned {
			if rec.Pos == nil {
				rec.Pos = make([][3]int64, len(r.Input))
			}
			rec.Pos[i] = [3]int64{int64(in.Source), int64(in.Partition), in.Offset}
		}
	}
	for i := range r.Output {
		rec.Rows[i] = r.Output[i].Data
	}
	return rec
}

// batchRecord is the records-file line of a completed batch execution (or
// of one that dies at an armed point after its sink write).
func batchRecord(r *engine.BatchRecord, runID string) *live.EngineRecord {
	rec := &live.EngineRecord{Kind: live.RecordBatch, WallMs: time.Now().UnixMilli(), RunID: runID, BatchID: r.BatchID,
		NextWatermarkMs: r.NextWatermarkMs, Crashed: string(r.Crashed)}
	if p, err := json.Marshal(r.Progress); err == nil {
		rec.Progress = p
	}
	return rec
}

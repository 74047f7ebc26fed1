// Package sim is the deterministic world around the reference engine: a
// seeded run of producers appending to a simulated partitioned log, a
// driver that triggers micro-batches on a processing-time schedule over a
// simulated disk, crashes the engine and restarts it from its checkpoint,
// and a recorded history (sim/history) for the checker.
//
// Determinism: no goroutines, no wall clock, no global randomness. Every
// subsystem draws from its own stream derived from (seed, name) (Stream),
// processing time is virtual, and the engine is single-threaded, so the
// same Config and seed give a byte-identical history.
//
// A run has two phases (TigerBeetle's VOPR): a fault phase, in which the
// fault plan is active, and a healed phase (faults off, silent and lagging
// sources resume, no crashes) long enough to converge; producers stop at
// its end and the driver keeps triggering until the query has consumed the
// whole log and runs nothing more.
package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/engine/dedup"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/state/stores"
	"github.com/dedupsim/dedupsim/engine/trace"
	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/internal/intmath"
	"github.com/dedupsim/dedupsim/sim/history"
	"github.com/dedupsim/dedupsim/sim/record"
)

// Situation marks in the coverage, beside the fault names.
const (
	MarkReplay      = "sim/replay"       // a planned batch was re-run after a crash
	MarkLateDrop    = "sim/late-drop"    // a row was dropped as late
	MarkDupDrop     = "sim/dup-drop"     // a row was dropped as a duplicate
	MarkEviction    = "sim/eviction"     // state rows were evicted
	MarkNoDataBatch = "sim/no-data"      // a no-data batch ran
	MarkSinkSkipped = "sim/sink-skipped" // the sink kept less than it was given
)

// Run simulates cfg with seed and returns the history. An error means the
// configuration is invalid or the run could not go on: the engine failed
// other than by an injected crash, or could not restart from its checkpoint
// (a finding in itself: the message names the seed).
func Run(cfg Config, seed uint64) (*history.History, error) {
	p, err := cfg.prepare()
	if err != nil {
		return nil, err
	}
	if err := refuseLiveOnly(p); err != nil {
		return nil, err
	}
	w, err := newWorld(p, seed)
	if err != nil {
		return nil, err
	}
	h, err := w.run()
	if err != nil {
		return nil, fmt.Errorf("sim: seed %d at %dms: %w", seed, w.nowMs-p.startMs, err)
	}
	return h, nil
}

// CheckRunnable is the error Run returns before it simulates anything:
// an invalid configuration, or a fault that needs a real broker
// (ErrLiveOnly). A caller that reports before the run starts refuses
// with it first, as Run would.
func (c Config) CheckRunnable() error {
	p, err := c.prepare()
	if err != nil {
		return err
	}
	return refuseLiveOnly(p)
}

// ErrLiveOnly is wrapped by Run's refusal of a fault that needs a real
// broker (a valid configuration, but not for the simulator).
var ErrLiveOnly = errors.New("the fault needs a real broker: dedupsim run --kafka local")

// refuseLiveOnly refuses a plan that enables a live-only fault.
func refuseLiveOnly(p *prepared) error {
	if p.Plan.Swarm {
		return nil // swarm never draws one
	}
	for _, name := range p.set.Names() {
		if f, _ := faults.Lookup(name); f.LiveOnly {
			return fmt.Errorf("sim: fault %s: %w", name, ErrLiveOnly)
		}
	}
	return nil
}

type world struct {
	p    *prepared
	seed uint64
	set  faults.Settings
	cov  faults.Coverage
	h    *history.History

	startUs, healUs, endUs int64 // endUs: producers stop
	nowMs                  int64
	intervalMs, downMs     int64

	ids    *arena // the event ids (History.Copies' Event strings point into it)
	topics []*topic
	gens   []*sourceGen
	queue  sendQueue
	seq    uint64
	genUs  int64 // the sources generated every event up to here (see generateUntil)

	silenceSource, lagSource int

	q       *query.Query
	qText   string
	disk    *disk
	sources []source.Source
	sink    *simSink
	eng     *engine.Engine
	newID   func() string

	down        bool
	restartAtMs int64
	restart     history.Restart

	// Engine and disk faults.
	crashR     []*chance // per crashpoint.All(); nil: off
	randomR    *chance   // crash-random
	diskR      *chance   // power-loss and tear draws
	lostP      float64
	tornP      float64
	lastOps    int // filesystem operations (and fsyncs) of the last batch,
	lastSyncs  int // the range a random crash is drawn from
	tornArmed  bool
	shapeAtMs  int64 // -1: no query-shape-change
	shapeDone  bool
	shapeStart string // starting_offsets of the new query
}

// chance is a fault's stream with the probability it fires at.
type chance struct {
	*mrand.Rand
	p float64
}

func newWorld(p *prepared, seed uint64) (*world, error) {
	w := &world{p: p, seed: seed, cov: faults.Coverage{}, ids: &arena{},
		startUs: p.startMs * 1000, intervalMs: p.TriggerInterval.Ms(), downMs: p.Downtime.Ms(),
		q: p.q, qText: string(p.Query), silenceSource: -1, lagSource: -1}
	w.healUs = w.startUs + p.FaultPhase.Ms()*1000
	w.queue = newSendQueue(w.startUs, p.TriggerInterval.Ms()*1000)
	w.endUs = w.healUs + p.HealPhase.Ms()*1000
	w.nowMs = p.startMs
	w.genUs = w.startUs - 1
	var err error
	if p.Plan.Swarm {
		w.set, err = p.Plan.Draw(Stream(seed, "swarm"), func(name string) bool {
			f, _ := faults.Lookup(name)
			return !f.LiveOnly && p.applicable(name) == nil
		})
	} else {
		w.set = p.set
	}
	if err != nil {
		return nil, fmt.Errorf("sim: faults: %w", err)
	}
	w.chooseSources()
	w.h = w.newHistory()

	for _, sc := range p.sourceCfgs {
		expected := 1.1 * sc.Rate.meanRate() * float64(w.endUs-w.startUs) / 1e6
		enc := newLayoutEncoder(p.layout, sc.TimestampFormat == "rfc3339")
		w.topics = append(w.topics, newTopic(sc.Topic, sc.Partitions, &w.h.Copies, enc, int(min(expected, float64(p.MaxCopies)))))
	}
	for i, sc := range p.sourceCfgs {
		w.gens = append(w.gens, w.newSourceGen(i, sc))
	}
	w.setupEngineFaults()
	w.disk = newDisk()
	w.sources = w.views(nil)
	w.sink = newSimSink(w, trace.NewSink(p.q))
	w.newID = ids.Seeded(Stream(seed, "ids").Uint64())
	return w, nil
}

// chooseSources resolves the source knobs of silence and lag (-1: drawn).
func (w *world) chooseSources() {
	n := len(w.p.q.Sources)
	pick := func(fault string) int {
		if !w.set.On(fault) {
			return -1
		}
		if i := w.set.Int(fault, "source"); i >= 0 {
			return i % n
		}
		return Stream(w.seed, "fault/"+fault+"/source").IntN(n)
	}
	w.silenceSource = pick(faults.SourceSilence)
	w.lagSource = pick(faults.LaggingInput)
}

func (w *world) setupEngineFaults() {
	s := w.set
	w.crashR = make([]*chance, len(crashpoint.All()))
	for i, cp := range crashpoint.All() {
		if name := faults.CrashAt(string(cp)); s.On(name) {
			w.crashR[i] = &chance{Stream(w.seed, "fault/"+name), s.Value(name, "rate")}
		}
	}
	if s.On(faults.CrashRandom) {
		w.randomR = &chance{Stream(w.seed, "fault/"+faults.CrashRandom), s.Value(faults.CrashRandom, "rate")}
	}
	w.diskR = &chance{Stream(w.seed, "fault/disk"), 0}
	if s.On(faults.LostUnsyncedWrite) {
		w.lostP = s.Value(faults.LostUnsyncedWrite, "probability")
	}
	if s.On(faults.TornWrite) {
		w.tornP = s.Value(faults.TornWrite, "probability")
	}
	w.shapeAtMs = -1
	if s.On(faults.QueryShapeChange) {
		w.shapeAtMs = w.p.startMs + int64(s.Value(faults.QueryShapeChange, "at_frac")*float64(w.p.FaultPhase.Ms()))
		w.shapeStart = s.Choice(faults.QueryShapeChange, "starting_offsets")
	}
}

// views are the engine's sources over the topics; start gives per-source
// starting offsets (nil: the beginning of the log).
func (w *world) views(start [][]int64) []source.Source {
	out := make([]source.Source, len(w.topics))
	for i, t := range w.topics {
		var s []int64
		if start != nil {
			s = start[i]
		}
		out[i] = newLogSource(t, s, newLayoutKeyEncoder(w.q, w.p.layout))
	}
	return out
}

func (w *world) newHistory() *history.History {
	rate := 0.0
	for _, sc := range w.p.sourceCfgs {
		rate += sc.Rate.meanRate()
	}
	h := record.Header(record.Run{Seed: w.seed, Query: w.q, QueryText: w.qText, Faults: w.set, HealAtMs: w.healUs / 1000,
		ArrivalRatePerSec: rate, Coverage: w.cov})
	h.Copies = make([]history.Copy, 0, w.expectedCopies(rate))
	return h
}

// expectedCopies sizes History.Copies: the copies the run's configuration
// predicts (Predict: the events of the mean rate, times the fault phase's
// copy factor, an upper bound in swarm mode) and 5% and 1024 more for the
// arrivals' randomness, so that the slice is allocated once: growing it
// past its capacity would copy it into one a quarter larger, both live
// while it copies.
func (w *world) expectedCopies(rate float64) int {
	run := float64(w.endUs - w.startUs)
	extra, err := extraCopies(w.p.Plan)
	if err != nil {
		extra = 0 // prepare validated the plan
	}
	n := rate * run / 1e6 * (1 + float64(w.healUs-w.startUs)/run*extra)
	return int(min(float64(w.p.MaxCopies), 1.05*n+1024))
}

// NowMs is the engine's processing-time clock.
func (w *world) NowMs() int64 { return w.nowMs }

func (w *world) start() error {
	e, err := engine.Start(engine.Config{
		Query: w.q, Checkpoint: w.disk, Sources: w.sources, Sink: w.sink, Clock: w, NewID: w.newID,
		Crash: w.crashHook, OnBatch: w.onBatch, NewStateProvider: stores.Open,
	})
	if err != nil {
		return err
	}
	w.eng = e
	return nil
}

// maxDrainTriggers bounds the triggers after the producers stopped.
const maxDrainTriggers = 100_000

func (w *world) run() (*history.History, error) {
	if err := w.start(); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	endMs := w.endUs / 1000
	limit := 2*(endMs-w.p.startMs)/w.intervalMs + maxDrainTriggers
	t := w.p.startMs
	for n := int64(0); ; n++ {
		if n > limit {
			return nil, fmt.Errorf("the query did not converge within %d triggers", limit)
		}
		w.nowMs = t
		if err := w.appendUntil(t); err != nil {
			return nil, err
		}
		if w.down {
			if t < w.restartAtMs {
				t = w.restartAtMs
				continue
			}
			if err := w.restartEngine(); err != nil {
				return nil, err
			}
		}
		if w.shapeAtMs >= 0 && !w.shapeDone && t >= w.shapeAtMs {
			if err := w.changeShape(); err != nil {
				return nil, err
			}
			t = w.restartAtMs
			continue
		}
		ran, err := w.trigger()
		if err != nil {
			return nil, err
		}
		if t >= endMs && (!ran || w.eng.Query().RealTimeMs > 0 && w.eng.LastBatchEmpty()) && !w.down {
			break // a real-time batch always runs: the run ends at one that read nothing
		}
		if !w.down {
			t = w.p.startMs + ((t-w.p.startMs)/w.intervalMs+1)*w.intervalMs
		}
	}
	if err := w.eng.Stop(); err != nil {
		return nil, err
	}
	return w.finish(), nil
}

// appendUntil appends every copy due by processing time tMs.
func (w *world) appendUntil(tMs int64) error {
	tUs := min(tMs*1000, w.endUs)
	w.generateUntil(tUs)
	return w.queue.drain(tUs, func(c *pending) error {
		if err := w.appendCopy(c, c.copyNo, c.fault); err != nil {
			return err
		}
		if c.dupNo >= 0 {
			c.flags &^= flagOffline
			return w.appendCopy(c, c.dupNo, faultDup)
		}
		return nil
	})
}

// generateUntil runs the sources' generators up to tUs, one trigger-grid
// step at a time (up to the grid time at or after tUs). The order in which
// copies of different sources are queued, and so the append order of
// copies sent in the same microsecond, is then the same whatever times the
// driver appends at (restarts after a crash are off the grid, downtime
// skips grid times): the workload does not depend on the engine, and
// Schedule reproduces it without one.
func (w *world) generateUntil(tUs int64) {
	stepUs := w.intervalMs * 1000
	for w.genUs < tUs {
		next := min(w.startUs+(intmath.FloorDiv(w.genUs-w.startUs, stepUs)+1)*stepUs, w.endUs)
		for _, g := range w.gens {
			w.generate(g, next)
		}
		w.genUs = next
	}
}

func (w *world) appendCopy(c *pending, copyNo int32, fault uint8) error {
	idx := len(w.h.Copies)
	if idx >= w.p.MaxCopies {
		return fmt.Errorf("more than max_copies (%d) copies", w.p.MaxCopies)
	}
	off := w.gens[c.src].top.append(int(c.part), idx)
	w.h.Copies = append(w.h.Copies, history.Copy{Event: c.event, CopyNo: copyNo, Source: c.src, Partition: c.part,
		Offset: off, EventTimeUs: c.eventUs, AppendedAtMs: intmath.FloorDiv(c.atUs, 1000), Fault: faultIDs[fault]})
	if fault != faultNone {
		w.cov.Mark(faultNames[fault])
	}
	if c.flags != 0 {
		if c.flags&flagOffline != 0 {
			w.cov.Mark(faultNames[fault] + "/offline")
		}
		if c.flags&flagSkewed != 0 {
			w.cov.Mark(faults.ClockSkew)
		}
		if c.flags&flagFuture != 0 {
			w.cov.Mark(faults.FutureTimestamp)
		}
		if c.flags&flagLagged != 0 {
			w.cov.Mark(faults.LaggingInput)
		}
	}
	return nil
}

// trigger runs at most one batch, arming a random crash when due.
func (w *world) trigger() (bool, error) {
	w.disk.reset()
	w.tornArmed = false
	if w.nowMs < w.healUs/1000 && w.randomR != nil && w.randomR.Float64() < w.randomR.p {
		if w.tornP > 0 && w.lastSyncs > 0 && w.diskR.Float64() < w.tornP {
			w.disk.failSync = 1 + w.randomR.IntN(w.lastSyncs)
			w.tornArmed = true
		} else {
			w.disk.failOp = 1 + w.randomR.IntN(max(w.lastOps, 1))
		}
	}
	batch := w.eng.NextBatchID()
	ran, err := w.eng.RunOnce()
	ops, syncs := w.disk.ops, w.disk.syncs
	w.disk.failOp, w.disk.failSync = 0, 0 // an armed crash the batch did not reach never fires later
	var ce *engine.CrashError
	switch {
	case w.disk.dead:
		w.cov.Mark(faults.CrashRandom)
		w.crash("random", batch)
		return true, nil
	case errors.As(err, &ce):
		w.crash(string(ce.Point), ce.BatchID)
		return true, nil
	case err != nil:
		return false, fmt.Errorf("batch %d: %w", batch, err)
	}
	if ran {
		w.lastOps, w.lastSyncs = ops, syncs
	}
	return ran, nil
}

// crashHook is the engine's crash decision at each crash point.
func (w *world) crashHook(p crashpoint.Point, batchID int64) bool {
	if w.disk.dead {
		return true // the process already died at a filesystem operation
	}
	if w.nowMs >= w.healUs/1000 {
		return false
	}
	i := crashpoint.Index(p)
	if i < 0 || w.crashR[i] == nil {
		return false
	}
	if w.crashR[i].Float64() < w.crashR[i].p {
		w.cov.Mark(faults.CrashAt(string(p)))
		return true
	}
	return false
}

// crash records a driver death; a power loss (lost-unsynced-write,
// torn-write) also drops what the disk had not made durable.
func (w *world) crash(point string, batchID int64) {
	c := history.Crash{AtMs: w.nowMs, Point: point, BatchID: batchID}
	lost := w.lostP > 0 && w.diskR.Float64() < w.lostP
	if lost || w.tornArmed {
		c.LostFiles, c.TornFile = w.disk.powerLoss(w.tornArmed, func(n int) int { return w.diskR.IntN(n) })
		if lost && len(c.LostFiles) > 0 {
			w.cov.Mark(faults.LostUnsyncedWrite)
		}
		if c.TornFile != "" {
			w.cov.Mark(faults.TornWrite)
		}
	} else {
		w.disk.processDeath()
	}
	w.h.Crashes = append(w.h.Crashes, c)
	w.eng.Abandon()
	w.eng = nil
	w.down = true
	w.restartAtMs = w.nowMs + w.downMs
	w.restart = history.Restart{}
}

func (w *world) restartEngine() error {
	r := w.restart
	r.AtMs = w.nowMs
	if err := w.start(); err != nil {
		return fmt.Errorf("restart from the checkpoint: %w", err)
	}
	w.h.Restarts = append(w.h.Restarts, r)
	w.down = false
	return nil
}

// changeShape stops the query and redeploys the shape-change query on an
// empty checkpoint, reading from the configured starting offsets.
func (w *world) changeShape() error {
	w.shapeDone = true
	if err := w.eng.Stop(); err != nil {
		return err
	}
	// "previous" is what a careful operator does: start from the offsets
	// of the old checkpoint's last committed batch (not its last planned
	// one, which may never have run).
	pos := make([]json.RawMessage, len(w.topics))
	ckpt := checkpoint.New(w.disk.mem)
	if last, err := ckpt.Latest("commits"); err != nil {
		return err
	} else if last >= 0 {
		o, err := ckpt.ReadOffsets(last)
		if err != nil {
			return err
		}
		pos = o.Sources
	}
	start := make([][]int64, len(w.topics))
	for i, t := range w.topics {
		switch w.shapeStart {
		case "latest":
			start[i] = t.ends()
		case "previous":
			if pos[i] != nil {
				o, err := t.parseOffsets(pos[i])
				if err != nil {
					return err
				}
				start[i] = o
			}
		}
	}
	if w.h.InitialQuery == "" {
		w.h.InitialQuery = w.qText
	}
	w.q, w.qText = w.p.shape, w.p.shapeText
	w.disk = newDisk()
	w.sources = w.views(start)
	w.eng = nil
	w.down = true
	w.restartAtMs = w.nowMs + w.downMs
	w.restart = history.Restart{FreshCheckpoint: true, Query: w.qText}
	w.cov.Mark(faults.QueryShapeChange)
	record.DescribeQuery(w.h, w.q, w.qText)
	return nil
}

func (w *world) onBatch(rec *engine.BatchRecord) {
	input := make([]int32, len(rec.Input))
	w.inputCopies(rec, input)
	b := record.Batch(w.nowMs, record.FromEngine(rec, input), w.h.Copies, w.q)
	var raw json.RawMessage
	if !w.p.OmitProgress {
		raw = record.ProgressJSON(&rec.Progress)
	}
	record.AddProgress(&b, &rec.Progress, raw)
	w.h.Batches = append(w.h.Batches, b)
	late, dups := false, false
	for _, o := range rec.Outcomes {
		late = late || o == dedup.Late
		dups = dups || o == dedup.Duplicate
	}
	if rec.Replay {
		w.cov.Mark(MarkReplay)
	}
	if late {
		w.cov.Mark(MarkLateDrop)
	}
	if dups {
		w.cov.Mark(MarkDupDrop)
	}
	if b.NumRowsRemoved > 0 {
		w.cov.Mark(MarkEviction)
	}
	if len(rec.Input) == 0 {
		w.cov.Mark(MarkNoDataBatch)
	}
}

// inputCopies fills out with the copy index of every input row: the rows
// the sources last served, source by source (checked on a sample), or, if
// the engine's input is not exactly those, the _copy value of each row.
func (w *world) inputCopies(rec *engine.BatchRecord, out []int32) {
	n := 0
	for _, s := range w.sources {
		n += len(s.(*logSource).lastCopies)
	}
	if n == len(out) {
		i := 0
		for _, s := range w.sources {
			for _, c := range s.(*logSource).lastCopies {
				out[i] = c
				i++
			}
		}
		if n == 0 || (copy32(rec.Input[0].Data) == out[0] && copy32(rec.Input[n/2].Data) == out[n/2] && copy32(rec.Input[n-1].Data) == out[n-1]) {
			return
		}
	}
	for i := range rec.Input {
		out[i] = copy32(rec.Input[i].Data)
	}
}

// copy32 is a row's copy index as a batch's Input holds it.
func copy32(data []byte) int32 { return record.Copy32(copyIndex(data)) }

func (w *world) finish() *history.History {
	h := w.h
	h.EndMs = w.nowMs
	if w.sink.opaque {
		h.Table = w.sink.table
	} else if t, ok := w.sink.inner.(sink.Tabled); ok {
		rows := t.Table()
		h.Table = make([]int32, len(rows))
		for i, r := range rows {
			h.Table[i] = record.Copy32(record.CopyIndex(r))
		}
	}
	if h.Table == nil {
		h.Table = []int32{}
	}
	return h
}

// simSink records every delivery and what the sink kept of it.
type simSink struct {
	w     *world
	inner sink.Sink
	// opaque: the inner sink keeps its rows' bytes without reading them
	// (an idempotent table or a plain append, not a merge that matches
	// on columns), so it is handed each batch without its rows and table
	// holds the copy index of every row it kept, all the run reads back
	// of its table (finish): 4 bytes a row, where the rows as {"_copy":N}
	// JSON values in the inner sink's table took about 33 (their bytes
	// and slice headers: 329 MB of a 10 M-copy run's heap). The inner
	// sink still decides what it keeps (a table skips a batch whose
	// version it holds, counted in Skipped) and records its commits.
	opaque bool
	table  []int32
}

// newSimSink wraps the query's in-memory sink (trace.NewSink, from the
// kind's descriptor). A sink without a table keeps nothing there (the
// foreachBatch sink is built to forget its deliveries): they are in the
// history.
func newSimSink(w *world, inner sink.Sink) *simSink {
	s := &simSink{w: w, inner: inner}
	switch inner.(type) {
	case *sink.Table, *sink.Append:
		s.opaque = true
	}
	return s
}

func (s *simSink) Description() string { return s.inner.Description() }

func (s *simSink) AddBatch(b sink.Batch) error {
	if s.w.disk.dead {
		return ErrInjected // the driver is already dead
	}
	copies := record.RowCopies(b.Rows)
	kept := len(b.Rows)
	if s.inner != nil {
		t, tabled := s.inner.(sink.Tabled)
		before := 0
		if tabled {
			before = len(t.Table())
		}
		in := b
		if s.opaque {
			in.Rows = nil
			skipped := 0
			if tb, ok := s.inner.(*sink.Table); ok {
				skipped = tb.Skipped
			}
			if err := s.inner.AddBatch(in); err != nil {
				return err
			}
			if tb, ok := s.inner.(*sink.Table); ok && tb.Skipped != skipped {
				kept = 0
			}
			s.table = append(s.table, copies[:kept]...)
		} else {
			if err := s.inner.AddBatch(in); err != nil {
				return err
			}
			if tabled {
				kept = len(t.Table()) - before
			}
		}
	}
	s.w.h.Writes = append(s.w.h.Writes, record.Write(b.ID, s.w.nowMs, copies, kept))
	if kept < len(b.Rows) {
		s.w.cov.Mark(MarkSinkSkipped)
	}
	return nil
}

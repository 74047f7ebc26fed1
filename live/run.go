package live

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sink/kafkasink"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sim/history"
)

// RunSupported lists what RunScenario supports; any other fault, several
// sources, swarm mode or another sink kind is refused.
const RunSupported = "one source (constant rate, fresh or bounded keys), a table sink (Kafka transactional) or append sink (Kafka plain), " +
	"and the faults producer-retry, crash-after-offsets-write, crash-after-state-commit, crash-after-sink-write and crash-after-commit"

// runTimeout bounds one Kafka call of a run.
const runTimeout = 15 * time.Second

var runCounter atomic.Int64

// ErrUnsupported is wrapped by RunScenario's refusal of a scenario it
// cannot run against Kafka.
var ErrUnsupported = errors.New("not supported against Kafka")

// liveCopy is one copy to produce, before it has an offset.
type liveCopy struct {
	history.Copy
	id string
}

// RunScenario runs the scenario configuration cfg against cluster instead
// of the simulator and returns a history for the simulator's checker.
//
// The workload is generated from seed as the simulator would describe it
// (Poisson arrivals at the source's rate, ids "e<n>" or, for a bounded key
// space, "d<k>", the event time in seconds, the hidden _copy column), and
// producer-retry adds copies with the original event time. Processing time
// is simulated: at every trigger the copies due by then are produced to a
// fresh input topic and the engine, in this process, runs one batch with a
// Kafka source and a Kafka sink. The crash faults arm the engine's crash
// hook at random batches of the fault phase; the driver then restarts on
// the same checkpoint after the configured downtime, as a new process
// would. Once every copy is produced the engine runs until it has consumed
// everything, and the output topic, read with read_committed, is the
// history's table.
func RunScenario(ctx context.Context, cluster Cluster, cfg sim.Config, seed uint64) (*history.History, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	q, err := query.Parse("query", []byte(cfg.Query))
	if err != nil {
		return nil, fmt.Errorf("live: query: %w", err)
	}
	unsupported := func(what string) error {
		return fmt.Errorf("live: --kafka does not support %s; it supports %s (%w)", what, RunSupported, ErrUnsupported)
	}
	if cfg.Plan.Swarm {
		return nil, unsupported("swarm mode")
	}
	if len(q.Sources) != 1 {
		return nil, unsupported(fmt.Sprintf("a query with %d sources", len(q.Sources)))
	}
	if q.Sink.Kind != query.SinkTable && q.Sink.Kind != query.SinkAppend {
		return nil, unsupported(fmt.Sprintf("a %s sink", q.Sink.Kind))
	}
	if q.DropFutureEvents {
		return nil, unsupported("drop_future_events")
	}
	settings, err := cfg.Plan.Resolve()
	if err != nil {
		return nil, fmt.Errorf("live: faults: %w", err)
	}
	crashes := map[engine.CrashPoint]string{}
	for _, name := range settings.Names() {
		switch name {
		case faults.ProducerRetry:
		case faults.CrashAfterOffsetsWrite, faults.CrashAfterStateCommit, faults.CrashAfterSinkWrite, faults.CrashAfterCommit:
			crashes[engine.CrashPoint(strings.TrimPrefix(name, "crash-"))] = name
		default:
			return nil, unsupported("fault " + name)
		}
	}
	var sc sim.SourceConfig
	for _, s := range cfg.Sources {
		if s.Name == q.Sources[0].Name {
			sc = s
		}
	}
	sc.Name = q.Sources[0].Name
	sc = sc.WithDefaults()
	if sc.Rate.Profile != sim.RateConstant {
		return nil, unsupported("rate profile " + sc.Rate.Profile)
	}
	start, err := time.Parse(time.RFC3339, cfg.Start)
	if err != nil {
		return nil, fmt.Errorf("live: start %q: want RFC 3339", cfg.Start)
	}
	eventCol := q.EventTimeColumn()
	if eventCol == "" {
		eventCol = "ts"
	}

	r := &runner{ctx: ctx, cluster: cluster, cfg: cfg, q: q, sc: sc, settings: settings, crashes: crashes,
		rng: rand.New(rand.NewPCG(seed, 0x6c697665)), eventCol: eventCol,
		startMs: start.UnixMilli(), trigMs: time.Duration(cfg.TriggerInterval).Milliseconds()}
	r.healMs = r.startMs + time.Duration(cfg.FaultPhase).Milliseconds()
	r.endMs = r.healMs + time.Duration(cfg.HealPhase).Milliseconds()
	r.h = &history.History{Version: history.Version, Seed: seed, Query: string(cfg.Query), API: string(q.API),
		Keys: slices.Clone(q.Keys), DelayMs: -1, Partitions: q.ShufflePartitions, SinkKind: string(q.Sink.Kind),
		HealAtMs: r.healMs, ArrivalRatePerSec: sc.Rate.PerSec, HasTable: true,
		Faults: settings.Names(), Coverage: map[string]int{}, Table: []int{}}
	if r.h.Faults == nil {
		r.h.Faults = []string{}
	}
	if knobs := settings.Knobs(); len(knobs) > 0 {
		r.h.FaultKnobs = map[string]map[string]any{}
		for f, k := range knobs {
			r.h.FaultKnobs[f] = k
		}
	}
	if col := q.EventTimeColumn(); col != "" {
		r.h.DelayMs = q.DelayMs()
		r.h.EventTimeInKey = q.API == query.DropDuplicates && slices.Contains(q.Keys, col)
	}
	if err := r.run(); err != nil {
		return nil, err
	}
	return r.h, nil
}

type runner struct {
	ctx      context.Context
	cluster  Cluster
	cfg      sim.Config
	q        *query.Query
	sc       sim.SourceConfig
	settings faults.Settings
	crashes  map[engine.CrashPoint]string // armed crash points -> fault name
	rng      *rand.Rand
	eventCol string

	startMs, healMs, endMs, trigMs int64
	nowMs                          int64

	in, out string
	h       *history.History
	pending []liveCopy // generated, not yet produced, by append time
	prod    *kgo.Client

	// the running driver
	eng  *engine.Engine
	src  *kafkasource.Source
	snk  *recordingSink
	ckpt fsys.FS
	ids  func() string
}

// generate draws the workload: originals and retry copies, sorted by append
// time.
func (r *runner) generate() error {
	rate := r.sc.Rate.PerSec
	retry := r.settings.On(faults.ProducerRetry)
	var n int
	for t := float64(r.startMs); ; {
		t += r.rng.ExpFloat64() / rate * 1000
		occMs := int64(t)
		if occMs >= r.endMs {
			break
		}
		id := "e" + strconv.Itoa(n)
		if r.sc.Keys.Kind == sim.KeysBounded {
			id = "d" + strconv.Itoa(r.rng.IntN(r.sc.Keys.Size))
		}
		n++
		evUs := occMs * 1000
		if p := time.Duration(r.sc.TimestampPrecision).Microseconds(); p > 0 {
			evUs -= evUs % p
		}
		at := occMs + r.sendDelayMs()
		r.pending = append(r.pending, liveCopy{id: id, Copy: history.Copy{Event: id, EventTimeUs: evUs, AppendedAtMs: at}})
		if retry && occMs < r.healMs && r.rng.Float64() < r.settings.Value(faults.ProducerRetry, "probability") {
			extra := 1 + r.rng.IntN(max(1, r.settings.Int(faults.ProducerRetry, "copies_max")))
			for c := 1; c <= extra; c++ {
				at += r.retryGapMs()
				r.pending = append(r.pending, liveCopy{id: id, Copy: history.Copy{Event: id, CopyNo: c, EventTimeUs: evUs, AppendedAtMs: at, Fault: faults.ProducerRetry}})
			}
		}
		if len(r.pending) > r.cfg.MaxCopies {
			return fmt.Errorf("live: more than max_copies %d copies", r.cfg.MaxCopies)
		}
	}
	slices.SortStableFunc(r.pending, func(a, b liveCopy) int { return cmp.Compare(a.AppendedAtMs, b.AppendedAtMs) })
	return nil
}

func (r *runner) sendDelayMs() int64 {
	d := r.sc.SendDelay
	mean := float64(time.Duration(d.Mean).Milliseconds())
	switch d.Kind {
	case sim.DistExponential:
		return int64(r.rng.ExpFloat64() * mean)
	case sim.DistLogNormal:
		return int64(mean * math.Exp(d.Sigma*r.rng.NormFloat64()))
	case sim.DistUniform:
		hi := float64(time.Duration(d.Max).Milliseconds())
		return int64(mean + r.rng.Float64()*(hi-mean))
	}
	return int64(mean)
}

func (r *runner) retryGapMs() int64 {
	f := faults.ProducerRetry
	if r.rng.Float64() < r.settings.Value(f, "offline_fraction") {
		lo, hi := math.Log(float64(r.settings.Ms(f, "offline_min_ms"))), math.Log(float64(r.settings.Ms(f, "offline_max_ms")))
		return int64(math.Exp(lo + r.rng.Float64()*(hi-lo)))
	}
	g := float64(r.settings.Ms(f, "gap_ms"))
	switch r.settings.Choice(f, "gap") {
	case "exponential":
		return max(1, int64(r.rng.ExpFloat64()*g))
	case "lognormal":
		return max(1, int64(g*math.Exp(r.settings.Value(f, "gap_sigma")*r.rng.NormFloat64())))
	}
	return int64(g)
}

func (r *runner) clientOpts() []kgo.Opt { return []kgo.Opt{kgo.SeedBrokers(r.cluster.Addrs()...)} }

func (r *runner) run() error {
	if err := r.generate(); err != nil {
		return err
	}
	base := fmt.Sprintf("dedupsim-%s-%d-%d-%d", r.sc.Topic, r.h.Seed, time.Now().UnixNano(), runCounter.Add(1))
	r.in, r.out = base+"-in", base+"-out"
	cl, err := kgo.NewClient(append(r.clientOpts(), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return fmt.Errorf("live: %w", err)
	}
	defer cl.Close()
	r.prod = cl
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(r.ctx, runTimeout)
	defer cancel()
	for _, t := range []struct {
		name string
		n    int32
	}{{r.in, int32(r.sc.Partitions)}, {r.out, 1}} {
		resp, err := adm.CreateTopic(ctx, t.n, 1, nil, t.name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("live: create topic %s: %w", t.name, err)
		}
	}
	r.ckpt = fsys.NewMem()
	r.ids = ids.Seeded(r.h.Seed)
	r.nowMs = r.startMs
	if err := r.startDriver(); err != nil {
		return err
	}
	defer func() { r.stopDriver() }()

	restartAt := int64(-1) // driver down until then
	for t := r.startMs; t < r.endMs || len(r.pending) > 0; t += r.trigMs {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		r.nowMs = t
		if err := r.produceDue(); err != nil {
			return err
		}
		if restartAt >= 0 {
			if t < restartAt {
				continue
			}
			restartAt = -1
			if err := r.startDriver(); err != nil {
				return err
			}
			r.h.Restarts = append(r.h.Restarts, history.Restart{AtMs: t})
		}
		_, err := r.eng.RunOnce()
		var crash *engine.CrashError
		if errors.As(err, &crash) {
			r.h.Crashes = append(r.h.Crashes, history.Crash{AtMs: t, Point: string(crash.Point), BatchID: crash.BatchID})
			r.h.Coverage[r.crashes[crash.Point]]++
			r.stopDriver()
			restartAt = t + time.Duration(r.cfg.Downtime).Milliseconds()
			continue
		}
		if err != nil {
			return fmt.Errorf("live: batch at %d ms: %w", t-r.startMs, err)
		}
	}
	// Every copy is produced: run until the query has consumed everything
	// (no crash is armed outside the fault phase).
	if r.eng == nil {
		r.nowMs += r.trigMs
		if err := r.startDriver(); err != nil {
			return err
		}
		r.h.Restarts = append(r.h.Restarts, history.Restart{AtMs: r.nowMs})
	}
	for range 1000 {
		r.nowMs += r.trigMs
		ran, err := r.eng.RunOnce()
		if err != nil {
			return fmt.Errorf("live: draining: %w", err)
		}
		if !ran {
			break
		}
	}
	r.h.EndMs = r.nowMs
	r.stopDriver()
	recs, err := kafkasource.ReadAll(ctx, r.clientOpts(), r.out, true)
	if err != nil {
		return fmt.Errorf("live: read output: %w", err)
	}
	for _, rec := range recs {
		i, err := copyOf(rec.Value)
		if err != nil {
			return err
		}
		r.h.Table = append(r.h.Table, i)
	}
	return nil
}

// produceDue produces the copies appended by now, fixing their copy
// index, partition and offset.
func (r *runner) produceDue() error {
	n := 0
	for n < len(r.pending) && r.pending[n].AppendedAtMs <= r.nowMs {
		n++
	}
	if n == 0 {
		return nil
	}
	due := r.pending[:n]
	recs := make([]*kgo.Record, n)
	for i := range due {
		c := &due[i]
		c.Source = 0
		idx := len(r.h.Copies) + i
		if r.sc.Partitioner == "round_robin" {
			c.Partition = idx % r.sc.Partitions
		} else {
			hsh := fnv.New32a()
			hsh.Write([]byte(c.id))
			c.Partition = int(hsh.Sum32() % uint32(r.sc.Partitions))
		}
		val := fmt.Appendf(nil, `{"id":%q,%q:%s,"_copy":%d}`, c.id, r.eventCol, r.formatTime(c.EventTimeUs), idx)
		recs[i] = &kgo.Record{Topic: r.in, Partition: int32(c.Partition), Key: []byte(c.id), Value: val}
	}
	ctx, cancel := context.WithTimeout(r.ctx, runTimeout)
	defer cancel()
	if err := r.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("live: produce: %w", err)
	}
	for i := range due {
		due[i].Offset = recs[i].Offset
		if due[i].Fault != "" {
			r.h.Coverage[due[i].Fault]++
		}
		r.h.Copies = append(r.h.Copies, due[i].Copy)
	}
	r.pending = r.pending[n:]
	return nil
}

func (r *runner) formatTime(us int64) string {
	if r.sc.TimestampFormat == "rfc3339" {
		return strconv.Quote(time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
	}
	sign := ""
	if us < 0 {
		sign, us = "-", -us
	}
	return fmt.Sprintf("%s%d.%06d", sign, us/1e6, us%1e6)
}

// copyOf reads the _copy column of a row.
func copyOf(data []byte) (int, error) {
	var v struct {
		Copy *int `json:"_copy"`
	}
	if err := json.Unmarshal(data, &v); err != nil || v.Copy == nil {
		return 0, fmt.Errorf("live: row %s has no %s", data, sim.CopyColumn)
	}
	return *v.Copy, nil
}

func (r *runner) NowMs() int64 { return r.nowMs }

// startDriver starts the engine with new source and sink instances, as a
// new driver process would.
func (r *runner) startDriver() error {
	src, err := kafkasource.New(kafkasource.Config{Brokers: r.cluster.Addrs(), Topic: r.in, StartingOffsets: "earliest",
		InitialOffsetsFS: r.ckpt, Timeout: runTimeout})
	if err != nil {
		return err
	}
	base := kafkasink.Config{Brokers: r.cluster.Addrs(), Topic: r.out, Timeout: runTimeout}
	snk := &recordingSink{r: r}
	if r.q.Sink.Kind == query.SinkTable {
		snk.txn, err = kafkasink.NewTransactional(kafkasink.TransactionalConfig{Config: base, AppID: r.q.Sink.AppID, PerRun: r.q.Sink.GenerateAppID})
		snk.inner = snk.txn
	} else {
		snk.plain, err = kafkasink.NewPlain(kafkasink.PlainConfig{Config: base})
		snk.inner = snk.plain
	}
	if err != nil {
		src.Close()
		return err
	}
	e, err := engine.Start(engine.Config{Query: r.q, Checkpoint: r.ckpt, Sources: []source.Source{src}, Sink: snk,
		Clock: r, NewID: r.ids, OnBatch: r.onBatch, Crash: r.crash})
	if err != nil {
		src.Close()
		snk.close()
		return err
	}
	if err := src.Resume(e.Position()[0]); err != nil {
		e.Stop()
		src.Close()
		snk.close()
		return err
	}
	r.eng, r.src, r.snk = e, src, snk
	return nil
}

func (r *runner) stopDriver() {
	if r.eng == nil {
		return
	}
	r.eng.Stop()
	r.src.Close()
	r.snk.close()
	r.eng, r.src, r.snk = nil, nil, nil
}

// crash is the engine's crash hook: in the fault phase, each armed crash
// point fires with its fault's rate.
func (r *runner) crash(p engine.CrashPoint, _ int64) bool {
	name, ok := r.crashes[p]
	if !ok || r.nowMs >= r.healMs {
		return false
	}
	return r.rng.Float64() < r.settings.Value(name, "rate")
}

func (r *runner) onBatch(rec *engine.BatchRecord) {
	b := history.Batch{BatchID: rec.BatchID, AtMs: r.nowMs, Replay: rec.Replay, Crashed: string(rec.Crashed),
		Input: make([]int, len(rec.Input)), Outcomes: make([]string, len(rec.Input)),
		LateWatermarkMs: rec.LateWatermarkMs, WatermarkMs: rec.WatermarkMs, NextWatermarkMs: rec.NextWatermarkMs}
	var maxUs int64
	for i := range rec.Input {
		idx, err := copyOf(rec.Input[i].Data)
		if err != nil {
			idx = -1 // malformed-history for the checker
		}
		b.Input[i] = idx
		b.Outcomes[i] = rec.Outcomes[i].String()
		if idx >= 0 && idx < len(r.h.Copies) && (i == 0 || r.h.Copies[idx].EventTimeUs > maxUs) {
			maxUs = r.h.Copies[idx].EventTimeUs
		}
	}
	if len(rec.Input) > 0 && r.q.EventTimeColumn() != "" {
		b.MaxEventTimeMs = int64(math.Floor(float64(maxUs) / 1000))
	}
	if ops := rec.Progress.StateOperators; len(ops) > 0 {
		b.NumRowsTotal, b.NumRowsUpdated, b.NumRowsRemoved = ops[0].NumRowsTotal, ops[0].NumRowsUpdated, ops[0].NumRowsRemoved
	}
	if !r.cfg.OmitProgress {
		if raw, err := json.Marshal(rec.Progress); err == nil {
			b.Progress = raw
		}
	}
	r.h.Batches = append(r.h.Batches, b)
}

// recordingSink records every delivery and what the Kafka sink kept of it.
type recordingSink struct {
	r     *runner
	inner sink.Sink
	txn   *kafkasink.Transactional
	plain *kafkasink.Plain
}

func (s *recordingSink) Description() string { return s.inner.Description() }

func (s *recordingSink) AddBatch(b sink.Batch) error {
	skipped := 0
	if s.txn != nil {
		skipped = s.txn.Skipped
	}
	if err := s.inner.AddBatch(b); err != nil {
		return err
	}
	kept := len(b.Rows)
	if s.txn != nil && s.txn.Skipped > skipped {
		kept = 0
	}
	rows := make([]int, len(b.Rows))
	for i, row := range b.Rows {
		idx, err := copyOf(row.Data)
		if err != nil {
			idx = -1
		}
		rows[i] = idx
	}
	s.r.h.Writes = append(s.r.h.Writes, history.SinkWrite{BatchID: b.ID, AtMs: s.r.nowMs, Rows: rows, Kept: kept})
	return nil
}

func (s *recordingSink) close() {
	if s.txn != nil {
		s.txn.Close()
	}
	if s.plain != nil {
		s.plain.Close()
	}
}

package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sink/kafkasink"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/engine/state/stores"
	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sim/history"
	"github.com/dedupsim/dedupsim/sim/record"
)

// RunSupported lists what RunScenario supports; any other fault, several
// sources, swarm mode or another sink kind is refused.
const RunSupported = "every producer, clock and source fault (the simulator's workload for the seed), a table sink (Kafka transactional) or append sink (Kafka plain), " +
	"and the faults crash-after-offsets-write, crash-after-state-commit, crash-after-sink-write and crash-after-commit"

// runTimeout bounds one Kafka call of a run.
const runTimeout = 15 * time.Second

var runCounter atomic.Int64

// ErrUnsupported is wrapped by RunScenario's refusal of a scenario it
// cannot run against Kafka.
var ErrUnsupported = errors.New("not supported against Kafka")

// RunScenario runs the scenario configuration cfg against cluster instead
// of the simulator and returns a history for the simulator's checker.
//
// The workload is the simulator's for the seed (sim.Schedule: the same
// copies, rows and partitions, every producer, clock and source fault).
// Processing time is simulated: at every trigger the copies due by then are
// produced to fresh input topics (one per source) and the engine, in this
// process, runs one batch with Kafka sources and a Kafka sink. The crash faults arm the engine's crash
// hook at random batches of the fault phase; the driver then restarts on
// the same checkpoint after the configured downtime, as a new process
// would. Once every copy is produced the engine runs until it has consumed
// everything, and the output topic, read with read_committed, is the
// history's table.
func RunScenario(ctx context.Context, cluster Cluster, cfg sim.Config, seed uint64) (*history.History, error) {
	c, err := sim.Compile(cfg)
	if err != nil {
		return nil, err
	}
	cfg, q, settings := c.Config(), c.Query(), c.Settings()
	unsupported := func(what string) error {
		return fmt.Errorf("live: --kafka does not support %s; it supports %s (%w)", what, RunSupported, ErrUnsupported)
	}
	if c.Swarm() {
		return nil, unsupported("swarm mode")
	}
	// The in-process runner writes the output topic: a kind with a table
	// kept on Kafka (the transactional sink when versioned, else plain).
	if d, _ := sink.Lookup(q.Sink.Kind); !d.HasTable || d.DurableOn(sink.Kafka).Store != sink.Kafka {
		return nil, unsupported(fmt.Sprintf("a %s sink", q.Sink.Kind))
	}
	crashes := map[crashpoint.Point]string{}
	for _, name := range settings.Names() {
		f, _ := faults.Lookup(name)
		if pt, ok := faults.CrashPoint(name); ok {
			crashes[pt] = name
		} else if !f.Workload {
			return nil, unsupported("fault " + name)
		}
	}
	wl, err := c.Schedule(seed)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	r := &runner{ctx: ctx, cluster: cluster, cfg: cfg, q: q, wl: wl, settings: settings, crashes: crashes,
		rng:     rand.New(rand.NewPCG(seed, 0x6c697665)),
		startMs: wl.StartMs, healMs: wl.HealMs, endMs: wl.EndMs, trigMs: wl.TriggerMs}
	r.h = newHistory(cfg, q, wl, settings, seed)
	if err := r.run(); err != nil {
		return nil, err
	}
	r.h.Live = &history.Live{Cluster: ClusterName(cluster), Engine: "inproc", EngineProcesses: len(r.h.Restarts) + 1,
		KilledAtPoints: len(r.h.Crashes)}
	return r.h, nil
}

// newHistory is the history of a live run before it runs: the query, the
// phases, the faults and the workload's coverage marks.
func newHistory(cfg sim.Config, q *query.Query, wl *sim.Workload, settings faults.Settings, seed uint64) *history.History {
	cov := map[string]int{}
	maps.Copy(cov, wl.Coverage)
	return record.Header(record.Run{Seed: seed, Query: q, QueryText: string(cfg.Query), Faults: settings,
		HealAtMs: wl.HealMs, ArrivalRatePerSec: wl.ArrivalRatePerSec, Coverage: cov})
}

type runner struct {
	ctx      context.Context
	cluster  Cluster
	cfg      sim.Config
	q        *query.Query
	wl       *sim.Workload
	settings faults.Settings
	crashes  map[crashpoint.Point]string // armed crash points -> fault name
	rng      *rand.Rand

	startMs, healMs, endMs, trigMs int64
	nowMs                          int64

	in   []string // one input topic per source
	out  string
	h    *history.History
	next int // the next workload copy to produce
	prod *kgo.Client

	// the running driver
	eng  *engine.Engine
	srcs []*kafkasource.Source
	snk  *recordingSink
	ckpt fsys.FS
	ids  func() string
}

// producerOpts are the options of a live run's producers: partitions
// chosen by the workload, and metadata refreshed after 100 ms rather than
// franz-go's 5 s (the partitions of a topic just created get their leaders
// a moment later; until then a send waits for the next refresh).
func producerOpts(c Cluster) []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(100 * time.Millisecond)}
}

func (r *runner) clientOpts() []kgo.Opt { return []kgo.Opt{kgo.SeedBrokers(r.cluster.Addrs()...)} }

func (r *runner) run() error {
	base := fmt.Sprintf("dedupsim-%d-%d-%d", r.h.Seed, time.Now().UnixNano(), runCounter.Add(1))
	r.out = base + "-out"
	cl, err := kgo.NewClient(producerOpts(r.cluster)...)
	if err != nil {
		return fmt.Errorf("live: %w", err)
	}
	defer cl.Close()
	r.prod = cl
	// One deadline for the topics' creation and the final read of the
	// output, as before the runner was split into steps.
	ctx, cancel := context.WithTimeout(r.ctx, runTimeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	for _, s := range r.wl.Sources {
		r.in = append(r.in, base+"-"+s.Topic)
		if err := createTopic(ctx, adm, r.in[len(r.in)-1], int32(s.Partitions)); err != nil {
			return err
		}
	}
	if err := createTopic(ctx, adm, r.out, 1); err != nil {
		return err
	}
	r.ckpt = fsys.NewMem()
	r.ids = ids.Seeded(r.h.Seed)
	r.nowMs = r.startMs
	if err := r.startDriver(); err != nil {
		return err
	}
	defer func() { r.stopDriver() }()
	if err := r.produceAndTrigger(); err != nil {
		return err
	}
	if err := r.drain(); err != nil {
		return err
	}
	r.h.EndMs = r.nowMs
	r.stopDriver()
	recs, err := kafkasource.ReadAll(ctx, r.clientOpts(), r.out, true)
	if err != nil {
		return fmt.Errorf("live: read output: %w", err)
	}
	for _, rec := range recs {
		r.h.Table = append(r.h.Table, record.Copy32(record.CopyIndex(rec.Value)))
	}
	return nil
}

// produceAndTrigger steps processing time a trigger at a time until the
// producers' end and every copy is produced: the copies due are produced,
// then one batch runs; a crash stops the driver for the downtime.
func (r *runner) produceAndTrigger() error {
	restartAt := int64(-1) // driver down until then
	for t := r.startMs; t < r.endMs || r.next < len(r.wl.Copies); t += r.trigMs {
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
	return nil
}

// drain runs, once every copy is produced, until the query has consumed
// everything (no crash is armed outside the fault phase).
func (r *runner) drain() error {
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
	return nil
}

// produceDue produces the workload's copies appended by now, in order,
// recording their offsets.
func (r *runner) produceDue() error {
	cs := r.wl.Copies
	n := r.next
	for n < len(cs) && cs[n].AppendedAtMs <= r.nowMs {
		n++
	}
	if n == r.next {
		return nil
	}
	recs := make([]*kgo.Record, 0, n-r.next)
	for i := r.next; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: r.in[cs[i].Source], Partition: int32(cs[i].Partition), Value: r.wl.Rows[i]})
	}
	ctx, cancel := context.WithTimeout(r.ctx, runTimeout)
	defer cancel()
	if err := r.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("live: produce: %w", err)
	}
	for k, rec := range recs {
		c := cs[r.next+k]
		c.Offset = rec.Offset
		r.h.Copies = append(r.h.Copies, c)
	}
	r.next = n
	return nil
}

func (r *runner) NowMs() int64 { return r.nowMs }

// startDriver starts the engine with new source and sink instances, as a
// new driver process would.
func (r *runner) startDriver() error {
	var srcs []*kafkasource.Source
	closeSrcs := func() {
		for _, s := range srcs {
			s.Close()
		}
	}
	generic := make([]source.Source, len(r.in))
	for i, topic := range r.in {
		src, err := kafkasource.New(kafkasource.Config{Brokers: r.cluster.Addrs(), Topic: topic, StartingOffsets: "earliest",
			InitialOffsetsFS: r.ckpt, InitialOffsetsPath: fmt.Sprintf("sources/%d/0", i), Timeout: runTimeout})
		if err != nil {
			closeSrcs()
			return err
		}
		srcs = append(srcs, src)
		generic[i] = src
	}
	base := kafkasink.Config{Brokers: r.cluster.Addrs(), Topic: r.out, Timeout: runTimeout}
	snk := &recordingSink{r: r}
	var err error
	if d, _ := sink.Lookup(r.q.Sink.Kind); d.Versioned {
		snk.txn, err = kafkasink.NewTransactional(kafkasink.TransactionalConfig{Config: base, AppID: r.q.Sink.AppID, PerRun: r.q.Sink.GenerateAppID})
		snk.inner = snk.txn
	} else {
		snk.plain, err = kafkasink.NewPlain(kafkasink.PlainConfig{Config: base})
		snk.inner = snk.plain
	}
	if err != nil {
		closeSrcs()
		return err
	}
	e, err := engine.Start(engine.Config{Query: r.q, Checkpoint: r.ckpt, Sources: generic, Sink: snk,
		Clock: r, NewID: r.ids, OnBatch: r.onBatch, Crash: r.crash, NewStateProvider: stores.Open})
	if err != nil {
		closeSrcs()
		snk.close()
		return err
	}
	for i, src := range srcs {
		if err := src.Resume(e.Position()[i]); err != nil {
			e.Stop()
			closeSrcs()
			snk.close()
			return err
		}
	}
	r.eng, r.srcs, r.snk = e, srcs, snk
	return nil
}

func (r *runner) stopDriver() {
	if r.eng == nil {
		return
	}
	r.eng.Stop()
	for _, s := range r.srcs {
		s.Close()
	}
	r.snk.close()
	r.eng, r.srcs, r.snk = nil, nil, nil
}

// crash is the engine's crash hook: in the fault phase, each armed crash
// point fires with its fault's rate.
func (r *runner) crash(p crashpoint.Point, _ int64) bool {
	name, ok := r.crashes[p]
	if !ok || r.nowMs >= r.healMs {
		return false
	}
	return r.rng.Float64() < r.settings.Value(name, "rate")
}

func (r *runner) onBatch(rec *engine.BatchRecord) {
	b := record.Batch(r.nowMs, record.FromEngine(rec, record.InputCopies(rec.Input)), r.h.Copies, r.q)
	var raw json.RawMessage
	if !r.cfg.OmitProgress {
		raw = record.ProgressJSON(&rec.Progress)
	}
	record.AddProgress(&b, &rec.Progress, raw)
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
	s.r.h.Writes = append(s.r.h.Writes, record.Write(b.ID, s.r.nowMs, record.RowCopies(b.Rows), kept))
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

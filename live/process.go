package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sink/pebblesink"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/live/records"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sim/history"
	"github.com/dedupsim/dedupsim/sim/record"
)

// ProcessOptions configure RunProcess.
type ProcessOptions struct {
	// Binary is the dedupsim executable run as `dedupsim engine`
	// (required; the CLI passes itself, a test its own binary, which
	// live/driver/drivertest turns into the engine process).
	Binary string
	// Dir holds the run's files: query, checkpoint, table, records,
	// engine logs (required; kept for a post-mortem).
	Dir string
	// Trigger is the real time one trigger interval of the scenario takes;
	// the scenario's whole timeline is scaled by the same factor. Default
	// 200ms.
	Trigger time.Duration
	// TableSink realises a table sink: "pebble" (default) is the table sink
	// kept by the engine process in Pebble; "kafka" is the transactional
	// Kafka sink, read back with read_committed.
	TableSink string
	// Logf, when set, receives a line per step (child starts, kills,
	// restarts).
	Logf func(format string, args ...any)
}

// Restartable is a cluster whose broker can be killed and started again
// (Local): the broker-restart fault needs one.
type Restartable interface {
	Cluster
	Kill() error                       // SIGKILL, no controlled shutdown
	Restart(ctx context.Context) error // a new broker on the same data
}

// ProcessSupported lists what RunProcess supports.
const ProcessSupported = "every producer, clock and source fault (the simulator's workload for the seed, produced to Kafka), " +
	"the crash faults crash-after-* (the engine process kills itself at that point) and crash-random (SIGKILL at a random moment), " +
	"broker-restart (with --kafka local or testcontainers), leader-kill and broker-pause (with --brokers 3), broker-partition (with --kafka testcontainers --brokers 3, or --kafka local --brokers 3 as root with iproute2: a network namespace per broker), and table, merge, append and foreachBatch sinks; not the disk faults, query-shape-change or swarm mode"

// RunProcess runs the scenario configuration cfg against cluster with the
// engine as a child process (`dedupsim engine`), and returns the history
// for the simulator's checker.
//
// The workload is the simulator's for the seed (sim.Schedule): the same
// copies, rows and partitions, produced to fresh topics by a real producer
// as the scaled clock reaches each copy's append time. The engine process
// reads them with the Kafka source and writes the query's sink: the table
// and merge sinks in Pebble inside the run folder (or, with TableSink
// "kafka", the table sink as the transactional Kafka sink), the append and
// foreachBatch sinks as the plain Kafka sink. The crash faults kill it
// with SIGKILL: crash-after-* arm its crash point at a batch drawn with the
// fault's rate (the process kills itself there), crash-random kills it at
// a moment drawn with the fault's rate per trigger, both only in the fault
// phase; after the scenario's downtime it is restarted on the same
// checkpoint. broker-restart kills the broker and starts it again. Once
// every copy is produced the running engine is stopped (SIGTERM) and a last
// one runs until the input is drained. What each process did comes from
// its records file (--records); the table from Pebble or the output topic.
func RunProcess(ctx context.Context, cluster Cluster, cfg sim.Config, seed uint64, opt ProcessOptions) (*history.History, error) {
	if opt.Binary == "" || opt.Dir == "" {
		return nil, errors.New("live: RunProcess needs a binary and a folder")
	}
	if opt.Trigger == 0 {
		opt.Trigger = 200 * time.Millisecond
	}
	if opt.Trigger < time.Millisecond {
		return nil, fmt.Errorf("live: trigger %v: want at least 1ms", opt.Trigger)
	}
	if opt.TableSink == "" {
		opt.TableSink = "pebble"
	}
	if opt.TableSink != "pebble" && opt.TableSink != "kafka" {
		return nil, fmt.Errorf("live: table sink %q: want pebble or kafka", opt.TableSink)
	}
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	c, err := sim.Compile(cfg)
	if err != nil {
		return nil, err
	}
	cfg, q, settings := c.Config(), c.Query(), c.Settings()
	unsupported := func(what string) error {
		return fmt.Errorf("live: --kafka does not support %s; it supports %s (%w)", what, ProcessSupported, ErrUnsupported)
	}
	if c.Swarm() {
		return nil, unsupported("swarm mode")
	}
	p := &procRun{ctx: ctx, cluster: cluster, cfg: cfg, q: q, opt: opt, settings: settings,
		rng: rand.New(rand.NewPCG(seed, 0x70726f63))}
	var nodeFaults []string
	for _, name := range settings.Names() {
		f, _ := faults.Lookup(name)
		switch {
		case f.Workload:
		case isCrashPoint(name):
			pt, _ := faults.CrashPoint(name)
			p.armable = append(p.armable, pt)
		case name == faults.CrashRandom:
			p.randomRate = settings.Value(name, "rate")
		case name == faults.BrokerRestart:
			rs, ok := cluster.(Restartable)
			if !ok {
				return nil, unsupported("broker-restart on this cluster (it needs --kafka local or testcontainers)")
			}
			p.broker = rs
		case name == faults.LeaderKill || name == faults.BrokerPause || name == faults.BrokerPartition:
			nodeFaults = append(nodeFaults, name)
		default:
			return nil, unsupported("fault " + name)
		}
	}
	p.wl, err = c.Schedule(seed)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	if err := p.setup(seed); err != nil {
		return nil, err
	}
	if err := p.nodeFaultsFor(nodeFaults); err != nil {
		return nil, err
	}
	if err := p.run(); err != nil {
		return nil, err
	}
	return p.h, nil
}

type procRun struct {
	ctx      context.Context
	cluster  Cluster
	cfg      sim.Config
	q        *query.Query
	opt      ProcessOptions
	settings faults.Settings
	rng      *rand.Rand
	wl       *sim.Workload
	h        *history.History

	armable    []crashpoint.Point
	randomRate float64
	broker     Restartable
	nodeFaults []brokerFault // leader-kill, broker-pause, broker-partition
	nodes      Nodes

	inTopics []string
	outTopic string
	// dur is how the engine process keeps the query's sink kind (its
	// --sink flag and store); versioned: the kind skips a committed batch.
	dur       sink.Durable
	versioned bool
	ckpt      string
	table     string
	args      []string

	// The scaled clock: virtual ms = wl.StartMs + (wall ms - realStartMs) * scale.
	realStart time.Time
	scale     float64

	droppedAcks    int      // duplicate appends made by a lost ack (kfake)
	inferred       int      // killed sink writes found committed by their replay
	runs           int      // engine processes started
	recFiles       []string // records file of each process
	failures       int
	produced       []history.Copy // by the producer goroutine
	prodErr        error
	prodDone       chan struct{}
	backoff        time.Duration // extra wait after engine failures in a row
	brokerErr      error
	brokerRestarts int
	brokerWG       sync.WaitGroup
}

func (p *procRun) virt(t time.Time) int64 {
	return p.wl.StartMs + int64(math.Floor(float64(t.Sub(p.realStart).Milliseconds())*p.scale))
}

func (p *procRun) real(virtMs int64) time.Time {
	return p.realStart.Add(time.Duration(float64(virtMs-p.wl.StartMs) / p.scale * float64(time.Millisecond)))
}

func (p *procRun) setup(seed uint64) error {
	q, wl := p.q, p.wl
	p.h = newHistory(p.cfg, q, wl, p.settings, seed)
	p.dur, p.versioned = durableFor(q.Sink.Kind, p.opt.TableSink)
	if p.dur.Store == sink.Kafka && p.versioned && q.Sink.GenerateAppID {
		return fmt.Errorf("live: generate_app_id with the Kafka table sink: the transactional id would change each start (use the pebble table sink) (%w)", ErrUnsupported)
	}
	p.scale = float64(wl.TriggerMs) / (float64(p.opt.Trigger) / float64(time.Millisecond))
	if ents, err := os.ReadDir(p.opt.Dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("live: %s is not empty: a live run keeps its checkpoint, table and records there and needs a fresh folder", p.opt.Dir)
	}
	if err := os.MkdirAll(p.opt.Dir, 0o755); err != nil {
		return err
	}
	p.ckpt = filepath.Join(p.opt.Dir, "checkpoint")
	p.table = filepath.Join(p.opt.Dir, "table")
	qpath := filepath.Join(p.opt.Dir, "query.yaml")
	if err := os.WriteFile(qpath, []byte(p.cfg.Query), 0o644); err != nil {
		return err
	}
	base := fmt.Sprintf("dedupsim-%d-%d-%d", seed, time.Now().UnixNano(), runCounter.Add(1))
	for _, s := range wl.Sources {
		p.inTopics = append(p.inTopics, base+"-"+s.Topic)
	}
	p.outTopic = base + "-out"
	p.args = []string{"engine", "--query", qpath, "--checkpoint", p.ckpt, "--bootstrap", strings.Join(p.cluster.Addrs(), ","),
		"--sink", p.dur.Flag, "--trigger-interval", p.opt.Trigger.String(), "--kafka-timeout", "60s"}
	for _, t := range p.inTopics {
		p.args = append(p.args, "--input-topic", t)
	}
	if p.dur.Store == sink.Pebble {
		p.args = append(p.args, "--table", p.table)
	} else {
		p.args = append(p.args, "--output-topic", p.outTopic)
	}
	return nil
}

// collect builds the history's batches and sink writes from the produced
// copies and the records of every process (Reconstruct).
func (p *procRun) collect() error {
	p.h.Copies = p.produced
	in := Reconstruction{Copies: p.h.Copies, Sink: p.sinkMode(), Query: p.q, OmitProgress: p.cfg.OmitProgress,
		VirtMs:    func(wallMs int64) int64 { return p.virt(time.UnixMilli(wallMs)) },
		Committed: func(batch int64) (int64, error) { return commitWatermark(p.ckpt, batch) }}
	for _, path := range p.recFiles {
		recs, _, err := records.Read(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		in.Processes = append(in.Processes, ProcessRecords{Name: path, Records: recs})
	}
	out, err := Reconstruct(in)
	if err != nil {
		return err
	}
	p.h.Batches = append(p.h.Batches, out.Batches...)
	p.h.Writes = append(p.h.Writes, out.Writes...)
	p.inferred = out.Inferred
	if p.inferred > 0 {
		p.opt.Logf("%d killed sink writes found committed by their replay", p.inferred)
	}
	if p.droppedAcks > 0 {
		p.opt.Logf("%d duplicate appends made by dropping a produce ack", p.droppedAcks)
	}
	return nil
}

// isCrashPoint reports whether fault name arms one of the engine's crash
// points (a crash-after-* fault).
func isCrashPoint(name string) bool {
	_, ok := faults.CrashPoint(name)
	return ok
}

// durableFor is how the engine process keeps a query's sink kind when the
// run asks for tableSink ("pebble" or "kafka"): the kind's realisation on
// that store, or its only one (merge has only a Pebble table; append and
// foreachBatch only the plain topic); versioned says it skips a committed
// batch.
func durableFor(kind sink.Kind, tableSink string) (sink.Durable, bool) {
	d, _ := sink.Lookup(kind)
	return d.DurableOn(sink.Store(tableSink)), d.Versioned
}

// sinkMode is what the run's sink does with a replayed batch.
func (p *procRun) sinkMode() SinkMode {
	switch {
	case p.versioned:
		return SinkVersioned
	case !p.h.HasTable:
		return SinkForeachBatch
	}
	return SinkRewrites
}

// readTable reads the final table into the history: the Pebble table, or
// the output topic with read_committed.
func (p *procRun) readTable(ctx context.Context) error {
	h := p.h
	if !h.HasTable {
		return nil // foreachBatch: the deliveries are the writes
	}
	var rows []json.RawMessage
	var err error
	switch p.dur.Store {
	case sink.Pebble:
		rows, err = pebblesink.ReadTable(p.table)
	default:
		var recs []*kgo.Record
		recs, err = kafkasource.ReadAll(ctx, []kgo.Opt{kgo.SeedBrokers(p.cluster.Addrs()...)}, p.outTopic, true)
		for _, r := range recs {
			rows = append(rows, r.Value)
		}
	}
	if err != nil {
		return fmt.Errorf("live: read the output: %w", err)
	}
	for _, r := range rows {
		h.Table = append(h.Table, record.Copy32(record.CopyIndex(r)))
	}
	return nil
}

// liveSummary is the history's account of the live run.
func (p *procRun) liveSummary() *history.Live {
	l := &history.Live{Cluster: ClusterName(p.cluster), Engine: "process",
		TriggerMs: float64(p.opt.Trigger) / float64(time.Millisecond), EngineProcesses: p.runs,
		BrokerRestarts: p.brokerRestarts, DroppedAcks: p.droppedAcks, InferredWrites: p.inferred, Dir: p.opt.Dir}
	for _, c := range p.h.Crashes {
		switch c.Point {
		case "random":
			l.KilledAtRandom++
		case "failed":
			l.FailedExits++
		default:
			l.KilledAtPoints++
		}
	}
	return l
}

// ClusterName is the provider name of a cluster: kfake, local,
// testcontainers or external.
func ClusterName(c Cluster) string {
	switch c.(type) {
	case *Kfake:
		return "kfake"
	case *Local:
		return "local"
	case *Container:
		return "testcontainers"
	}
	return "external"
}

// commitWatermark reads nextBatchWatermarkMs from the checkpoint's
// commits/N.
func commitWatermark(ckpt string, batch int64) (int64, error) {
	c, err := checkpoint.New(fsys.NewOS(ckpt)).ReadCommit(batch)
	if err != nil {
		return 0, fmt.Errorf("live: batch %d has neither a completion record nor a replay: %w", batch, err)
	}
	return c.NextBatchWatermarkMs, nil
}

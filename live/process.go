package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
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
	// (required; the CLI passes itself).
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
	"broker-restart (with --kafka local), and table, merge, append and foreachBatch sinks; not the disk faults, query-shape-change or swarm mode"

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
	for _, name := range settings.Names() {
		f, _ := faults.Lookup(name)
		switch {
		case f.Workload:
		case strings.HasPrefix(name, "crash-after-"):
			p.armable = append(p.armable, engine.CrashPoint(strings.TrimPrefix(name, "crash-")))
		case name == faults.CrashRandom:
			p.randomRate = settings.Value(name, "rate")
		case name == faults.BrokerRestart:
			rs, ok := cluster.(Restartable)
			if !ok {
				return nil, unsupported("broker-restart on this cluster (it needs --kafka local)")
			}
			p.broker = rs
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

	armable    []engine.CrashPoint
	randomRate float64
	broker     Restartable

	inTopics []string
	outTopic string
	sinkFlag string
	ckpt     string
	table    string
	args     []string

	// The scaled clock: virtual ms = wl.StartMs + (wall ms - realStartMs) * scale.
	realStart time.Time
	scale     float64

	byPos          record.Positions // (source, partition, offset) -> copy index
	droppedAcks    int              // duplicate appends made by a lost ack (kfake)
	inferred       int              // killed sink writes found committed by their replay
	runs           int              // engine processes started
	recFiles       []string         // records file of each process
	failures       int
	produced       []history.Copy // by the producer goroutine
	prodErr        error
	prodDone       chan struct{}
	backoff        time.Duration // extra wait after engine failures in a row
	brokerErr      error
	brokerRestarts int
	brokerWG       sync.WaitGroup
}

// maxEngineFailures bounds engine processes that exit with an error
// (other than the kills), each restarted like a crash.
const maxEngineFailures = 30

// engineBadInput is the engine verb's exit status for bad input
// (docs/exit-codes.md): a corrupt or locked checkpoint, a refused query.
// Restarting would fail the same way, so the supervisor stops.
const engineBadInput = 2

var errEngineBadInput = errors.New("the engine refused its input")

func (p *procRun) virt(t time.Time) int64 {
	return p.wl.StartMs + int64(math.Floor(float64(t.Sub(p.realStart).Milliseconds())*p.scale))
}

func (p *procRun) real(virtMs int64) time.Time {
	return p.realStart.Add(time.Duration(float64(virtMs-p.wl.StartMs) / p.scale * float64(time.Millisecond)))
}

func (p *procRun) setup(seed uint64) error {
	q, wl := p.q, p.wl
	p.h = newHistory(p.cfg, q, wl, p.settings, seed)
	switch q.Sink.Kind {
	case query.SinkTable:
		p.sinkFlag = "table"
		if p.opt.TableSink == "kafka" {
			p.sinkFlag = "transactional"
		}
	case query.SinkMerge:
		p.sinkFlag = "merge"
	default: // append, and foreachBatch (the deliveries are the sink writes)
		p.sinkFlag = "plain"
	}
	if p.sinkFlag == "transactional" && q.Sink.GenerateAppID {
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
		"--sink", p.sinkFlag, "--trigger-interval", p.opt.Trigger.String(), "--kafka-timeout", "60s"}
	for _, t := range p.inTopics {
		p.args = append(p.args, "--input-topic", t)
	}
	if p.sinkFlag == "table" || p.sinkFlag == "merge" {
		p.args = append(p.args, "--table", p.table)
	} else {
		p.args = append(p.args, "--output-topic", p.outTopic)
	}
	return nil
}

func (p *procRun) run() error {
	cl, err := kgo.NewClient(producerOpts(p.cluster)...)
	if err != nil {
		return fmt.Errorf("live: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(p.ctx, runTimeout)
	adm := kadm.NewClient(cl)
	for i, t := range p.inTopics {
		if err := createTopic(ctx, adm, t, int32(p.wl.Sources[i].Partitions)); err != nil {
			cancel()
			return err
		}
	}
	if p.sinkFlag == "plain" || p.sinkFlag == "transactional" {
		if err := createTopic(ctx, adm, p.outTopic, 1); err != nil {
			cancel()
			return err
		}
	}
	cancel()

	// Whatever ends the run ends its goroutines too: the producer, a
	// pending broker restart, a waiting engine.
	runCtx, cancelRun := context.WithCancel(p.ctx)
	p.ctx = runCtx
	defer p.brokerWG.Wait()
	defer cancelRun()

	// Whole milliseconds: the engine's --clock counts from the same one.
	p.realStart = time.UnixMilli(time.Now().UnixMilli())
	p.args = append(p.args, "--clock", fmt.Sprintf("%d:%d:%g", p.wl.StartMs, p.realStart.UnixMilli(), p.scale))
	p.prodDone = make(chan struct{})
	go p.produce(cl)
	if p.broker != nil {
		p.brokerWG.Add(1)
		go p.restartBroker()
	}
	realHeal, realEnd := p.real(p.wl.HealMs), p.real(p.wl.EndMs)
	downtime := time.Duration(float64(p.cfg.Downtime) / p.scale)

	for {
		if err := p.ctx.Err(); err != nil {
			return err
		}
		draining := false
		select {
		case <-p.prodDone:
			if p.prodErr != nil {
				return p.prodErr
			}
			draining = !time.Now().Before(realEnd)
		default:
		}
		if draining {
			break
		}
		end, err := p.engineRun(realHeal, realEnd)
		if err != nil {
			return err
		}
		if end.stopped {
			break
		}
		time.Sleep(downtime + p.backoff)
	}
	<-p.prodDone
	if p.prodErr != nil {
		return p.prodErr
	}
	p.brokerWG.Wait()
	if p.brokerErr != nil {
		return p.brokerErr
	}
	if p.brokerRestarts > 0 {
		p.h.Coverage[faults.BrokerRestart] += p.brokerRestarts
	}
	// Drain: a last process, unarmed, until a trigger finds no new data.
	for attempt := 0; ; attempt++ {
		err := p.finalRun()
		if err == nil {
			break
		}
		if p.ctx.Err() != nil || errors.Is(err, errEngineBadInput) {
			return err
		}
		p.failures++
		if p.failures > maxEngineFailures {
			return err
		}
		p.opt.Logf("final engine run failed (%v); again", err)
		time.Sleep(time.Duration(min(attempt+1, 5)) * time.Second)
	}
	p.h.EndMs = p.virt(time.Now())
	if err := p.collect(); err != nil {
		return err
	}
	p.h.Live = p.liveSummary()
	ctx, cancel = context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	return p.readTable(ctx)
}

func createTopic(ctx context.Context, adm *kadm.Client, name string, parts int32) error {
	resp, err := adm.CreateTopic(ctx, parts, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("live: create topic %s: %w", name, err)
	}
	return nil
}

// produce appends the workload's copies in order as the scaled clock
// reaches their append times; a copy's recorded append time is when its
// send began.
//
// On kfake a duplicate-append is what it stands for: the original is sent
// alone by a non-idempotent producer while the broker loses the ack of
// that produce request, so the client retries and the log keeps the same
// bytes twice at adjacent offsets. Elsewhere it is sent again explicitly.
func (p *procRun) produce(cl *kgo.Client) {
	defer close(p.prodDone)
	kf, _ := p.cluster.(*Kfake)
	var raw *kgo.Client
	if kf != nil {
		var err error
		raw, err = kgo.NewClient(append(producerOpts(p.cluster), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(1))...)
		if err != nil {
			p.prodErr = fmt.Errorf("live: %w", err)
			return
		}
		defer raw.Close()
	}
	cs := p.wl.Copies
	isDup := func(j int) bool {
		return kf != nil && j+1 < len(cs) && cs[j+1].Fault == faults.DuplicateAppend && cs[j+1].Event == cs[j].Event &&
			cs[j+1].Source == cs[j].Source && cs[j+1].Partition == cs[j].Partition
	}
	send := func(c *kgo.Client, recs []*kgo.Record) error {
		ctx, cancel := context.WithTimeout(p.ctx, 3*time.Minute) // outlives a broker restart
		defer cancel()
		if err := c.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("live: produce %d records to %s (first partition %d): %w", len(recs), recs[0].Topic, recs[0].Partition, err)
		}
		return nil
	}
	for i := 0; i < len(cs); {
		if d := time.Until(p.real(cs[i].AppendedAtMs)); d > 0 {
			select {
			case <-p.ctx.Done():
				p.prodErr = p.ctx.Err()
				return
			case <-time.After(d):
			}
		}
		now := time.Now()
		nowV := p.virt(now)
		if isDup(i) {
			rec := &kgo.Record{Topic: p.inTopics[cs[i].Source], Partition: int32(cs[i].Partition), Value: p.wl.Rows[i]}
			h, err := kf.DropProduceAck(rec.Topic, 1)
			if err == nil {
				err = send(raw, []*kgo.Record{rec})
			}
			if err == nil && h.Hits() != 1 {
				err = fmt.Errorf("live: the produce ack of copy %d was not dropped", i)
			}
			if err != nil {
				p.prodErr = err
				return
			}
			// The acked append is the retry; the lost-ack write is just
			// before it.
			for k, off := range []int64{rec.Offset - 1, rec.Offset} {
				c := cs[i+k]
				c.Offset = off
				c.AppendedAtMs = max(c.AppendedAtMs, nowV)
				p.produced = append(p.produced, c)
			}
			p.droppedAcks++
			i += 2
			continue
		}
		j := i
		var recs []*kgo.Record
		for j < len(cs) && cs[j].AppendedAtMs <= nowV && (j == i || !isDup(j)) {
			recs = append(recs, &kgo.Record{Topic: p.inTopics[cs[j].Source], Partition: int32(cs[j].Partition), Value: p.wl.Rows[j]})
			j++
		}
		if err := send(cl, recs); err != nil {
			p.prodErr = err
			return
		}
		for k, r := range recs {
			c := cs[i+k]
			c.Offset = r.Offset
			c.AppendedAtMs = max(c.AppendedAtMs, nowV)
			p.produced = append(p.produced, c)
		}
		i = j
	}
}

func (p *procRun) restartBroker() {
	defer p.brokerWG.Done()
	at := p.wl.StartMs + int64(p.settings.Value(faults.BrokerRestart, "at_frac")*float64(p.wl.HealMs-p.wl.StartMs))
	select {
	case <-p.ctx.Done():
		return
	case <-time.After(time.Until(p.real(at))):
	}
	p.opt.Logf("broker restart (SIGKILL) at %dms", at-p.wl.StartMs)
	ctx, cancel := context.WithTimeout(p.ctx, 2*time.Minute)
	defer cancel()
	if err := p.broker.Kill(); err != nil {
		p.brokerErr = fmt.Errorf("live: broker kill: %w", err)
		return
	}
	if err := p.broker.Restart(ctx); err != nil {
		p.brokerErr = fmt.Errorf("live: broker restart: %w", err)
		return
	}
	p.brokerRestarts++ // read only after brokerWG.Wait
	p.opt.Logf("broker back after %v", time.Since(p.real(at)).Round(time.Millisecond))
}

// runEnd is how one engine process ended.
type runEnd struct {
	stopped bool // stopped cleanly for the drain
}

// engineRun starts one engine process and waits until it dies (armed crash
// point, random kill, failure) or, once every copy is produced and the
// producers' time is over, stops it with SIGTERM.
func (p *procRun) engineRun(realHeal, realEnd time.Time) (runEnd, error) {
	env := os.Environ()
	armed, from := "", time.Now()
	// Until a random kill has landed, every other process runs unarmed,
	// so that crash-random gets its chance against the armed points.
	if p.randomRate == 0 || p.h.Coverage[faults.CrashRandom] > 0 || p.runs%2 == 0 {
		armed, from = p.drawCrash(realHeal)
	}
	env = append(env, "DEDUPSIM_CRASH_AT="+armed, "DEDUPSIM_CRASH_FROM="+strconv.FormatInt(from.UnixMilli(), 10),
		"DEDUPSIM_CRASH_UNTIL="+strconv.FormatInt(realHeal.UnixMilli(), 10))
	var killAt <-chan time.Time
	if p.randomRate > 0 && time.Now().Before(realHeal) {
		// Triggers until the kill: geometric with the rate per trigger.
		k := math.Floor(math.Log(1-p.rng.Float64()) / math.Log(1-p.randomRate))
		d := time.Duration((k + p.rng.Float64()) * float64(p.opt.Trigger))
		if time.Now().Add(d).Before(realHeal) {
			killAt = time.After(d)
		}
	}
	cmd, done, logf, err := p.startEngine(env, nil)
	if err != nil {
		return runEnd{}, err
	}
	defer logf.Close()
	pid := cmd.Process.Pid
	p.opt.Logf("engine %d started (pid %d, crash-at %q from +%v)", p.runs-1, pid, armed, time.Until(from).Round(time.Millisecond))
	drainTick := time.NewTicker(p.opt.Trigger)
	defer drainTick.Stop()
	var werr error
	killed, stopping := false, false
	for waiting := true; waiting; {
		select {
		case werr = <-done:
			waiting = false
		case <-killAt:
			syscall.Kill(-pid, syscall.SIGKILL)
			killed = true
			killAt = nil
		case <-drainTick.C:
			select {
			case <-p.prodDone:
				if p.prodErr != nil {
					syscall.Kill(-pid, syscall.SIGKILL)
					<-done
					return runEnd{}, p.prodErr
				}
				if !stopping && !time.Now().Before(realEnd) {
					syscall.Kill(pid, syscall.SIGTERM)
					stopping = true
				}
			default:
			}
		case <-p.ctx.Done():
			syscall.Kill(-pid, syscall.SIGKILL)
			<-done
			return runEnd{}, p.ctx.Err()
		}
	}
	syscall.Kill(-pid, syscall.SIGKILL) // anything left in the group
	diedAt := p.virt(time.Now())
	point, batch, err := p.crashOf(p.recFiles[len(p.recFiles)-1])
	if err != nil {
		return runEnd{}, err
	}
	var ee *exec.ExitError
	sig := errors.As(werr, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
	failed := false
	defer func() {
		if failed {
			p.backoff = min(max(2*p.backoff, 250*time.Millisecond), 5*time.Second)
		} else {
			p.backoff = 0
		}
	}()
	switch {
	case stopping && (werr == nil || (ee != nil && ee.ProcessState.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM)):
		// Stopped for the drain (before its signal handler was in place,
		// SIGTERM's default action ends it the same way: between batches
		// or not, the checkpoint decides what the next run does).
		return runEnd{stopped: true}, nil
	case sig && point != "":
		p.h.Crashes = append(p.h.Crashes, history.Crash{AtMs: diedAt, Point: point, BatchID: batch})
		p.h.Coverage[faults.CrashAt(point)]++
		p.opt.Logf("engine killed itself at %s of batch %d", point, batch)
	case sig && killed:
		p.h.Crashes = append(p.h.Crashes, history.Crash{AtMs: diedAt, Point: "random", BatchID: -1})
		p.h.Coverage[faults.CrashRandom]++
		p.opt.Logf("engine killed (SIGKILL) at a random moment")
	case ee != nil && ee.ExitCode() == engineBadInput:
		// Bad input (a corrupt or locked checkpoint, a refused query):
		// the same process would refuse it again; stop, do not loop.
		tail, _ := os.ReadFile(logf.Name())
		return runEnd{}, fmt.Errorf("live: engine process %d refused its input (exit 2; log %s): %w:\n%s", p.runs-1, logf.Name(), errEngineBadInput, lastLines(string(tail), 5))
	default:
		failed = true
		p.failures++
		tail, _ := os.ReadFile(logf.Name())
		if p.failures > maxEngineFailures {
			return runEnd{}, fmt.Errorf("live: engine process %d ended with %v (%d failures; log %s):\n%s", p.runs-1, werr, p.failures, logf.Name(), lastLines(string(tail), 20))
		}
		p.h.Crashes = append(p.h.Crashes, history.Crash{AtMs: diedAt, Point: "failed", BatchID: -1})
		p.opt.Logf("engine process ended with %v; restarting it like a crashed driver:\n%s", werr, lastLines(string(tail), 5))
	}
	return runEnd{}, nil
}

// drawCrash arms at most one crash point for the next engine process: the
// number of triggers until a crash is geometric with the summed rates of
// the crash-after-* faults (each fault's rate is its chance per trigger,
// as in the simulator, where a trigger runs one batch), the point is drawn
// in proportion to its rate, and the process kills itself at the first
// batch that passes the point after that time and before the heal. Time,
// not batch ids, keeps the rate right when batches take longer than a
// trigger against a real broker.
func (p *procRun) drawCrash(realHeal time.Time) (string, time.Time) {
	now := time.Now()
	if len(p.armable) == 0 || !now.Before(realHeal) {
		return "", now
	}
	total := 0.0
	for _, cp := range p.armable {
		total += p.settings.Value(faults.CrashAt(string(cp)), "rate")
	}
	if total <= 0 {
		return "", now
	}
	k := 0.0
	if total < 1 {
		k = math.Floor(math.Log(1-p.rng.Float64()) / math.Log(1-total))
	}
	from := now.Add(time.Duration(k * float64(p.opt.Trigger)))
	// The point, in proportion to its rate among the points that have not
	// fired yet (all of them once each has): a scenario promises that every
	// fault it enables fires, and a live run has only a dozen kills or so.
	cands := p.armable
	var unfired []engine.CrashPoint
	for _, cp := range p.armable {
		if p.h.Coverage[faults.CrashAt(string(cp))] == 0 {
			unfired = append(unfired, cp)
		}
	}
	if len(unfired) > 0 {
		cands = unfired
	}
	sum := 0.0
	for _, cp := range cands {
		sum += p.settings.Value(faults.CrashAt(string(cp)), "rate")
	}
	x := p.rng.Float64() * sum
	point := cands[len(cands)-1]
	for _, cp := range cands {
		if x -= p.settings.Value(faults.CrashAt(string(cp)), "rate"); x < 0 {
			point = cp
			break
		}
	}
	if !from.Before(realHeal) {
		return "", now
	}
	return string(point), from
}

// startEngine starts `dedupsim engine` in its own process group with a
// fresh records file; stdout and stderr go to engine-N.log.
func (p *procRun) startEngine(env, extra []string) (*exec.Cmd, <-chan error, *os.File, error) {
	n := p.runs
	p.runs++
	if n > 0 {
		// Restarted now, before the process can write anything (it may be
		// killed before its start record).
		p.h.Restarts = append(p.h.Restarts, history.Restart{AtMs: p.virt(time.Now())})
	}
	rec := filepath.Join(p.opt.Dir, fmt.Sprintf("records-%03d.jsonl", n))
	p.recFiles = append(p.recFiles, rec)
	logf, err := os.Create(filepath.Join(p.opt.Dir, fmt.Sprintf("engine-%03d.log", n)))
	if err != nil {
		return nil, nil, nil, err
	}
	args := append(slices.Clone(p.args), "--records", rec)
	cmd := exec.Command(p.opt.Binary, append(args, extra...)...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, nil, nil, fmt.Errorf("live: start engine: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return cmd, done, logf, nil
}

// finalRun runs an unarmed engine until a trigger finds no new data.
func (p *procRun) finalRun() error {
	env := append(os.Environ(), "DEDUPSIM_CRASH_AT=")
	cmd, done, logf, err := p.startEngine(env, []string{"--until-idle"})
	if err != nil {
		return err
	}
	defer logf.Close()
	select {
	case err = <-done:
	case <-p.ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("live: final engine run: %w", p.ctx.Err())
	case <-time.After(5 * time.Minute):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
	}
	if err != nil {
		tail, _ := os.ReadFile(logf.Name())
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == engineBadInput {
			return fmt.Errorf("live: final engine run refused its input (exit 2; log %s): %w:\n%s", logf.Name(), errEngineBadInput, lastLines(string(tail), 20))
		}
		p.h.Crashes = append(p.h.Crashes, history.Crash{AtMs: p.virt(time.Now()), Point: "failed", BatchID: -1})
		return fmt.Errorf("live: final engine run: %v (log %s):\n%s", err, logf.Name(), lastLines(string(tail), 20))
	}
	return nil
}

// crashOf reads the crash record a process wrote before killing itself.
func (p *procRun) crashOf(path string) (point string, batch int64, err error) {
	recs, _, err := records.Read(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	for _, r := range recs {
		if r.Kind == records.KindCrash {
			point, batch = r.Crashed, r.BatchID
		}
	}
	return point, batch, nil
}

// execution is one batch execution as its process recorded it.
type execution struct {
	at    int64 // virtual ms of the executed record
	exec  *records.Record
	write *records.Record // nil: no write recorded
	done  *records.Record // nil: the process died before completing it
}

// collect builds the history's batches and sink writes from the produced
// copies and the records of every process.
//
// An execution is on record from the moment its sink is called
// (records.KindExecuted); a SIGKILL can land anywhere after that, so a record
// may lack its write or its completion. The history is completed the way
// the engine's own rules allow:
//   - no write recorded, the next execution of the batch id found it
//     already committed by a versioned sink (table or transactional, which
//     skip a committed (app id, batch id): kept 0), and no earlier write
//     of it landed: the killed write did; it is recorded with all its rows
//     kept;
//   - foreachBatch: the function was called, which is the delivery;
//   - otherwise no write: the process died before any output, as a crash
//     before the sink; the execution is dropped, as the simulator never
//     records one (an append sink's write cut by a kill is not guessed:
//     its rows in the topic show up as table duplicates);
//   - a write but no completion: died after the sink write; if the batch
//     ran again it had no commit (crashed after-sink-write, the watermark
//     unchanged), else its commit landed (crashed after-commit, the next
//     watermark the one batch N+1 ran with, or commits/N's).
func (p *procRun) collect() error {
	h := p.h
	h.Copies = p.produced
	p.byPos = record.NewPositions(h.Copies)
	var execs []*execution
	for _, path := range p.recFiles {
		recs, _, err := records.Read(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		var cur *execution
		for i := range recs {
			r := &recs[i]
			switch r.Kind {
			case records.KindExecuted:
				cur = &execution{at: p.virt(time.UnixMilli(r.WallMs)), exec: r}
				execs = append(execs, cur)
			case records.KindWrite, records.KindBatch:
				if cur == nil || cur.exec.BatchID != r.BatchID {
					return fmt.Errorf("live: %s: %s record of batch %d without its execution", path, r.Kind, r.BatchID)
				}
				if r.Kind == records.KindWrite {
					cur.write = r
				} else {
					cur.done = r
				}
			}
		}
	}
	// A replay that kept nothing proves the killed write landed only for a
	// sink that skips a committed (app id, batch id); MERGE also keeps
	// nothing when every row matched other batches' rows.
	versioned := p.sinkFlag == "table" || p.sinkFlag == "transactional"
	// foreachBatch: calling the function is the delivery.
	foreachBatch := !p.h.HasTable
	inferred := 0
	landed := map[int64]bool{} // batch ids a write already landed for: a later skip is explained by it
	for i, x := range execs {
		var later *execution
		for _, y := range execs[i+1:] {
			if y.exec.BatchID == x.exec.BatchID {
				later = y
				break
			}
		}
		rows := record.RawCopies(x.exec.Rows)
		kept := -1
		switch {
		case x.write != nil:
			kept = x.write.Kept
		case versioned && len(rows) > 0 && !landed[x.exec.BatchID] && later != nil && later.write != nil && later.write.Kept == 0 && len(later.exec.Rows) > 0:
			kept = len(rows)
			inferred++
		case foreachBatch:
			kept = len(rows)
		}
		if kept < 0 && x.done == nil {
			continue // died before any output
		}
		b := p.batchOf(x.exec, x.at)
		switch {
		case x.done != nil:
			b.NextWatermarkMs, b.Crashed = x.done.NextWatermarkMs, x.done.Crashed
			p.addProgress(&b, x.done.Progress)
		case later != nil:
			b.Crashed, b.NextWatermarkMs = string(engine.AfterSinkWrite), b.WatermarkMs
		default:
			b.Crashed = string(engine.AfterCommit)
			// The watermark it committed is the one batch N+1 ran with;
			// commits/N holds it too while the log retains it.
			wm, ok := int64(0), false
			for _, y := range execs[i+1:] {
				if y.exec.BatchID == x.exec.BatchID+1 {
					wm, ok = y.exec.WatermarkMs, true
					break
				}
			}
			if !ok {
				var err error
				if wm, err = commitWatermark(p.ckpt, b.BatchID); err != nil {
					return err
				}
			}
			b.NextWatermarkMs = wm
			for _, o := range b.Outcomes {
				if o == history.Emitted {
					b.NumRowsUpdated++ // its progress died with it; the engine's figure is the emitted rows
				}
			}
		}
		h.Batches = append(h.Batches, b)
		if kept > 0 {
			landed[b.BatchID] = true
		}
		if kept >= 0 {
			h.Writes = append(h.Writes, history.SinkWrite{BatchID: b.BatchID, AtMs: x.at, Rows: rows, Kept: kept})
		}
	}
	p.inferred = inferred
	if inferred > 0 {
		p.opt.Logf("%d killed sink writes found committed by their replay", inferred)
	}
	if p.droppedAcks > 0 {
		p.opt.Logf("%d duplicate appends made by dropping a produce ack", p.droppedAcks)
	}
	return nil
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
	switch p.sinkFlag {
	case "table", "merge":
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
		h.Table = append(h.Table, record.CopyIndex(r))
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

func (p *procRun) batchOf(r *records.Record, at int64) history.Batch {
	input := make([]int, len(r.Input))
	for i, raw := range r.Input {
		var pos [3]int64
		if r.Pos != nil {
			pos = r.Pos[i]
		}
		// Where it was read identifies the copy even when a broker
		// appended the same bytes twice (a dropped ack).
		input[i] = p.byPos.Index(raw, pos, r.Pos != nil)
	}
	x := record.Execution{BatchID: r.BatchID, Replay: r.Replay, Input: input, Outcomes: r.Outcomes,
		LateWatermarkMs: r.LateWatermarkMs, WatermarkMs: r.WatermarkMs}
	return record.Batch(at, x, p.wl.Copies, p.q)
}

// addProgress adds a completed execution's progress and state figures.
func (p *procRun) addProgress(b *history.Batch, raw json.RawMessage) {
	var prog *engine.Progress
	if len(raw) > 0 {
		var v engine.Progress
		if json.Unmarshal(raw, &v) == nil {
			prog = &v
		}
	}
	if p.cfg.OmitProgress {
		raw = nil
	}
	record.AddProgress(b, prog, raw)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

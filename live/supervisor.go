package live

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/live/driver"
	"github.com/dedupsim/dedupsim/live/records"
	"github.com/dedupsim/dedupsim/sim/history"
)

// maxEngineFailures bounds engine processes that exit with an error
// (other than the kills), each restarted like a crash.
const maxEngineFailures = 30

// errEngineBadInput: the engine process exited with driver.ExitBadInput
// (docs/exit-codes.md: a corrupt or locked checkpoint, a refused query).
// Restarting it would fail the same way, so the supervisor stops.
var errEngineBadInput = errors.New("the engine refused its input")

// run creates the topics, runs the producer, the broker restart and the
// engine processes until every copy is produced and consumed, and
// completes the history.
func (p *procRun) run() error {
	cl, err := kgo.NewClient(producerOpts(p.cluster)...)
	if err != nil {
		return fmt.Errorf("live: %w", err)
	}
	defer cl.Close()
	if err := p.createTopics(cl); err != nil {
		return err
	}
	// Whatever ends the run ends its goroutines too: the producer, a
	// pending broker restart, a waiting engine.
	runCtx, cancelRun := context.WithCancel(p.ctx)
	p.ctx = runCtx
	defer p.brokerWG.Wait()
	defer cancelRun()

	if err := p.supervise(cl); err != nil {
		return err
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
	if err := p.drain(); err != nil {
		return err
	}
	p.h.EndMs = p.virt(time.Now())
	if err := p.collect(); err != nil {
		return err
	}
	p.h.Live = p.liveSummary()
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	return p.readTable(ctx)
}

// createTopics creates the run's input topics and, for a Kafka sink, its
// output topic.
func (p *procRun) createTopics(cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(p.ctx, runTimeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	for i, t := range p.inTopics {
		if err := createTopic(ctx, adm, t, int32(p.wl.Sources[i].Partitions)); err != nil {
			return err
		}
	}
	if p.dur.Store == sink.Kafka {
		return createTopic(ctx, adm, p.outTopic, 1)
	}
	return nil
}

// supervise starts the scaled clock, the producer and the broker restart,
// then runs engine processes, each restarted after the downtime, until the
// producers' time is over and one was stopped for the drain.
func (p *procRun) supervise(cl *kgo.Client) error {
	// Whole milliseconds: the engine's --clock counts from the same one.
	p.realStart = time.UnixMilli(time.Now().UnixMilli())
	p.args = append(p.args, "--clock", fmt.Sprintf("%d:%d:%g", p.wl.StartMs, p.realStart.UnixMilli(), p.scale))
	p.prodDone = make(chan struct{})
	go p.produce(cl)
	if p.broker != nil {
		p.brokerWG.Add(1)
		go p.restartBroker()
	}
	if len(p.nodeFaults) > 0 {
		p.brokerWG.Add(1)
		go p.runNodeFaults()
	}
	realHeal, realEnd := p.real(p.wl.HealMs), p.real(p.wl.EndMs)
	downtime := time.Duration(float64(p.cfg.Downtime) / p.scale)
	for {
		if err := p.ctx.Err(); err != nil {
			return err
		}
		select {
		case <-p.prodDone:
			if p.prodErr != nil {
				return p.prodErr
			}
			if !time.Now().Before(realEnd) {
				return nil // draining
			}
		default:
		}
		end, err := p.engineRun(realHeal, realEnd)
		if err != nil || end.stopped {
			return err
		}
		time.Sleep(downtime + p.backoff)
	}
}

// drain runs a last process, unarmed, until a trigger finds no new data,
// again after a failure (within the failure budget).
func (p *procRun) drain() error {
	for attempt := 0; ; attempt++ {
		err := p.finalRun()
		if err == nil {
			return nil
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
	env = append(env, driver.CrashEnv+"="+armed, driver.CrashFromEnv+"="+strconv.FormatInt(from.UnixMilli(), 10),
		driver.CrashUntilEnv+"="+strconv.FormatInt(realHeal.UnixMilli(), 10))
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
	p.opt.Logf("engine %d started (pid %d, crash-at %q from +%v)", p.runs-1, cmd.Process.Pid, armed, time.Until(from).Round(time.Millisecond))
	w, err := p.waitEngine(cmd.Process.Pid, done, killAt, realEnd)
	if err != nil {
		return runEnd{}, err
	}
	return p.judgeEnd(w, logf.Name())
}

// engineWait is how a wait for an engine process ended.
type engineWait struct {
	err      error // the process's exit
	killed   bool  // killed at a random moment
	stopping bool  // sent SIGTERM for the drain
}

// waitEngine waits for the process pid to end: it kills its group at
// killAt, and stops it (SIGTERM) once the producer is done and its time
// is over. A producer failure or the run's end kill it and are returned.
func (p *procRun) waitEngine(pid int, done <-chan error, killAt <-chan time.Time, realEnd time.Time) (engineWait, error) {
	drainTick := time.NewTicker(p.opt.Trigger)
	defer drainTick.Stop()
	var w engineWait
	for {
		select {
		case w.err = <-done:
			syscall.Kill(-pid, syscall.SIGKILL) // anything left in the group
			return w, nil
		case <-killAt:
			syscall.Kill(-pid, syscall.SIGKILL)
			w.killed = true
			killAt = nil
		case <-drainTick.C:
			select {
			case <-p.prodDone:
				if p.prodErr != nil {
					syscall.Kill(-pid, syscall.SIGKILL)
					<-done
					return w, p.prodErr
				}
				if !w.stopping && !time.Now().Before(realEnd) {
					syscall.Kill(pid, syscall.SIGTERM)
					w.stopping = true
				}
			default:
			}
		case <-p.ctx.Done():
			syscall.Kill(-pid, syscall.SIGKILL)
			<-done
			return w, p.ctx.Err()
		}
	}
}

// judgeEnd records how the last engine process ended (its records file
// says whether it killed itself at a crash point; log is its log file):
// a stop for the drain, a kill at a crash point or at random, bad input
// (the supervisor stops) or a failure (restarted like a crash, within the
// failure budget, after a growing backoff).
func (p *procRun) judgeEnd(w engineWait, log string) (runEnd, error) {
	diedAt := p.virt(time.Now())
	point, batch, err := p.crashOf(p.recFiles[len(p.recFiles)-1])
	if err != nil {
		return runEnd{}, err
	}
	var ee *exec.ExitError
	signal := func(sig syscall.Signal) bool {
		return ee != nil && ee.ProcessState.Sys().(syscall.WaitStatus).Signal() == sig
	}
	errors.As(w.err, &ee)
	failed := false
	defer func() {
		if failed {
			p.backoff = min(max(2*p.backoff, 250*time.Millisecond), 5*time.Second)
		} else {
			p.backoff = 0
		}
	}()
	switch {
	case w.stopping && (w.err == nil || signal(syscall.SIGTERM)):
		// Stopped for the drain (before its signal handler was in place,
		// SIGTERM's default action ends it the same way: between batches
		// or not, the checkpoint decides what the next run does).
		return runEnd{stopped: true}, nil
	case signal(syscall.SIGKILL) && point != "":
		p.h.Crashes = append(p.h.Crashes, history.Crash{AtMs: diedAt, Point: point, BatchID: batch})
		p.h.Coverage[faults.CrashAt(point)]++
		p.opt.Logf("engine killed itself at %s of batch %d", point, batch)
	case signal(syscall.SIGKILL) && w.killed:
		p.h.Crashes = append(p.h.Crashes, history.Crash{AtMs: diedAt, Point: "random", BatchID: -1})
		p.h.Coverage[faults.CrashRandom]++
		p.opt.Logf("engine killed (SIGKILL) at a random moment")
	case ee != nil && ee.ExitCode() == driver.ExitBadInput:
		// Bad input (a corrupt or locked checkpoint, a refused query):
		// the same process would refuse it again; stop, do not loop.
		tail, _ := os.ReadFile(log)
		return runEnd{}, fmt.Errorf("live: engine process %d refused its input (exit 2; log %s): %w:\n%s", p.runs-1, log, errEngineBadInput, lastLines(string(tail), 5))
	default:
		failed = true
		p.failures++
		tail, _ := os.ReadFile(log)
		if p.failures > maxEngineFailures {
			return runEnd{}, fmt.Errorf("live: engine process %d ended with %v (%d failures; log %s):\n%s", p.runs-1, w.err, p.failures, log, lastLines(string(tail), 20))
		}
		p.h.Crashes = append(p.h.Crashes, history.Crash{AtMs: diedAt, Point: "failed", BatchID: -1})
		p.opt.Logf("engine process ended with %v; restarting it like a crashed driver:\n%s", w.err, lastLines(string(tail), 5))
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
	var unfired []crashpoint.Point
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
	env := append(os.Environ(), driver.CrashEnv+"=")
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
		if errors.As(err, &ee) && ee.ExitCode() == driver.ExitBadInput {
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

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

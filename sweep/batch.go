package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/live"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/dedupsim/dedupsim/sim/history"
)

// A batch is the runs of run and sweep: scenario x seed jobs, run on -j
// workers. Each worker runs one job at a time, writes its report folder and
// hands back a small summary; the history is dropped there (or saved
// compressed first), so memory holds -j histories at most, whatever the
// number of seeds. Results come back in job order, so everything written
// over several runs (index.html, summary.md, junit.xml, shard.json) and the
// console are the same for every -j. Each run is deterministic by itself:
// a report folder's bytes do not depend on -j either.

// Job is one scenario run with one seed.
type Job struct {
	Seq      uint64 // position in the batch, from 0
	Scenario *scenarios.Scenario
	Seed     uint64
}

// Result is what a batch keeps of a run.
type Result struct {
	Job      Job
	Run      *result.Run    // the summary: no history (see Summarize)
	Dir      string         // the report folder, relative to Options.Out
	Coverage map[string]int // the faults that fired
	Skip     error          // this mode cannot run the scenario (Options.CanSkip: the batch goes on)
	Err      error
}

// ExecFunc runs one job: on the simulator (SimExec) or against Kafka.
type ExecFunc func(ctx context.Context, s *scenarios.Scenario, seed uint64) (*result.Run, error)

// SimExec runs a job on the simulator: the exec of run and sweep without
// --kafka.
func SimExec(swarm, strict bool) ExecFunc {
	return func(_ context.Context, s *scenarios.Scenario, seed uint64) (*result.Run, error) {
		return scenarios.Run(s, seed, scenarios.Options{Swarm: swarm, Strict: strict})
	}
}

// Options are a batch's settings.
type Options struct {
	Out         string // the folder of the report folders (--out)
	Jobs        int    // workers (-j)
	KeepHistory bool   // histories of passing runs too
	CanSkip     bool   // several scenarios: skip those this mode cannot run
	Exec        ExecFunc
	Version     string // the binary's version line, written into every run
}

// DefaultJobs is -j's default: one worker per CPU.
func DefaultJobs() int { return runtime.NumCPU() }

// maxJobs bounds -j.
const maxJobs = 1024

// CheckJobs refuses a -j out of [1, 1024]; verb starts the message.
func CheckJobs(verb string, j int) error {
	if j < 1 || j > maxJobs {
		return fmt.Errorf("%s: -j %d: want a number of parallel runs in [1, %d]", verb, j, maxJobs)
	}
	return nil
}

// RunBatch runs the jobs next yields and calls each with every result, in
// job order, from the calling goroutine. It returns the error of the
// earliest job that failed; jobs not started by then are not run.
func RunBatch(ctx context.Context, o Options, next func() (Job, bool), each func(Result)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan Job)
	results := make(chan Result)
	go func() {
		defer close(jobs)
		for ctx.Err() == nil {
			j, ok := next()
			if !ok {
				return
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range o.Jobs {
		wg.Go(func() {
			for j := range jobs {
				if ctx.Err() != nil {
					continue
				}
				results <- o.runOne(ctx, j)
			}
		})
	}
	go func() {
		wg.Wait()
		close(results)
	}()
	pending := map[uint64]Result{}
	var want uint64
	var first error
	handle := func(r Result) {
		if r.Err != nil {
			if first == nil {
				first = r.Err
			}
			cancel()
			return
		}
		each(r)
	}
	for r := range results {
		pending[r.Job.Seq] = r
		for {
			p, ok := pending[want]
			if !ok {
				break
			}
			delete(pending, want)
			want++
			handle(p)
		}
	}
	// After a failure the jobs after the gap it left, in order.
	for len(pending) > 0 {
		lo := uint64(0)
		found := false
		for seq := range pending {
			if !found || seq < lo {
				lo, found = seq, true
			}
		}
		handle(pending[lo])
		delete(pending, lo)
	}
	return first
}

// runOne runs one job and writes its report folder.
func (o Options) runOne(ctx context.Context, j Job) Result {
	res := Result{Job: j}
	start := time.Now()
	r, err := o.Exec(ctx, j.Scenario, j.Seed)
	switch {
	case (errors.Is(err, live.ErrUnsupported) || errors.Is(err, sim.ErrLiveOnly)) && o.CanSkip:
		res.Skip = err
		return res
	case errors.Is(err, live.ErrUnsupported) || errors.Is(err, sim.ErrLiveOnly):
		res.Err = exitcode.Bad(err)
		return res
	case err != nil:
		res.Err = exitcode.Output(err) // 1, or 2 for a refused report folder
		return res
	}
	r.Elapsed = time.Since(start)
	r.Version = o.Version
	dir, err := WriteRun(o.Out, r, o.KeepHistory || !r.Passed)
	if err != nil {
		res.Err = exitcode.Output(err)
		return res
	}
	res.Dir = filepath.Base(dir)
	if r.History != nil {
		res.Coverage = r.History.Coverage
	}
	res.Run = Summarize(r)
	return res
}

// Summarize is what a batch keeps of a run for index.html, summary.md,
// junit.xml and shard.json: the run without its history (megabytes per
// seed), except a live run's account, which summary.md prints.
//
// The checker's report is copied through JSON: its slices may share arrays
// with the history (about 1 MB a seed for a 4 KB report), which a plain
// copy would keep alive.
func Summarize(r *result.Run) *result.Run {
	s := *r
	s.History = nil
	if b, err := json.Marshal(r.Report); err == nil {
		var rep check.Report
		if json.Unmarshal(b, &rep) == nil {
			s.Report = rep
		}
	}
	if r.History != nil && r.History.Live != nil {
		s.History = &history.History{Version: r.History.Version, Seed: r.History.Seed, Live: r.History.Live}
	}
	return &s
}

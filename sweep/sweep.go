package sweep

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/scenarios/result"
)

// Config is what a sweep is: its seeds, its shard, its mode and the
// binary that runs it, as its manifest records them.
type Config struct {
	FirstSeed, Seeds uint64 // seeds FirstSeed..FirstSeed+Seeds-1 (CheckSeedRange)
	Shard, Shards    int    // shard Shard of Shards (ParseShard)
	Swarm, Strict    bool
	Version          string // the binary's version line
}

// Sweep is one sweep, or one shard of it, as it runs: its scenarios and
// seeds, what it keeps of each run, and the manifest merge reads.
type Sweep struct {
	list         []*scenarios.Scenario
	pos          map[*scenarios.Scenario]int // index in list
	first, seeds uint64
	idx, n       int // shard idx of n
	m            Manifest
	runs         []*result.Run
	entries      []reports.IndexEntry
	passed, done []uint64 // per scenario
}

// New is the sweep of every scenario of list with c's seeds.
func New(list []*scenarios.Scenario, c Config) *Sweep {
	per := shardSeeds(c.Seeds, c.Shard, c.Shards)
	m := Manifest{Format: ManifestFormat, Dedupsim: c.Version, Shard: c.Shard, Shards: c.Shards, FirstSeed: c.FirstSeed, Seeds: c.Seeds, Swarm: c.Swarm, Strict: c.Strict,
		Runs: []ManifestRun{}}
	for _, s := range list {
		m.Scenarios = append(m.Scenarios, ManifestScenario{Name: s.Name, File: s.File, Expected: per, Faults: requestedFaults(s), Coverage: map[string]int{}})
	}
	pos := map[*scenarios.Scenario]int{}
	for i, s := range list {
		pos[s] = i
	}
	return &Sweep{list: list, pos: pos, first: c.FirstSeed, seeds: c.Seeds, idx: c.Shard, n: c.Shards, m: m,
		passed: make([]uint64, len(list)), done: make([]uint64, len(list))}
}

// Label names the sweep in progress lines: "sweep", or "sweep shard i/n".
func (sw *Sweep) Label() string {
	if sw.n > 1 {
		return fmt.Sprintf("sweep shard %d/%d", sw.idx, sw.n)
	}
	return "sweep"
}

// Total is the number of runs of the sweep, or 0 (unknown) when it does
// not fit in a uint64.
func (sw *Sweep) Total() uint64 {
	per := shardSeeds(sw.seeds, sw.idx, sw.n)
	if per <= math.MaxUint64/uint64(len(sw.list)) {
		return per * uint64(len(sw.list))
	}
	return 0
}

// jobs yields every seed of the first scenario, then of the next.
func (sw *Sweep) jobs() func() (Job, bool) {
	si, seq := 0, uint64(0)
	cur := newSeedCursor(sw.first, sw.seeds, sw.idx, sw.n)
	return func() (Job, bool) {
		for si < len(sw.list) {
			if seed, ok := cur.next(); ok {
				seq++
				return Job{Seq: seq - 1, Scenario: sw.list[si], Seed: seed}, true
			}
			si++
			cur = newSeedCursor(sw.first, sw.seeds, sw.idx, sw.n)
		}
		return Job{}, false
	}
}

// Run runs the sweep's jobs with o (RunBatch), keeps every result and
// hands it to each, in job order. It returns the batch's error, which the
// manifest records as where the sweep stopped.
func (sw *Sweep) Run(ctx context.Context, o Options, each func(Result)) error {
	runErr := RunBatch(ctx, o, sw.jobs(), func(r Result) {
		sw.add(r)
		each(r)
	})
	if runErr != nil {
		sw.m.Stopped = runErr.Error()
	}
	return runErr
}

// add keeps one run: its summary, its index entry, its line of the
// manifest and the faults it fired.
func (sw *Sweep) add(r Result) {
	i := sw.pos[r.Job.Scenario]
	sw.done[i]++
	if r.Run.Passed {
		sw.passed[i]++
	}
	faults.Coverage(sw.m.Scenarios[i].Coverage).Merge(r.Coverage)
	sw.runs = append(sw.runs, r.Run)
	sw.entries = append(sw.entries, reports.IndexEntry{Run: r.Run, Dir: r.Dir})
	sw.m.Runs = append(sw.m.Runs, newManifestRun(r.Run, r.Dir))
}

// Finish prints a line per scenario, writes shard.json and the reports over
// all runs into out, and gives the exit status: runErr (Run's error), then
// the runs' expectations, then the faults that never fired (an unsharded
// sweep only: merge judges the coverage of a shard of several).
func (sw *Sweep) Finish(w io.Writer, out string, runErr error) error {
	index := filepath.Join(out, "index.html")
	var missing []string
	for i, s := range sw.list {
		fmt.Fprintf(w, "%s: %d of %d seeds met their expectations; report: %s\n", s.Name, sw.passed[i], sw.done[i], index)
		if miss := faults.Missing(sw.m.Scenarios[i].Faults, sw.m.Scenarios[i].Coverage); len(miss) > 0 && runErr == nil {
			if sw.n > 1 {
				fmt.Fprintf(w, "%s: faults that never fired in this shard: %s (merge judges coverage over every shard)\n", s.Name, strings.Join(miss, ", "))
			} else {
				missing = append(missing, fmt.Sprintf("%s: %s", s.Name, strings.Join(miss, ", ")))
			}
		}
	}
	if err := writeManifest(out, sw.m); err != nil {
		return err
	}
	if err := WriteOutputs(out, sw.runs, sw.entries, true); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if err := Failed(sw.runs); err != nil {
		return err
	}
	if len(missing) > 0 {
		return exitcode.Fail(fmt.Errorf("faults never fired in this sweep: %s", strings.Join(missing, "; ")))
	}
	return nil
}

// requestedFaults are the faults a scenario enables, sorted: a sweep fails
// when one never fired in any seed.
func requestedFaults(s *scenarios.Scenario) []string {
	out := []string{}
	for name := range s.Config.Plan.Faults {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/spf13/cobra"
)

// sweepLong is sweep's --help text.
const sweepLong = `sweep runs every scenario (a file, a catalogue name, or a DIR standing for every *.yaml and
*.yml file below it) with seeds FIRST..FIRST+N-1, or with the i-th of n shards of them (seeds
FIRST+k for k = i, i+n, ...) so that CI machines split a sweep; 'dedupsim merge' then combines
the shards into one result. -j N runs N seeds at once (default: the number of CPUs); every
report is the same whatever N is. Seeds stream: memory holds -j runs and a small summary per
seed, whatever N is.

It writes a report folder per scenario and seed (report.html, report.json, summary.md, and
history.json.gz for a seed that missed its expectations, or for every seed with
--keep-history), DIR/index.html, DIR/summary.md and DIR/junit.xml over all of them, and
DIR/shard.json, the manifest merge reads. When GITHUB_STEP_SUMMARY is set (GitHub Actions),
summary.md is appended to it. With --swarm each seed switches whole fault classes off at random
and draws knob values, so different seeds explore different fault mixes.

--shard auto reads the shard from the environment: DEDUPSIM_SHARD_INDEX and
DEDUPSIM_SHARD_COUNT (in GitHub Actions, pass ${{ strategy.job-index }} and
${{ strategy.job-total }}), or, in a Kubernetes Indexed Job, JOB_COMPLETION_INDEX with
DEDUPSIM_SHARD_COUNT set to the Job's completions.

The sweep fails (exit 1) when any seed misses its expectations, or when a fault a scenario asks
for never fired in any seed: a fault that never fired proves nothing. A shard of several (n > 1)
leaves that judgement to merge, which sees every seed.`

// sweepOptions are sweep's flags.
type sweepOptions struct {
	seeds, first          uint64
	shard, out, memBudget string
	sparkVersion          string
	swarm                 bool
	bf                    batchFlags
}

func newSweepCmd() *cobra.Command {
	var o sweepOptions
	cmd := &cobra.Command{
		Use:   "sweep SCENARIO|DIR... --seeds N [--first-seed F] [--shard i/n|auto] [-j N] [--swarm]",
		Short: "Run scenarios over many seeds",
		Long:  sweepLong,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSweep(cmd, args, o)
		},
	}
	cmd.Flags().Uint64Var(&o.seeds, "seeds", 0, "number of seeds (required; up to 2^64-1)")
	cmd.Flags().Uint64Var(&o.first, "first-seed", 1, "first seed")
	cmd.Flags().StringVar(&o.shard, "shard", "0/1", "run only shard i of n (i/n, 0-based), or auto: from DEDUPSIM_SHARD_INDEX (or a Kubernetes Indexed Job's JOB_COMPLETION_INDEX) and DEDUPSIM_SHARD_COUNT")
	cmd.Flags().StringVar(&o.out, "out", "out", "folder for reports")
	cmd.Flags().BoolVar(&o.swarm, "swarm", false, "swarm mode")
	cmd.Flags().StringVar(&o.sparkVersion, "spark-version", "", sparkVersionUsage)
	o.bf.register(cmd)
	memoryBudgetFlag(cmd, &o.memBudget)
	return cmd
}

// runSweep is sweep's RunE: it checks the flags and the scenarios, runs
// every seed of the shard, and writes the reports and shard.json.
func runSweep(cmd *cobra.Command, args []string, o sweepOptions) error {
	idx, n, err := checkSweepFlags(o)
	if err != nil {
		return badInput(err)
	}
	if err := refuseOverlap("sweep", scenarioArgs(args), batchOutputs(o.out)); err != nil {
		return badInput(err)
	}
	list, err := scenarios.DiscoverNoting(args, noteSkipped("sweep"))
	if err != nil {
		return badInput(err)
	}
	if err := scenarioSparkVersion(list, o.sparkVersion); err != nil {
		return badInput(err)
	}
	// Every seed of the sweep, not only this shard's: shards often share
	// one --out.
	seedIn := func(s uint64) bool { return s >= o.first && s-o.first < o.seeds }
	if err := refuseRunFolders("sweep", o.out, list, seedIn); err != nil {
		return badInput(err)
	}
	// -j seeds run at once, of one scenario or several.
	memLine, err := checkScenarios(list, o.memBudget, o.swarm, o.bf.jobs, true)
	if err != nil {
		return badInput(err)
	}
	if err := refuseUnrunnable(list, o.swarm, false); err != nil {
		return err
	}
	if !o.bf.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "dedupsim sweep: %s\n", memLine)
	}
	sw := newSweep(list, o, idx, n)
	runErr := sw.run(cmd, o)
	return sw.finish(cmd.OutOrStdout(), o.out, runErr)
}

// checkSweepFlags refuses sweep's flags out of their domain and returns the
// shard: index idx of n.
func checkSweepFlags(o sweepOptions) (idx, n int, err error) {
	if err := checkSeedRange(o.first, o.seeds); err != nil {
		return 0, 0, err
	}
	idx, n, err = parseShard(o.shard, os.Getenv)
	if err != nil {
		return 0, 0, fmt.Errorf("sweep: %w", err)
	}
	if uint64(n) > o.seeds {
		return 0, 0, fmt.Errorf("sweep: %d shards of %d seeds: some shards would run no seed; want at most %d shards", n, o.seeds, o.seeds)
	}
	if err := o.bf.check("sweep"); err != nil {
		return 0, 0, err
	}
	if err := checkOut("sweep", o.out); err != nil {
		return 0, 0, err
	}
	return idx, n, nil
}

// sweep is one sweep, or one shard of it, as it runs: its scenarios and
// seeds, what it keeps of each run, and the manifest merge reads.
type sweep struct {
	list         []*scenarios.Scenario
	pos          map[*scenarios.Scenario]int // index in list
	first, seeds uint64
	idx, n       int // shard idx of n
	m            manifest
	runs         []*result.Run
	entries      []reports.IndexEntry
	passed, done []uint64 // per scenario
}

func newSweep(list []*scenarios.Scenario, o sweepOptions, idx, n int) *sweep {
	per := shardSeeds(o.seeds, idx, n)
	m := manifest{Format: manifestFormat, Dedupsim: buildVersion, Shard: idx, Shards: n, FirstSeed: o.first, Seeds: o.seeds, Swarm: o.swarm, Strict: o.bf.strict,
		Runs: []manifestRun{}}
	for _, s := range list {
		m.Scenarios = append(m.Scenarios, manifestScenario{Name: s.Name, File: s.File, Expected: per, Faults: requestedFaults(s), Coverage: map[string]int{}})
	}
	pos := map[*scenarios.Scenario]int{}
	for i, s := range list {
		pos[s] = i
	}
	return &sweep{list: list, pos: pos, first: o.first, seeds: o.seeds, idx: idx, n: n, m: m,
		passed: make([]uint64, len(list)), done: make([]uint64, len(list))}
}

// total is the number of runs of the sweep, or 0 (unknown) when it does
// not fit in a uint64.
func (sw *sweep) total() uint64 {
	per := shardSeeds(sw.seeds, sw.idx, sw.n)
	if per <= math.MaxUint64/uint64(len(sw.list)) {
		return per * uint64(len(sw.list))
	}
	return 0
}

// jobs yields every seed of the first scenario, then of the next.
func (sw *sweep) jobs() func() (batchJob, bool) {
	si, seq := 0, uint64(0)
	cur := newSeedCursor(sw.first, sw.seeds, sw.idx, sw.n)
	return func() (batchJob, bool) {
		for si < len(sw.list) {
			if seed, ok := cur.next(); ok {
				seq++
				return batchJob{seq: seq - 1, s: sw.list[si], seed: seed}, true
			}
			si++
			cur = newSeedCursor(sw.first, sw.seeds, sw.idx, sw.n)
		}
		return batchJob{}, false
	}
}

// run runs the sweep's jobs on o's workers, printing every run that missed
// its expectations as it comes. It returns the batch's error, which the
// manifest records as where the sweep stopped.
func (sw *sweep) run(cmd *cobra.Command, o sweepOptions) error {
	label := "sweep"
	if sw.n > 1 {
		label = fmt.Sprintf("sweep shard %d/%d", sw.idx, sw.n)
	}
	prog := newProgress(cmd.ErrOrStderr(), o.bf.quiet, label, sw.total(), o.bf.interval)
	bo := batchOptions{out: o.out, jobs: o.bf.jobs, keepHistory: o.bf.keepHistory, exec: simExec(o.swarm, o.bf.strict)}
	runErr := runBatch(cmd.Context(), bo, sw.jobs(), func(r batchResult) {
		sw.add(r)
		prog.add(r.run.Passed)
		if !r.run.Passed {
			prog.print(cmd.OutOrStdout(), func(w io.Writer) { printRun(w, r.run) })
		}
	})
	prog.finish()
	if runErr != nil {
		sw.m.Stopped = runErr.Error()
	}
	return runErr
}

// add keeps one run: its summary, its index entry, its line of the
// manifest and the faults it fired.
func (sw *sweep) add(r batchResult) {
	i := sw.pos[r.job.s]
	sw.done[i]++
	if r.run.Passed {
		sw.passed[i]++
	}
	faults.Coverage(sw.m.Scenarios[i].Coverage).Merge(r.cov)
	sw.runs = append(sw.runs, r.run)
	sw.entries = append(sw.entries, reports.IndexEntry{Run: r.run, Dir: r.dir})
	sw.m.Runs = append(sw.m.Runs, newManifestRun(r.run, r.dir))
}

// finish prints a line per scenario, writes shard.json and the reports over
// all runs, and gives the exit status: the batch's error, then the runs'
// expectations, then the faults that never fired (an unsharded sweep only:
// merge judges the coverage of a shard of several).
func (sw *sweep) finish(w io.Writer, out string, runErr error) error {
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
	if err := writeOutputs(out, sw.runs, sw.entries, true); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if err := failed(sw.runs); err != nil {
		return err
	}
	if len(missing) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("faults never fired in this sweep: %s", strings.Join(missing, "; "))}
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

// writeManifest writes out/shard.json.
func writeManifest(out string, m manifest) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return &exitError{code: 1, err: err}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if err := reports.WriteFile(filepath.Join(out, "shard.json"), append(b, '\n')); err != nil {
		return outputError(err)
	}
	return nil
}

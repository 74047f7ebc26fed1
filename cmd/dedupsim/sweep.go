package main

import (
	"context"
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

func newSweepCmd() *cobra.Command {
	var seeds, first uint64
	var shard, out, memBudget string
	var swarm bool
	var bf batchFlags
	cmd := &cobra.Command{
		Use:   "sweep SCENARIO|DIR... --seeds N [--first-seed F] [--shard i/n|auto] [-j N] [--swarm]",
		Short: "Run scenarios over many seeds",
		Long: `sweep runs every scenario (a file, a catalogue name, or a DIR standing for every *.yaml and
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
leaves that judgement to merge, which sees every seed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkSeedRange(first, seeds); err != nil {
				return badInput(err)
			}
			idx, n, err := parseShard(shard, os.Getenv)
			if err != nil {
				return badInput(fmt.Errorf("sweep: %w", err))
			}
			if uint64(n) > seeds {
				return badInput(fmt.Errorf("sweep: %d shards of %d seeds: some shards would run no seed; want at most %d shards", n, seeds, seeds))
			}
			if err := bf.check("sweep"); err != nil {
				return badInput(err)
			}
			if err := checkOut("sweep", out); err != nil {
				return badInput(err)
			}
			list, err := scenarios.Discover(args)
			if err != nil {
				return badInput(err)
			}
			for _, s := range list {
				if err := checkRunName(s.Name); err != nil {
					return badInput(fmt.Errorf("%s: %w", scenarios.Ref(s), err))
				}
			}
			if err := checkMemory(list, memBudget, swarm, bf.jobs); err != nil {
				return badInput(err)
			}
			per := shardSeeds(seeds, idx, n)
			total := uint64(0) // unknown when it does not fit
			if per <= math.MaxUint64/uint64(len(list)) {
				total = per * uint64(len(list))
			}
			m := manifest{Format: manifestFormat, Dedupsim: buildVersion, Shard: idx, Shards: n, FirstSeed: first, Seeds: seeds, Swarm: swarm, Strict: bf.strict,
				Runs: []manifestRun{}}
			for _, s := range list {
				m.Scenarios = append(m.Scenarios, manifestScenario{Name: s.Name, File: s.File, Expected: per, Faults: requestedFaults(s), Coverage: map[string]int{}})
			}
			label := "sweep"
			if n > 1 {
				label = fmt.Sprintf("sweep shard %d/%d", idx, n)
			}
			prog := newProgress(cmd.ErrOrStderr(), bf.quiet, label, total, bf.interval)
			// Jobs: every seed of the first scenario, then of the next.
			si, seq := 0, uint64(0)
			cur := newSeedCursor(first, seeds, idx, n)
			next := func() (batchJob, bool) {
				for si < len(list) {
					if seed, ok := cur.next(); ok {
						seq++
						return batchJob{seq: seq - 1, s: list[si], seed: seed}, true
					}
					si++
					cur = newSeedCursor(first, seeds, idx, n)
				}
				return batchJob{}, false
			}
			var runs []*result.Run
			var entries []reports.IndexEntry
			passed := make([]uint64, len(list))
			done := make([]uint64, len(list))
			pos := map[*scenarios.Scenario]int{}
			for i, s := range list {
				pos[s] = i
			}
			o := batchOptions{out: out, jobs: bf.jobs, keepHistory: bf.keepHistory,
				exec: func(_ context.Context, s *scenarios.Scenario, seed uint64) (*result.Run, error) {
					return scenarios.Run(s, seed, scenarios.Options{Swarm: swarm, Strict: bf.strict})
				}}
			runErr := runBatch(cmd.Context(), o, next, func(r batchResult) {
				i := pos[r.job.s]
				done[i]++
				if r.run.Passed {
					passed[i]++
				}
				faults.Coverage(m.Scenarios[i].Coverage).Merge(r.cov)
				runs = append(runs, r.run)
				entries = append(entries, reports.IndexEntry{Run: r.run, Dir: r.dir})
				m.Runs = append(m.Runs, newManifestRun(r.run, r.dir))
				prog.add(r.run.Passed)
				if !r.run.Passed {
					prog.print(cmd.OutOrStdout(), func(w io.Writer) { printRun(w, r.run) })
				}
			})
			prog.finish()
			if runErr != nil {
				m.Stopped = runErr.Error()
			}
			w := cmd.OutOrStdout()
			index := filepath.Join(out, "index.html")
			var missing []string
			for i, s := range list {
				fmt.Fprintf(w, "%s: %d of %d seeds met their expectations; report: %s\n", s.Name, passed[i], done[i], index)
				if miss := faults.Missing(m.Scenarios[i].Faults, m.Scenarios[i].Coverage); len(miss) > 0 && runErr == nil {
					if n > 1 {
						fmt.Fprintf(w, "%s: faults that never fired in this shard: %s (merge judges coverage over every shard)\n", s.Name, strings.Join(miss, ", "))
					} else {
						missing = append(missing, fmt.Sprintf("%s: %s", s.Name, strings.Join(miss, ", ")))
					}
				}
			}
			if err := writeManifest(out, m); err != nil {
				return err
			}
			if err := writeOutputs(out, runs, entries, true); err != nil {
				return err
			}
			if runErr != nil {
				return runErr
			}
			if err := failed(runs); err != nil {
				return err
			}
			if len(missing) > 0 {
				return &exitError{code: 1, err: fmt.Errorf("faults never fired in this sweep: %s", strings.Join(missing, "; "))}
			}
			return nil
		},
	}
	cmd.Flags().Uint64Var(&seeds, "seeds", 0, "number of seeds (required; up to 2^64-1)")
	cmd.Flags().Uint64Var(&first, "first-seed", 1, "first seed")
	cmd.Flags().StringVar(&shard, "shard", "0/1", "run only shard i of n (i/n, 0-based), or auto: from DEDUPSIM_SHARD_INDEX (or a Kubernetes Indexed Job's JOB_COMPLETION_INDEX) and DEDUPSIM_SHARD_COUNT")
	cmd.Flags().StringVar(&out, "out", "out", "folder for reports")
	cmd.Flags().BoolVar(&swarm, "swarm", false, "swarm mode")
	bf.register(cmd)
	memoryBudgetFlag(cmd, &memBudget)
	return cmd
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

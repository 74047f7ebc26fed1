package main

import (
	"fmt"
	"io"
	"os"

	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/internal/pathcheck"
	"github.com/dedupsim/dedupsim/internal/termprogress"
	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/sweep"
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
		return exitcode.Bad(err)
	}
	if err := pathcheck.RefuseOverlap("sweep", scenarioArgs(args), batchOutputs(o.out)); err != nil {
		return exitcode.Bad(err)
	}
	list, err := scenarios.DiscoverNoting(args, noteSkipped("sweep"))
	if err != nil {
		return exitcode.Bad(err)
	}
	if err := scenarios.SetSparkVersion(list, o.sparkVersion); err != nil {
		return exitcode.Bad(err)
	}
	// Every seed of the sweep, not only this shard's: shards often share
	// one --out.
	seedIn := func(s uint64) bool { return s >= o.first && s-o.first < o.seeds }
	if err := refuseRunFolders("sweep", o.out, list, seedIn); err != nil {
		return exitcode.Bad(err)
	}
	// -j seeds run at once, of one scenario or several.
	memLine, err := checkScenarios(list, o.memBudget, o.swarm, o.bf.jobs, true)
	if err != nil {
		return exitcode.Bad(err)
	}
	if err := refuseUnrunnable(list, o.swarm, false); err != nil {
		return err
	}
	if !o.bf.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "dedupsim sweep: %s\n", memLine)
	}
	sw := sweep.New(list, sweep.Config{FirstSeed: o.first, Seeds: o.seeds, Shard: idx, Shards: n, Swarm: o.swarm, Strict: o.bf.strict, Version: buildVersion})
	prog := termprogress.NewRuns(cmd.ErrOrStderr(), o.bf.quiet, sw.Label(), sw.Total(), o.bf.interval)
	bo := sweep.Options{Out: o.out, Jobs: o.bf.jobs, KeepHistory: o.bf.keepHistory, Exec: sweep.SimExec(o.swarm, o.bf.strict), Version: buildVersion}
	// Every run that missed its expectations is printed as it comes.
	runErr := sw.Run(cmd.Context(), bo, func(r sweep.Result) {
		prog.Add(r.Run.Passed)
		if !r.Run.Passed {
			prog.Print(cmd.OutOrStdout(), func(w io.Writer) { reports.PrintRun(w, r.Run) })
		}
	})
	prog.Finish()
	return sw.Finish(cmd.OutOrStdout(), o.out, runErr)
}

// checkSweepFlags refuses sweep's flags out of their domain and returns the
// shard: index idx of n.
func checkSweepFlags(o sweepOptions) (idx, n int, err error) {
	if err := sweep.CheckSeedRange(o.first, o.seeds); err != nil {
		return 0, 0, err
	}
	idx, n, err = sweep.ParseShard(o.shard, os.Getenv)
	if err != nil {
		return 0, 0, fmt.Errorf("sweep: %w", err)
	}
	if uint64(n) > o.seeds {
		return 0, 0, fmt.Errorf("sweep: %d shards of %d seeds: some shards would run no seed; want at most %d shards", n, o.seeds, o.seeds)
	}
	if err := o.bf.check("sweep"); err != nil {
		return 0, 0, err
	}
	if err := sweep.CheckOut("sweep", o.out); err != nil {
		return 0, 0, err
	}
	return idx, n, nil
}

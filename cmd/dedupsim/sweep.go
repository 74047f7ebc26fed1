package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

func newSweepCmd() *cobra.Command {
	var seeds, first uint64
	var shard, out, memBudget string
	var swarm bool
	cmd := &cobra.Command{
		Use:   "sweep SCENARIO --seeds N [--shard i/n] [--swarm]",
		Short: "Run one scenario over many seeds",
		Long: `sweep runs a scenario with seeds FIRST..FIRST+N-1 (or the i-th of n shards of them, so CI
machines can split a sweep), writes a report folder per seed, DIR/index.html over all of them,
and DIR/junit.xml. With --swarm each seed switches whole fault classes off at random and draws
knob values, so different seeds explore different fault mixes.

The sweep fails (exit 1) when any seed misses its expectations, or when a fault the scenario
asks for never fired in any seed: a fault that never fired proves nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if seeds == 0 {
				return badInput(fmt.Errorf("sweep: --seeds N (N >= 1) is required"))
			}
			idx, n, err := parseShard(shard)
			if err != nil {
				return badInput(err)
			}
			list, err := loadAll(args)
			if err != nil {
				return badInput(err)
			}
			if err := checkMemory(list, memBudget, swarm); err != nil {
				return badInput(err)
			}
			s := list[0]
			var mine []uint64
			for i := uint64(0); i < seeds; i++ {
				if int(i%uint64(n)) == idx {
					mine = append(mine, first+i)
				}
			}
			bar := progressbar.NewOptions(len(mine), progressbar.OptionSetWriter(os.Stderr),
				progressbar.OptionSetDescription(s.Name), progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
			opt := scenarios.Options{Swarm: swarm}
			var runs []*reports.Run
			var entries []reports.IndexEntry
			cov := faults.Coverage{}
			for _, seed := range mine {
				r, err := scenarios.Run(s, seed, opt)
				if errors.Is(err, sim.ErrLiveOnly) {
					return badInput(err)
				}
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				if err := writeRun(out, r); err != nil {
					return &exitError{code: 1, err: err}
				}
				cov.Merge(r.History.Coverage)
				runs = append(runs, r)
				entries = append(entries, reports.IndexEntry{Run: r, Dir: filepath.Base(runDir(out, r))})
				bar.Add(1)
				if !r.Passed {
					bar.Clear()
					printRun(cmd.OutOrStdout(), r)
				}
			}
			bar.Finish()
			if err := reports.WriteIndex(filepath.Join(out, "index.html"), entries); err != nil {
				return err
			}
			passed := 0
			for _, r := range runs {
				if r.Passed {
					passed++
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d of %d seeds met their expectations; report: %s\n", s.Name, passed, len(runs), filepath.Join(out, "index.html"))
			var requested []string
			for name := range s.Config.Plan.Faults {
				requested = append(requested, name)
			}
			if missing := faults.Missing(requested, cov); len(missing) > 0 {
				if err := finish(out, runs); err != nil {
					return err
				}
				return &exitError{code: 1, err: fmt.Errorf("faults never fired in this sweep: %s", strings.Join(missing, ", "))}
			}
			return finish(out, runs)
		},
	}
	cmd.Flags().Uint64Var(&seeds, "seeds", 0, "number of seeds")
	cmd.Flags().Uint64Var(&first, "first-seed", 1, "first seed")
	cmd.Flags().StringVar(&shard, "shard", "0/1", "run only shard i of n (i/n, 0-based)")
	cmd.Flags().StringVar(&out, "out", "out", "folder for reports")
	cmd.Flags().BoolVar(&swarm, "swarm", false, "swarm mode")
	memoryBudgetFlag(cmd, &memBudget)
	return cmd
}

func parseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard %q: want i/n with 0 <= i < n", s)
	}
	return i, n, nil
}

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/internal/pathcheck"
	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/shrink"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sweep"
	"github.com/spf13/cobra"
)

// replayOptions are replay's flags.
type replayOptions struct {
	seed                      uint64
	out, memBudget, exportDir string
	swarm, strict, export     bool
	// shrinkDir: --shrink DIR (shrink.go).
	shrinkDir string
	budget    int
	// sparkVersion: --spark-version, as the original run had it.
	sparkVersion string
}

func newReplayCmd() *cobra.Command {
	var o replayOptions
	cmd := &cobra.Command{
		Use:   "replay --seed S [--strict] [--export DIR] SCENARIO",
		Short: "Re-run one scenario with one seed, exactly as the original run",
		Long: `replay re-runs a scenario (a file or a catalogue name) with the seed a failure printed. The
simulator is deterministic, so the run, its history and its report.json are byte-identical to the
original; replay prints the history's SHA-256 so two runs can be compared at a glance, and always
keeps the history (DIR/<scenario>-<seed>/history.json.gz).

--export DIR also writes the run as a dedupsim exec pair, DIR/query.yaml and DIR/steps.jsonl, and
prints the exec command that replays it batch for batch without the simulator (a run that
restarted on a fresh checkpoint after a query-shape-change has one pair per checkpoint, the later
ones in DIR/checkpoint-K/). See docs/incidents.md.

--shrink DIR also shrinks the run to the smallest exec pair that still holds an event twice in
the table, as dedupsim shrink does (--budget bounds its runs).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.export = cmd.Flags().Changed("export")
			if !cmd.Flags().Changed("seed") {
				return exitcode.Bad(fmt.Errorf("replay: --seed is required"))
			}
			return runReplay(cmd.OutOrStdout(), args[0], o)
		},
	}
	cmd.Flags().Uint64Var(&o.seed, "seed", 0, "the seed to replay (required)")
	cmd.Flags().StringVar(&o.out, "out", "out", "folder for reports")
	cmd.Flags().BoolVar(&o.swarm, "swarm", false, "the run was a swarm run")
	cmd.Flags().StringVar(&o.sparkVersion, "spark-version", "", "the run's --spark-version")
	cmd.Flags().BoolVar(&o.strict, "strict", false, strictUsage)
	cmd.Flags().StringVar(&o.exportDir, "export", "", "also write the run as an exec pair (query.yaml, steps.jsonl) in this folder")
	cmd.Flags().StringVar(&o.shrinkDir, "shrink", "", "also shrink the run into this folder (dedupsim shrink)")
	cmd.Flags().IntVar(&o.budget, "budget", shrink.DefaultBudget, "with --shrink: runs to spend at most")
	memoryBudgetFlag(cmd, &o.memBudget)
	return cmd
}

func runReplay(w io.Writer, arg string, o replayOptions) error {
	s, err := replayScenario(arg, o)
	if err != nil {
		return exitcode.Bad(err)
	}
	if err := scenarios.SetSparkVersion([]*scenarios.Scenario{s}, o.sparkVersion); err != nil {
		return exitcode.Bad(err)
	}
	start := time.Now()
	r, err := scenarios.Run(s, o.seed, scenarios.Options{Swarm: o.swarm, Strict: o.strict})
	if errors.Is(err, sim.ErrLiveOnly) {
		return exitcode.Bad(err)
	}
	if err != nil {
		return &exitcode.Error{Code: 1, Err: err}
	}
	r.Elapsed, r.Version = time.Since(start), buildVersion
	if _, err := sweep.WriteRun(o.out, r, true); err != nil {
		return exitcode.Output(err)
	}
	reports.PrintRun(w, r)
	h, err := json.Marshal(r.History)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(h)
	fmt.Fprintf(w, "history sha256 %s\n", hex.EncodeToString(sum[:]))
	runs := []*result.Run{sweep.Summarize(r)}
	if err := sweep.WriteOutputs(o.out, runs, nil, false); err != nil {
		return err
	}
	if o.export {
		// A failed run is the one worth exporting: the pair is written
		// whatever the verdict, before the exit status says it.
		pairs, err := reports.ExportRun(o.exportDir, s.Config, r.History, r.Replay)
		for _, p := range pairs {
			what := "exec pair"
			if p.Of > 1 {
				what = fmt.Sprintf("exec pair of checkpoint %d of %d", p.Checkpoint, p.Of)
			}
			fmt.Fprintf(w, "%s: dedupsim exec --query %s --input %s\n", what, scenarios.QuoteArg(p.Query), scenarios.QuoteArg(p.Steps))
		}
		if err != nil {
			return exitcode.Output(err)
		}
	}
	if o.shrinkDir != "" {
		if err := replayShrink(w, s, o, r); err != nil {
			return err
		}
	}
	return sweep.Failed(runs)
}

// replayScenario checks replay's flags and loads its one scenario: every
// error is bad input.
func replayScenario(arg string, o replayOptions) (*scenarios.Scenario, error) {
	if err := pathcheck.RefuseOverlap("replay", []pathcheck.Path{pathcheck.ReadsFile("the scenario", arg)}, append(pathcheck.WritesInFolder("--export", o.exportDir, "query.yaml", "steps.jsonl"), batchOutputs(o.out)...)); err != nil {
		return nil, err
	}
	if err := sweep.CheckOut("replay", o.out); err != nil {
		return nil, err
	}
	if o.export {
		if err := checkExport(o.exportDir); err != nil {
			return nil, err
		}
	}
	if err := checkReplayShrink(arg, o); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("replay: %s is a folder: replay runs one scenario (a file or a catalogue name)", arg)
	}
	list, err := scenarios.Discover([]string{arg})
	if err != nil {
		return nil, err
	}
	if err := sweep.CheckRunName(list[0].Name); err != nil {
		return nil, fmt.Errorf("%s: %w", scenarios.Ref(list[0]), err)
	}
	if err := refuseRunFolders("replay", o.out, list, func(s uint64) bool { return s == o.seed }); err != nil {
		return nil, err
	}
	if o.export {
		report := filepath.Join(o.out, fmt.Sprintf("%s-%d", list[0].Name, o.seed))
		if err := refuseExportFolders(o.exportDir, pathcheck.ReadsFile("the scenario", arg), pathcheck.Path{What: "the report folder", Path: report}); err != nil {
			return nil, err
		}
	}
	if _, err := checkMemory(list, o.memBudget, o.swarm, 1, true); err != nil {
		return nil, err
	}
	return list[0], nil
}

// checkExport refuses an --export that cannot be a folder, before the run.
func checkExport(dir string) error {
	if dir == "" {
		return errors.New(`replay: --export "": want a folder for the exec pair (query.yaml, steps.jsonl)`)
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("replay: --export %s: not a folder", dir)
	}
	return nil
}

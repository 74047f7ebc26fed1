package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/internal/pathcheck"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/shrink"
	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/spf13/cobra"
)

const shrinkLong = `shrink turns a failing run (a scenario and the seed a failure printed) into the smallest failing
test. It shrinks the scenario while the simulator, with the same seed, still gives the finding
(faults dropped, lower rates, shorter phases and retry gaps, fewer partitions), exports that run
as an exec pair, and shrinks the pair while the engine still holds an event twice in the table
the same way (re-emitted by the dedup, or a replayed batch kept twice by the sink): a shorter
prefix, fewer lines and rows, crashes armed for the next batch, one state partition, the rows in
the scenario's own columns without the simulator's hidden _copy.

--out DIR receives:
  query.yaml, steps.jsonl   the minimal exec pair (dedupsim exec --query ... --input ...)
  expected.jsonl            the regression test: {"unique": [ID]}, which fails until the fix
  scenario.yaml             the scenario, reduced, for dedupsim run --seed N
  story.md                  the witness: which copies, which batches, why the state missed them

Deterministic: the same scenario, seed and --budget give the same bytes. --budget bounds the
runs (simulator and engine alike; the scenario stage takes at most a fifth); when it runs out the
pair is smaller than the run but perhaps not minimal, and story.md says so. --finding picks what
to keep: table-duplicate (default) or sink-replay-duplicate. Exit 0 written, 2 bad input or a
seed without the finding. See docs/incidents.md.`

type shrinkOptions struct {
	seed    uint64
	out     string
	budget  int
	finding string
}

func newShrinkCmd() *cobra.Command {
	var o shrinkOptions
	cmd := &cobra.Command{
		Use:   "shrink SCENARIO --seed N --out DIR [--budget RUNS] [--finding KIND]",
		Short: "Shrink a failing seed to the smallest exec pair, scenario and story that still fail",
		Long:  shrinkLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("seed") {
				return exitcode.Bad(errors.New("shrink: --seed is required (the seed the failure printed)"))
			}
			if o.out == "" {
				return exitcode.Bad(errors.New("shrink: --out is required (the folder for query.yaml, steps.jsonl, expected.jsonl, scenario.yaml, story.md)"))
			}
			s, err := shrinkScenario(args[0], o.out)
			if err != nil {
				return exitcode.Bad(err)
			}
			return runShrink(cmd.OutOrStdout(), s, o.seed, o.out, o.budget, o.finding, "")
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&o.seed, "seed", 0, "the seed of the failing run (required)")
	f.StringVar(&o.out, "out", "", "the folder to write the pair, the scenario and the story into (required)")
	f.IntVar(&o.budget, "budget", shrink.DefaultBudget, fmt.Sprintf("runs to spend at most, 1 to %d", shrink.MaxBudget))
	f.StringVar(&o.finding, "finding", string(check.TableDuplicate), "the finding to keep: table-duplicate or sink-replay-duplicate")
	return cmd
}

// shrinkScenario loads shrink's one scenario and refuses an --out that
// would write over it.
func shrinkScenario(arg, out string) (*scenarios.Scenario, error) {
	if err := pathcheck.RefuseOverlap("shrink", []pathcheck.Path{pathcheck.ReadsFile("the scenario", arg)}, pathcheck.WritesInFolder("--out", out, shrink.Files...)); err != nil {
		return nil, err
	}
	if err := checkShrinkOut(out); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("shrink: %s is a folder: shrink takes one scenario (a file or a catalogue name)", arg)
	}
	list, err := scenarios.Discover([]string{arg})
	if err != nil {
		return nil, err
	}
	return list[0], nil
}

func checkShrinkOut(dir string) error {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("shrink: --out %s: not a folder", dir)
	}
	return nil
}

// runShrink shrinks seed of s, writes the files into dir and prints the
// story; replay is the command of the original run ("" for the default).
func runShrink(w io.Writer, s *scenarios.Scenario, seed uint64, dir string, budget int, finding, replay string) error {
	if budget < 1 || budget > shrink.MaxBudget {
		return exitcode.Bad(fmt.Errorf("shrink: --budget %d: want 1 to %d runs", budget, shrink.MaxBudget))
	}
	kind := check.Kind(finding)
	ok := false
	for _, k := range shrink.Kinds {
		ok = ok || k == kind
	}
	if !ok {
		var ks []string
		for _, k := range shrink.Kinds {
			ks = append(ks, string(k))
		}
		return exitcode.Bad(fmt.Errorf("shrink: --finding %q: want one of %s (shrink keeps an event held more than once in the table)", finding, strings.Join(ks, ", ")))
	}
	r, err := shrink.Shrink(s, seed, shrink.Options{Budget: budget, Finding: kind, Replay: replay})
	if errors.Is(err, shrink.ErrNoFinding) {
		return exitcode.Bad(fmt.Errorf("shrink: %w: give the seed of a run whose table holds an event more than once (run or sweep print it)", err))
	}
	if err != nil {
		return &exitcode.Error{Code: 1, Err: fmt.Errorf("shrink: %s seed %d: %w", s.Name, seed, err)}
	}
	if err := r.Write(dir); err != nil {
		return exitcode.Output(err)
	}
	q, st, ex := filepath.Join(dir, "query.yaml"), filepath.Join(dir, "steps.jsonl"), filepath.Join(dir, "expected.jsonl")
	fmt.Fprint(w, r.Story)
	fmt.Fprintf(w, "\nwrote %s\n", strings.Join(prefixed(dir, shrink.Files), ", "))
	fmt.Fprintf(w, "exec pair: dedupsim exec --query %s --input %s --format table\n", scenarios.QuoteArg(q), scenarios.QuoteArg(st))
	fmt.Fprintf(w, "regression test (fails until the fix): dedupsim exec --query %s --input %s --check %s\n", scenarios.QuoteArg(q), scenarios.QuoteArg(st), scenarios.QuoteArg(ex))
	return nil
}

func prefixed(dir string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(dir, n)
	}
	return out
}

// checkReplayShrink refuses replay's --shrink folder before the run.
func checkReplayShrink(arg string, o replayOptions) error {
	if o.shrinkDir == "" {
		return nil
	}
	if err := pathcheck.RefuseOverlap("replay", []pathcheck.Path{pathcheck.ReadsFile("the scenario", arg)}, append(pathcheck.WritesInFolder("--shrink", o.shrinkDir, shrink.Files...), pathcheck.WritesInFolder("--export", o.exportDir, "query.yaml", "steps.jsonl")...)); err != nil {
		return err
	}
	return checkShrinkOut(o.shrinkDir)
}

// replayShrink is replay --shrink: the replayed run, shrunk.
func replayShrink(w io.Writer, s *scenarios.Scenario, o replayOptions, r *result.Run) error {
	if o.swarm {
		return exitcode.Bad(errors.New("replay: --shrink of a --swarm run: shrink the fault plan its report.json names (faults:) as a scenario of its own"))
	}
	fmt.Fprintln(w)
	return runShrink(w, s, o.seed, o.shrinkDir, o.budget, string(check.TableDuplicate), r.Replay)
}

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dedupsim/dedupsim/live"
	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sim/history"
	"github.com/spf13/cobra"
)

func newRunCmd() *cobra.Command {
	var seed uint64
	var out string
	var swarm bool
	var kafka string
	var verbose bool
	var memBudget string
	lo := liveOptions{}
	cmd := &cobra.Command{
		Use:   "run [--seed S] [--out DIR] [--kafka kfake|local|external|testcontainers] [SCENARIO...]",
		Short: "Run scenarios on the simulator (or against Kafka) and check their expected verdicts",
		Long: `run simulates each scenario (a file, or a catalogue name from 'dedupsim list') with one seed,
checks the recorded history, and compares the findings with the scenario's expect section.
With no SCENARIO it runs the whole embedded catalogue.
For each run it writes DIR/<scenario>-<seed>/ with report.html, report.json, summary.md and
history.json, and DIR/summary.md and DIR/junit.xml over all runs.

With --kafka it runs the same scenarios against Kafka: kfake (franz-go's in-process fake
cluster), local (a real Apache Kafka broker started from the jars make kafka-fetch caches),
external (a cluster at --bootstrap) or testcontainers (the apache/kafka image; needs a Docker
engine). The producers append the simulator's workload for the seed to fresh topics, on the
scenario's timeline scaled so that one trigger interval takes --live-trigger. The engine runs
as a child process (dedupsim engine) that the crash faults kill with SIGKILL, at its armed
crash points and at random moments, and that is restarted on its checkpoint; broker-restart
kills and restarts a local broker. Table and merge sinks are the engine's Pebble table (or,
with --table-sink kafka, the transactional Kafka sink); append and foreachBatch sinks are the
plain Kafka sink. The records of every process and the table, read back after the run, make
the history that the same checker judges. The run folder keeps the engine's checkpoint,
table, records and logs under live/. It supports ` + live.ProcessSupported + `.
--engine inproc runs the engine in this process in lock step with simulated time instead
(it supports ` + live.RunSupported + `).

Exit status: 0 when every scenario met its expectations, 1 otherwise, 2 on bad input.
Every failure prints the seed and the command that replays it.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			lo.kind, lo.out = kafka, out
			switch {
			case kafka != "" && !slices.Contains([]string{"kfake", "local", "external", "testcontainers"}, kafka):
				return badInput(fmt.Errorf("run: --kafka %q: want kfake, local, external or testcontainers", kafka))
			case kafka == "external" && lo.bootstrap == "":
				return badInput(errors.New("run: --kafka external needs --bootstrap HOST:PORT[,...]"))
			case kafka != "" && swarm:
				return badInput(fmt.Errorf("run: --kafka does not support --swarm; it supports %s", live.ProcessSupported))
			case lo.engine != "process" && lo.engine != "inproc":
				return badInput(fmt.Errorf("run: --engine %q: want process or inproc", lo.engine))
			case lo.tableSink != "pebble" && lo.tableSink != "kafka":
				return badInput(fmt.Errorf("run: --table-sink %q: want pebble or kafka", lo.tableSink))
			case lo.trigger <= 0:
				return badInput(fmt.Errorf("run: --live-trigger %v: want a positive duration", lo.trigger))
			}
			list, err := loadAll(args)
			if len(args) == 0 {
				list, err = scenarios.Catalogue()
			}
			if err != nil {
				return badInput(err)
			}
			if err := checkMemory(list, memBudget, swarm); err != nil {
				return badInput(err)
			}
			var cluster live.Cluster
			if kafka != "" {
				if verbose {
					lo.logf = func(f string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), "dedupsim run: "+f+"\n", a...) }
				}
				if cluster, err = startCluster(cmd.Context(), lo); err != nil {
					return &exitError{code: 1, err: fmt.Errorf("run: %w", err)}
				}
				defer cluster.Close()
			}
			var runs []*reports.Run
			var skipped []string
			for _, s := range list {
				var r *reports.Run
				if kafka != "" {
					r, err = runKafka(cmd.Context(), cluster, lo, s, seed)
				} else {
					r, err = scenarios.Run(s, seed, scenarios.Options{Swarm: swarm})
				}
				if (errors.Is(err, live.ErrUnsupported) || errors.Is(err, sim.ErrLiveOnly)) && len(list) > 1 {
					// Several scenarios: run what this mode can, say what it skipped.
					skipped = append(skipped, s.Name)
					fmt.Fprintf(cmd.ErrOrStderr(), "dedupsim run: SKIP %s: %v\n", s.Name, err)
					continue
				}
				if errors.Is(err, live.ErrUnsupported) || errors.Is(err, sim.ErrLiveOnly) {
					return badInput(err)
				}
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				if err := writeRun(out, r); err != nil {
					return &exitError{code: 1, err: err}
				}
				if len(list) == 1 {
					printRun(cmd.OutOrStdout(), r)
				}
				runs = append(runs, r)
			}
			if len(skipped) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "skipped %d scenario(s) this mode cannot run: %s\n", len(skipped), strings.Join(skipped, ", "))
			}
			if len(runs) == 0 {
				return badInput(errors.New("run: no scenario could run in this mode"))
			}
			if len(list) > 1 {
				printTable(cmd.OutOrStdout(), runs)
				for _, r := range runs {
					if !r.Passed {
						printRun(cmd.OutOrStdout(), r)
					}
				}
			}
			var entries []reports.IndexEntry
			for _, r := range runs {
				entries = append(entries, reports.IndexEntry{Run: r, Dir: filepath.Base(runDir(out, r))})
			}
			if err := reports.WriteIndex(filepath.Join(out, "index.html"), entries); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "reports: %s\n", filepath.Join(out, "index.html"))
			return finish(out, runs)
		},
	}
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the run: the same seed gives the same run, byte for byte")
	cmd.Flags().StringVar(&out, "out", "out", "folder for reports")
	cmd.Flags().BoolVar(&swarm, "swarm", false, "swarm mode: switch the scenario's faults on and off and draw their knobs from the seed")
	cmd.Flags().StringVar(&kafka, "kafka", "", "run against Kafka instead of the simulator: kfake (in process), local (a local broker; needs the jars, make kafka-fetch), external (--bootstrap) or testcontainers (needs a Docker engine)")
	cmd.Flags().StringVar(&lo.bootstrap, "bootstrap", "", "bootstrap addresses of --kafka external")
	cmd.Flags().StringVar(&lo.engine, "engine", "process", "with --kafka: process (the engine as a child process, killed with SIGKILL) or inproc (in this process, lock-step simulated time)")
	cmd.Flags().StringVar(&lo.tableSink, "table-sink", "pebble", "with --kafka: a table sink is the engine's Pebble table (pebble) or the transactional Kafka sink (kafka)")
	cmd.Flags().DurationVar(&lo.trigger, "live-trigger", 200*time.Millisecond, "with --kafka: the real time one trigger interval of the scenario takes (the timeline is scaled to it)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "with --kafka: log the engine processes' starts, kills and restarts")
	memoryBudgetFlag(cmd, &memBudget)
	return cmd
}

// memoryBudgetFlag is --memory-budget, shared by run, replay and sweep.
func memoryBudgetFlag(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "memory-budget", "", "memory a run may use, such as 4g or 512m (default: GOMEMLIMIT when set, else 3/4 of the available memory); a scenario predicted above it is refused before it runs")
}

// checkMemory refuses, up front, a scenario predicted above the budget.
func checkMemory(list []*scenarios.Scenario, flag string, swarm bool) error {
	b, err := scenarios.MemoryBudget(flag)
	if err != nil {
		return err
	}
	return scenarios.CheckMemory(list, b, scenarios.Options{Swarm: swarm})
}

// liveOptions are run's --kafka settings.
type liveOptions struct {
	kind, bootstrap, engine, tableSink string
	trigger                            time.Duration
	out                                string
	logf                               func(string, ...any)
}

// startCluster starts (or, for external, connects to) the Kafka cluster
// of a live run.
func startCluster(ctx context.Context, o liveOptions) (live.Cluster, error) {
	switch o.kind {
	case "local":
		c, err := live.StartLocal(ctx, live.LocalOptions{})
		if err != nil {
			return nil, fmt.Errorf("--kafka local needs a local Kafka broker from the jars that %s fetches (make kafka-fetch): %w", live.FetchScript, err)
		}
		return c, nil
	case "external":
		return live.External(ctx, strings.Split(o.bootstrap, ","))
	case "testcontainers":
		return live.StartContainer(ctx)
	}
	return live.StartKfake(ctx, nil)
}

// runKafka runs one scenario against a Kafka cluster and checks it as the
// simulator's runs are checked.
func runKafka(ctx context.Context, cluster live.Cluster, o liveOptions, s *scenarios.Scenario, seed uint64) (*reports.Run, error) {
	var h *history.History
	var err error
	if o.engine == "inproc" {
		h, err = live.RunScenario(ctx, cluster, s.Config, seed)
	} else {
		var bin string
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
		dir := filepath.Join(o.out, fmt.Sprintf("%s-%d", s.Name, seed), "live")
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		h, err = live.RunProcess(ctx, cluster, s.Config, seed, live.ProcessOptions{Binary: bin, Dir: dir,
			Trigger: o.trigger, TableSink: o.tableSink, Logf: o.logf})
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	r := scenarios.Evaluate(s, h, seed, scenarios.Options{})
	r.Replay = fmt.Sprintf("dedupsim run --kafka %s --seed %d %s (a Kafka run is not byte-reproducible: the workload is, the timing is not)", o.kind, seed, scenarioRef(s))
	return r, nil
}

func scenarioRef(s *scenarios.Scenario) string {
	if strings.HasPrefix(s.File, "catalogue:") || s.File == "" {
		return s.Name
	}
	return s.File
}

func newReplayCmd() *cobra.Command {
	var seed uint64
	var out, memBudget string
	var swarm bool
	cmd := &cobra.Command{
		Use:   "replay --seed S SCENARIO",
		Short: "Re-run one scenario with one seed, exactly as the original run",
		Long: `replay re-runs a scenario with the seed a failure printed. The simulator is deterministic, so
the run, its history and its report.json are byte-identical to the original; replay prints the
history's SHA-256 so two runs can be compared at a glance.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("seed") {
				return badInput(fmt.Errorf("replay: --seed is required"))
			}
			list, err := loadAll(args)
			if err != nil {
				return badInput(err)
			}
			if err := checkMemory(list, memBudget, swarm); err != nil {
				return badInput(err)
			}
			r, err := scenarios.Run(list[0], seed, scenarios.Options{Swarm: swarm})
			if errors.Is(err, sim.ErrLiveOnly) {
				return badInput(err)
			}
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			if err := writeRun(out, r); err != nil {
				return &exitError{code: 1, err: err}
			}
			printRun(cmd.OutOrStdout(), r)
			h, err := json.Marshal(r.History)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(h)
			fmt.Fprintf(cmd.OutOrStdout(), "history sha256 %s\n", hex.EncodeToString(sum[:]))
			return finish(out, []*reports.Run{r})
		},
	}
	cmd.Flags().Uint64Var(&seed, "seed", 0, "the seed to replay (required)")
	cmd.Flags().StringVar(&out, "out", "out", "folder for reports")
	cmd.Flags().BoolVar(&swarm, "swarm", false, "the run was a swarm run")
	memoryBudgetFlag(cmd, &memBudget)
	return cmd
}

func loadAll(args []string) ([]*scenarios.Scenario, error) {
	var out []*scenarios.Scenario
	for _, a := range args {
		s, err := scenarios.Load(a)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func runDir(out string, r *reports.Run) string {
	return filepath.Join(out, fmt.Sprintf("%s-%d", r.Scenario, r.Seed))
}

// writeRun writes one run's reports and its history (for `dedupsim check`).
func writeRun(out string, r *reports.Run) error {
	dir := runDir(out, r)
	if err := reports.WriteRun(dir, r); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".history.json.*")
	if err != nil {
		return err
	}
	if err := r.History.Write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, "history.json"))
}

func printRun(w io.Writer, r *reports.Run) {
	status := "PASS"
	if !r.Passed {
		status = "FAIL"
	}
	fmt.Fprintf(w, "%s %s seed=%d: %s\n", status, r.Scenario, r.Seed, r.Report.Verdict.Summary)
	if r.History != nil && r.History.Live != nil {
		fmt.Fprintf(w, "  %s\n", reports.LiveLine(r.History.Live))
	}
	for _, e := range r.Expect {
		if !e.OK {
			fmt.Fprintf(w, "  expected %s %s, got %d\n", e.Finding, e.Want, e.Got)
		}
	}
	if !r.Passed {
		fmt.Fprintf(w, "  replay: %s\n", r.Replay)
	}
}

// finish writes the summary and JUnit files and sets the exit status.
func finish(out string, runs []*reports.Run) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "summary.md"), []byte(reports.Markdown(runs)), 0o644); err != nil {
		return err
	}
	if err := reports.WriteJUnit(filepath.Join(out, "junit.xml"), runs); err != nil {
		return err
	}
	var failed []string
	for _, r := range runs {
		if !r.Passed {
			failed = append(failed, fmt.Sprintf("%s (seed %d)", r.Scenario, r.Seed))
		}
	}
	if len(failed) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d runs did not meet their expectations: %s", len(failed), len(runs), strings.Join(failed, ", "))}
	}
	return nil
}

// printTable prints one line per run: what the scenario expected, what
// the checker found, and the figures a reader looks at first.
func printTable(w io.Writer, runs []*reports.Run) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\texpected\tgot\tresult\tstate peak\tduplicates passed\tin table twice\tlate drops\t")
	for _, r := range runs {
		var want []string
		for _, e := range r.Expect {
			switch {
			case e.Finding == "exactly-once" && e.Want == "true":
				want = append([]string{"exactly-once"}, want...)
			case e.Finding == "exactly-once":
				want = append([]string{"violation"}, want...)
			case e.Want == "present" || strings.HasPrefix(e.Want, ">"):
				want = append(want, e.Finding)
			}
		}
		got := []string{"exactly-once"}
		if !r.Report.Verdict.ExactlyOnce {
			got[0] = "violation"
		}
		for _, f := range r.Report.Findings {
			got = append(got, string(f.Kind))
		}
		res := "PASS"
		if !r.Passed {
			res = "FAIL"
		}
		c := r.Report.Counts
		twice := 0
		if f := r.Report.Find("table-duplicate"); f != nil {
			twice = f.Count
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t\n", r.Scenario, strings.Join(want, " + "), strings.Join(got, " + "),
			res, c.StateRowsMax, c.EventsEmittedTwice, twice, c.LateDropped)
	}
	tw.Flush()
}

func scenariosCatalogue() ([]*scenarios.Scenario, error) { return scenarios.Catalogue() }

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if i := strings.Index(s, ". "); i > 0 {
		s = s[:i+1]
	}
	return s
}

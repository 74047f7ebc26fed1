package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/internal/atomicfile"
	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/internal/pathcheck"
	"github.com/dedupsim/dedupsim/internal/termprogress"
	"github.com/dedupsim/dedupsim/live"
	"github.com/dedupsim/dedupsim/live/netns"
	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sim/history"
	"github.com/dedupsim/dedupsim/sweep"
	"github.com/spf13/cobra"
)

// runLong is run's --help text.
const runLong = `run simulates each scenario with one seed, checks the recorded history, and compares the
findings with the scenario's expect section. A SCENARIO is a file or a catalogue name from
'dedupsim list'; a DIR stands for every *.yaml and *.yml file below it (recursively, in sorted
order; names that start with a dot, such as .github, are skipped). With no argument it runs the
whole embedded catalogue. -j N runs N scenarios at once (default: the number of CPUs); every
report is the same whatever N is.
For each run it writes DIR/<scenario>-<seed>/ with report.html, report.json and summary.md, and
history.json.gz (the recorded history, gzip-compressed, for 'dedupsim check') when the run did
not meet its expectations or with --keep-history; and DIR/index.html, DIR/summary.md and
DIR/junit.xml over all runs. When GITHUB_STEP_SUMMARY is set (GitHub Actions), summary.md is
appended to it. Progress goes to standard error: first the predicted peak memory of the largest
run against the memory budget, then a bar on a terminal, otherwise a plain line every few
seconds; none with --quiet.

With --kafka it runs the same scenarios against Kafka: kfake (franz-go's in-process fake
cluster), local (a real Apache Kafka broker started from the jars make kafka-fetch caches),
external (a cluster at --bootstrap) or testcontainers (the apache/kafka image; needs a Docker
engine). The producers append the simulator's workload for the seed to fresh topics, on the
scenario's timeline scaled so that one trigger interval takes --live-trigger. The engine runs
as a child process (dedupsim engine) that the crash faults kill with SIGKILL, at its armed
crash points and at random moments, and that is restarted on its checkpoint; broker-restart
kills and restarts a local broker. With --brokers 3, leader-kill, broker-pause and
broker-partition kill, freeze or cut off a partition leader; for broker-partition --kafka local
runs each broker in a network namespace of its own (needs root and iproute2's ip; without
them the scenario is refused, exit 2, or skipped among several), removed at the end and on
SIGINT, and a start removes those a killed run left. Table and merge sinks are the engine's Pebble table (or,
with --table-sink kafka, the transactional Kafka sink); append and foreachBatch sinks are the
plain Kafka sink. The records of every process and the table, read back after the run, make
the history that the same checker judges. The run folder keeps the engine's checkpoint,
table, records and logs under live/. It supports ` + live.ProcessSupported + `.
--engine-mode inproc runs the engine in this process in lock step with simulated time instead
(it supports ` + live.RunSupported + `). Runs against Kafka go one at a time.

Exit status: 0 when every scenario met its expectations, 1 otherwise, 2 on bad input.
With --strict a run also fails when its table holds an event more than once or misses one that
was not dropped as late or filtered, whatever the API promises and the scenario expects.
Every failure prints the seed and the command that replays it.`

// runOptions are run's flags.
type runOptions struct {
	seed      uint64
	out       string
	swarm     bool
	kafka     string
	verbose   bool
	memBudget string
	// sparkVersion is --spark-version (scenarios.SetSparkVersion).
	sparkVersion string
	bf           batchFlags
	lo           liveOptions // the --kafka settings
}

func newRunCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [--seed S] [--out DIR] [-j N] [--kafka kfake|local|external|testcontainers] [SCENARIO|DIR...]",
		Short: "Run scenarios on the simulator (or against Kafka) and check their expected verdicts",
		Long:  runLong,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd, args, o)
		},
	}
	cmd.Flags().StringVar(&o.sparkVersion, "spark-version", "", sparkVersionUsage)
	cmd.Flags().Uint64Var(&o.seed, "seed", 1, "seed of the run: the same seed gives the same run, byte for byte")
	cmd.Flags().StringVar(&o.out, "out", "out", "folder for reports")
	cmd.Flags().BoolVar(&o.swarm, "swarm", false, "swarm mode: switch the scenario's faults on and off and draw their knobs from the seed")
	cmd.Flags().StringVar(&o.kafka, "kafka", "", "run against Kafka instead of the simulator: kfake (in process), local (a local broker; needs the jars, make kafka-fetch), external (--bootstrap) or testcontainers (needs a Docker engine)")
	cmd.Flags().StringVar(&o.lo.bootstrap, "bootstrap", "", "bootstrap addresses of --kafka external")
	cmd.Flags().StringVar(&o.lo.engine, "engine-mode", "process", "with --kafka: process (the engine as a child process, killed with SIGKILL) or inproc (in this process, lock-step simulated time)")
	cmd.Flags().StringVar(&o.lo.engine, "engine", "process", "old spelling of --engine-mode")
	deprecateAlias(cmd.Flags(), "engine", "engine-mode")
	cmd.Flags().StringVar(&o.lo.tableSink, "table-sink", "pebble", "with --kafka: a table sink is the engine's Pebble table (pebble) or the transactional Kafka sink (kafka)")
	cmd.Flags().IntVar(&o.lo.brokers, "brokers", 1, "with --kafka local or testcontainers: the number of brokers, 1 or 3 (three: replication factor 3, min.insync.replicas 2; needed by leader-kill, broker-pause and broker-partition)")
	cmd.Flags().DurationVar(&o.lo.trigger, "live-trigger", 200*time.Millisecond, "with --kafka: the real time one trigger interval of the scenario takes (the timeline is scaled to it)")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "with --kafka: log the engine processes' starts, kills and restarts")
	o.bf.register(cmd)
	memoryBudgetFlag(cmd, &o.memBudget)
	return cmd
}

// runRun is run's RunE: it checks the flags and the scenarios, picks the
// simulator or a Kafka cluster, and runs the scenarios with one seed.
func runRun(cmd *cobra.Command, args []string, o runOptions) error {
	o.lo.kind, o.lo.out, o.lo.strict = o.kafka, o.out, o.bf.strict
	if err := checkRunFlags(cmd, o); err != nil {
		return exitcode.Bad(err)
	}
	if err := pathcheck.RefuseOverlap("run", scenarioArgs(args), batchOutputs(o.out)); err != nil {
		return exitcode.Bad(err)
	}
	list, err := runScenarios(args)
	if err != nil {
		return exitcode.Bad(err)
	}
	if err := scenarios.SetSparkVersion(list, o.sparkVersion); err != nil {
		return exitcode.Bad(err)
	}
	if err := refuseRunFolders("run", o.out, list, func(s uint64) bool { return s == o.seed }); err != nil {
		return exitcode.Bad(err)
	}
	// A run against Kafka holds what the prediction does not model
	// (kfake's records, the driver's buffers): no soft limit for it.
	memLine, err := checkScenarios(list, o.memBudget, o.swarm, min(o.bf.jobs, len(list)), o.kafka == "")
	if err != nil {
		return exitcode.Bad(err)
	}
	bo := sweep.Options{Out: o.out, Jobs: o.bf.jobs, KeepHistory: o.bf.keepHistory, CanSkip: len(list) > 1,
		Exec: sweep.SimExec(o.swarm, o.bf.strict), Version: buildVersion}
	if o.kafka == "" {
		if err := refuseUnrunnable(list, o.swarm, bo.CanSkip); err != nil {
			return err
		}
		if !o.bf.quiet {
			fmt.Fprintf(cmd.ErrOrStderr(), "dedupsim run: %s\n", memLine)
		}
	}
	if o.kafka != "" {
		// SIGINT and SIGTERM stop the run, so that the deferred Close
		// stops the brokers and removes their network namespaces.
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		cmd.SetContext(ctx)
		stderrf := func(f string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), "dedupsim run: "+f+"\n", a...) }
		if o.verbose {
			o.lo.logf = stderrf
		}
		if !o.bf.quiet {
			o.lo.startf = stderrf
		}
		o.lo.netns = o.kafka == "local" && o.lo.brokers == 3 && usesFault(list, faults.BrokerPartition)
		if err := netns.Support(); o.lo.netns && err != nil && len(list) == 1 {
			// Refused before three brokers start for nothing; among
			// several scenarios it is skipped and the others run.
			return exitcode.Bad(fmt.Errorf("run: %s: --kafka local cannot do %s here: %v", list[0].Name, faults.BrokerPartition, err))
		}
		cluster, err := live.Start(cmd.Context(), live.StartOptions{Kind: o.lo.kind, Bootstrap: o.lo.bootstrap,
			Brokers: o.lo.brokers, Netns: o.lo.netns, Logf: o.lo.startf})
		if err != nil {
			return &exitcode.Error{Code: 1, Err: fmt.Errorf("run: %w", err)}
		}
		defer cluster.Close()
		lo := o.lo
		bo.Jobs = 1
		bo.Exec = func(ctx context.Context, s *scenarios.Scenario, seed uint64) (*result.Run, error) {
			return runKafka(ctx, cluster, lo, s, seed)
		}
	}
	return runList(cmd, list, o.seed, bo, o.bf)
}

// usesFault reports whether a scenario of list has fault name.
func usesFault(list []*scenarios.Scenario, name string) bool {
	return slices.ContainsFunc(list, func(s *scenarios.Scenario) bool {
		_, ok := s.Config.Plan.Faults[name]
		return ok
	})
}

// runScenarios are run's scenarios: those the arguments name, or the whole
// embedded catalogue when there is none.
func runScenarios(args []string) ([]*scenarios.Scenario, error) {
	if len(args) == 0 {
		return scenarios.Catalogue()
	}
	return scenarios.DiscoverNoting(args, noteSkipped("run"))
}

// noteSkipped prints discovery's one-line notes (a YAML file in a folder
// that is no scenario) on standard error.
func noteSkipped(verb string) func(string) {
	return func(s string) { fmt.Fprintf(os.Stderr, "dedupsim %s: %s\n", verb, s) }
}

// runTally is what run keeps of a batch, in job order.
type runTally struct {
	runs    []*result.Run
	entries []reports.IndexEntry
	skipped []string // scenarios this mode cannot run
}

// runList runs every scenario of list with seed on o's workers, prints each
// result as it comes (one scenario) or a table at the end (several), and
// writes the reports over all runs.
func runList(cmd *cobra.Command, list []*scenarios.Scenario, seed uint64, o sweep.Options, bf batchFlags) error {
	prog := termprogress.NewRuns(cmd.ErrOrStderr(), bf.quiet, "run", uint64(len(list)), bf.interval)
	var t runTally
	i := 0
	next := func() (sweep.Job, bool) {
		if i == len(list) {
			return sweep.Job{}, false
		}
		i++
		return sweep.Job{Seq: uint64(i - 1), Scenario: list[i-1], Seed: seed}, true
	}
	runErr := sweep.RunBatch(cmd.Context(), o, next, func(r sweep.Result) {
		if r.Skip != nil {
			prog.Add(true)
			t.skipped = append(t.skipped, r.Job.Scenario.Name)
			prog.Print(cmd.ErrOrStderr(), func(w io.Writer) { fmt.Fprintf(w, "dedupsim run: SKIP %s: %v\n", r.Job.Scenario.Name, r.Skip) })
			return
		}
		prog.Add(r.Run.Passed)
		t.runs = append(t.runs, r.Run)
		t.entries = append(t.entries, reports.IndexEntry{Run: r.Run, Dir: r.Dir})
		if len(list) == 1 {
			prog.Print(cmd.OutOrStdout(), func(w io.Writer) { reports.PrintRun(w, r.Run) })
		}
	})
	prog.Finish()
	return finishRun(cmd.OutOrStdout(), o.Out, len(list) > 1, t, runErr)
}

// finishRun prints what a batch of run skipped, the table of several runs
// and the failures among them, writes the reports over all runs, and gives
// the exit status: the batch's error first, then the runs' expectations.
func finishRun(w io.Writer, out string, several bool, t runTally, runErr error) error {
	if len(t.skipped) > 0 {
		fmt.Fprintf(w, "skipped %d scenario(s) this mode cannot run: %s\n", len(t.skipped), strings.Join(t.skipped, ", "))
	}
	if len(t.runs) == 0 {
		if runErr != nil {
			return runErr
		}
		return exitcode.Bad(errors.New("run: no scenario could run in this mode"))
	}
	if several {
		reports.PrintTable(w, t.runs)
		for _, r := range t.runs {
			if !r.Passed {
				reports.PrintRun(w, r)
			}
		}
	}
	if err := sweep.WriteOutputs(out, t.runs, t.entries, true); err != nil {
		return err
	}
	fmt.Fprintf(w, "reports: %s\n", filepath.Join(out, "index.html"))
	if runErr != nil {
		return runErr
	}
	return sweep.Failed(t.runs)
}

// checkRunFlags refuses run's flags out of their domain, and the --kafka
// settings given without --kafka (they would be ignored).
func checkRunFlags(cmd *cobra.Command, o runOptions) error {
	set := cmd.Flags().Changed
	kafka, lo := o.kafka, o.lo
	engineFlag, err := spelling(cmd, "run", "engine-mode", "engine")
	if err != nil {
		return err
	}
	switch {
	case kafka != "" && !slices.Contains([]string{"kfake", "local", "external", "testcontainers"}, kafka):
		return fmt.Errorf("run: --kafka %q: want kfake, local, external or testcontainers", kafka)
	case set("kafka") && kafka == "":
		return errors.New(`run: --kafka "": want kfake, local, external or testcontainers`)
	case kafka == "external" && lo.bootstrap == "":
		return errors.New("run: --kafka external needs --bootstrap HOST:PORT[,...]")
	case set("bootstrap") && kafka != "external":
		return errors.New("run: --bootstrap is for --kafka external only")
	case kafka != "" && o.swarm:
		return fmt.Errorf("run: --kafka does not support --swarm; it supports %s", live.ProcessSupported)
	case lo.engine != "process" && lo.engine != "inproc":
		return fmt.Errorf("run: --%s %q: want process or inproc", engineFlag, lo.engine)
	case lo.tableSink != "pebble" && lo.tableSink != "kafka":
		return fmt.Errorf("run: --table-sink %q: want pebble or kafka", lo.tableSink)
	case lo.brokers != 1 && lo.brokers != 3:
		return fmt.Errorf("run: --brokers %d: want 1 or 3", lo.brokers)
	case set("brokers") && kafka != "local" && kafka != "testcontainers":
		return errors.New("run: --brokers is for --kafka local or testcontainers only (kfake has one broker; an external cluster has its own)")
	case lo.trigger <= 0:
		return fmt.Errorf("run: --live-trigger %v: want a positive duration", lo.trigger)
	case kafka != "" && set("jobs") && o.bf.jobs != 1:
		return fmt.Errorf("run: -j %d: runs against Kafka go one at a time (-j 1)", o.bf.jobs)
	}
	if kafka == "" {
		for _, f := range []string{engineFlag, "table-sink", "live-trigger", "verbose"} {
			if set(f) {
				return fmt.Errorf("run: --%s is a setting of runs against Kafka: it needs --kafka", f)
			}
		}
	}
	if err := o.bf.check("run"); err != nil {
		return err
	}
	return sweep.CheckOut("run", o.out)
}

// strictUsage is the help of --strict, the same for run, sweep and replay.
const strictUsage = "also fail a run whose table holds an event more than once or misses one not dropped as late or filtered, whatever the API promises and the scenario expects"

// batchFlags are the flags run and sweep share.
type batchFlags struct {
	jobs        int
	quiet       bool
	keepHistory bool
	strict      bool
	interval    time.Duration
}

func (b *batchFlags) register(cmd *cobra.Command) {
	cmd.Flags().IntVarP(&b.jobs, "jobs", "j", sweep.DefaultJobs(), "runs at once (default: the number of CPUs); every report is the same whatever the number")
	cmd.Flags().BoolVarP(&b.quiet, "quiet", "q", false, "no progress on standard error")
	cmd.Flags().BoolVar(&b.strict, "strict", false, strictUsage)
	cmd.Flags().BoolVar(&b.keepHistory, "keep-history", false, "keep history.json.gz for every run (by default only runs that miss their expectations keep theirs)")
	cmd.Flags().DurationVar(&b.interval, "progress-interval", 5*time.Second, "time between two progress lines when standard error is not a terminal")
	cmd.Flags().MarkHidden("progress-interval")
}

func (b batchFlags) check(verb string) error {
	if err := sweep.CheckJobs(verb, b.jobs); err != nil {
		return err
	}
	if b.interval < time.Millisecond || b.interval > time.Hour {
		return fmt.Errorf("%s: --progress-interval %v: want a duration in [1ms, 1h]", verb, b.interval)
	}
	return nil
}

// memoryBudgetFlag is --memory-budget, shared by run, replay and sweep.
func memoryBudgetFlag(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "memory-budget", "", "memory a run may use, such as 4g or 512m (default: GOMEMLIMIT when set, else 3/4 of the available memory); a scenario predicted above it is refused before it runs")
}

// checkScenarios refuses, before any of them runs, the scenarios of run
// or sweep whose name is not a safe folder name for their reports, or that
// are predicted above the memory budget.
// It returns the line that states the largest run's predicted memory.
// atOnce is how many runs may go at once: they share the budget, and the
// soft memory limit (set when softLimit: runs of the simulator, whose
// memory the prediction is of) allows for each.
func checkScenarios(list []*scenarios.Scenario, memBudget string, swarm bool, atOnce int, softLimit bool) (string, error) {
	for _, s := range list {
		if err := sweep.CheckRunName(s.Name); err != nil {
			return "", fmt.Errorf("%s: %w", scenarios.Ref(s), err)
		}
	}
	return checkMemory(list, memBudget, swarm, atOnce, softLimit)
}

// refuseUnrunnable refuses up front, as the run would, a scenario the
// simulator cannot run and the batch cannot skip: bad input is one line
// on standard error, which the prediction line must not precede.
func refuseUnrunnable(list []*scenarios.Scenario, swarm, canSkip bool) error {
	if canSkip {
		return nil
	}
	for _, s := range list {
		if err := scenarios.Runnable(s, scenarios.Options{Swarm: swarm}); err != nil {
			return exitcode.Bad(err)
		}
	}
	return nil
}

// checkMemory refuses, up front, a scenario predicted above the budget,
// states the largest run's prediction (scenarios.PlanMemory), and, with
// softLimit, sets the collector's soft memory limit for atOnce runs of it
// at once.
func checkMemory(list []*scenarios.Scenario, flag string, swarm bool, atOnce int, softLimit bool) (string, error) {
	line, limit, err := scenarios.PlanMemory(list, flag, scenarios.Options{Swarm: swarm}, atOnce)
	if err != nil || line == "" {
		return "", err
	}
	// The prediction was measured under this limit; GOMEMLIMIT, when
	// set, is the user's (and the budget's) instead.
	if softLimit && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
	return line, nil
}

// liveOptions are run's --kafka settings.
type liveOptions struct {
	kind, bootstrap, engine, tableSink string
	brokers                            int
	netns                              bool // --kafka local: a network namespace per broker (broker-partition)
	trigger                            time.Duration
	out                                string
	strict                             bool
	logf                               func(string, ...any)
	startf                             func(string, ...any) // notes of the cluster's start
}

// runKafka runs one scenario against a Kafka cluster and checks it as the
// simulator's runs are checked.
func runKafka(ctx context.Context, cluster live.Cluster, o liveOptions, s *scenarios.Scenario, seed uint64) (*result.Run, error) {
	var h *history.History
	var err error
	if o.engine == "inproc" {
		h, err = live.RunScenario(ctx, cluster, s.Config, seed)
	} else {
		var bin string
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
		var dir string
		if dir, err = freshLiveDir(o.out, s, seed); err != nil {
			return nil, err
		}
		h, err = live.RunProcess(ctx, cluster, s.Config, seed, live.ProcessOptions{Binary: bin, Dir: dir,
			Trigger: o.trigger, TableSink: o.tableSink, Logf: o.logf})
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	r := scenarios.Evaluate(s, h, seed, scenarios.Options{Strict: o.strict})
	r.Replay = fmt.Sprintf("dedupsim run --kafka %s --seed %d %s (a Kafka run is not byte-reproducible: the workload is, the timing is not)", o.kind, seed, scenarios.QuoteArg(scenarios.Ref(s)))
	return r, nil
}

// freshLiveDir empties the live/ folder of a run's report folder for the
// engine processes, refusing a report folder that is a link (the removal
// would reach its target).
func freshLiveDir(out string, s *scenarios.Scenario, seed uint64) (string, error) {
	run, err := sweep.RunDir(out, &result.Run{Scenario: s.Name, Seed: seed})
	if err != nil {
		return "", err
	}
	root, err := atomicfile.OpenDir(run)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := root.RemoveAll("live"); err != nil {
		return "", err
	}
	return filepath.Join(run, "live"), nil
}

func scenariosCatalogue() ([]*scenarios.Scenario, error) { return scenarios.Catalogue() }

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if i := strings.Index(s, ". "); i > 0 {
		s = s[:i+1]
	}
	return s
}

// sparkVersionUsage is run and sweep's --spark-version help.
const sparkVersionUsage = "the Spark version every scenario's query follows (3.5 to 4.3, or a full version such as 4.3.0); a scenario or query naming another is refused"

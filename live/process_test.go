package live_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/live"
	"github.com/dedupsim/dedupsim/live/driver/drivertest"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sim/history"
)

func TestMain(m *testing.M) { drivertest.Main(m) }

// dedupsimBinary is the engine process RunProcess runs: this test binary,
// re-executed as the driver (drivertest).
func dedupsimBinary(t *testing.T) string {
	t.Helper()
	return drivertest.Binary()
}

// loadScenario finds a catalogue scenario by name, or loads a file.
func loadScenario(t *testing.T, ref string) *scenarios.Scenario {
	t.Helper()
	var s *scenarios.Scenario
	var err error
	if strings.HasSuffix(ref, ".yaml") {
		s, err = scenarios.Load(ref)
	} else {
		s, err = scenarios.Find(ref)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// liveCase is one scenario run with the engine as a child process.
type liveCase struct {
	scenario  string
	tableSink string // "" (pebble) or "kafka"
	// at least this many kills of each kind
	armedKills, randomKills, brokerRestarts int
	// a sink must have skipped replayed batches (idempotent sinks)
	skips bool
	// fired: broker faults that must have fired; knobs: pinned knob
	// values that replace the scenario's (fault -> knob -> value)
	fired []string
	knobs map[string]faults.Knobs
	// droppedAcks: duplicate-appends must have come from lost acks
	droppedAcks bool
}

// runProcessCase runs c against cluster and checks the scenario's own
// expectations, plus the kills the case asks for.
func runProcessCase(t *testing.T, cluster live.Cluster, c liveCase, trigger time.Duration) *history.History {
	t.Helper()
	s := loadScenario(t, c.scenario)
	if c.knobs != nil {
		// A copy: the catalogue's scenarios are shared.
		cp := *s
		s = &cp
		fs := map[string]faults.Knobs{}
		for name, ks := range s.Config.Plan.Faults {
			fs[name] = maps.Clone(ks)
		}
		for name, ks := range c.knobs {
			if fs[name] == nil {
				fs[name] = faults.Knobs{}
			}
			maps.Copy(fs[name], ks)
		}
		s.Config.Plan.Faults = fs
	}
	dir := t.TempDir()
	began := time.Now()
	h, err := live.RunProcess(t.Context(), cluster, s.Config, 1, live.ProcessOptions{Binary: dedupsimBinary(t), Dir: dir,
		Trigger: trigger, TableSink: c.tableSink, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	armed, random, failed := 0, 0, 0
	for _, cr := range h.Crashes {
		switch cr.Point {
		case "random":
			random++
		case "failed":
			failed++
		default:
			armed++
		}
	}
	skipped := 0
	for _, w := range h.Writes {
		if w.Kept < len(w.Rows) {
			skipped++
		}
	}
	t.Logf("%s: %d copies, %d batch executions, %d kills at crash points, %d random kills, %d failed exits, %d broker restarts, %d writes (%d not all kept), table %d rows, in %v",
		s.Name, len(h.Copies), len(h.Batches), armed, random, failed, h.Coverage[faults.BrokerRestart], len(h.Writes), skipped,
		len(h.Table), time.Since(began).Round(time.Millisecond))
	if armed < c.armedKills || random < c.randomKills || h.Coverage[faults.BrokerRestart] < c.brokerRestarts {
		t.Errorf("kills: %d armed, %d random, %d broker restarts; want at least %d, %d, %d",
			armed, random, h.Coverage[faults.BrokerRestart], c.armedKills, c.randomKills, c.brokerRestarts)
	}
	if c.droppedAcks {
		if h.Live == nil || h.Live.DroppedAcks == 0 || h.Coverage[faults.DuplicateAppend] == 0 {
			t.Errorf("no produce ack was dropped (%d duplicate-appends in the workload)", h.Coverage[faults.DuplicateAppend])
		} else {
			t.Logf("%d produce acks dropped for %d duplicate-appends", h.Live.DroppedAcks, h.Coverage[faults.DuplicateAppend])
		}
	}
	for _, f := range c.fired {
		if h.Coverage[f] == 0 {
			t.Errorf("%s never fired", f)
		} else {
			t.Logf("%s fired %d times", f, h.Coverage[f])
		}
	}
	if c.skips && skipped == 0 {
		t.Errorf("no replayed write was skipped by the sink")
	}
	if len(h.Restarts) < armed+random+failed {
		t.Errorf("%d restarts recorded for %d deaths", len(h.Restarts), armed+random+failed)
	}
	if l := h.Live; l == nil || l.Engine != "process" || l.Cluster != live.ClusterName(cluster) || l.EngineProcesses != len(h.Restarts)+1 ||
		l.KilledAtPoints != armed || l.KilledAtRandom != random || l.FailedExits != failed || l.Dir != dir {
		t.Errorf("history's live summary %+v disagrees with its crashes and restarts", l)
	}
	r := scenarios.Evaluate(s, h, 1, scenarios.Options{})
	checkRun(t, r)
	return h
}

func checkRun(t *testing.T, r *result.Run) {
	t.Helper()
	for _, f := range r.Report.Findings {
		t.Logf("finding %s: %d %s", f.Kind, f.Count, f.Message)
	}
	for _, e := range r.Expect {
		if !e.OK {
			t.Errorf("%s: expectation %s %s: got %d (%s)", r.Scenario, e.Finding, e.Want, e.Got, r.Report.Verdict.Summary)
		}
	}
}

// liveKfakeCases run in make test against kfake: exactly once through
// kills at every crash point and at random moments (the Pebble table sink,
// and the transactional Kafka sink), the plain sink's replay duplicates,
// the watermark stall and state bound judged from the engine processes'
// own progress records, and real-time mode's at-least-once Kafka sink.
var liveKfakeCases = []liveCase{
	{scenario: "../scenarios/live/kill-anywhere-table.yaml", armedKills: 5, randomKills: 1, skips: true, droppedAcks: true},
	{scenario: "../scenarios/live/kill-anywhere-table.yaml", tableSink: "kafka", armedKills: 5, randomKills: 1, skips: true, droppedAcks: true},
	{scenario: "replay-append-sink", armedKills: 1},
	{scenario: "quiet-source-stalls-watermark"},
	// Spark 4.3's real-time mode: rows reach the Kafka sink before the
	// commit, every kill before it sends them again.
	{scenario: "real-time-kafka-sink-replay", armedKills: 3},
}

func TestRunProcessKfake(t *testing.T) {
	if testing.Short() {
		t.Skip("live process runs: skipped with -short")
	}
	for _, c := range liveKfakeCases {
		name := strings.TrimSuffix(filepath.Base(c.scenario), ".yaml")
		if c.tableSink != "" {
			name += "/" + c.tableSink
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			k := startKfake(t, nil)
			runProcessCase(t, k, c, 100*time.Millisecond)
		})
	}
}

// TestRunProcessLocal runs the live scenarios against a real Kafka broker
// (DEDUPSIM_KAFKA=local, make test-kafka), a broker restart included.
func TestRunProcessLocal(t *testing.T) {
	if os.Getenv("DEDUPSIM_KAFKA") != "local" {
		t.Skip("real-Kafka test: set DEDUPSIM_KAFKA=local to run it (make test-kafka)")
	}
	l, err := live.StartLocal(t.Context(), live.LocalOptions{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	runProcessReal(t, l)
}

// TestRunProcessContainer runs the live scenarios against Kafka in a
// container (DEDUPSIM_KAFKA=testcontainers, make test-containers), the
// broker restart done the container way: docker stop, docker start on the
// same volume.
func TestRunProcessContainer(t *testing.T) {
	c := startContainer(t, 1)
	runProcessReal(t, c)
}

// TestRunProcessContainerBrokers3 runs the broker-fault scenarios against
// three brokers in containers (DEDUPSIM_KAFKA=testcontainers): the leader
// of an input partition, of the output topic or of the transaction
// coordinator killed, paused or cut off; the table and transactional
// sinks stay exactly once; a plain sink shows its replay duplicates.
func TestRunProcessContainerBrokers3(t *testing.T) {
	c := startContainer(t, 3)
	runBrokerFaults(t, c, []string{faults.LeaderKill, faults.BrokerPause, faults.BrokerPartition})
}

// TestRunProcessLocalBrokers3 runs the broker-fault scenarios on a local
// cluster of three broker processes, each in a network namespace of its
// own (DEDUPSIM_KAFKA=local, make test-kafka): leader-kill (SIGKILL),
// broker-pause (SIGSTOP/SIGCONT) and broker-partition (the leader's
// interface down), as TestRunProcessContainerBrokers3 does them; and
// broker-partition also with the Pebble table sink and the plain sink,
// which shows its replay duplicates. Without root or ip, broker-partition
// is skipped loudly (a failure under CI=true) and the rest runs.
func TestRunProcessLocalBrokers3(t *testing.T) {
	needLocalKafka(t)
	began := time.Now()
	l, err := live.StartLocal(t.Context(), live.LocalOptions{DataDir: t.TempDir(), Brokers: 3, Netns: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("3 brokers %v ready in %v", l.Addrs(), time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker logs:\n%s", l.LogTail(40))
		}
		l.Close()
	})
	if err := l.CanPartition(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Errorf("broker-partition on local cannot run under CI: %v", err)
		} else {
			t.Logf("!!! SKIPPING broker-partition on local: %v", err)
		}
		runBrokerFaults(t, l, []string{faults.LeaderKill, faults.BrokerPause})
		return
	}
	runBrokerFaults(t, l, []string{faults.LeaderKill, faults.BrokerPause, faults.BrokerPartition})
	partition := "../scenarios/live/broker-partition.yaml"
	t.Run("broker-partition/table", func(t *testing.T) {
		runProcessCase(t, l, liveCase{scenario: partition, fired: []string{faults.BrokerPartition}}, 100*time.Millisecond)
	})
	t.Run("plain/broker-partition", func(t *testing.T) {
		runProcessCase(t, l, liveCase{scenario: "replay-append-sink", armedKills: 1, fired: []string{faults.BrokerPartition},
			knobs: map[string]faults.Knobs{faults.BrokerPartition: {"at_frac": 0.3, "for": "6s", "target": faults.TargetOutput}}}, 100*time.Millisecond)
	})
}

// runBrokerFaults runs the scenario of each broker fault on c, in turn
// with the Pebble table sink aimed at an input leader and with the
// transactional sink aimed at the transaction coordinator's leader
// (leader-kill) or the output's; then replay-append-sink (the plain
// sink, which shows its replay duplicates) with the first fault aimed at
// the output's leader. One run per fault keeps the suite short.
func runBrokerFaults(t *testing.T, c live.Cluster, names []string) {
	for i, name := range names {
		lc := liveCase{scenario: "../scenarios/live/" + name + ".yaml", fired: []string{name}}
		sinkName := "table"
		if i%2 == 0 {
			target := faults.TargetOutput
			if name == faults.LeaderKill {
				target = faults.TargetCoordinator
			}
			// A dead or stalled leader holds the transactional sink up for
			// a while: few batches run in the 12 s fault phase, so the
			// scenario's crash-after-sink-write is made likelier to fire.
			lc.tableSink, lc.knobs = "kafka", map[string]faults.Knobs{name: {"target": target}, faults.CrashAfterSinkWrite: {"rate": 0.3}}
			sinkName = "transactional-" + target
		}
		// The transactional cases run on a 200 ms trigger (a 24 s fault
		// phase): a killed coordinator holds the sink up for 20 s or more
		// on a busy machine, and the scenario's crash must still fire.
		trigger := 100 * time.Millisecond
		if lc.tableSink == "kafka" {
			trigger = 200 * time.Millisecond
		}
		t.Run(name+"/"+sinkName, func(t *testing.T) {
			runProcessCase(t, c, lc, trigger)
		})
	}
	t.Run("plain/"+names[0], func(t *testing.T) {
		runProcessCase(t, c, liveCase{scenario: "replay-append-sink", armedKills: 1, fired: []string{names[0]},
			knobs: map[string]faults.Knobs{names[0]: {"at_frac": 0.3, "for": "6s", "target": faults.TargetOutput}}}, 100*time.Millisecond)
	})
}

// runProcessReal is the live suite on a real cluster l that can restart
// its brokers.
func runProcessReal(t *testing.T, l live.Restartable) {
	name := func(c liveCase) string {
		n := strings.TrimSuffix(filepath.Base(c.scenario), ".yaml")
		if c.tableSink != "" {
			n += "/" + c.tableSink
		}
		return n
	}
	// The kfake cases share the broker, in parallel (own topics, own
	// folders); the broker restarts then run one at a time.
	t.Run("kills", func(t *testing.T) {
		for _, c := range liveKfakeCases {
			t.Run(name(c), func(t *testing.T) {
				t.Parallel()
				runProcessCase(t, l, c, 100*time.Millisecond)
			})
		}
	})
	for _, c := range []liveCase{
		{scenario: "../scenarios/live/broker-restart.yaml", brokerRestarts: 1},
		{scenario: "../scenarios/live/broker-restart.yaml", tableSink: "kafka", brokerRestarts: 1},
	} {
		t.Run(name(c), func(t *testing.T) {
			runProcessCase(t, l, c, 100*time.Millisecond)
		})
	}
}

// TestRunProcessRefuses: what a live run cannot do is refused before it
// starts, with what it supports.
func TestRunProcessRefuses(t *testing.T) {
	k := startKfake(t, nil)
	bin := dedupsimBinary(t)
	for _, tc := range []struct {
		ref, want string
	}{
		{"../scenarios/live/broker-restart.yaml", "broker-restart on this cluster"},
		{"shape-change-fresh-checkpoint-merge", "fault query-shape-change"},
	} {
		s := loadScenario(t, tc.ref)
		_, err := live.RunProcess(t.Context(), k, s.Config, 1, live.ProcessOptions{Binary: bin, Dir: t.TempDir()})
		if !errors.Is(err, live.ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want a refusal naming %q", tc.ref, err, tc.want)
		}
	}
}

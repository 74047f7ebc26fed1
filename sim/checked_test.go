package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/dedupsim/dedupsim/sim/history"
)

// The checker on simulated runs: for every fault of the catalogue, small
// configurations (a few seconds of runtime) where the fault fires (its
// coverage mark) and the checker reports the consequence the seed articles
// and the spec predict.

// checkedCase is one configuration and what the checker must say about it.
type checkedCase struct {
	name  string
	fault string // the catalogue fault it covers ("" for a query-only situation)
	cfg   Config
	seed  uint64
	// marks are coverage marks that must have fired (the fault's own
	// included automatically).
	marks []string
	// exactlyOnce is the expected verdict.
	exactlyOnce bool
	// want are findings that must be present; absent must not be.
	want, absent []check.Kind
	// more checks the report further.
	more func(t *testing.T, h *history.History, r check.Report)
}

const (
	withinQuery       = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 3\nsink: {kind: table}\n"
	eventTimeKeyQuery = "dedup: {api: dropDuplicates, keys: [id, ts]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 3\nsink: {kind: table}\n"
	noWatermarkQuery  = "dedup: {api: dropDuplicates, keys: [id]}\nshuffle_partitions: 3\nsink: {kind: table}\n"
	batchDedupQuery   = "dedup: {api: batchDropDuplicates, keys: [id]}\nsink: {kind: table}\n"
	perRunAppIDQuery  = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 3\nsink: {kind: table, generate_app_id: true}\n"
	fixedAppIDQuery   = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 3\nsink: {kind: table, app_id: payments-dedup-v1}\n"
)

// checkedConfig: 90 s of faults, 30 s of heal, 40 events/s, 3 s downtime.
func checkedConfig(q string, plan map[string]faults.Knobs) Config {
	cfg := testConfig(q, plan)
	cfg.FaultPhase = Duration(90 * time.Second)
	cfg.HealPhase = Duration(30 * time.Second)
	cfg.Downtime = Duration(3 * time.Second)
	cfg.Sources[0].Rate.PerSec = 40
	return cfg
}

func plan1(fault string, knobs faults.Knobs) map[string]faults.Knobs {
	return map[string]faults.Knobs{fault: knobs}
}

func checkedCases() []checkedCase {
	two := func(q string, plan map[string]faults.Knobs) Config {
		cfg := twoSourceConfig(plan)
		cfg.Query = QueryText(q)
		cfg.FaultPhase, cfg.HealPhase, cfg.Downtime = Duration(90*time.Second), Duration(30*time.Second), Duration(3*time.Second)
		return cfg
	}
	twoMax := strings.Replace(twoSources, "shuffle_partitions: 2", "shuffle_partitions: 2\nwatermark_policy: max", 1)
	restampedOffline := faults.Knobs{"probability": 0.1, "offline_fraction": 1, "offline_min_ms": "1m", "offline_max_ms": "1m"}
	cases := []checkedCase{
		{name: "retry-gap-below-delay", fault: faults.ProducerRetry,
			cfg:         checkedConfig(withinQuery, plan1(faults.ProducerRetry, faults.Knobs{"probability": 0.2, "copies_max": 3, "gap": "fixed", "gap_ms": "3s"})),
			marks:       []string{MarkDupDrop},
			exactlyOnce: true, absent: []check.Kind{check.DuplicateEmittedOutsideGuarantee, check.LateDropped, check.NotConverged},
			more: func(t *testing.T, h *history.History, r check.Report) {
				if r.Counts.DuplicatesDropped == 0 || r.Counts.EventsEmittedTwice != 0 {
					t.Fatalf("%d duplicates dropped, %d events emitted twice", r.Counts.DuplicatesDropped, r.Counts.EventsEmittedTwice)
				}
			}},
		{name: "retry-offline-tail-late", fault: faults.ProducerRetry,
			cfg:   checkedConfig(withinQuery, plan1(faults.ProducerRetry, faults.Knobs{"probability": 0.1, "gap_ms": "1s", "offline_fraction": 0.5, "offline_min_ms": "1m", "offline_max_ms": "1m"})),
			marks: []string{faults.ProducerRetry + "/offline", MarkLateDrop},
			// The offline copies keep their event time: the late filter drops
			// them, and their events were emitted through the original, so
			// nothing is lost and nothing is counted as a late-dropped event.
			exactlyOnce: true, absent: []check.Kind{check.DuplicateEmittedOutsideGuarantee, check.LateDropped},
			more: func(t *testing.T, h *history.History, r check.Report) {
				lateRetries := 0
				for _, b := range h.Batches {
					for j, c := range b.Input {
						if b.Outcomes[j] == history.Late {
							if h.Copies[c].Fault.String() != faults.ProducerRetry || h.Copies[c].CopyNo == 0 {
								t.Fatalf("late copy %+v is not a retry", h.Copies[c])
							}
							lateRetries++
						}
					}
				}
				if lateRetries == 0 || r.Counts.LateDropped != lateRetries || r.Counts.EventsEmittedTwice != 0 {
					t.Fatalf("%d late retries, %d late rows counted, %d events twice", lateRetries, r.Counts.LateDropped, r.Counts.EventsEmittedTwice)
				}
			}},
		{name: "restamped-event-time-key", fault: faults.ProducerRetryRestamped,
			cfg:         checkedConfig(eventTimeKeyQuery, plan1(faults.ProducerRetryRestamped, faults.Knobs{"probability": 0.1, "gap_ms": "2s"})),
			exactlyOnce: true, want: []check.Kind{check.DuplicateEmittedOutsideGuarantee}, absent: []check.Kind{check.DuplicateEmitted},
			more: func(t *testing.T, h *history.History, r check.Report) {
				f := r.Find(check.DuplicateEmittedOutsideGuarantee)
				if !strings.Contains(f.Examples[0].Detail, "re-stamped") {
					t.Fatalf("example %q does not name the re-stamped retry", f.Examples[0].Detail)
				}
			}},
		{name: "restamped-within-watermark", fault: faults.ProducerRetryRestamped,
			cfg:         checkedConfig(withinQuery, plan1(faults.ProducerRetryRestamped, faults.Knobs{"probability": 0.1, "gap_ms": "2s", "gap": "fixed"})),
			marks:       []string{MarkDupDrop},
			exactlyOnce: true, absent: []check.Kind{check.DuplicateEmittedOutsideGuarantee, check.DuplicateEmitted}},
		{name: "restamped-offline-outside-delay", fault: faults.ProducerRetryRestamped,
			cfg:         checkedConfig(withinQuery, plan1(faults.ProducerRetryRestamped, restampedOffline)),
			marks:       []string{faults.ProducerRetryRestamped + "/offline"},
			exactlyOnce: true, want: []check.Kind{check.DuplicateEmittedOutsideGuarantee}, absent: []check.Kind{check.DuplicateEmitted}},
		{name: "duplicate-append", fault: faults.DuplicateAppend,
			cfg:         checkedConfig(withinQuery, plan1(faults.DuplicateAppend, faults.Knobs{"probability": 0.1})),
			marks:       []string{MarkDupDrop},
			exactlyOnce: true, absent: []check.Kind{check.DuplicateEmittedOutsideGuarantee, check.LateDropped}},
		{name: "duplicate-append-batch-dedup", fault: faults.DuplicateAppend,
			// Adjacent offsets, one partition, one batch: batchDropDuplicates
			// catches them (a batch boundary between the two never falls:
			// both are appended at the same instant).
			cfg:         checkedConfig(batchDedupQuery, plan1(faults.DuplicateAppend, faults.Knobs{"probability": 0.1})),
			exactlyOnce: true, absent: []check.Kind{check.DuplicateEmittedOutsideGuarantee, check.DuplicateEmitted}},
		{name: "future-timestamp", fault: faults.FutureTimestamp,
			cfg:         checkedConfig(withinQuery, plan1(faults.FutureTimestamp, faults.Knobs{"producers_fraction": 0.01, "ahead_ms": "1h"})),
			marks:       []string{MarkLateDrop},
			exactlyOnce: true, want: []check.Kind{check.LateDropped},
			more: func(t *testing.T, h *history.History, r check.Report) {
				msg := r.Find(check.LateDropped).Message
				if !strings.Contains(msg, "future-clock producer") || strings.Contains(msg, "(0 of them honest") {
					t.Fatalf("late-dropped message does not blame a future clock for honest events: %s", msg)
				}
			}},
		{name: "future-timestamp-filtered", fault: faults.FutureTimestamp,
			// The seed articles' fix: drop events too far ahead before the
			// watermark; honest events are no longer late.
			cfg:         checkedConfig(strings.Replace(withinQuery, "sink:", "drop_future_events: 1 minute\nsink:", 1), plan1(faults.FutureTimestamp, faults.Knobs{"producers_fraction": 0.01, "ahead_ms": "1h"})),
			exactlyOnce: true, absent: []check.Kind{check.LateDropped, check.WatermarkStalled},
			more: func(t *testing.T, h *history.History, r check.Report) {
				if r.Counts.Filtered == 0 || r.Counts.LateDropped != 0 {
					t.Fatalf("%d rows filtered, %d late", r.Counts.Filtered, r.Counts.LateDropped)
				}
			}},
		{name: "clock-skew", fault: faults.ClockSkew,
			// Clocks up to 30 s off against a 10 s delay: the fast clocks push
			// the watermark past the slow clocks' events.
			cfg:         checkedConfig(withinQuery, plan1(faults.ClockSkew, faults.Knobs{"producers_fraction": 0.5, "offset_max_ms": "30s"})),
			marks:       []string{MarkLateDrop},
			exactlyOnce: true, want: []check.Kind{check.LateDropped},
			more: func(t *testing.T, h *history.History, r check.Report) {
				if msg := r.Find(check.LateDropped).Message; !strings.Contains(msg, "clock-skew fired") {
					t.Fatalf("late-dropped does not name the skewed clocks: %s", msg)
				}
			}},
		{name: "source-silence-min", fault: faults.SourceSilence,
			cfg:         two(twoSources, plan1(faults.SourceSilence, faults.Knobs{"source": 1, "start_frac": 0.2, "duration_ms": "60s"})),
			exactlyOnce: true, want: []check.Kind{check.WatermarkStalled}, absent: []check.Kind{check.LateDropped}},
		{name: "lagging-dead-input-min", fault: faults.LaggingInput,
			cfg:         two(twoSources, plan1(faults.LaggingInput, faults.Knobs{"source": 1, "dead": true})),
			exactlyOnce: true, want: []check.Kind{check.WatermarkStalled}},
		{name: "lagging-input-max", fault: faults.LaggingInput,
			// Under max, the lagging input's rows are behind the watermark the
			// other input sets: dropped as late.
			cfg:         two(twoMax, plan1(faults.LaggingInput, faults.Knobs{"source": 1, "lag_ms": "30s"})),
			marks:       []string{MarkLateDrop},
			exactlyOnce: true, want: []check.Kind{check.LateDropped}},
		{name: "crash-after-sink-write-append", fault: faults.CrashAfterSinkWrite,
			cfg:         checkedConfig(appendQuery, plan1(faults.CrashAfterSinkWrite, faults.Knobs{"rate": 0.05})),
			marks:       []string{MarkReplay},
			exactlyOnce: false, want: []check.Kind{check.SinkReplayDuplicate},
			absent: []check.Kind{check.DuplicateEmitted, check.Lost, check.DoubleRead, check.NotConverged}},
		{name: "crash-after-sink-write-generated-app-id", fault: faults.CrashAfterSinkWrite,
			// A txnAppId generated per run: the restarted run writes the
			// replay under a new id, and the table keeps it twice.
			cfg:         checkedConfig(perRunAppIDQuery, plan1(faults.CrashAfterSinkWrite, faults.Knobs{"rate": 0.05})),
			marks:       []string{MarkReplay},
			exactlyOnce: false, want: []check.Kind{check.SinkReplayDuplicate}},
		{name: "crash-after-sink-write-merge", fault: faults.CrashAfterSinkWrite,
			cfg:         checkedConfig(mergeQuery, plan1(faults.CrashAfterSinkWrite, faults.Knobs{"rate": 0.05})),
			marks:       []string{MarkReplay, MarkSinkSkipped},
			exactlyOnce: true, absent: []check.Kind{check.SinkReplayDuplicate}},
		{name: "crash-random", fault: faults.CrashRandom,
			cfg:         checkedConfig(withinQuery, plan1(faults.CrashRandom, faults.Knobs{"rate": 0.1})),
			exactlyOnce: true, absent: []check.Kind{check.NotConverged}},
		{name: "lost-unsynced-write", fault: faults.LostUnsyncedWrite,
			cfg:         checkedConfig(withinQuery, map[string]faults.Knobs{faults.CrashRandom: {"rate": 0.15}, faults.LostUnsyncedWrite: nil}),
			exactlyOnce: true, absent: []check.Kind{check.NotConverged}},
		{name: "torn-write", fault: faults.TornWrite,
			cfg:         checkedConfig(withinQuery, map[string]faults.Knobs{faults.CrashRandom: {"rate": 0.15}, faults.LostUnsyncedWrite: nil, faults.TornWrite: {"probability": 1}}),
			exactlyOnce: true, absent: []check.Kind{check.NotConverged}},
		{name: "shape-change-earliest-table", fault: faults.QueryShapeChange,
			// The new checkpoint re-reads the log; the table's app id is the
			// new query id, so the re-emitted events land in it again.
			cfg:         checkedConfig(withinQuery, plan1(faults.QueryShapeChange, faults.Knobs{"starting_offsets": "earliest"})),
			exactlyOnce: true, want: []check.Kind{check.RereadFreshCheckpoint, check.DuplicateEmittedOutsideGuarantee},
			absent: []check.Kind{check.DuplicateEmitted, check.SinkReplayDuplicate},
			more: func(t *testing.T, h *history.History, r check.Report) {
				if r.Counts.TableRows <= r.Counts.TableEvents || r.Counts.Checkpoints != 2 {
					t.Fatalf("table: %d rows for %d events, %d checkpoints", r.Counts.TableRows, r.Counts.TableEvents, r.Counts.Checkpoints)
				}
			}},
		{name: "shape-change-earliest-merge", fault: faults.QueryShapeChange,
			// MERGE on the id absorbs the re-read: the table holds each event once.
			cfg:         checkedConfig(mergeQuery, plan1(faults.QueryShapeChange, faults.Knobs{"starting_offsets": "earliest"})),
			marks:       []string{MarkSinkSkipped},
			exactlyOnce: true, want: []check.Kind{check.RereadFreshCheckpoint}, absent: []check.Kind{check.SinkReplayDuplicate},
			more: func(t *testing.T, h *history.History, r check.Report) {
				if r.Counts.TableRows != r.Counts.TableEvents {
					t.Fatalf("merge table: %d rows for %d events", r.Counts.TableRows, r.Counts.TableEvents)
				}
			}},
		{name: "shape-change-previous-fixed-app-id", fault: faults.QueryShapeChange,
			// A fixed txnAppId across a new checkpoint: the table skips the new
			// query's batches 0, 1, ... as already committed.
			cfg:         checkedConfig(fixedAppIDQuery, plan1(faults.QueryShapeChange, faults.Knobs{"starting_offsets": "previous"})),
			marks:       []string{MarkSinkSkipped},
			exactlyOnce: false, want: []check.Kind{check.SinkLost}, absent: []check.Kind{check.RereadFreshCheckpoint}},
		{name: "shape-change-previous-table", fault: faults.QueryShapeChange,
			cfg:         checkedConfig(withinQuery, plan1(faults.QueryShapeChange, faults.Knobs{"starting_offsets": "previous"})),
			exactlyOnce: true, absent: []check.Kind{check.RereadFreshCheckpoint, check.DuplicateEmittedOutsideGuarantee, check.SinkLost}},
		// Query-only situations (no fault).
		{name: "no-watermark-fresh-ids-state-unbounded",
			cfg:         checkedConfig(noWatermarkQuery, nil),
			exactlyOnce: true, want: []check.Kind{check.StateUnbounded}},
		{name: "within-watermark-steady-state-bounded",
			cfg:         checkedConfig(withinQuery, nil),
			exactlyOnce: true, absent: []check.Kind{check.StateOverBound, check.StateUnbounded, check.WatermarkStalled, check.LateDropped},
			more: func(t *testing.T, h *history.History, r check.Report) {
				if !r.Verdict.Converged || r.Counts.StateBound == 0 || float64(r.Counts.StateRowsMax) > r.Counts.StateBound {
					t.Fatalf("state max %d, bound %.0f, converged %v", r.Counts.StateRowsMax, r.Counts.StateBound, r.Verdict.Converged)
				}
			}},
		{name: "batch-dedup-retries-across-batches", fault: faults.ProducerRetry,
			cfg:         checkedConfig(batchDedupQuery, plan1(faults.ProducerRetry, faults.Knobs{"probability": 0.1, "gap_ms": "3s", "gap": "fixed"})),
			exactlyOnce: true, want: []check.Kind{check.DuplicateEmittedOutsideGuarantee}, absent: []check.Kind{check.DuplicateEmitted}},
	}
	for _, cp := range crashpoint.All() {
		name := faults.CrashAt(string(cp))
		c := checkedCase{name: name + "-table", fault: name,
			cfg:         checkedConfig(withinQuery, plan1(name, faults.Knobs{"rate": 0.05})),
			exactlyOnce: true, absent: []check.Kind{check.NotConverged, check.SinkReplayDuplicate, check.DuplicateEmittedOutsideGuarantee}}
		switch cp {
		case crashpoint.AfterOffsetsWrite, crashpoint.AfterStateCommit:
			c.marks = []string{MarkReplay}
		case crashpoint.AfterSinkWrite:
			c.marks = []string{MarkReplay, MarkSinkSkipped}
		}
		cases = append(cases, c)
	}
	return cases
}

// TestCheckerOnSimulatedRuns runs every focused configuration and holds the
// checker's report to what it should say.
func TestCheckerOnSimulatedRuns(t *testing.T) {
	cases := checkedCases()
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.fault] = true
		t.Run(c.name, func(t *testing.T) {
			h, err := Run(c.cfg, c.seed+1)
			if err != nil {
				t.Fatal(err)
			}
			marks := append([]string(nil), c.marks...)
			if c.fault != "" {
				marks = append(marks, c.fault)
			}
			if missing := faults.Missing(marks, h.Coverage); len(missing) > 0 {
				t.Fatalf("never fired: %v (coverage %v)", missing, h.Coverage)
			}
			r := check.Check(h, check.DefaultOptions())
			t.Logf("%s", r.Verdict.Summary)
			fail := func(format string, a ...any) {
				t.Helper()
				t.Fatalf("%s\n%s", fmt.Sprintf(format, a...), describeReport(r))
			}
			if r.Verdict.ExactlyOnce != c.exactlyOnce {
				fail("exactly-once %v, want %v", r.Verdict.ExactlyOnce, c.exactlyOnce)
			}
			for _, k := range c.want {
				if f := r.Find(k); f == nil || f.Count == 0 {
					fail("no %s finding", k)
				}
			}
			for _, k := range c.absent {
				if r.Find(k) != nil {
					fail("unexpected %s finding", k)
				}
			}
			if r.Find(check.MalformedHistory) != nil || r.Find(check.MetricsMismatch) != nil || r.Find(check.LateFilterMismatch) != nil ||
				r.Find(check.WatermarkRegressed) != nil || r.Find(check.Lost) != nil || r.Find(check.DoubleRead) != nil {
				fail("the engine broke an invariant the simulator never should")
			}
			if c.more != nil {
				c.more(t, h, r)
			}
		})
	}
	for _, f := range faults.Names() {
		if ff, _ := faults.Lookup(f); !covered[f] && !ff.LiveOnly {
			t.Errorf("no checked case for fault %s", f)
		}
	}
}

// describeReport is the report, one finding a line, for failure messages.
func describeReport(r check.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict: %s\n", r.Verdict.Summary)
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "  %s (%s, %d): %s\n", f.Kind, f.Severity, f.Count, f.Message)
		for _, e := range f.Examples {
			fmt.Fprintf(&b, "    %s\n", e.Detail)
		}
	}
	return b.String()
}

// TestUnsyncedOffsetsAfterRestart is a regression test for an engine bug
// the property tests found: a process crash inside fsys.WriteAtomic of
// offsets/N, after the rename and before the directory fsync, left
// offsets/N visible but not durable; the restarted engine acted on it and a
// later power loss erased it (sink-lost, or commits/N without offsets/N and
// no restart possible). The engine now fsyncs the checkpoint's folders when
// it opens it, as databases do on crash recovery.
func TestUnsyncedOffsetsAfterRestart(t *testing.T) {
	small := func(q string, plan map[string]faults.Knobs, rate float64, fault time.Duration) Config {
		cfg := Defaults()
		cfg.Query = QueryText(q)
		cfg.TriggerInterval = Duration(500 * time.Millisecond)
		cfg.FaultPhase, cfg.HealPhase, cfg.Downtime = Duration(fault), Duration(5*time.Second), Duration(time.Second)
		cfg.Sources = []SourceConfig{{Name: "default", Rate: Rate{PerSec: rate}, Partitions: 1, Producers: 1}}
		cfg.Plan = faults.Plan{Faults: plan}
		return cfg
	}
	power := map[string]faults.Knobs{faults.CrashRandom: {"rate": 0.2}, faults.LostUnsyncedWrite: {"probability": 0.5}, faults.TornWrite: {"probability": 0.3}}
	within1 := strings.Replace(withinQuery, "shuffle_partitions: 3", "shuffle_partitions: 1", 1)
	type repro struct {
		name string
		cfg  Config
		seed uint64
	}
	batchCfg := small(batchDedupQuery, map[string]faults.Knobs{faults.CrashRandom: {"rate": 0.15}, faults.TornWrite: {"probability": 0.09}}, 2, 5*time.Second)
	batchCfg.HealPhase = Duration(3 * time.Second)
	withinCfg := small(within1, power, 5, 30*time.Second)
	for _, c := range []repro{
		{"batch-dedup-sink-lost", batchCfg, 4},
		{"within-watermark-sink-lost", withinCfg, 141},
		{"commit-without-offsets", withinCfg, 343},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, err := Run(c.cfg, c.seed)
			if err != nil {
				t.Fatal(err)
			}
			if r := check.Check(h, check.DefaultOptions()); !r.Verdict.ExactlyOnce {
				t.Fatalf("%s", describeReport(r))
			}
		})
	}
}

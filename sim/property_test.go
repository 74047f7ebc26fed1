package sim

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"pgregory.net/rapid"

	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/dedupsim/dedupsim/sim/history"
)

// Property tests over generated workloads and fault schedules: correct
// configurations are exactly-once and converge under any crash schedule,
// and each broken configuration class is caught with the right finding.
//
// Runs are small by default (a few seconds to a minute of simulated time,
// at most 40 events/s) and each property makes 50 checks unless
// -rapid.checks or RAPID_CHECKS says otherwise; DEDUPSIM_HEAVY=1 draws
// larger runs and makes 200 checks.
//
// A failing case is shrunk by rapid, and the final (minimal) one is written
// as a `dedupsim exec` trace (query.yaml, steps.jsonl), with the scenario
// (scenario.yaml: the simulator config and seed), the history
// (history.json) and the checker's report (report.txt), into
// DEDUPSIM_FAILURE_DIR or a fresh temporary folder; the failure message
// names the folder and the exec command that replays it.
//
// Two issues these properties found are fixed (the engine's crash-recovery
// fsync, the checker's state-bound slack); their waivers stay available
// behind DEDUPSIM_WAIVE_KNOWN=1 for bisecting old commits, and are off by
// default, so the properties fail on them.

// heavy: DEDUPSIM_HEAVY=1.
var heavy = os.Getenv("DEDUPSIM_HEAVY") != ""

var rapidDefaults sync.Once

// propertyChecks sets rapid's number of checks to the sim package default
// unless the command line or RAPID_CHECKS chose one.
func propertyChecks() {
	rapidDefaults.Do(func() {
		if _, ok := os.LookupEnv("RAPID_CHECKS"); ok {
			return
		}
		set := false
		flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
		if set || flag.Lookup("rapid.checks") == nil {
			return
		}
		n := "50"
		if heavy {
			n = "200"
		}
		if err := flag.Set("rapid.checks", n); err != nil {
			panic(err)
		}
	})
}

// genRun is a drawn simulated run.
type genRun struct {
	cfg  Config
	seed uint64
	// delayMs and triggerMs of the drawn query and config.
	delayMs, triggerMs int64
}

// drawBase draws the workload: seed, rate, phases, trigger, delay, log
// partitions, state partitions and the key space.
func drawBase(t *rapid.T, query func(delaySec, shuffle int) string) genRun {
	maxRate, maxFault, maxHeal := 40, 40, 15
	if heavy {
		maxRate, maxFault, maxHeal = 300, 300, 60
	}
	g := genRun{seed: rapid.Uint64Range(1, 1<<32).Draw(t, "seed")}
	rate := rapid.IntRange(2, maxRate).Draw(t, "rate_per_sec")
	faultSec := rapid.IntRange(5, maxFault).Draw(t, "fault_phase_sec")
	healSec := rapid.IntRange(3, maxHeal).Draw(t, "heal_phase_sec")
	g.triggerMs = 500 * int64(rapid.IntRange(1, 4).Draw(t, "trigger_x500ms"))
	delaySec := rapid.IntRange(2, 20).Draw(t, "delay_sec")
	g.delayMs = int64(delaySec) * 1000
	shuffle := rapid.IntRange(1, 4).Draw(t, "shuffle_partitions")
	cfg := Defaults()
	cfg.Query = QueryText(query(delaySec, shuffle))
	cfg.TriggerInterval = Duration(time.Duration(g.triggerMs) * time.Millisecond)
	cfg.FaultPhase = Duration(time.Duration(faultSec) * time.Second)
	cfg.HealPhase = Duration(max(time.Duration(healSec)*time.Second, time.Duration(g.triggerMs)*time.Millisecond))
	cfg.Downtime = Duration(time.Duration(rapid.IntRange(1, 5).Draw(t, "downtime_sec")) * time.Second)
	src := SourceConfig{Name: "default", Rate: Rate{PerSec: float64(rate)},
		Partitions: rapid.IntRange(1, 4).Draw(t, "log_partitions"),
		Producers:  rapid.IntRange(1, 50).Draw(t, "producers")}
	if rapid.Bool().Draw(t, "bounded_keys") {
		src.Keys = KeySpace{Kind: KeysBounded, Size: rapid.IntRange(20, 2000).Draw(t, "key_space")}
	}
	cfg.Sources = []SourceConfig{src}
	cfg.Plan = faults.Plan{Faults: map[string]faults.Knobs{}}
	g.cfg = cfg
	return g
}

// pct draws a probability in [lo, hi] percent.
func pct(t *rapid.T, name string, lo, hi int) float64 {
	return float64(rapid.IntRange(lo, hi).Draw(t, name)) / 100
}

// drawCrashes switches on any subset of the crash faults (named points,
// crash-random, power loss and torn writes) with drawn rates.
func drawCrashes(t *rapid.T, g *genRun) {
	p := g.cfg.Plan.Faults
	for _, cp := range crashpoint.All() {
		name := faults.CrashAt(string(cp))
		if rapid.Bool().Draw(t, name) {
			p[name] = faults.Knobs{"rate": pct(t, name+"/rate", 1, 30)}
		}
	}
	if rapid.Bool().Draw(t, faults.CrashRandom) {
		p[faults.CrashRandom] = faults.Knobs{"rate": pct(t, "crash-random/rate", 1, 30)}
		if rapid.Bool().Draw(t, faults.LostUnsyncedWrite) {
			p[faults.LostUnsyncedWrite] = faults.Knobs{"probability": pct(t, "lost/probability", 0, 100)}
		}
		if rapid.Bool().Draw(t, faults.TornWrite) {
			p[faults.TornWrite] = faults.Knobs{"probability": pct(t, "torn/probability", 0, 100)}
		}
	}
}

// drawRetries switches on retries (keeping or re-stamping the event time)
// with fixed gaps in [minGapMs, maxGapMs], and duplicate appends.
func drawRetries(t *rapid.T, g *genRun, minGapMs, maxGapMs int64) {
	p := g.cfg.Plan.Faults
	for _, f := range []string{faults.ProducerRetry, faults.ProducerRetryRestamped} {
		if rapid.Bool().Draw(t, f) {
			p[f] = faults.Knobs{"probability": pct(t, f+"/probability", 1, 30), "copies_max": rapid.IntRange(1, 3).Draw(t, f+"/copies_max"),
				"gap": "fixed", "gap_ms": rapid.Int64Range(minGapMs, maxGapMs).Draw(t, f+"/gap_ms")}
		}
	}
	if rapid.Bool().Draw(t, faults.DuplicateAppend) {
		p[faults.DuplicateAppend] = faults.Knobs{"probability": pct(t, "duplicate-append/probability", 1, 20)}
	}
}

func withinWatermarkQuery(sink string) func(int, int) string {
	return func(delaySec, shuffle int) string {
		return fmt.Sprintf("dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: %d seconds}\nshuffle_partitions: %d\nsink: {kind: %s}\n", delaySec, shuffle, sink)
	}
}

// simulate runs g and checks it; an error of the simulator fails the case,
// unless it is the known engine issue (see knownIssue).
func simulate(t *rapid.T, g genRun) (*history.History, check.Report) {
	h, err := Run(g.cfg, g.seed)
	if err != nil {
		if waive(t, knownIssueRunError(err)) {
			t.SkipNow()
		}
		failCase(t, g, nil, check.Report{}, "the simulator failed: %v", err)
	}
	return h, check.Check(h, check.DefaultOptions())
}

// Known issues, fixed: the waivers below apply only with
// DEDUPSIM_WAIVE_KNOWN=1.
//
// The engine issue (reported, engine/ is not ours to change): after
// a process crash in the middle of fsys.WriteAtomic of offsets/N (renamed,
// directory not yet synced), the restarted engine acts on offsets/N without
// making it durable: it re-runs batch N into the sink, or plans N+1 on top
// of it. A later power loss erases offsets/N; the engine then re-plans
// batch N with other rows, which an idempotent table sink skips as already
// committed (sink-lost), or finds commits/N without offsets/N and cannot
// restart.
var strict = os.Getenv("DEDUPSIM_WAIVE_KNOWN") == ""

func knownIssueRunError(err error) string {
	if strings.Contains(err.Error(), "exists without offsets/") {
		return "restart impossible after a power loss erased offsets/N under a durable commits/N"
	}
	return ""
}

// knownIssueSinkLost: the only violation is sink-lost, and a power loss
// erased offsets/N of a batch N the sink had already committed.
func knownIssueSinkLost(h *history.History, r check.Report) string {
	if r.Find(check.SinkLost) == nil || r.Verdict.Violations != 1 {
		return ""
	}
	for _, c := range h.Crashes {
		for _, f := range c.LostFiles {
			var n int64
			if _, err := fmt.Sscanf(f, "offsets/%d", &n); err != nil || f != fmt.Sprintf("offsets/%d", n) {
				continue
			}
			for _, w := range h.Writes {
				if w.BatchID == n && w.AtMs <= c.AtMs && w.Kept > 0 {
					return fmt.Sprintf("a power loss at %dms erased offsets/%d after the sink committed batch %d", c.AtMs, n, n)
				}
			}
		}
	}
	return ""
}

// knownIssueSmallStateBound: the only reason the run did not converge is
// state-over-bound at the last batch, with a bound of a few dozen rows. The
// checker's bound (arrival rate x retention x 1.5) has no slack for Poisson
// noise, so at a few events per second the state of a fault-free run
// crosses it (reported).
func knownIssueSmallStateBound(r check.Report) string {
	if r.Verdict.Converged || r.Find(check.NotConverged) != nil || r.Find(check.MalformedHistory) != nil || r.Find(check.StateOverBound) == nil {
		return ""
	}
	if r.Counts.StateBound >= 100 {
		return ""
	}
	return fmt.Sprintf("state %d rows over a bound of %.1f rows at the last batch (checker: no small-count slack)", r.Counts.StateRowsLast, r.Counts.StateBound)
}

var waived struct {
	sync.Mutex
	n    int
	last string
}

// waive reports whether a failure matching the known issue is let pass.
func waive(t *rapid.T, why string) bool {
	if why == "" || strict {
		return false
	}
	waived.Lock()
	defer waived.Unlock()
	waived.n++
	waived.last = why
	t.Logf("known issue, waived (DEDUPSIM_WAIVE_KNOWN=1): %s", why)
	return true
}

// logWaived reports the waived cases of a property.
func logWaived(t *testing.T) {
	waived.Lock()
	defer waived.Unlock()
	if waived.n > 0 {
		t.Logf("%d cases hit a known issue and were waived (last: %s)", waived.n, waived.last)
		waived.n = 0
	}
}

var failureDir struct {
	sync.Mutex
	path string
}

// failCase writes the failing run out as an exec trace and fails with the
// folder and the command that replays it. Every failing case overwrites the
// same folder, and rapid runs the minimal case last, so the folder ends
// holding the shrunk case.
func failCase(t *rapid.T, g genRun, h *history.History, r check.Report, format string, a ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, a...)
	dir, err := writeFailure(g, h, r)
	if err != nil {
		t.Fatalf("%s\n(writing the failing run: %v)", msg, err)
	}
	replay := ""
	if h != nil {
		replay = fmt.Sprintf("\nreplay the run with exec:\n  dedupsim exec --format table --query %s --input %s",
			filepath.Join(dir, "query.yaml"), filepath.Join(dir, "steps.jsonl"))
	}
	t.Fatalf("%s\nverdict: %s\nfailing run written to %s (scenario.yaml: config and seed; history.json)%s",
		msg, r.Verdict.Summary, dir, replay)
}

func writeFailure(g genRun, h *history.History, r check.Report) (string, error) {
	failureDir.Lock()
	defer failureDir.Unlock()
	if failureDir.path == "" {
		if d := os.Getenv("DEDUPSIM_FAILURE_DIR"); d != "" {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return "", err
			}
			failureDir.path = d
		} else {
			d, err := os.MkdirTemp("", "dedupsim-failure-")
			if err != nil {
				return "", err
			}
			failureDir.path = d
		}
	}
	dir := failureDir.path
	scenario, err := yaml.Marshal(g.cfg)
	if err != nil {
		return "", err
	}
	scenario = append([]byte(fmt.Sprintf("# seed: %d\n", g.seed)), scenario...)
	files := map[string][]byte{"scenario.yaml": scenario}
	if h != nil {
		opt, err := ExportOptionsFor(g.cfg)
		if err != nil {
			return "", err
		}
		qy, st, err := ExportTraceWith(h, opt)
		if err != nil {
			return "", err
		}
		var hb strings.Builder
		if err := h.Write(&hb); err != nil {
			return "", err
		}
		files["query.yaml"], files["steps.jsonl"], files["history.json"] = qy, st, []byte(hb.String())
		files["report.txt"] = []byte(describeReport(r))
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// TestPropertyCorrectConfigsExactlyOnce: dropDuplicatesWithinWatermark with
// a delay above every retry gap, into an idempotent sink (a table whose
// txnAppId is the query id, stable for the checkpoint, or a MERGE on the
// id), is exactly-once and converges under any crash schedule: named
// points, random filesystem failures, power losses and torn writes.
func TestPropertyCorrectConfigsExactlyOnce(t *testing.T) {
	propertyChecks()
	defer logWaived(t)
	rapid.Check(t, func(t *rapid.T) {
		sink := rapid.SampledFrom([]string{"table", "merge"}).Draw(t, "sink")
		g := drawBase(t, withinWatermarkQuery(sink))
		// Re-stamped copies are gap (+ send-delay jitter) apart in event
		// time: keep the gap at most half the delay.
		drawRetries(t, &g, 10, g.delayMs/2)
		drawCrashes(t, &g)
		h, r := simulate(t, g)
		ok := r.Verdict.ExactlyOnce && r.Verdict.Converged && r.Counts.Conservation
		if !ok && healedRepeatsOnly(h, r, g.delayMs) {
			// Known checker false positive (reported): with a bounded key
			// space, an id sent again in the healed phase, at least the delay
			// apart, is emitted again as the API allows, yet not-converged
			// counts it.
			ok = true
		}
		if !ok && waive(t, knownIssueSinkLost(h, r)) {
			return
		}
		if !ok && r.Verdict.ExactlyOnce && r.Counts.Conservation && waive(t, knownIssueSmallStateBound(r)) {
			return
		}
		if !ok {
			failCase(t, g, h, r, "a correct configuration is not exactly-once and converged\n%s", describeReport(r))
		}
		if f := r.Find(check.DuplicateEmittedOutsideGuarantee); f != nil && g.cfg.Sources[0].Keys.Kind != KeysBounded {
			failCase(t, g, h, r, "retries within the delay got through\n%s", describeReport(r))
		}
	})
}

// healedRepeatsOnly reports whether the only violation is a not-converged
// finding that counts exactly the honest healed-phase ids emitted more than
// once with every two emissions at least the delay apart in event time:
// repeats of a bounded key, which dropDuplicatesWithinWatermark may emit
// again (check.checkHealed judges them as failures to converge).
func healedRepeatsOnly(h *history.History, r check.Report, delayMs int64) bool {
	f := r.Find(check.NotConverged)
	if f == nil || r.Verdict.Violations != 1 || r.Counts.Unread != 0 {
		return false
	}
	last := map[int64]int{}
	for i, b := range h.Batches {
		last[b.BatchID] = i
	}
	emits := map[string][]int64{}
	for _, i := range last {
		b := &h.Batches[i]
		for j, c := range b.Input {
			if b.Outcomes[j] == history.Emitted {
				emits[h.Copies[c].Event] = append(emits[h.Copies[c].Event], h.Copies[c].EventTimeUs)
			}
		}
	}
	healed := map[string]bool{}
	for _, c := range h.Copies {
		if _, seen := healed[c.Event]; !seen {
			healed[c.Event] = true
		}
		if c.AppendedAtMs < h.HealAtMs || c.Fault != history.NoFault || c.EventTimeUs/1000-c.AppendedAtMs > delayMs {
			healed[c.Event] = false
		}
	}
	n := 0
	for ev, ts := range emits {
		if !healed[ev] || len(ts) < 2 {
			continue
		}
		slices.Sort(ts)
		for k := 1; k < len(ts); k++ {
			if ts[k]-ts[k-1] < delayMs*1000 {
				return false // a real duplicate within the delay
			}
		}
		n++
	}
	return n == f.Count
}

// vacuity counts, per broken class, the cases in which the breaking
// situation actually arose, so that a property cannot pass by never
// exercising it.
type vacuity struct {
	sync.Mutex
	cases, hit int
}

func (v *vacuity) note(hit bool) {
	v.Lock()
	defer v.Unlock()
	v.cases++
	if hit {
		v.hit++
	}
}

func (v *vacuity) require(t *testing.T, what string) {
	t.Helper()
	if !t.Failed() && v.hit == 0 {
		t.Fatalf("none of %d cases had %s: the property was never exercised", v.cases, what)
	}
	t.Logf("%d of %d cases had %s", v.hit, v.cases, what)
}

// TestPropertyAppendSinkReplayDuplicates: a plain append sink keeps both
// deliveries of a batch re-run after a crash after the sink write.
func TestPropertyAppendSinkReplayDuplicates(t *testing.T) {
	propertyChecks()
	defer logWaived(t)
	var v vacuity
	rapid.Check(t, func(t *rapid.T) {
		g := drawBase(t, withinWatermarkQuery("append"))
		drawRetries(t, &g, 10, g.delayMs/2)
		g.cfg.Plan.Faults[faults.CrashAfterSinkWrite] = faults.Knobs{"rate": pct(t, "crash-after-sink-write/rate", 5, 30)}
		h, r := simulate(t, g)
		// The breaking situation: a batch delivered twice with rows.
		delivered := map[int64]int{}
		twice := false
		for _, w := range h.Writes {
			if len(w.Rows) > 0 {
				delivered[w.BatchID]++
				twice = twice || delivered[w.BatchID] > 1
			}
		}
		v.note(twice)
		if !twice {
			return
		}
		if r.Verdict.ExactlyOnce || r.Find(check.SinkReplayDuplicate) == nil {
			failCase(t, g, h, r, "a batch re-delivered to an append sink was not reported as sink-replay-duplicate\n%s", describeReport(r))
		}
	})
	v.require(t, "a batch delivered twice")
}

// TestPropertyRestampedRetriesEventTimeKey: dropDuplicates keyed on
// (id, event time) treats a re-stamped retry as a new key: the duplicate
// gets through, counted outside the API's guarantee.
func TestPropertyRestampedRetriesEventTimeKey(t *testing.T) {
	propertyChecks()
	defer logWaived(t)
	var v vacuity
	rapid.Check(t, func(t *rapid.T) {
		g := drawBase(t, func(delaySec, shuffle int) string {
			return fmt.Sprintf("dedup: {api: dropDuplicates, keys: [id, ts]}\nwatermark: {column: ts, delay: %d seconds}\nshuffle_partitions: %d\nsink: {kind: table}\n", delaySec, shuffle)
		})
		g.cfg.Sources[0].Keys = KeySpace{}
		g.cfg.Plan.Faults[faults.ProducerRetryRestamped] = faults.Knobs{"probability": pct(t, "restamped/probability", 5, 30),
			"gap": "fixed", "gap_ms": rapid.Int64Range(10, 2*g.delayMs).Draw(t, "restamped/gap_ms")}
		drawCrashes(t, &g)
		h, r := simulate(t, g)
		// The breaking situation: a re-stamped copy that was not late.
		through := restampedNotLate(h)
		v.note(through > 0)
		if through == 0 {
			return
		}
		f := r.Find(check.DuplicateEmittedOutsideGuarantee)
		if f == nil || r.Find(check.DuplicateEmitted) != nil || r.Counts.EventsEmittedTwice < 1 {
			failCase(t, g, h, r, "%d re-stamped copies were not late, yet no duplicate-emitted-outside-guarantee\n%s", through, describeReport(r))
		}
	})
	v.require(t, "a re-stamped copy that was not late")
}

// restampedNotLate counts re-stamped copies read and not dropped as late
// by their last (authoritative) reading.
func restampedNotLate(h *history.History) int {
	fate := map[int]history.Outcome{}
	for _, b := range h.Batches {
		for j, c := range b.Input {
			fate[int(c)] = b.Outcomes[j]
		}
	}
	n := 0
	for i, c := range h.Copies {
		if c.Fault.String() == faults.ProducerRetryRestamped && fate[i] != 0 && fate[i] != history.Late {
			n++
		}
	}
	return n
}

// TestPropertyRetryGapFarAboveDelay: dropDuplicatesWithinWatermark whose
// delay is far below the retry gap. A retry keeping its event time is
// behind the watermark by then and dropped as late; a re-stamped one comes
// after the first copy's state expired and is emitted again, outside the
// guarantee (|t1 - t2| >= delay).
func TestPropertyRetryGapFarAboveDelay(t *testing.T) {
	propertyChecks()
	defer logWaived(t)
	var v vacuity
	rapid.Check(t, func(t *rapid.T) {
		g := drawBase(t, withinWatermarkQuery("table"))
		g.cfg.Sources[0].Keys = KeySpace{}
		// Far above: past the first copy's expiry (event time + delay) plus
		// the batches it takes the watermark to get there.
		minGap := 3*g.delayMs + 3*g.triggerMs + 2000
		restamped := rapid.Bool().Draw(t, "restamped")
		fault := faults.ProducerRetry
		if restamped {
			fault = faults.ProducerRetryRestamped
		}
		g.cfg.Plan.Faults[fault] = faults.Knobs{"probability": pct(t, "retry/probability", 5, 30),
			"gap": "fixed", "gap_ms": rapid.Int64Range(minGap, 2*minGap).Draw(t, "retry/gap_ms")}
		h, r := simulate(t, g)
		fate := map[int]history.Outcome{}
		for _, b := range h.Batches {
			for j, c := range b.Input {
				fate[int(c)] = b.Outcomes[j]
			}
		}
		retries := 0
		for i, c := range h.Copies {
			if c.Fault.String() != fault {
				continue
			}
			retries++
			switch {
			case !restamped && fate[i] != history.Late:
				failCase(t, g, h, r, "retry copy %d (gap far above the delay, same event time) was %s, want late\n%s", i, fate[i], describeReport(r))
			case restamped && fate[i] != history.Emitted:
				failCase(t, g, h, r, "re-stamped copy %d (gap far above the delay) was %s, want emitted again\n%s", i, fate[i], describeReport(r))
			}
		}
		v.note(retries > 0)
		if retries == 0 {
			return
		}
		if restamped && r.Find(check.DuplicateEmittedOutsideGuarantee) == nil {
			failCase(t, g, h, r, "%d re-stamped copies emitted again, yet no duplicate-emitted-outside-guarantee\n%s", retries, describeReport(r))
		}
		if !restamped && (r.Counts.LateDropped < retries || r.Find(check.DuplicateEmittedOutsideGuarantee) != nil) {
			failCase(t, g, h, r, "%d retries keeping their event time: %d late rows counted\n%s", retries, r.Counts.LateDropped, describeReport(r))
		}
		if !r.Verdict.ExactlyOnce {
			failCase(t, g, h, r, "the API's contract holds; the checker found a violation\n%s", describeReport(r))
		}
	})
	v.require(t, "a retry")
}

// TestPropertyBatchDedupRetriesAcrossBatches: batchDropDuplicates keeps no
// state across batches, so a retry that lands in a later batch is emitted
// again, outside its guarantee.
func TestPropertyBatchDedupRetriesAcrossBatches(t *testing.T) {
	propertyChecks()
	defer logWaived(t)
	var v vacuity
	rapid.Check(t, func(t *rapid.T) {
		g := drawBase(t, func(int, int) string { return "dedup: {api: batchDropDuplicates, keys: [id]}\nsink: {kind: table}\n" })
		g.cfg.Sources[0].Keys = KeySpace{}
		minGap := 2*g.triggerMs + 500
		for _, f := range []string{faults.ProducerRetry, faults.ProducerRetryRestamped} {
			if rapid.Bool().Draw(t, f) {
				g.cfg.Plan.Faults[f] = faults.Knobs{"probability": pct(t, f+"/probability", 5, 30),
					"gap": "fixed", "gap_ms": rapid.Int64Range(minGap, 10*minGap).Draw(t, f+"/gap_ms")}
			}
		}
		if rapid.Bool().Draw(t, faults.DuplicateAppend) {
			g.cfg.Plan.Faults[faults.DuplicateAppend] = faults.Knobs{"probability": pct(t, "duplicate-append/probability", 1, 20)}
		}
		drawCrashes(t, &g)
		h, r := simulate(t, g)
		// An independent count: events whose copies the authoritative
		// executions (the last of each batch id) read in two batches or
		// more. A retry is sent two triggers after its original, so it lands
		// in a later batch unless crashes held the two back together.
		last := map[int64]int{}
		for i, b := range h.Batches {
			last[b.BatchID] = i
		}
		batchesOf := map[string]map[int64]bool{}
		for id, i := range last {
			for _, c := range h.Batches[i].Input {
				ev := h.Copies[c].Event
				if batchesOf[ev] == nil {
					batchesOf[ev] = map[int64]bool{}
				}
				batchesOf[ev][id] = true
			}
		}
		across := 0
		for _, ids := range batchesOf {
			if len(ids) > 1 {
				across++
			}
		}
		v.note(across > 0)
		if r.Find(check.DuplicateEmitted) == nil && !r.Verdict.ExactlyOnce && waive(t, knownIssueSinkLost(h, r)) {
			return
		}
		if r.Find(check.DuplicateEmitted) != nil || !r.Verdict.ExactlyOnce {
			failCase(t, g, h, r, "batchDropDuplicates broke its own guarantee (two copies emitted by one batch) or exactly-once\n%s", describeReport(r))
		}
		if across == 0 {
			return
		}
		if f := r.Find(check.DuplicateEmittedOutsideGuarantee); f == nil || f.Count != across {
			failCase(t, g, h, r, "%d events read by two batches or more: want as many duplicate-emitted-outside-guarantee\n%s", across, describeReport(r))
		}
	})
	v.require(t, "an event read by two batches")
}

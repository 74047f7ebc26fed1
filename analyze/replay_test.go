package analyze

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
	"github.com/dedupsim/dedupsim/internal/intmath"
)

// tb is what the helpers need of a *testing.T or a *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// traceEvent is one generated event: times in milliseconds.
type traceEvent struct {
	id      int
	etMs    int64
	arrMs   int64
	hasArr  bool
	lineout string
}

func (e traceEvent) line() string {
	if e.lineout != "" {
		return e.lineout
	}
	s := fmt.Sprintf(`{"id":"k%d","ts":%s`, e.id, secs(e.etMs))
	if e.hasArr {
		s += `,"at":` + secs(e.arrMs)
	}
	return s + "}"
}

func secs(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64) }

// stepsFor cuts events into the steps exec runs as the replay's batches:
// one rows step with "once" per trigger that has events, one tick for a
// trigger without (only the first of a run of them can run a batch), and
// one tick after the input.
func stepsFor(evs []traceEvent, trigger time.Duration) string {
	var b strings.Builder
	tr := trigger.Milliseconds()
	var clock, cur int64
	open := false
	for i, e := range evs {
		c := e.etMs
		if e.hasArr {
			c = e.arrMs
		}
		if i == 0 || c > clock {
			clock = c
		}
		k := intmath.FloorDiv(clock, tr)
		if open && k != cur {
			b.WriteString("]}\n")
			if k > cur+1 {
				b.WriteString(`{"tick": true}` + "\n")
			}
			open = false
		}
		if !open {
			b.WriteString(`{"once": true, "rows": [`)
			open, cur = true, k
		} else {
			b.WriteString(",")
		}
		b.WriteString(e.line())
	}
	if open {
		b.WriteString("]}\n")
		b.WriteString(`{"tick": true}` + "\n")
	}
	return b.String()
}

// execTotals runs the steps through the engine (what dedupsim exec runs)
// and returns numRowsTotal and numRowsDroppedByWatermark per batch.
func execTotals(t tb, yaml, stepsText string) (totals, late []int64) {
	t.Helper()
	q, err := query.Parse("q.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := steps.NewReader("s.jsonl", strings.NewReader(stepsText), q)
	if err != nil {
		t.Fatal(err)
	}
	_, err = trace.RunSteps(q, rd.Next, trace.Options{Checkpoint: fsys.NewMem(),
		Emit: func(*trace.Record) error { return nil },
		OnBatch: func(rec *engine.BatchRecord) {
			op := rec.Progress.StateOperators[0]
			totals = append(totals, op.NumRowsTotal)
			late = append(late, op.NumRowsDroppedByWatermark)
		}})
	if err != nil {
		t.Fatal(err)
	}
	return totals, late
}

func queries(delay time.Duration) [2]string {
	wm := fmt.Sprintf("watermark:\n  column: ts\n  delay: %d milliseconds\nshuffle_partitions: 3\n", delay.Milliseconds())
	return [2]string{
		"dedup:\n  api: dropDuplicates\n  keys: [id, ts]\n" + wm,
		"dedup:\n  api: dropDuplicatesWithinWatermark\n  keys: [id]\n" + wm,
	}
}

// replayTrace runs the analyzer's replay over the events.
func replayTrace(t tb, evs []traceEvent, delay, trigger time.Duration, arrival bool) (*Report, []ReplayBatch) {
	t.Helper()
	var in bytes.Buffer
	for _, e := range evs {
		in.WriteString(e.line() + "\n")
	}
	opt := Options{Keys: []string{"id"}, Time: "ts", Replay: true, Delay: delay, Trigger: trigger}
	if arrival {
		opt.Arrival = "at"
	}
	var got []ReplayBatch
	opt.OnBatch = func(b ReplayBatch) { got = append(got, b) }
	rep, err := Run(&in, opt)
	if err != nil {
		t.Fatal(err)
	}
	return rep, got
}

// TestReplayMatchesExec: over generated traces (keys with copies, late and
// out-of-order events, quiet gaps of several triggers, with and without an
// arrival column), the replay's numRowsTotal and late rows after each
// batch are the engine's, batch for batch, for both APIs.
func TestReplayMatchesExec(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(rt, "events")
		keys := rapid.IntRange(1, 12).Draw(rt, "keys")
		arrival := rapid.Bool().Draw(rt, "arrival")
		delay := time.Duration(rapid.IntRange(0, 20_000).Draw(rt, "delayMs")) * time.Millisecond
		trigger := time.Duration(rapid.IntRange(1, 5_000).Draw(rt, "triggerMs")) * time.Millisecond
		evs := make([]traceEvent, n)
		arr := int64(rapid.IntRange(100_000, 200_000).Draw(rt, "start"))
		for i := range evs {
			// Arrival moves on by 0 to about 4 triggers; the event time is
			// up to 30 s behind its arrival (late, out of order) or just
			// ahead of it.
			arr += int64(rapid.IntRange(0, int(4*trigger.Milliseconds())).Draw(rt, "step"))
			et := arr - int64(rapid.IntRange(-500, 30_000).Draw(rt, "behind"))
			evs[i] = traceEvent{id: rapid.IntRange(0, keys-1).Draw(rt, "id"), etMs: et, arrMs: arr, hasArr: arrival}
		}
		_, got := replayTrace(rt, evs, delay, trigger, arrival)
		st := stepsFor(evs, trigger)
		for api, yaml := range queries(delay) {
			totals, late := execTotals(rt, yaml, st)
			if len(totals) != len(got) {
				rt.Fatalf("api %d: exec ran %d batches, the replay %d\nsteps:\n%s", api, len(totals), len(got), st)
			}
			for i, b := range got {
				if b.NumRowsTotal[api] != totals[i] {
					rt.Fatalf("api %d batch %d: replay numRowsTotal %d, exec %d\nsteps:\n%s", api, i, b.NumRowsTotal[api], totals[i], st)
				}
			}
			var lateSum int64
			for _, l := range late {
				lateSum += l
			}
			rep, _ := replayTrace(rt, evs, delay, trigger, arrival)
			name := string(query.DropDuplicates)
			if api == 1 {
				name = string(query.DropDuplicatesWithinWatermark)
			}
			if s := rep.State[name]; s.LateRows != lateSum {
				rt.Fatalf("api %s: replay late rows %d, exec %d", name, s.LateRows, lateSum)
			}
		}
	})
}

// TestReplayBurst is issue 26's case: 1,000 new keys a second for 5
// minutes, 3% retried (re-stamped) up to 6 hours later, then quiet. The
// old rate x retention rule said 54 million keys at the recommended delay;
// exec, at that delay, peaks at the burst's keys. The replay's peak must be
// within 10% of exec's.
func TestReplayBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the burst through the engine")
	}
	var trace bytes.Buffer
	if err := RetriedBurst().Write(&trace); err != nil {
		t.Fatal(err)
	}
	data := trace.Bytes()
	first, err := Run(bytes.NewReader(data), Options{Keys: []string{"id"}, Time: "ts", Margin: DefaultMargin})
	if err != nil {
		t.Fatal(err)
	}
	delay := time.Duration(first.Recommendation.DelayMs) * time.Millisecond
	rep, err := Run(bytes.NewReader(data), Options{Keys: []string{"id"}, Time: "ts", Margin: DefaultMargin,
		Replay: true, Delay: delay, Trigger: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// The same trace as exec's steps: one batch per minute of event time
	// (the trace has no arrival column: its clock is the newest event time).
	var evs []traceEvent
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		evs = append(evs, parseSynthLine(t, l))
	}
	st := stepsFor(evs, time.Minute)
	for api, yaml := range queries(delay) {
		totals, _ := execTotals(t, yaml, st)
		var peak int64
		for _, n := range totals {
			peak = max(peak, n)
		}
		name := string(query.DropDuplicates)
		if api == 1 {
			name = string(query.DropDuplicatesWithinWatermark)
		}
		s := rep.State[name]
		old := first.Recommendation.State[api].KeysInState
		t.Logf("%s at %s: replay peak %d keys at %s (end %d), exec peak %d, rate x retention %.0f", name, first.Recommendation.Delay, s.PeakKeys, s.PeakAt, s.EndKeys, peak, old)
		if d := float64(s.PeakKeys-peak) / float64(peak); d > 0.10 || d < -0.10 {
			t.Errorf("%s: replay peak %d is %.1f%% off exec's %d", name, s.PeakKeys, d*100, peak)
		}
	}
}

// parseSynthLine reads one line of Synth.Write: {"id":"...","ts":...}.
func parseSynthLine(t tb, l string) traceEvent {
	t.Helper()
	var id, ts string
	i := strings.Index(l, `"id":`)
	j := strings.Index(l, `"ts":`)
	if i < 0 || j < 0 {
		t.Fatalf("unexpected synth line %q", l)
	}
	id = strings.Trim(strings.SplitN(l[i+5:], ",", 2)[0], `"}`)
	ts = strings.Trim(strings.SplitN(l[j+5:], ",", 2)[0], `"}`)
	id = strings.TrimPrefix(id, "p")
	n, err := strconv.Atoi(id)
	if err != nil {
		t.Fatalf("id %q: %v", id, err)
	}
	f, err := strconv.ParseFloat(ts, 64)
	if err != nil {
		t.Fatalf("ts %q: %v", ts, err)
	}
	return traceEvent{id: n, etMs: int64(f*1000 + 0.5), lineout: l}
}

// TestReplayOverflow: past --max-keys keys in state an API's replay stops
// and says so; its peak is then a lower bound.
func TestReplayOverflow(t *testing.T) {
	in := "{\"id\":\"a\",\"ts\":100}\n{\"id\":\"b\",\"ts\":101}\n{\"id\":\"c\",\"ts\":102}\n{\"id\":\"d\",\"ts\":103}\n"
	rep, err := Run(strings.NewReader(in), Options{Keys: []string{"id"}, Time: "ts", MaxKeys: 2, Replay: true, Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range rep.State {
		if !s.Overflow || s.PeakKeys != 2 {
			t.Errorf("%s: %+v", name, s)
		}
	}
	var out bytes.Buffer
	rep.WriteText(&out)
	if !strings.Contains(out.String(), "at least: the state passed --max-keys") {
		t.Errorf("the text does not say the peak is a lower bound:\n%s", out.String())
	}
}

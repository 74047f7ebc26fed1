package check

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/sim/history"
	"pgregory.net/rapid"
)

// TestPropertyMarginPredictsOtherDelays: the delays the margin names hold
// when the same arrivals are run again (by the test's own model of the
// operator) with those delays: from NeededDelayMs up no copy escapes, one
// millisecond below it one does, and -1 means that even a huge delay lets
// one through. The history it is computed from runs with delay 0, so that
// every watermark after batch 0 is above 0 and shifting it is exact.
func TestPropertyMarginPredictsOtherDelays(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := rapid.SampledFrom([]modelCfg{presetDDW, presetB1}).Draw(t, "api")
		cfg.delayMs = 0
		cfg.sink = "table"
		cfg.triggerMs = rapid.Int64Range(100, 2000).Draw(t, "triggerMs")
		n := rapid.IntRange(1, 25).Draw(t, "events")
		var copies []history.Copy
		for i := 0; i < n; i++ {
			ev := fmt.Sprintf("e%d", i)
			at := rapid.Int64Range(1, 20_000).Draw(t, "appendedAtMs")
			et := max(at-rapid.Int64Range(0, 3000).Draw(t, "lagMs"), 1)*1000 + rapid.Int64Range(0, 999).Draw(t, "us")
			copies = append(copies, history.Copy{Event: ev, EventTimeUs: et, AppendedAtMs: at})
			for k := 1; k <= rapid.IntRange(0, 3).Draw(t, "retries"); k++ {
				r := history.Copy{Event: ev, CopyNo: int32(k), EventTimeUs: et, Fault: history.MustFault("producer-retry"),
					AppendedAtMs: at + rapid.Int64Range(0, 15_000).Draw(t, "retryGapMs")}
				if rapid.Bool().Draw(t, "restamp") {
					r.EventTimeUs = max(et+rapid.Int64Range(-2000, 15_000).Draw(t, "restampMs")*1000, 1000)
				}
				copies = append(copies, r)
			}
		}
		escapedAt := func(delayMs int64) int {
			c := cfg
			c.delayMs = delayMs
			return check(simulate(c, append([]history.Copy(nil), copies...))).Counts.EventsEmittedTwice
		}
		r := check(simulate(cfg, append([]history.Copy(nil), copies...)))
		m := r.Margin
		if m == nil || m.MismatchedEvents != 0 || m.NotReplayedEvents != 0 {
			t.Fatalf("margin %+v", m)
		}
		if m.LaterCopies != m.CaughtByState+m.CaughtAsLate+m.Escaped || (m.Escaped > 0) != (r.Counts.EventsEmittedTwice > 0) {
			t.Fatalf("margin counts %+v", m)
		}
		need := m.NeededDelayMs
		if need < 0 {
			if escapedAt(10_000_000) == 0 {
				t.Fatalf("margin says no delay catches every copy, but a delay of 10000 s does: %+v", m)
			}
			return
		}
		for _, d := range []int64{need, need + rapid.Int64Range(1, 30_000).Draw(t, "above")} {
			if e := escapedAt(d); e != 0 {
				t.Fatalf("margin says delays from %dms catch every copy, but %dms lets %d events through: %+v", need, d, e, m)
			}
		}
		if need > 0 && escapedAt(need-1) == 0 {
			t.Fatalf("margin says %dms is the smallest delay from which every copy is caught, but %dms catches them too: %+v", need, need-1, m)
		}
		if m.KeptDelayMs < 0 || m.KeptDelayMs > need {
			t.Fatalf("kept delay %d, needed %d", m.KeptDelayMs, need)
		}
	})
}

// TestMarginShapes: retention per API, and the fates of later copies.
func TestMarginShapes(t *testing.T) {
	// Retries 300 ms later, same event time: caught by state.
	r := check(simulate(presetDDW, steady("e", 20, 400, 300, 0)))
	m := r.Margin
	if m == nil || m.RetentionMs != 4000 || m.LaterCopies != 20 || m.CaughtByState != 20 || m.Escaped != 0 || m.LargestCaught == nil || m.NeededDelayMs != 0 || m.GuaranteeDelayMs != 1 {
		t.Fatalf("same event time, within watermark: %+v", m)
	}
	if hm, ok := m.HeadroomMs(); !ok || hm != 2000 {
		t.Fatalf("headroom %d %v", hm, ok)
	}
	// Re-stamped 5 s later under (id, event time): different keys, escaped,
	// and no delay would catch them.
	r = check(simulate(presetB1, steady("e", 20, 400, 5000, 5000)))
	m = r.Margin
	if m == nil || m.RetentionMs != 2000 || m.Escaped != 20 || m.NeededDelayMs != -1 || m.SmallestEscaped == nil || m.SmallestEscaped.GapMs != 5000 {
		t.Fatalf("re-stamped, event time in the key: %+v", m)
	}
	if _, ok := m.HeadroomMs(); ok {
		t.Fatal("headroom with escaped copies")
	}
	// Re-stamped 5 s later under WithinWatermark with delay 2 s: caught all
	// the same (the key stays until the stream is 2 x delay past it), with
	// no headroom to speak of; 9 s later: escaped, and the delay that
	// catches them is above 2 s.
	r = check(simulate(presetDDW, steady("e", 20, 400, 5000, 5000)))
	if m = r.Margin; m == nil || m.Escaped != 0 || m.KeptDelayMs <= 1000 || m.KeptDelayMs > 2000 || m.GuaranteeDelayMs != 5001 {
		t.Fatalf("re-stamped 5 s, within watermark: %+v", m)
	}
	r = check(simulate(presetDDW, steady("e", 20, 400, 9000, 9000)))
	m = r.Margin
	if m == nil || m.Escaped == 0 || m.NeededDelayMs <= 2000 || m.GuaranteeDelayMs != 9001 {
		t.Fatalf("re-stamped, within watermark: %+v", m)
	}
	// No watermark: no margin. Event time not in the key: never evicted.
	if r := check(simulate(presetNoWM, steady("e", 5, 400, 300, 0))); r.Margin != nil {
		t.Fatalf("no watermark: %+v", r.Margin)
	}
	if r := check(simulate(presetB2, steady("e", 5, 400, 5000, 5000))); r.Margin == nil || r.Margin.RetentionMs != -1 || r.Margin.Escaped != 0 || r.Margin.NeededDelayMs != 0 {
		t.Fatalf("dropDuplicates on id with a watermark: %+v", r.Margin)
	}
}

// TestTableOutcome: once / more than once / never (late, filtered, lost),
// per sink, and Clean.
func TestTableOutcome(t *testing.T) {
	r := check(simulate(presetDDW, steady("e", 20, 400, 300, 0)))
	if tb := r.Table; tb.Source != "table" || tb.Events != 20 || tb.Once != 20 || tb.Rows != 20 || !tb.Clean() || !tb.Exact() {
		t.Fatalf("clean: %+v", tb)
	}
	// A replay into an append sink: the batch's events are held twice.
	r = check(simulate(with(presetDDW, func(c *modelCfg) { c.sink, c.crashAfterSink = "append", map[int64]bool{1: true} }), steady("e", 20, 400, 300, 0)))
	if tb := r.Table; tb.MoreThanOnce == 0 || tb.ExtraRows != tb.Rows-tb.Once-tb.MoreThanOnce || tb.Clean() {
		t.Fatalf("replayed append: %+v", tb)
	}
	// foreachBatch: the deliveries, the replay counted again.
	r = check(simulate(with(presetDDW, func(c *modelCfg) { c.sink, c.crashAfterSink = "foreachBatch", map[int64]bool{1: true} }), steady("e", 20, 400, 300, 0)))
	if tb := r.Table; tb.Source != "deliveries" || tb.MoreThanOnce == 0 || tb.Clean() || tb.Name() != "sink deliveries" {
		t.Fatalf("foreachBatch: %+v", tb)
	}
	// Events far behind the watermark: never in the table, dropped as late;
	// the table is still clean (nothing lost that the late filter did not
	// drop on purpose), but not exact.
	copies := steady("e", 20, 400, 0, 0)
	copies = append(copies, cp("old1", 0, 100, 8000), cp("old2", 0, 200, 8100))
	r = check(simulate(presetDDW, copies))
	if tb := r.Table; tb.Never != 2 || tb.NeverLate != 2 || tb.NeverLost != 0 || !tb.Clean() || tb.Exact() {
		t.Fatalf("late: %+v", tb)
	}
	// A row removed from a batch: that event never reached the table, lost.
	h := simulate(presetDDW, steady("e", 20, 400, 0, 0))
	i := authExec(t, h, 2)
	h.Batches[i].Input, h.Batches[i].Outcomes = h.Batches[i].Input[1:], h.Batches[i].Outcomes[1:]
	h.Table = h.Table[1:]
	r = check(h)
	if tb := r.Table; tb.NeverLost == 0 || tb.Clean() {
		t.Fatalf("lost: %+v", tb)
	}
	// Filtered by drop_future_events.
	h = simulate(presetDDW, steady("e", 5, 400, 0, 0))
	i = authExec(t, h, 0)
	h.Batches[i].Outcomes[0] = history.Filtered
	h.Table = h.Table[1:]
	r = check(h)
	if tb := r.Table; tb.NeverFiltered != 1 || tb.NeverLost != 0 || !tb.Clean() {
		t.Fatalf("filtered: %+v", tb)
	}
}

func TestDur(t *testing.T) {
	for _, tc := range []struct {
		ms   int64
		want string
	}{{0, "0 seconds"}, {1, "1 millisecond"}, {250, "250 milliseconds"}, {1000, "1 second"}, {4200, "4.2 seconds"}, {4676, "4.676 seconds"}, {30_000, "30 seconds"}, {60_000, "1 minute"}, {220_000, "3 minutes 40 seconds"}, {102_904, "1 minute 42.904 seconds"}, {7_500_000, "2 hours 5 minutes"}, {3_600_001, "1 hour 0.001 seconds"}, {365 * 86_400_000, "365 days"}, {90_000_000 * 3, "3 days 3 hours"}, {-1500, "-1.5 seconds"}} {
		if got := Dur(tc.ms); got != tc.want {
			t.Errorf("Dur(%d) = %q, want %q", tc.ms, got, tc.want)
		}
	}
}

// TestTimeline: an example's timeline follows every copy of its event, with
// the batch that read it, its fate and the watermarks; details state times
// as ISO-8601 and seconds since the run's start.
func TestTimeline(t *testing.T) {
	r := check(simulate(presetB1, steady("e", 20, 400, 5000, 5000)))
	f := finding(r, DuplicateEmittedOutsideGuarantee)
	if f == nil || len(f.Examples) == 0 {
		t.Fatalf("%s", dump(r))
	}
	e := f.Examples[0]
	if len(e.Timeline) != 2 || e.Timeline[0].Copy != e.Copies[0] || e.Timeline[1].Outcome != "emitted" || e.Timeline[1].BatchID < 0 || e.Timeline[1].InTable != 1 {
		t.Fatalf("timeline %+v", e.Timeline)
	}
	if !strings.Contains(e.Detail, "1970-01-01T00:00:01.000Z (+0s)") || !strings.Contains(e.Detail, "different event times (5 seconds apart, appended 5 seconds apart)") {
		t.Fatalf("detail %q", e.Detail)
	}
}

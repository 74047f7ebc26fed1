package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/dedupsim/dedupsim/sim/history"
)

// Presets: the query shapes of the guarantee table (delay 2 s, trigger 1 s).
var (
	presetB1   = modelCfg{api: apiDD, delayMs: 2000, timeInKey: true, triggerMs: 1000, sink: "table", ratePerSec: 10}
	presetDDW  = modelCfg{api: apiDDW, delayMs: 2000, triggerMs: 1000, sink: "table", ratePerSec: 10}
	presetB2   = modelCfg{api: apiDD, delayMs: 2000, triggerMs: 1000, sink: "table", ratePerSec: 10}
	presetNoWM = modelCfg{api: apiDD, delayMs: -1, triggerMs: 1000, sink: "table", ratePerSec: 10}
	presetB    = modelCfg{api: apiB, delayMs: -1, triggerMs: 1000, sink: "table", ratePerSec: 10}
)

func with(c modelCfg, f func(*modelCfg)) modelCfg {
	f(&c)
	return c
}

// steady is n events every everyMs from 1 s, event time = append time; with
// retryGapMs > 0 each has a retry copy appended retryGapMs later whose event
// time is restampMs later.
func steady(prefix string, n int, everyMs, retryGapMs, restampMs int64) []history.Copy {
	var cs []history.Copy
	for i := 0; i < n; i++ {
		at := 1000 + int64(i)*everyMs
		ev := fmt.Sprintf("%s%d", prefix, i)
		cs = append(cs, cp(ev, 0, at, at))
		if retryGapMs > 0 {
			r := cp(ev, 1, at+restampMs, at+retryGapMs)
			r.Fault = history.MustFault("producer-retry")
			cs = append(cs, r)
		}
	}
	return cs
}

func kindsOf(r Report) []Kind {
	var ks []Kind
	for _, f := range r.Findings {
		ks = append(ks, f.Kind)
	}
	return ks
}

func finding(r Report, k Kind) *Finding {
	for i := range r.Findings {
		if r.Findings[i].Kind == k {
			return &r.Findings[i]
		}
	}
	return nil
}

func mustHave(t *testing.T, r Report, ks ...Kind) {
	t.Helper()
	for _, k := range ks {
		if finding(r, k) == nil {
			t.Errorf("want finding %s, got %v\n%s", k, kindsOf(r), dump(r))
		}
	}
}

func mustNotHave(t *testing.T, r Report, ks ...Kind) {
	t.Helper()
	for _, k := range ks {
		if f := finding(r, k); f != nil {
			t.Errorf("unexpected finding %s: %s\n%s", k, f.Message, dump(r))
		}
	}
}

// onlyKinds fails unless every finding is one of ks.
func onlyKinds(t *testing.T, r Report, ks ...Kind) {
	t.Helper()
	for _, f := range r.Findings {
		if !slices.Contains(ks, f.Kind) {
			t.Errorf("unexpected finding %s: %s\n%s", f.Kind, f.Message, dump(r))
		}
	}
}

func dump(r Report) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}

func check(h *history.History) Report { return Check(h, DefaultOptions()) }

// authExec is the index of the authoritative execution of batch id (the
// only checkpoint).
func authExec(t *testing.T, h *history.History, id int64) int {
	t.Helper()
	last := -1
	for i, b := range h.Batches {
		if b.BatchID == id {
			last = i
		}
	}
	if last < 0 {
		t.Fatalf("no batch %d", id)
	}
	return last
}

// findRow finds the first authoritative row with the given outcome whose
// copy satisfies ok; it returns execution and position.
func findRow(t *testing.T, h *history.History, outcome history.Outcome, ok func(ci int) bool) (int, int) {
	t.Helper()
	seen := map[int64]int{}
	for i, b := range h.Batches {
		seen[b.BatchID] = i
	}
	for i, b := range h.Batches {
		if seen[b.BatchID] != i {
			continue
		}
		for j, o := range b.Outcomes {
			if o == outcome && ok(int(b.Input[j])) {
				return i, j
			}
		}
	}
	t.Fatalf("no %s row found", outcome)
	return -1, -1
}

func anyCopy(int) bool { return true }

func TestCleanRunsPerAPI(t *testing.T) {
	cases := []struct {
		name    string
		cfg     modelCfg
		allowed []Kind
	}{
		{"dropDuplicates with event time in key", presetB1, nil},
		{"dropDuplicatesWithinWatermark", presetDDW, nil},
		{"dropDuplicates watermark, time not in key", presetB2, []Kind{StateUnbounded}},
		{"dropDuplicates without watermark", presetNoWM, []Kind{StateUnbounded}},
		{"batchDropDuplicates", presetB, []Kind{DuplicateEmittedOutsideGuarantee}},
	}
	for _, tc := range cases {
		for _, sink := range []string{"table", "merge", "append", "foreachBatch"} {
			t.Run(tc.name+"/"+sink, func(t *testing.T) {
				cfg := with(tc.cfg, func(c *modelCfg) { c.sink = sink })
				// Retries 300 ms later with the same event time: source
				// duplicates every API removes except across batches.
				h := simulate(cfg, steady("e", 300, 100, 300, 0))
				r := check(h)
				if !r.Verdict.ExactlyOnce || !r.Verdict.Converged {
					t.Fatalf("verdict %+v\n%s", r.Verdict, dump(r))
				}
				allowed := tc.allowed
				if tc.cfg.api == presetB.api && (sink == "table" || sink == "append") {
					// Cross-batch copies the per-batch dedup lets through land
					// in a plain table twice (the merge sink matches them).
					allowed = append(allowed, TableDuplicate)
				}
				onlyKinds(t, r, allowed...)
				if !r.Counts.Conservation || r.Counts.Reads != r.Counts.Copies || r.Counts.Events != 300 {
					t.Errorf("counts %+v", r.Counts)
				}
				head := "table: "
				if sink == "foreachBatch" {
					head = "sink deliveries: "
				}
				if !strings.HasPrefix(r.Verdict.Summary, head) || !strings.Contains(r.Verdict.Summary, "; API contract kept") {
					t.Errorf("summary %q", r.Verdict.Summary)
				}
				if tb := r.Table; tb.Events != 300 || tb.Never != 0 || tb.Once+tb.MoreThanOnce != 300 || (!slices.Contains(allowed, TableDuplicate) && !slices.Contains(allowed, DuplicateEmittedOutsideGuarantee) && tb.Once != 300) {
					t.Errorf("table %+v", tb)
				}
			})
		}
	}
}

func TestConservationCounts(t *testing.T) {
	h := simulate(presetB1, steady("e", 50, 100, 300, 0))
	r := check(h)
	c := r.Counts
	if !c.Conservation || c.Copies != 100 || c.Reads != 100 || c.Emitted+c.DuplicatesDropped+c.LateDropped != c.Copies || c.Emitted != 50 || c.DuplicatesDropped != 50 || c.EventsEmittedOnce != 50 {
		t.Fatalf("counts %+v", c)
	}
	// Drop one row from a batch: the copy is unread and conservation fails.
	i := authExec(t, h, 2)
	h.Batches[i].Input = h.Batches[i].Input[1:]
	h.Batches[i].Outcomes = h.Batches[i].Outcomes[1:]
	r = check(h)
	if r.Counts.Conservation || r.Counts.Unread != 1 {
		t.Fatalf("counts %+v", r.Counts)
	}
	mustHave(t, r, Lost)
	if r.Verdict.ExactlyOnce {
		t.Fatal("exactly-once with a lost copy")
	}
}

func TestLost(t *testing.T) {
	t.Run("quiet on a clean run", func(t *testing.T) {
		mustNotHave(t, check(simulate(presetB1, steady("e", 50, 100, 300, 0))), Lost)
	})
	t.Run("skipped offset", func(t *testing.T) {
		h := simulate(presetDDW, steady("e", 50, 100, 0, 0))
		i := authExec(t, h, 3)
		skipped := h.Batches[i].Input[0]
		h.Batches[i].Input = h.Batches[i].Input[1:]
		h.Batches[i].Outcomes = h.Batches[i].Outcomes[1:]
		h.Batches[i].NumRowsUpdated--
		r := check(h)
		mustHave(t, r, Lost)
		f := finding(r, Lost)
		if f.Count != 1 || f.Examples[0].Event != h.Copies[skipped].Event || !strings.Contains(f.Examples[0].Detail, "never read") {
			t.Fatalf("%+v", f)
		}
		mustNotHave(t, r, NotConverged)
	})
	t.Run("dropped as duplicate with nothing emitted", func(t *testing.T) {
		h := simulate(presetB1, steady("e", 50, 100, 0, 0))
		i, j := findRow(t, h, history.Emitted, anyCopy)
		h.Batches[i].Outcomes[j] = history.Duplicate
		h.Batches[i].NumRowsUpdated--
		r := check(h)
		mustHave(t, r, Lost)
		f := finding(r, Lost)
		if !strings.Contains(f.Examples[0].Detail, "never emitted") || !strings.Contains(f.Message, "1 of them never emitted") {
			t.Fatalf("%+v", f)
		}
	})
	t.Run("re-stamped copy dropped against another key", func(t *testing.T) {
		// dropDuplicates with the event time in the key: (id, t+500) is a
		// different key, so dropping it as a duplicate loses a row even
		// though the event was emitted.
		h := simulate(presetB1, steady("e", 30, 100, 300, 500))
		i, j := findRow(t, h, history.Emitted, func(ci int) bool { return h.Copies[ci].CopyNo == 1 })
		h.Batches[i].Outcomes[j] = history.Duplicate
		h.Batches[i].NumRowsUpdated--
		r := check(h)
		mustHave(t, r, Lost)
		if d := finding(r, Lost).Examples[0].Detail; !strings.Contains(d, "still emitted") {
			t.Fatal(d)
		}
	})
}

func TestDoubleRead(t *testing.T) {
	h := simulate(presetB1, steady("e", 50, 100, 0, 0))
	mustNotHave(t, check(h), DoubleRead)
	i2, i5 := authExec(t, h, 2), authExec(t, h, 5)
	again := h.Batches[i2].Input[0]
	h.Batches[i5].Input = append(h.Batches[i5].Input, again)
	h.Batches[i5].Outcomes = append(h.Batches[i5].Outcomes, history.Duplicate)
	r := check(h)
	mustHave(t, r, DoubleRead)
	ex := finding(r, DoubleRead).Examples[0]
	if !slices.Equal(ex.Copies, []int{int(again)}) || !slices.Equal(ex.Batches, []int64{2, 5}) {
		t.Fatalf("%+v", ex)
	}
	if r.Counts.ExtraReads != 1 || r.Counts.Conservation {
		t.Fatalf("%+v", r.Counts)
	}
}

// The guarantee split: for each API, a pair of emitted copies that the API
// excludes (violation) and one it does not (counted).
func TestDuplicateGuaranteeSplit(t *testing.T) {
	bg := steady("bg", 80, 250, 0, 0) // keeps the watermark moving
	withA := func(extra ...history.Copy) []history.Copy {
		return append(append([]history.Copy{cp("a", 0, 5000, 5000)}, extra...), slices.Clone(bg)...)
	}
	forceEmit := func(t *testing.T, h *history.History) {
		t.Helper()
		i, j := findRow(t, h, history.Duplicate, func(ci int) bool { return h.Copies[ci].Event == "a" })
		h.Batches[i].Outcomes[j] = history.Emitted
		h.Batches[i].NumRowsUpdated++
	}
	cases := []struct {
		name  string
		cfg   modelCfg
		extra history.Copy
		force bool // the model drops the copy; force its emission
		want  Kind
	}{
		{"no watermark: any second emission", presetNoWM, cp("a", 1, 9000, 15000), true, DuplicateEmitted},
		{"time not in key: any second emission", presetB2, cp("a", 1, 5000, 5200), true, DuplicateEmitted},
		{"time in key: same event time", presetB1, cp("a", 1, 5000, 5200), true, DuplicateEmitted},
		{"time in key: re-stamped retry", presetB1, cp("a", 1, 5500, 5200), false, DuplicateEmittedOutsideGuarantee},
		{"within watermark: closer than the delay", presetDDW, cp("a", 1, 5500, 5200), true, DuplicateEmitted},
		{"within watermark: further than the delay", presetDDW, cp("a", 1, 15000, 15000), false, DuplicateEmittedOutsideGuarantee},
		{"batch: same batch", presetB, cp("a", 1, 5000, 5000), true, DuplicateEmitted},
		{"batch: different batches", presetB, cp("a", 1, 5000, 6500), false, DuplicateEmittedOutsideGuarantee},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := simulate(tc.cfg, withA(tc.extra))
			r := check(h)
			if tc.force {
				mustNotHave(t, r, DuplicateEmitted, DuplicateEmittedOutsideGuarantee)
				forceEmit(t, h)
				r = check(h)
			}
			mustHave(t, r, tc.want)
			other := DuplicateEmitted
			if tc.want == DuplicateEmitted {
				other = DuplicateEmittedOutsideGuarantee
			}
			mustNotHave(t, r, other)
			f := finding(r, tc.want)
			if f.Count != 1 || f.Examples[0].Event != "a" || len(f.Examples[0].Copies) != 2 {
				t.Fatalf("%+v", f)
			}
			if r.Verdict.ExactlyOnce != (tc.want == DuplicateEmittedOutsideGuarantee) {
				t.Fatalf("verdict %+v", r.Verdict)
			}
		})
	}
}

func TestReplaySupersedes(t *testing.T) {
	cfg := with(presetB1, func(c *modelCfg) { c.crashAfterSink = map[int64]bool{3: true, 7: true} })
	h := simulate(cfg, steady("e", 100, 100, 300, 0))
	// The crashed first execution of batch 3 is superseded: whatever it says
	// about the operator (here: everything emitted) does not count.
	for i, b := range h.Batches {
		if b.BatchID == 3 && b.Crashed != "" {
			for j := range h.Batches[i].Outcomes {
				h.Batches[i].Outcomes[j] = history.Emitted
			}
		}
	}
	r := check(h)
	if !r.Verdict.ExactlyOnce || r.Counts.Superseded != 2 || r.Counts.Batches != r.Counts.Executions-2 {
		t.Fatalf("%+v %+v", r.Verdict, r.Counts)
	}
	onlyKinds(t, r)
}

func TestSinkReplayDuplicate(t *testing.T) {
	crash := map[int64]bool{2: true, 6: true}
	for _, tc := range []struct {
		sink string
		want bool
	}{{"table", false}, {"merge", false}, {"append", true}, {"foreachBatch", true}} {
		t.Run(tc.sink, func(t *testing.T) {
			cfg := with(presetDDW, func(c *modelCfg) { c.sink, c.crashAfterSink = tc.sink, crash })
			r := check(simulate(cfg, steady("e", 100, 100, 0, 0)))
			if tc.want {
				mustHave(t, r, SinkReplayDuplicate)
				f := finding(r, SinkReplayDuplicate)
				if !strings.Contains(f.Message, "2 batches delivered more than once") {
					t.Fatal(f.Message)
				}
			} else {
				mustNotHave(t, r, SinkReplayDuplicate)
			}
		})
	}
	t.Run("a copy twice in the table", func(t *testing.T) {
		h := simulate(presetB1, steady("e", 20, 100, 0, 0))
		h.Table = append(h.Table, h.Table[3])
		r := check(h)
		mustHave(t, r, SinkReplayDuplicate)
		if d := finding(r, SinkReplayDuplicate).Examples[0].Detail; !strings.Contains(d, "is in the table twice") {
			t.Fatal(d)
		}
	})
}

func TestSinkLost(t *testing.T) {
	h := simulate(presetB1, steady("e", 20, 100, 0, 0))
	mustNotHave(t, check(h), SinkLost)
	gone := h.Table[5]
	h.Table = slices.Delete(h.Table, 5, 6)
	r := check(h)
	mustHave(t, r, SinkLost)
	if ex := finding(r, SinkLost).Examples[0]; ex.Event != h.Copies[gone].Event {
		t.Fatalf("%+v", ex)
	}
}

func TestLateFilterMismatch(t *testing.T) {
	// An old event far behind the watermark is late.
	h := simulate(presetB1, append(steady("bg", 60, 200, 0, 0), cp("old", 0, 1500, 9000)))
	r := check(h)
	mustNotHave(t, r, LateFilterMismatch)
	i, j := findRow(t, h, history.Late, anyCopy)
	h.Batches[i].Outcomes[j] = history.Emitted
	h.Batches[i].NumRowsUpdated++
	r = check(h)
	mustHave(t, r, LateFilterMismatch)
	if d := finding(r, LateFilterMismatch).Examples[0].Detail; !strings.Contains(d, "at or below") {
		t.Fatal(d)
	}

	h = simulate(presetB1, steady("bg", 60, 200, 0, 0))
	i, j = findRow(t, h, history.Emitted, anyCopy)
	h.Batches[i].Outcomes[j] = history.Late
	h.Batches[i].NumRowsUpdated--
	r = check(h)
	mustHave(t, r, LateFilterMismatch, LateDropped)

	h = simulate(presetB, steady("bg", 10, 200, 0, 0))
	h.Batches[0].Outcomes[0] = history.Late
	r = check(h)
	mustHave(t, r, LateFilterMismatch)
	if d := finding(r, LateFilterMismatch).Examples[0].Detail; !strings.Contains(d, "no late filter") {
		t.Fatal(d)
	}
}

func TestLateDropped(t *testing.T) {
	t.Run("quiet", func(t *testing.T) {
		mustNotHave(t, check(simulate(presetB1, steady("e", 60, 200, 300, 0))), LateDropped)
	})
	t.Run("honest old event", func(t *testing.T) {
		r := check(simulate(presetB1, append(steady("bg", 60, 200, 0, 0), cp("old", 0, 1500, 9000))))
		mustHave(t, r, LateDropped)
		f := finding(r, LateDropped)
		if f.Count != 1 || f.Severity != Counted || f.Examples[0].Event != "old" || !strings.Contains(f.Examples[0].Detail, "honest") {
			t.Fatalf("%+v", f)
		}
		if !r.Verdict.ExactlyOnce || r.Counts.EventsLateDropped != 1 {
			t.Fatalf("%+v %+v", r.Verdict, r.Counts)
		}
	})
	t.Run("original late, re-stamped retry emitted", func(t *testing.T) {
		retry := cp("x", 1, 9500, 9600)
		retry.Fault = history.MustFault("producer-retry")
		r := check(simulate(presetB1, append(steady("bg", 60, 200, 0, 0), cp("x", 0, 1500, 9000), retry)))
		f := finding(r, LateDropped)
		if f == nil || f.Count != 1 || !strings.Contains(f.Examples[0].Detail, "emitted through copy") {
			t.Fatalf("%+v", f)
		}
	})
	t.Run("future-clock producer", func(t *testing.T) {
		// The simulator does not tag future-stamped copies; their event time
		// running ahead of the append time gives them away, and the
		// coverage marks name the fault.
		fc := cp("skewed", 0, 10_000_000, 5000)
		h := simulate(presetB1, append(steady("bg", 100, 200, 0, 0), fc))
		h.Coverage = map[string]int{"future-timestamp": 1, "producer-retry": 4}
		r := check(h)
		mustHave(t, r, LateDropped, WatermarkStalled)
		f := finding(r, LateDropped)
		if !strings.Contains(f.Message, "a future-clock producer was active (1 copy carries an event time more than the delay ahead of its append time, up to 2 hours 46 minutes 35 seconds ahead; future-timestamp fired once)") || f.Count < 50 {
			t.Fatalf("%+v", f)
		}
		if !strings.Contains(f.Message, "74 of them honest") {
			t.Fatalf("%+v", f)
		}
		if !r.Verdict.ExactlyOnce {
			t.Fatalf("%+v", r.Verdict)
		}
	})
}

func TestWatermarkRegressed(t *testing.T) {
	h := simulate(presetB1, steady("e", 60, 100, 0, 0))
	mustNotHave(t, check(h), WatermarkRegressed)
	i3, i5 := authExec(t, h, 3), authExec(t, h, 5)
	h.Batches[i5].WatermarkMs = h.Batches[i3].WatermarkMs - 1
	r := check(h)
	mustHave(t, r, WatermarkRegressed)
	if ex := finding(r, WatermarkRegressed).Examples[0]; !slices.Contains(ex.Batches, 5) {
		t.Fatalf("%+v", ex)
	}

	h = simulate(presetB1, steady("e", 60, 100, 0, 0))
	i := authExec(t, h, 4)
	h.Batches[i].NextWatermarkMs = h.Batches[i].WatermarkMs - 10
	mustHave(t, check(h), WatermarkRegressed)
}

// freshCheckpoint builds two checkpoints: the second restarts from offset 0
// (re-reads "a"), with its watermark starting again from 0.
func freshCheckpoint() *history.History {
	h := &history.History{Version: 1, API: apiDD, DelayMs: 1000, EventTimeInKey: true, SinkKind: "table", HasTable: true,
		HealAtMs: 100_000, EndMs: 20_000,
		Copies: []history.Copy{cp("a", 0, 1000, 1000), cp("b", 0, 3000, 3000)}}
	h.Copies[1].Offset = 1
	h.Batches = []history.Batch{
		{BatchID: 0, AtMs: 2000, Input: []int32{0}, Outcomes: history.Outcomes{history.Emitted}, NextWatermarkMs: 0, NumRowsTotal: 1, NumRowsUpdated: 1},
		{BatchID: 1, AtMs: 4000, Input: []int32{1}, Outcomes: history.Outcomes{history.Emitted}, NextWatermarkMs: 2000, NumRowsTotal: 2, NumRowsUpdated: 1},
		{BatchID: 2, AtMs: 5000, WatermarkMs: 2000, NextWatermarkMs: 2000, NumRowsTotal: 1},
		// Fresh checkpoint at 6000: batch ids, state and watermark restart.
		{BatchID: 0, AtMs: 7000, Input: []int32{0}, Outcomes: history.Outcomes{history.Emitted}, NumRowsTotal: 1, NumRowsUpdated: 1},
	}
	h.Restarts = []history.Restart{{AtMs: 6000, FreshCheckpoint: true}}
	h.Writes = []history.SinkWrite{
		{BatchID: 0, AtMs: 2000, Rows: []int32{0}, Kept: 1},
		{BatchID: 1, AtMs: 4000, Rows: []int32{1}, Kept: 1},
		{BatchID: 2, AtMs: 5000},
		{BatchID: 0, AtMs: 7000, Rows: []int32{0}, Kept: 1},
	}
	h.Table = []int32{0, 1, 0}
	return h
}

func TestFreshCheckpoint(t *testing.T) {
	r := check(freshCheckpoint())
	mustHave(t, r, RereadFreshCheckpoint, DuplicateEmittedOutsideGuarantee)
	mustNotHave(t, r, DoubleRead, DuplicateEmitted, WatermarkRegressed, SinkReplayDuplicate, MalformedHistory)
	if r.Counts.Checkpoints != 2 || r.Counts.Batches != 4 || r.Counts.Superseded != 0 || !r.Verdict.ExactlyOnce {
		t.Fatalf("%+v %+v", r.Counts, r.Verdict)
	}
	if d := finding(r, DuplicateEmittedOutsideGuarantee).Examples[0].Detail; !strings.Contains(d, "fresh checkpoint") {
		t.Fatal(d)
	}
	// The same re-read without the fresh restart is a double read and a
	// duplicate within the guarantee (batch 0 of the same checkpoint is
	// replaced, so re-label it batch 3).
	h := freshCheckpoint()
	h.Restarts = nil
	h.Batches[3].BatchID, h.Batches[3].WatermarkMs, h.Batches[3].LateWatermarkMs, h.Batches[3].NextWatermarkMs = 3, 2000, 2000, 2000
	h.Copies[0].EventTimeUs = 3_000_000 // not late at 2000
	h.Writes[3].BatchID = 3
	r = check(h)
	mustHave(t, r, DoubleRead, DuplicateEmitted)
	// A stable table app id across the fresh checkpoint skips the new
	// checkpoint's batch 0: the sink loses it.
	h = freshCheckpoint()
	h.Copies = append(h.Copies, cp("c", 0, 8000, 8000))
	h.Batches[3].Input, h.Batches[3].Outcomes = []int32{2}, history.Outcomes{history.Emitted}
	h.Writes[3] = history.SinkWrite{BatchID: 0, AtMs: 7000, Rows: []int32{2}, Kept: 0}
	h.Table = []int32{0, 1}
	r = check(h)
	mustHave(t, r, SinkLost)
	if d := finding(r, SinkLost).Examples[0].Detail; !strings.Contains(d, "batch 0 delivered 1 rows, kept 0") {
		t.Fatal(d)
	}
}

func TestNotConverged(t *testing.T) {
	h := simulate(presetB1, steady("e", 40, 100, 0, 0))
	mustNotHave(t, check(h), NotConverged)
	// The newest copy was never read: nothing after it was, so it is not
	// lost but not consumed.
	last := len(h.Batches) - 1
	for len(h.Batches[last].Input) == 0 {
		last--
	}
	b := &h.Batches[last]
	b.Input, b.Outcomes = b.Input[:len(b.Input)-1], b.Outcomes[:len(b.Outcomes)-1]
	b.NumRowsUpdated--
	r := check(h)
	mustHave(t, r, NotConverged)
	mustNotHave(t, r, Lost)
	if r.Verdict.Converged || r.Verdict.ExactlyOnce {
		t.Fatalf("%+v", r.Verdict)
	}

	// Healed phase: an event whose copies all arrived after the heal is
	// emitted twice (outside batchDropDuplicates' guarantee, but the healed
	// phase must converge).
	cfg := with(presetB, func(c *modelCfg) { c.healAtMs = 4000 })
	h = simulate(cfg, append(steady("bg", 10, 300, 0, 0), cp("h", 0, 5000, 5000), cp("h", 1, 5000, 6500)))
	r = check(h)
	mustHave(t, r, NotConverged, DuplicateEmittedOutsideGuarantee)
	// A faulted retry landing in the healed phase is judged by the API's
	// guarantee only.
	retry := cp("h", 1, 5000, 6500)
	retry.Fault = history.MustFault("producer-retry")
	cfg.healAtMs = 4000
	r = check(simulate(cfg, append(steady("bg", 10, 300, 0, 0), cp("h", 0, 5000, 5000), retry)))
	mustNotHave(t, r, NotConverged)
	mustHave(t, r, DuplicateEmittedOutsideGuarantee)
	// An honest healed-phase event dropped as a duplicate of nothing is lost
	// and keeps the run from converging.
	h = simulate(cfg, append(steady("bg", 10, 300, 0, 0), cp("h", 0, 5000, 5000)))
	i, j := findRow(t, h, history.Emitted, func(ci int) bool { return h.Copies[ci].Event == "h" })
	h.Batches[i].Outcomes[j] = history.Duplicate
	r = check(h)
	mustHave(t, r, Lost, NotConverged)
	// Before the heal the same is only counted.
	cfg.healAtMs = 5500
	r = check(simulate(cfg, append(steady("bg", 10, 300, 0, 0), cp("h", 0, 5000, 5000), cp("h", 1, 5000, 6500))))
	mustNotHave(t, r, NotConverged)
	mustHave(t, r, DuplicateEmittedOutsideGuarantee)
}

// stateSeries is a history of empty batches every second whose numRowsTotal
// follows rows (dropDuplicates without watermark: no warm-up, no bound).
func stateSeries(rows []int64) *history.History {
	h := &history.History{Version: 1, API: apiDD, DelayMs: -1, SinkKind: "table", HasTable: true, EndMs: int64(len(rows)+1) * 1000}
	for i, n := range rows {
		h.Batches = append(h.Batches, history.Batch{BatchID: int64(i), AtMs: int64(i+1) * 1000, NumRowsTotal: n})
	}
	return h
}

func TestStateUnbounded(t *testing.T) {
	t.Run("plateau with noise", func(t *testing.T) {
		var rows []int64
		for i := 0; i < 200; i++ {
			up := int64(min(i, 20)) * 50 // fill, then hold near 1000
			noise := int64((i*7919)%101) - 50
			rows = append(rows, max(up+noise, 0))
		}
		r := check(stateSeries(rows))
		mustNotHave(t, r, StateUnbounded)
	})
	t.Run("noisy plateau whose last quarter peaks higher", func(t *testing.T) {
		var rows []int64
		for i := 0; i < 200; i++ {
			rows = append(rows, 1000+int64((i*37)%61)-30)
		}
		rows[190] = 1100 // a new maximum, but no trend
		mustNotHave(t, check(stateSeries(rows)), StateUnbounded)
	})
	t.Run("linear ramp", func(t *testing.T) {
		var rows []int64
		for i := 0; i < 200; i++ {
			rows = append(rows, int64(i)*10+int64((i*7919)%31))
		}
		r := check(stateSeries(rows))
		mustHave(t, r, StateUnbounded)
		if r.Verdict.ExactlyOnce != true {
			t.Fatal("state growth is not an exactly-once violation")
		}
	})
	t.Run("model: no eviction grows, eviction plateaus", func(t *testing.T) {
		mustHave(t, check(simulate(presetNoWM, steady("e", 600, 100, 0, 0))), StateUnbounded)
		mustHave(t, check(simulate(presetB2, steady("e", 600, 100, 0, 0))), StateUnbounded)
		mustNotHave(t, check(simulate(presetB1, steady("e", 600, 100, 0, 0))), StateUnbounded)
		mustNotHave(t, check(simulate(presetDDW, steady("e", 600, 100, 0, 0))), StateUnbounded)
	})
	t.Run("stalled watermark grows evicting state", func(t *testing.T) {
		// A future-clock copy moves the watermark far ahead: eviction then
		// drops everything and honest rows are late, so state falls, not
		// grows. A stuck watermark instead: event times stop advancing.
		var cs []history.Copy
		for i := 0; i < 600; i++ {
			at := 1000 + int64(i)*100
			et := at
			if at > 20_000 {
				et = 20_000 // event time stands still: the watermark stalls
			}
			cs = append(cs, cp(fmt.Sprintf("e%d", i), 0, et, at))
		}
		r := check(simulate(presetDDW, cs))
		mustHave(t, r, StateUnbounded, WatermarkStalled)
	})
}

func TestStateOverBound(t *testing.T) {
	r := check(simulate(presetB1, steady("e", 600, 100, 300, 0)))
	mustNotHave(t, r, StateOverBound)
	// 10/s x 3 s x 1.5, plus 3 standard deviations of a Poisson count of 30.
	if r.Counts.RetentionMs != 3000 || r.Counts.StateBound != 45+3*math.Sqrt(30) || r.Counts.StateRowsMax > 45 {
		t.Fatalf("%+v", r.Counts)
	}
	r = check(simulate(presetDDW, steady("e", 600, 100, 300, 0)))
	mustNotHave(t, r, StateOverBound)
	if r.Counts.RetentionMs != 5000 {
		t.Fatalf("%+v", r.Counts)
	}
	// Understated arrival rate: the bound is 10/s x 3 s x 1.5 / 5.
	cfg := with(presetB1, func(c *modelCfg) { c.ratePerSec = 2 })
	r = check(simulate(cfg, steady("e", 600, 100, 300, 0)))
	mustHave(t, r, StateOverBound)
	f := finding(r, StateOverBound)
	if f.Severity != Warning || len(f.Examples) != DefaultMaxExamples || !r.Verdict.ExactlyOnce {
		t.Fatalf("%+v", f)
	}
	// The model's last data batch still holds a retention's worth of keys.
	if r.Verdict.Converged || !strings.Contains(f.Message, "still over the bound") {
		t.Fatalf("%+v %s", r.Verdict, f.Message)
	}
	// A burst over the bound that drains before the end.
	cfg = with(presetB1, func(c *modelCfg) { c.noData = true })
	burst := steady("e", 300, 100, 0, 0)
	for i := 0; i < 200; i++ {
		burst = append(burst, cp(fmt.Sprintf("burst%d", i), 0, 15_000+int64(i), 15_000+int64(i)))
	}
	r = check(simulate(cfg, burst))
	mustHave(t, r, StateOverBound)
	if !r.Verdict.Converged || !strings.Contains(finding(r, StateOverBound).Message, "back under the bound") {
		t.Fatalf("%+v\n%s", r.Verdict, dump(r))
	}
	// Not applicable without eviction: a note, no finding.
	r = check(simulate(presetNoWM, steady("e", 100, 100, 0, 0)))
	mustNotHave(t, r, StateOverBound)
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "state-over-bound: not applicable") }) {
		t.Fatalf("%v", r.Notes)
	}
}

func TestWatermarkStalled(t *testing.T) {
	mustNotHave(t, check(simulate(presetB1, steady("e", 300, 100, 0, 0))), WatermarkStalled)
	// A quiet source: no data, no stall.
	cs := append(steady("a", 50, 100, 0, 0), nil...)
	for i := 0; i < 50; i++ {
		at := 40_000 + int64(i)*100
		cs = append(cs, cp(fmt.Sprintf("b%d", i), 0, at, at))
	}
	mustNotHave(t, check(simulate(presetB1, cs)), WatermarkStalled)
	// Data flows but event times stand still.
	cs = steady("a", 50, 100, 0, 0)
	for i := 0; i < 150; i++ {
		at := 6000 + int64(i)*100
		cs = append(cs, cp(fmt.Sprintf("b%d", i), 0, 5900, at))
	}
	r := check(simulate(presetDDW, cs))
	mustHave(t, r, WatermarkStalled)
	f := finding(r, WatermarkStalled)
	if f.Count != 1 || f.Severity != Warning || !strings.Contains(f.Examples[0].Detail, "while") {
		t.Fatalf("%+v", f)
	}
	// A larger span hides it.
	opts := DefaultOptions()
	opts.StallSpanMs = 60_000
	mustNotHave(t, Check(simulate(presetDDW, cs), opts), WatermarkStalled)
	// So does a dead driver: the time from a crash to its restart is not
	// the watermark's fault.
	h := simulate(presetDDW, cs)
	h.Crashes = []history.Crash{{AtMs: 8000, Point: "random"}}
	h.Restarts = []history.Restart{{AtMs: 17000}}
	mustNotHave(t, check(h), WatermarkStalled)
	h.Restarts = []history.Restart{{AtMs: 9000}}
	mustHave(t, check(h), WatermarkStalled)
}

func TestMetricsMismatch(t *testing.T) {
	h := simulate(presetB1, steady("e", 30, 100, 300, 0))
	mustNotHave(t, check(h), MetricsMismatch)
	i := authExec(t, h, 2)
	h.Batches[i].NumRowsUpdated += 3
	mustHave(t, check(h), MetricsMismatch)

	h = simulate(presetB1, steady("e", 30, 100, 300, 0))
	i = authExec(t, h, 2)
	b := &h.Batches[i]
	var dup int
	for _, o := range b.Outcomes {
		if o == history.Duplicate {
			dup++
		}
	}
	ok := fmt.Sprintf(`{"numInputRows":%d,"stateOperators":[{"numRowsTotal":%d,"numRowsUpdated":%d,"numRowsDroppedByWatermark":0,"customMetrics":{"numDroppedDuplicateRows":%d}}]}`,
		len(b.Input), b.NumRowsTotal, b.NumRowsUpdated, dup)
	b.Progress = json.RawMessage(ok)
	mustNotHave(t, check(h), MetricsMismatch)
	b.Progress = json.RawMessage(strings.Replace(ok, `"numRowsDroppedByWatermark":0`, `"numRowsDroppedByWatermark":7`, 1))
	r := check(h)
	mustHave(t, r, MetricsMismatch)
	if d := finding(r, MetricsMismatch).Examples[0].Detail; !strings.Contains(d, "numRowsDroppedByWatermark 7 but 0") {
		t.Fatal(d)
	}
}

func TestMalformedHistory(t *testing.T) {
	cases := map[string]func(h *history.History){
		"input out of range":     func(h *history.History) { h.Batches[1].Input[0] = 999 },
		"negative input":         func(h *history.History) { h.Batches[1].Input[0] = -1 },
		"outcomes short":         func(h *history.History) { h.Batches[1].Outcomes = h.Batches[1].Outcomes[:0] },
		"unknown outcome":        func(h *history.History) { h.Batches[1].Outcomes[0] = history.Outcome(200) }, // none of the outcomes
		"table out of range":     func(h *history.History) { h.Table = append(h.Table, 1<<30) },
		"write row out of range": func(h *history.History) { h.Writes[0].Rows = append(h.Writes[0].Rows, -5) },
		"kept above rows":        func(h *history.History) { h.Writes[0].Kept = 99 },
		"unknown api":            func(h *history.History) { h.API = "dropDuplicatez" },
		"write for a batch that never ran": func(h *history.History) {
			h.Writes = append(h.Writes, history.SinkWrite{BatchID: 1_000_000_000, AtMs: 5000, Rows: []int32{0}, Kept: 1})
		},
		"write of a row its batch did not emit": func(h *history.History) { h.Writes[0].Rows = append(h.Writes[0].Rows, int32(len(h.Copies)-1)) },
		"table with no sink writes":             func(h *history.History) { h.Writes = nil },
		"table row no write kept":               func(h *history.History) { h.Table = append(h.Table, h.Table[0]) },
		"table sink without a table":            func(h *history.History) { h.HasTable, h.Table = false, nil },
		"two copies at one offset": func(h *history.History) {
			h.Copies[1].Offset = h.Copies[0].Offset
			h.Copies[1].Partition = h.Copies[0].Partition
		},
		"within watermark without a watermark": func(h *history.History) {
			h.API, h.DelayMs = apiDDW, -1
			for i := range h.Batches {
				h.Batches[i].LateWatermarkMs, h.Batches[i].WatermarkMs, h.Batches[i].NextWatermarkMs = 0, 0, 0
			}
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			h := simulate(presetB1, steady("e", 20, 100, 300, 0))
			mutate(h)
			r := check(h)
			mustHave(t, r, MalformedHistory)
			if r.Verdict.ExactlyOnce || r.Verdict.Converged {
				t.Fatalf("%+v", r.Verdict)
			}
		})
	}
	t.Run("nil and empty", func(t *testing.T) {
		mustHave(t, Check(nil, Options{}), MalformedHistory)
		r := Check(&history.History{Version: 1, API: apiDD, DelayMs: -1}, Options{})
		if !r.Verdict.ExactlyOnce || len(r.Findings) != 0 {
			t.Fatalf("%s", dump(r))
		}
	})
}

func TestReportIsDeterministicAndOrdered(t *testing.T) {
	// Many findings at once.
	fc := cp("skewed", 0, 10_000_000, 5000)
	fc.Fault = history.MustFault("future-timestamp")
	cfg := with(presetNoWM, func(c *modelCfg) { c.sink, c.crashAfterSink = "append", map[int64]bool{1: true, 4: true} })
	h := simulate(cfg, append(steady("e", 300, 100, 300, 0), fc))
	i, j := findRow(t, h, history.Duplicate, anyCopy)
	h.Batches[i].Outcomes[j] = history.Emitted
	h.Batches[3].Input[0] = 12345
	var prev []byte
	for k := 0; k < 3; k++ {
		r := check(h)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil && !bytes.Equal(prev, b) {
			t.Fatal("report differs between runs")
		}
		prev = b
		last := -1
		for _, f := range r.Findings {
			pos := slices.Index(Kinds, f.Kind)
			if pos < last {
				t.Fatalf("findings out of order: %v", kindsOf(r))
			}
			last = pos
			if len(f.Examples) > DefaultMaxExamples || f.Severity != SeverityOf[f.Kind] || f.Count <= 0 {
				t.Fatalf("%+v", f)
			}
		}
	}
	// The history is not modified by Check.
	before, _ := json.Marshal(h)
	check(h)
	after, _ := json.Marshal(h)
	if !bytes.Equal(before, after) {
		t.Fatal("Check mutated the history")
	}
	opts := DefaultOptions()
	opts.MaxExamples = 1
	for _, f := range Check(h, opts).Findings {
		if len(f.Examples) > 1 {
			t.Fatalf("%+v", f)
		}
	}
}

func TestEffectiveOptions(t *testing.T) {
	r := Check(simulate(presetDDW, steady("e", 50, 100, 0, 0)), Options{})
	o := r.Options
	if o.StateMargin != 0.5 || o.MaxExamples != 3 || o.GrowthFraction != 0.2 || o.TriggerIntervalMs != 1000 || o.StallSpanMs != 6000 {
		t.Fatalf("%+v", o)
	}
}

func TestNaturalLess(t *testing.T) {
	in := []string{"e10", "e2", "e1", "a", "e02", "b3x", "b10x", ""}
	slices.SortFunc(in, func(a, b string) int {
		if naturalLess(a, b) {
			return -1
		}
		if naturalLess(b, a) {
			return 1
		}
		return 0
	})
	want := []string{"", "a", "b3x", "b10x", "e1", "e02", "e2", "e10"}
	if !slices.Equal(in, want) {
		t.Fatalf("%v", in)
	}
}

// TestNaturalKey: where two names both have a NaturalKey, the keys order
// them as naturalLess does, and equal keys are equal names; names outside
// the form have none.
func TestNaturalKey(t *testing.T) {
	names := []string{"e0-0", "e0-1", "e0-9", "e0-10", "e1-0", "e10-2", "e2-10", "d0-5", "d3-0", "f0-0", "e0-268435455", "E0-1", "~0-1"}
	for _, a := range names {
		ka := NaturalKey(a)
		if ka == NoNaturalKey {
			t.Fatalf("NaturalKey(%q): none", a)
		}
		for _, b := range names {
			kb := NaturalKey(b)
			if (ka < kb) != naturalLess(a, b) || (ka == kb) != (a == b) {
				t.Fatalf("%q (%x) vs %q (%x): keys disagree with naturalLess (%v)", a, ka, b, kb, naturalLess(a, b))
			}
		}
	}
	for _, n := range []string{"", "e0", "e0-", "e-1", "e01-1", "e1-01", "e1-2x", "e1-2-3", "0e-1", "ee1-1", "e0-268435456", "e1_2", "\xc3\xa9-1", "é1-2"} {
		if k := NaturalKey(n); k != NoNaturalKey {
			t.Fatalf("NaturalKey(%q) = %x, want none", n, k)
		}
	}
}

// A query-shape change: each checkpoint is judged by its own query.
func TestShapeChangeJudgesEachCheckpointByItsQuery(t *testing.T) {
	build := func(initial string) *history.History {
		h := &history.History{Version: 1, API: apiDD, Keys: []string{"id", "ts"}, DelayMs: 1000, EventTimeInKey: true,
			SinkKind: "table", HasTable: true, HealAtMs: 100_000, EndMs: 10_000, InitialQuery: initial,
			Copies: []history.Copy{cp("a", 0, 1000, 1000), cp("a", 1, 1500, 3000), cp("b", 0, 7000, 7000)}}
		h.Copies[1].Offset, h.Copies[2].Offset = 1, 2
		h.Copies[1].Fault = history.MustFault("producer-retry-restamped")
		h.Batches = []history.Batch{
			{BatchID: 0, AtMs: 2000, Input: []int32{0}, Outcomes: history.Outcomes{history.Emitted}, NumRowsTotal: 1, NumRowsUpdated: 1},
			{BatchID: 1, AtMs: 4000, Input: []int32{1}, Outcomes: history.Outcomes{history.Emitted}, NumRowsTotal: 2, NumRowsUpdated: 1},
			{BatchID: 0, AtMs: 8000, Input: []int32{2}, Outcomes: history.Outcomes{history.Emitted}, NumRowsTotal: 1, NumRowsUpdated: 1, NextWatermarkMs: 6000},
		}
		h.Restarts = []history.Restart{{AtMs: 6000, FreshCheckpoint: true, Query: "dedup: {api: dropDuplicates, keys: [id, ts]}\nwatermark: {column: ts, delay: 1 second}\nsink: {kind: table}\n"}}
		h.Table = []int32{0, 1, 2}
		return h
	}
	// Judged by the final query (event time in the key), the re-stamped
	// retry is a different key.
	r := check(build(""))
	mustHave(t, r, DuplicateEmittedOutsideGuarantee)
	mustNotHave(t, r, DuplicateEmitted)
	// The first checkpoint ran dropDuplicates("id") without a watermark:
	// there, any second emission breaks the guarantee.
	r = check(build("dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: table}\n"))
	mustHave(t, r, DuplicateEmitted)
	if f := finding(r, DuplicateEmitted); !strings.Contains(f.Message, "the shape changed") || !strings.Contains(f.Examples[0].Detail, "no watermark") {
		t.Fatalf("%+v", f)
	}
	// An unparsable initial query falls back to the final one, with a note.
	r = check(build("dedup: {api: nope}\n"))
	mustNotHave(t, r, DuplicateEmitted)
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "does not parse") }) {
		t.Fatalf("%v", r.Notes)
	}
}

func TestShapeFromQuery(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want shape
	}{
		{"dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: 2 seconds}\n", shape{api: apiDD, apiKnown: true, hasWatermark: true, timeInKey: true, delayMs: 2000}},
		{"dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 2 seconds}\n", shape{api: apiDD, apiKnown: true, hasWatermark: true, delayMs: 2000}},
		{"dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 1 minute}\n", shape{api: apiDDW, apiKnown: true, withinWM: true, hasWatermark: true, delayMs: 60000}},
		{"dedup: {api: batchDropDuplicates, keys: [id]}\nsink: {kind: append}\n", shape{api: apiB, apiKnown: true, batchAPI: true, delayMs: -1}},
	} {
		got, err := shapeFromQuery(tc.yaml)
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v %v", tc.yaml, got, err)
		}
	}
}

func TestDowntimePairsEachCrashWithItsRestart(t *testing.T) {
	// A restart at the very instant of a crash came before it (the batch
	// after the restart crashed at once).
	h := &history.History{EndMs: 100_000,
		Crashes:  []history.Crash{{AtMs: 2000}, {AtMs: 24000}, {AtMs: 34000}, {AtMs: 44000}, {AtMs: 90_000}},
		Restarts: []history.Restart{{AtMs: 12000}, {AtMs: 34000}, {AtMs: 44000}, {AtMs: 54000}}}
	c := newChecker(h, DefaultOptions())
	got := c.downtime()
	want := []span{{2000, 12000}, {24000, 54000}, {90_000, 100_000}}
	if !slices.Equal(got, want) {
		t.Fatalf("%v", got)
	}
	if n := overlapMs(got, 10_000, 30_000); n != 2000+6000 {
		t.Fatal(n)
	}
}

// TestKeyModelNote: the user's own key columns (event_id) are one key per
// event, as the recorders write them: no note; a key of the event time alone
// lets two events share a key, and the report says so.
func TestKeyModelNote(t *testing.T) {
	keyNote := func(r Report) bool {
		return slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "are the event time alone") })
	}
	h := simulate(presetB1, steady("e", 20, 100, 0, 0))
	h.Keys = []string{"event_id", "ts"}
	if r := check(h); keyNote(r) {
		t.Fatalf("keys %v: unexpected note %v", h.Keys, r.Notes)
	}
	h.Keys = []string{"ts"}
	if r := check(h); !keyNote(r) || !h.EventTimeInKey {
		t.Fatalf("keys %v (event time in key %v): want the note, got %v", h.Keys, h.EventTimeInKey, r.Notes)
	}
}

// TestNaturalOrderRadix: naturalOrder's radix sort of the simulator's
// names gives the comparison sort's order, (name in natural order, index),
// for any mix of heads and numbers, repeated names included; a name
// outside the form leaves the whole sort to the comparison (keys kept).
func TestNaturalOrderRadix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 600).Draw(t, "n")
		heads := rapid.SliceOfN(rapid.SampledFrom([]string{"e0", "e1", "e10", "e2", "d3", "f268435455", "e268435455"}), 1, 4).Draw(t, "heads")
		maxB := rapid.SampledFrom([]int{1, 9, 1000, 1<<28 - 1}).Draw(t, "maxB")
		foreign := rapid.Bool().Draw(t, "foreign")
		copies := make([]history.Copy, n)
		for i := range copies {
			b := rapid.IntRange(0, maxB).Draw(t, "b")
			copies[i].Event = rapid.SampledFrom(heads).Draw(t, "head") + "-" + strconv.Itoa(b)
		}
		if foreign && n > 0 {
			copies[rapid.IntRange(0, n-1).Draw(t, "at")].Event = "order-7"
		}
		order, keys, names := naturalOrder(copies)
		if foreign != (keys != nil) && n > 1 {
			t.Fatalf("foreign name %v, keys left for the comparison sort %v", foreign, keys != nil)
		}
		if keys != nil {
			sortNatural(order, keys, copies)
		} else {
			for k := 1; k < n; k++ {
				if same := copies[order[k]].Event == copies[order[k-1]].Event; same != (names[k] == names[k-1]) {
					t.Fatalf("copies %d and %d (%q, %q): names %d and %d", order[k-1], order[k], copies[order[k-1]].Event, copies[order[k]].Event, names[k-1], names[k])
				}
			}
		}
		want := make([]int, n)
		keys = make([]uint64, n)
		for i := range want {
			want[i] = i
			keys[i] = NaturalKey(copies[i].Event)
		}
		sortNatural(want, keys, copies)
		if !slices.Equal(order, want) {
			t.Fatalf("order %v, want %v", order, want)
		}
	})
}

package check

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dedupsim/dedupsim/sim/history"
	"pgregory.net/rapid"
)

// genHistory draws a consistent history from the model: a query shape,
// events with retries (same or re-stamped event time), out-of-order event
// times, replays after sink writes, and a healed phase whose events have a
// single copy.
func genHistory(t *rapid.T) *history.History {
	preset := rapid.SampledFrom([]modelCfg{presetB1, presetDDW, presetB2, presetNoWM, presetB}).Draw(t, "api")
	cfg := preset
	cfg.sink = rapid.SampledFrom([]string{"table", "merge"}).Draw(t, "sink")
	if cfg.delayMs >= 0 {
		cfg.delayMs = rapid.Int64Range(1, 3000).Draw(t, "delayMs")
	}
	cfg.triggerMs = rapid.Int64Range(100, 2000).Draw(t, "triggerMs")
	cfg.noData = rapid.Bool().Draw(t, "noData")
	cfg.healAtMs = rapid.Int64Range(1, 25_000).Draw(t, "healAtMs")
	cfg.crashAfterSink = map[int64]bool{}
	for _, id := range rapid.SliceOfN(rapid.Int64Range(0, 40), 0, 5).Draw(t, "crashes") {
		cfg.crashAfterSink[id] = true
	}
	maxLag := rapid.Int64Range(0, 4000).Draw(t, "maxLagMs")
	n := rapid.IntRange(1, 40).Draw(t, "events")
	var copies []history.Copy
	for i := 0; i < n; i++ {
		ev := fmt.Sprintf("e%d", i)
		at := rapid.Int64Range(1, 20_000).Draw(t, "appendedAtMs")
		et := max(at-rapid.Int64Range(0, maxLag).Draw(t, "lagMs"), 1)*1000 + rapid.Int64Range(0, 999).Draw(t, "us")
		part := rapid.IntRange(0, 2).Draw(t, "partition")
		copies = append(copies, history.Copy{Event: ev, EventTimeUs: et, AppendedAtMs: at, Partition: int32(part)})
		if at >= cfg.healAtMs {
			continue // healed phase: no producer faults
		}
		retries := rapid.IntRange(0, 3).Draw(t, "retries")
		for k := 1; k <= retries; k++ {
			r := history.Copy{Event: ev, CopyNo: int32(k), EventTimeUs: et, Fault: history.MustFault("producer-retry"),
				AppendedAtMs: at + rapid.Int64Range(0, 8000).Draw(t, "retryGapMs"),
				Partition:    int32(rapid.IntRange(0, 2).Draw(t, "retryPartition"))}
			if rapid.Bool().Draw(t, "restamp") {
				r.EventTimeUs = max(et+rapid.Int64Range(-2000, 5000).Draw(t, "restampMs")*1000, 1000)
			}
			copies = append(copies, r)
		}
	}
	return simulate(cfg, copies)
}

func TestPropertyCorrectHistoriesAreExactlyOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := genHistory(t)
		r := Check(h, DefaultOptions())
		if !r.Verdict.ExactlyOnce || finding(r, NotConverged) != nil || !r.Counts.Conservation {
			t.Fatalf("correct history judged wrong: %s", dump(r))
		}
		for _, k := range []Kind{MetricsMismatch, MalformedHistory} {
			if finding(r, k) != nil {
				t.Fatalf("%s on a model history: %s", k, dump(r))
			}
		}
	})
}

// authIdx lists the authoritative executions of a single-checkpoint history.
func authIdx(h *history.History) map[int64]int {
	m := map[int64]int{}
	for i, b := range h.Batches {
		m[b.BatchID] = i
	}
	return m
}

func TestPropertyInjectedDefectsAreFound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := genHistory(t)
		auth := authIdx(h)
		var ids []int64
		for id := range auth {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		defect := rapid.IntRange(0, 3).Draw(t, "defect")
		if defect == 3 && len(ids) < 2 {
			defect = 2
		}
		var want Kind
		switch defect {
		case 0: // drop a copy from every batch that read it
			ci := rapid.IntRange(0, len(h.Copies)-1).Draw(t, "dropCopy")
			for i := range h.Batches {
				b := &h.Batches[i]
				for j := len(b.Input) - 1; j >= 0; j-- {
					if int(b.Input[j]) == ci {
						b.Input = slices.Delete(slices.Clone(b.Input), j, j+1)
						b.Outcomes = slices.Delete(slices.Clone(b.Outcomes), j, j+1)
					}
				}
			}
			want = NotConverged
			c := h.Copies[ci]
			for _, o := range h.Copies {
				if o.Source == c.Source && o.Partition == c.Partition && o.Offset > c.Offset {
					want = Lost // a later offset of its partition was read
				}
			}
		case 1: // emit a copy twice within the delay (an identical copy, same batch)
			var cands [][2]int
			for _, id := range ids {
				i := auth[id]
				for j, o := range h.Batches[i].Outcomes {
					if o == history.Emitted {
						cands = append(cands, [2]int{i, j})
					}
				}
			}
			if len(cands) == 0 {
				t.Skip("nothing emitted")
			}
			p := rapid.SampledFrom(cands).Draw(t, "emitted")
			b := &h.Batches[p[0]]
			twin := h.Copies[b.Input[p[1]]]
			twin.CopyNo += 100
			twin.Offset = 1 << 40
			h.Copies = append(h.Copies, twin)
			b.Input = append(slices.Clone(b.Input), int32(len(h.Copies)-1))
			b.Outcomes = append(slices.Clone(b.Outcomes), history.Emitted)
			b.NumRowsUpdated++
			want = DuplicateEmitted
		case 2: // the table keeps a replayed batch twice
			var ws []int
			for wi, w := range h.Writes {
				if w.Kept > 0 {
					ws = append(ws, wi)
				}
			}
			if len(ws) == 0 {
				t.Skip("nothing written")
			}
			w := h.Writes[rapid.SampledFrom(ws).Draw(t, "write")]
			again := history.SinkWrite{BatchID: w.BatchID, AtMs: w.AtMs, Rows: slices.Clone(w.Rows), Kept: len(w.Rows)}
			h.Writes = append(h.Writes, again)
			h.Table = append(h.Table, again.Rows...)
			want = SinkReplayDuplicate
		case 3: // lower a watermark below an earlier batch's
			k := rapid.IntRange(1, len(ids)-1).Draw(t, "lowered")
			var prev int64
			for _, b := range h.Batches {
				if b.BatchID < ids[k] {
					prev = max(prev, b.WatermarkMs)
				}
			}
			h.Batches[auth[ids[k]]].WatermarkMs = prev - 1
			h.Batches[auth[ids[k]]].NextWatermarkMs = max(h.Batches[auth[ids[k]]].NextWatermarkMs, prev-1)
			want = WatermarkRegressed
		}
		r := Check(h, DefaultOptions())
		if finding(r, want) == nil || r.Verdict.ExactlyOnce {
			t.Fatalf("defect %d: want %s: %s", defect, want, dump(r))
		}
	})
}

package check

import (
	"sort"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/internal/intmath"
	"github.com/dedupsim/dedupsim/sim/history"
)

// A tiny, obviously correct model of the dedup operators and sinks, used to
// build consistent histories for the tests: micro-batches every trigger, the
// late filter with the previous batch's watermark, lookup/insert in arrival
// order, eviction with the current watermark after the input, and the
// watermark update max(wm, maxEventTime - delay).

const (
	apiDD  = string(query.DropDuplicates)
	apiDDW = string(query.DropDuplicatesWithinWatermark)
	apiB   = string(query.BatchDropDuplicates)
)

type modelCfg struct {
	api       string
	delayMs   int64 // -1: no watermark
	timeInKey bool
	triggerMs int64
	sink      string // "table" (idempotent), "append", "merge", "foreachBatch"
	// crashAfterSink: batch ids whose first execution dies after the sink
	// write and is replayed.
	crashAfterSink map[int64]bool
	noData         bool // run a no-data batch when the watermark advanced
	healAtMs       int64
	ratePerSec     float64
}

type mkey struct {
	event string
	et    int64
}

// simulate runs copies (AppendedAtMs set; offsets are assigned per
// partition in append order) through the model.
func simulate(cfg modelCfg, copies []history.Copy) *history.History {
	if cfg.triggerMs <= 0 {
		cfg.triggerMs = 1000
	}
	h := &history.History{Version: history.Version, API: cfg.api, Keys: []string{"id"}, DelayMs: cfg.delayMs,
		Partitions: 1, SinkKind: cfg.sink, EventTimeInKey: cfg.timeInKey, HealAtMs: cfg.healAtMs,
		ArrivalRatePerSec: cfg.ratePerSec, Copies: copies}
	if cfg.timeInKey {
		h.Keys = append(h.Keys, "event_time")
	}
	order := make([]int, len(copies))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return copies[order[a]].AppendedAtMs < copies[order[b]].AppendedAtMs })
	next := map[partKey]int64{}
	var lastAppend int64
	for _, i := range order {
		k := partKey{copies[i].Source, copies[i].Partition}
		copies[i].Offset = next[k]
		next[k]++
		lastAppend = max(lastAppend, copies[i].AppendedAtMs)
	}
	hasWM := cfg.delayMs >= 0
	state := map[mkey]int64{} // key -> expiry (µs) for within-watermark
	var wm, prevWM int64
	lastEvictWM := int64(-1)
	committed := map[int64]bool{} // table sink versions
	tableKeys := map[string]bool{}
	var id int64
	pos := 0
	end := lastAppend + 3*cfg.triggerMs
	for t := cfg.triggerMs; t <= end; t += cfg.triggerMs {
		var in []int32
		for pos < len(order) && copies[order[pos]].AppendedAtMs <= t {
			in = append(in, int32(order[pos]))
			pos++
		}
		if len(in) == 0 && !(cfg.noData && hasWM && wm > lastEvictWM && id > 0) {
			continue
		}
		b := history.Batch{BatchID: id, AtMs: t, Input: in, LateWatermarkMs: prevWM, WatermarkMs: wm}
		batchSeen := map[string]bool{}
		var emitted []int32
		maxEt, any := int64(0), false
		for _, ci := range in {
			cp := copies[ci]
			if !any || cp.EventTimeUs > maxEt {
				maxEt, any = cp.EventTimeUs, true
			}
			out := history.Emitted
			switch {
			case cfg.api == apiB:
				if batchSeen[cp.Event] {
					out = history.Duplicate
				}
				batchSeen[cp.Event] = true
			case hasWM && cp.EventTimeUs <= prevWM*1000:
				out = history.Late
			default:
				k := mkey{event: cp.Event}
				if cfg.timeInKey {
					k.et = cp.EventTimeUs
				}
				if _, ok := state[k]; ok {
					out = history.Duplicate
				} else {
					state[k] = cp.EventTimeUs + cfg.delayMs*1000
				}
			}
			b.Outcomes = append(b.Outcomes, out)
			if out == history.Emitted {
				emitted = append(emitted, ci)
				b.NumRowsUpdated++
			}
		}
		// Eviction with the current watermark.
		if hasWM && cfg.api != apiB {
			for k, exp := range state {
				if (cfg.api == apiDD && cfg.timeInKey && k.et <= wm*1000) || (cfg.api == apiDDW && exp <= wm*1000) {
					delete(state, k)
				}
			}
		}
		if cfg.api != apiB {
			b.NumRowsTotal = int64(len(state))
		}
		lastEvictWM = wm
		nw := wm
		if any {
			b.MaxEventTimeMs = intmath.FloorDiv(maxEt, 1000)
			if hasWM && b.MaxEventTimeMs-cfg.delayMs > nw {
				nw = b.MaxEventTimeMs - cfg.delayMs
			}
		}
		b.NextWatermarkMs = nw
		// Sink.
		deliver := func(at int64) {
			w := history.SinkWrite{BatchID: id, AtMs: at, Rows: append([]int32(nil), emitted...)}
			switch cfg.sink {
			case "table":
				if !committed[id] {
					w.Kept = len(emitted)
					h.Table = append(h.Table, emitted...)
					committed[id] = true
				}
			case "append", "foreachBatch":
				w.Kept = len(emitted)
				if cfg.sink == "append" {
					h.Table = append(h.Table, emitted...)
				}
			case "merge":
				for _, ci := range emitted {
					if !tableKeys[copies[ci].Event] {
						tableKeys[copies[ci].Event] = true
						w.Kept++
						h.Table = append(h.Table, ci)
					}
				}
			}
			h.Writes = append(h.Writes, w)
		}
		if cfg.crashAfterSink[id] {
			crashed := b
			crashed.Crashed = "afterSink"
			crashed.Input = append([]int32(nil), b.Input...)
			crashed.Outcomes = append(history.Outcomes(nil), b.Outcomes...)
			h.Batches = append(h.Batches, crashed)
			deliver(t)
			h.Crashes = append(h.Crashes, history.Crash{AtMs: t, Point: "afterSink", BatchID: id})
			h.Restarts = append(h.Restarts, history.Restart{AtMs: t})
			b.Replay = true
		}
		h.Batches = append(h.Batches, b)
		deliver(t)
		prevWM, wm = wm, nw
		id++
	}
	h.EndMs = end
	h.HasTable = cfg.sink != "foreachBatch"
	return h
}

// cp is a copy appended at atMs with event time etMs.
func cp(event string, copyNo int, etMs, atMs int64) history.Copy {
	return history.Copy{Event: event, CopyNo: int32(copyNo), EventTimeUs: etMs * 1000, AppendedAtMs: atMs}
}

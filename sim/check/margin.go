package check

import (
	"math"
	"sort"

	"github.com/dedupsim/dedupsim/internal/intmath"
	"github.com/dedupsim/dedupsim/sim/history"
)

// Margin says how close a watermarked run came to letting a copy through,
// and which delays would have caught every copy: users choose delays from
// it. It is computed from the history alone.
//
// A later copy is a copy of an event read (by an authoritative batch of the
// same checkpoint) after the event's first emitted copy. It was caught by
// state (dropped as a duplicate), caught as late (dropped by the late filter,
// §1.5), or it escaped (emitted again).
//
// The delays come from replaying each event's copies through the operator's
// rules with another delay d, holding the run's arrivals and batches as they
// were: every watermark the run recorded shifts by (delay - d) (the watermark
// is max event time - delay, §6.3; a watermark still at its initial 0 stays
// 0). Under d a copy is late iff eventTime <= late watermark (§1.5); for
// dropDuplicatesWithinWatermark it is caught by state iff its event's entry,
// expiring at the first accepted copy's event time + d (§4.2), was not
// evicted by the previous batch's watermark (§4.3); with the event time in
// the key (dropDuplicates, §3.2) a copy meets only the entry of its own
// event time, evicted once the watermark reaches it, so a re-stamped copy
// is never caught by state whatever the delay; dropDuplicates without the
// event time in the key never evicts (§3.3).
type Margin struct {
	API     string `json:"api"`
	DelayMs int64  `json:"delayMs"`
	// RetentionMs is how far the stream's event time may move past a key's
	// event time before the key leaves state: 2 x delay for
	// dropDuplicatesWithinWatermark (the entry expires at the first copy's
	// event time + delay and is evicted once the watermark, max event time -
	// delay, reaches it), the delay for dropDuplicates with the event time
	// in the key, -1 when state is never evicted.
	RetentionMs int64 `json:"retentionMs"`
	// LaterCopies = CaughtByState + CaughtAsLate + Escaped.
	LaterCopies   int `json:"laterCopies"`
	CaughtByState int `json:"caughtByState"`
	CaughtAsLate  int `json:"caughtAsLate"`
	Escaped       int `json:"escaped"`
	// LargestCaught is the copy caught by state farthest from its event's
	// first emitted copy (event-time gap, then append gap); SmallestEscaped
	// and LargestEscaped bound the copies that got through. Nil when none.
	LargestCaught   *CopyGap `json:"largestCaught,omitempty"`
	SmallestEscaped *CopyGap `json:"smallestEscaped,omitempty"`
	LargestEscaped  *CopyGap `json:"largestEscaped,omitempty"`
	// KeptDelayMs is the smallest delay from which every larger delay still
	// catches every copy of the events this run caught entirely (the delay
	// could have come down to it); NeededDelayMs the same over every event,
	// the escaped copies included (the delay that would have caught them).
	// 0: any delay; -1: no delay (copies re-stamped under dropDuplicates with
	// the event time in the key are different keys).
	KeptDelayMs   int64 `json:"keptDelayMs"`
	NeededDelayMs int64 `json:"neededDelayMs"`
	// GuaranteeDelayMs (dropDuplicatesWithinWatermark) is the smallest delay
	// whose documented guarantee (§4.5: copies less than the delay apart in
	// event time) covers every later copy: the largest event-time gap + 1ms.
	GuaranteeDelayMs int64 `json:"guaranteeDelayMs,omitempty"`
	// ReplayedEvents were replayed with other delays; NotReplayedEvents had
	// more than MarginMaxCopies copies in one checkpoint (a key sent again
	// and again) and are left out of the delays; MismatchedEvents did not
	// replay, with the run's own delay, to the outcomes the run recorded
	// (the delays are doubtful for them).
	ReplayedEvents    int `json:"replayedEvents"`
	NotReplayedEvents int `json:"notReplayedEvents,omitempty"`
	MismatchedEvents  int `json:"mismatchedEvents,omitempty"`
}

// CopyGap is one later copy against its event's first emitted copy.
type CopyGap struct {
	Event      string `json:"event"`
	FirstCopy  int    `json:"firstCopy"`
	Copy       int    `json:"copy"`
	FirstBatch int64  `json:"firstBatch"`
	Batch      int64  `json:"batch"`
	// GapMs is the copy's event time minus the first copy's (ms, may be
	// fractional); AppendGapMs the same for the append times.
	GapMs       float64 `json:"gapMs"`
	AppendGapMs int64   `json:"appendGapMs"`
	Outcome     string  `json:"outcome"`
}

// HeadroomMs is how much the delay could have come down while still
// catching every copy this run caught: DelayMs - KeptDelayMs; ok is false
// when copies escaped or no delay would do.
func (m *Margin) HeadroomMs() (ms int64, ok bool) {
	if m == nil || m.Escaped > 0 || m.KeptDelayMs < 0 {
		return 0, false
	}
	return m.DelayMs - m.KeptDelayMs, true
}

// MarginMaxCopies bounds the copies of one event (in one checkpoint) the
// margin replays: the replay tries O(copies^2) delays.
const MarginMaxCopies = 32

// mrow is one read of a copy, in the operator's order within a checkpoint.
type mrow struct {
	copy    int
	t       int64 // event time, µs
	seq     int   // position of its batch in the checkpoint
	late    int64 // late watermark of its batch, ms
	prev    int64 // eviction watermark of the previous batch of the checkpoint, ms; -1 for the first
	outcome history.Outcome
}

// mref is where an mrow comes from: the copy read, the position of its
// execution in the checkpoint's batch order, its fate.
type mref struct {
	copy    int32
	seq     int32
	outcome history.Outcome
}

// computeMargin fills Report.Margin for a streaming query with a watermark.
func (c *checker) computeMargin() *Margin {
	h := c.h
	if !c.final.stateful() || !c.final.hasWatermark {
		return nil
	}
	m := &Margin{API: c.final.name(), DelayMs: c.final.delayMs, RetentionMs: -1}
	switch {
	case c.final.withinWM:
		m.RetentionMs = satMul(c.final.delayMs, 2)
	case c.final.timeInKey:
		m.RetentionMs = c.final.delayMs
	}
	// Per checkpoint, the authoritative executions in batch order; per
	// event, its reads in that order.
	byEpoch := map[int][]int{}
	var epochs []int
	for i := range h.Batches {
		if !c.auth[i] {
			continue
		}
		e := c.epochOf[i]
		if _, ok := byEpoch[e]; !ok {
			epochs = append(epochs, e)
		}
		byEpoch[e] = append(byEpoch[e], i)
	}
	sort.Ints(epochs)
	kept, needed := int64(0), int64(0)
	for _, e := range epochs {
		sh := c.sh(e)
		if !sh.stateful() || !sh.hasWatermark {
			continue
		}
		execs := byEpoch[e]
		sort.SliceStable(execs, func(a, b int) bool { return h.Batches[execs[a]].BatchID < h.Batches[execs[b]].BatchID })
		// Per event, its rows in batch order: a counting sort by event
		// (events are numbered in natural order). The sort keeps 12 bytes
		// a row (mref); an event's mrows are made from them when it is
		// replayed (48 bytes a row for every row at once was the checker's
		// peak).
		rowsOf := newCSRBuilder[mref](c.nEvents)
		prevOf := make([]int64, len(execs)) // per seq: the previous execution's watermark, -1 for the first
		for pass := 0; pass < 2; pass++ {
			if pass == 1 {
				rowsOf.alloc()
			}
			prev := int64(-1)
			for seq, i := range execs {
				b := &h.Batches[i]
				prevOf[seq] = prev
				for _, r := range c.rows.of(i) {
					if r.outcome == history.Filtered {
						continue // removed before the operator
					}
					e := int(c.evOf[r.copy])
					if pass == 0 {
						rowsOf.count(e)
						continue
					}
					rowsOf.put(e, mref{copy: r.copy, seq: int32(seq), outcome: r.outcome})
				}
				prev = b.WatermarkMs
			}
		}
		perEvent := rowsOf.done()
		var buf []mrow
		for e := range c.nEvents {
			refs := perEvent.of(e)
			if len(refs) == 0 {
				continue
			}
			buf = buf[:0]
			for _, r := range refs {
				buf = append(buf, mrow{copy: int(r.copy), t: h.Copies[r.copy].EventTimeUs, seq: int(r.seq),
					late: h.Batches[execs[r.seq]].LateWatermarkMs, prev: prevOf[r.seq], outcome: r.outcome})
			}
			rows := buf
			escaped := c.marginCount(m, sh, e, rows, execs)
			if len(rows) < 2 {
				continue
			}
			if len(rows) > MarginMaxCopies {
				m.NotReplayedEvents++
				continue
			}
			m.ReplayedEvents++
			if !sameOutcomes(replayEvent(rows, sh, sh.delayMs, sh.delayMs), rows) {
				m.MismatchedEvents++
			}
			need := neededDelay(rows, sh)
			needed = maxNeed(needed, need)
			if !escaped {
				kept = maxNeed(kept, need)
			}
		}
	}
	m.KeptDelayMs, m.NeededDelayMs = kept, needed
	if m.MismatchedEvents > 0 {
		c.note("margin: %d events do not replay, with the run's own delay, to the outcomes the run recorded; the delays are doubtful for them", m.MismatchedEvents)
	}
	if m.NotReplayedEvents > 0 {
		c.note("margin: %d events with more than %d copies in one checkpoint (a key sent again and again) are left out of the delays", m.NotReplayedEvents, MarginMaxCopies)
	}
	return m
}

// maxNeed combines two needed delays where -1 means "no delay".
func maxNeed(a, b int64) int64 {
	if a < 0 || b < 0 {
		return -1
	}
	return max(a, b)
}

// marginCount counts event e's later copies by fate and keeps the
// extremes; it reports whether any escaped. The event's name is read
// only for an event with a later copy (reading it for every event was a
// cache miss each at 10 M events).
func (c *checker) marginCount(m *Margin, sh *shape, e int, rows []mrow, execs []int) bool {
	h := c.h
	first := -1
	ev, named := "", false
	escaped := false
	for k, r := range rows {
		if first < 0 {
			if r.outcome == history.Emitted {
				first = k
			}
			continue
		}
		f := rows[first]
		if !named {
			ev, named = c.event(e), true
		}
		g := &CopyGap{Event: ev, FirstCopy: f.copy, Copy: r.copy,
			FirstBatch: h.Batches[execs[f.seq]].BatchID, Batch: h.Batches[execs[r.seq]].BatchID,
			GapMs:       float64(satAdd(r.t, -f.t)) / 1000,
			AppendGapMs: satAdd(h.Copies[r.copy].AppendedAtMs, -h.Copies[f.copy].AppendedAtMs), Outcome: r.outcome.String()}
		m.LaterCopies++
		if sh.withinWM {
			gapUs := satAdd(r.t, -f.t)
			if gapUs < 0 {
				gapUs = satMul(gapUs, -1)
			}
			m.GuaranteeDelayMs = max(m.GuaranteeDelayMs, satAdd(gapUs/1000, 1))
		}
		switch r.outcome {
		case history.Duplicate:
			m.CaughtByState++
			if m.LargestCaught == nil || gapLess(m.LargestCaught, g) {
				m.LargestCaught = g
			}
		case history.Late:
			m.CaughtAsLate++
		case history.Emitted:
			m.Escaped++
			escaped = true
			if m.SmallestEscaped == nil || gapLess(g, m.SmallestEscaped) {
				m.SmallestEscaped = g
			}
			if m.LargestEscaped == nil || gapLess(m.LargestEscaped, g) {
				m.LargestEscaped = g
			}
		}
	}
	return escaped
}

// gapLess orders copies by |event-time gap|, then |append gap|; ties keep
// the first found (events come in natural order).
func gapLess(a, b *CopyGap) bool {
	if x, y := math.Abs(a.GapMs), math.Abs(b.GapMs); x != y {
		return x < y
	}
	x, y := a.AppendGapMs, b.AppendGapMs
	if x < 0 {
		x = satMul(x, -1)
	}
	if y < 0 {
		y = satMul(y, -1)
	}
	return x < y
}

func sameOutcomes(got []history.Outcome, rows []mrow) bool {
	for k, r := range rows {
		if got[k] != r.outcome {
			return false
		}
	}
	return true
}

// shiftWM is a recorded watermark (ms) under delay d instead of D: it moves
// by D - d, never below 0; a watermark still at 0 (not yet moved) stays 0.
func shiftWM(wm, D, d int64) int64 {
	if wm <= 0 {
		return 0
	}
	return max(0, satAdd(wm, satAdd(D, -d)))
}

// replayEvent runs one event's reads through the operator with delay d (the
// run had D) and returns each read's outcome.
func replayEvent(rows []mrow, sh *shape, D, d int64) []history.Outcome {
	out := make([]history.Outcome, len(rows))
	have, created := false, 0
	var expiry int64        // WithinWatermark: µs
	keys := map[int64]int{} // event time in the key: event time -> seq the key was stored in
	for k, r := range rows {
		if r.t <= satMul(shiftWM(r.late, D, d), 1000) {
			out[k] = history.Late
			continue
		}
		evictUs := int64(math.MinInt64) // the previous batch's eviction watermark
		if r.prev >= 0 {
			evictUs = satMul(shiftWM(r.prev, D, d), 1000)
		}
		var present bool
		switch {
		case sh.withinWM:
			present = have && (r.seq == created || expiry > evictUs)
		case sh.timeInKey:
			s, ok := keys[r.t]
			present = ok && (r.seq == s || r.t > evictUs)
		default:
			present = have // never evicted
		}
		if present {
			out[k] = history.Duplicate
			continue
		}
		out[k] = history.Emitted
		have, created = true, r.seq
		expiry = satAdd(r.t, satMul(d, 1000))
		keys[r.t] = r.seq
	}
	return out
}

// escapes counts the emissions beyond the first.
func escapes(out []history.Outcome) int {
	n := 0
	for _, o := range out {
		if o == history.Emitted {
			n++
		}
	}
	return max(n-1, 0)
}

// neededDelay is the smallest delay from which every larger delay lets no
// copy of the event escape (0: any delay; -1: none). The outcome of a read
// changes with d only where a comparison flips: the late predicate, the
// clamp of a shifted watermark at 0, and the eviction of an entry; trying
// both sides of every flip point finds the largest delay that lets a copy
// through.
func neededDelay(rows []mrow, sh *shape) int64 {
	D := sh.delayMs
	var cand []int64
	around := func(x int64) {
		for _, v := range []int64{satAdd(x, -1), x, satAdd(x, 1)} {
			if v >= 0 {
				cand = append(cand, v)
			}
		}
	}
	for k, r := range rows {
		tMs := intmath.FloorDiv(r.t, 1000)
		around(satAdd(satAdd(r.late, D), -tMs)) // late iff t <= (late + D - d) * 1000
		around(satAdd(r.late, D))               // the shifted late watermark reaches 0
		if r.prev < 0 {
			continue
		}
		around(satAdd(r.prev, D))
		if sh.timeInKey {
			around(satAdd(satAdd(r.prev, D), -tMs)) // the key (id, t) evicted iff t <= evict
			continue
		}
		if sh.withinWM {
			for _, f := range rows[:k] {
				// the entry of f (expiry t_f + d) evicted iff (prev + D - d)*1000 >= t_f + d*1000
				around(intmath.FloorDiv(satAdd(satMul(satAdd(r.prev, D), 1000), -f.t), 2000))
			}
		}
	}
	if len(cand) == 0 {
		return 0
	}
	sort.Slice(cand, func(i, j int) bool { return cand[i] < cand[j] })
	cand = uniq(cand)
	top := cand[len(cand)-1]
	if escapes(replayEvent(rows, sh, D, satAdd(top, 1))) > 0 {
		return -1
	}
	for i := len(cand) - 1; i >= 0; i-- {
		if escapes(replayEvent(rows, sh, D, cand[i])) > 0 {
			return satAdd(cand[i], 1)
		}
	}
	return 0
}

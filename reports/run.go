package reports

import (
	"hash/maphash"
	"sort"

	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/dedupsim/dedupsim/sim/history"
)

// Point is one authoritative batch, as the charts see it. Times are seconds
// since the run's start (the first append; check.Counts.StartMs), processing
// time and event time alike, so that a watermark can be read against the
// clock.
type Point struct {
	BatchID        int64   `json:"batchId"`
	AtSec          float64 `json:"atSec"`
	Input          int     `json:"input"`
	Emitted        int     `json:"emitted"`
	DuplicatesDrop int     `json:"duplicatesDropped"`
	Late           int     `json:"lateDropped"`
	DuplicatesPass int     `json:"duplicatesPassed"`
	// SinkReplayed counts rows a sink kept again when the batch was
	// delivered a second time (replay duplicates that reached the table).
	SinkReplayed int   `json:"sinkReplayed"`
	StateRows    int64 `json:"stateRows"`
	// WatermarkSec is null when the query has no streaming watermark or it
	// is still at its initial 0; MaxEventTimeSec is null until a batch has
	// read a row.
	WatermarkSec    *float64 `json:"watermarkSec"`
	MaxEventTimeSec *float64 `json:"maxEventTimeSec"`
}

// Points extracts the per-batch series from a history: the last execution
// of each batch id (a replay supersedes the crashed attempt), in batch
// order.
func Points(h *history.History) []Point {
	if h == nil {
		return nil
	}
	last := map[int64]int{}
	var ids []int64
	for i, b := range h.Batches {
		if _, ok := last[b.BatchID]; !ok {
			ids = append(ids, b.BatchID)
		}
		last[b.BatchID] = i
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	t0 := origin(h)
	replayed := map[int64]int{}
	delivered := map[int64]bool{}
	for _, w := range h.Writes {
		if delivered[w.BatchID] {
			replayed[w.BatchID] += w.Kept
		}
		delivered[w.BatchID] = true
	}
	wm := hasWatermark(h)
	emitted := newEventSet(h)
	maxET := int64(0)
	haveET := false
	out := make([]Point, 0, len(ids))
	for _, id := range ids {
		b := h.Batches[last[id]]
		p := Point{BatchID: id, AtSec: float64(b.AtMs-t0) / 1000, Input: len(b.Input), StateRows: b.NumRowsTotal, SinkReplayed: replayed[id]}
		for i, c := range b.Input {
			if i >= len(b.Outcomes) || c < 0 || int(c) >= len(h.Copies) {
				continue
			}
			switch b.Outcomes[i] {
			case history.Emitted:
				p.Emitted++
				if !emitted.add(int(c)) {
					p.DuplicatesPass++
				}
			case history.Duplicate:
				p.DuplicatesDrop++
			case history.Late:
				p.Late++
			}
		}
		if len(b.Input) > 0 && (!haveET || b.MaxEventTimeMs > maxET) {
			maxET, haveET = b.MaxEventTimeMs, true
		}
		if wm && b.WatermarkMs > 0 {
			v := float64(b.WatermarkMs-t0) / 1000
			p.WatermarkSec = &v
		}
		if haveET {
			v := float64(maxET-t0) / 1000
			p.MaxEventTimeSec = &v
		}
		out = append(out, p)
	}
	return out
}

// hasWatermark: the query defines a watermark (a batch dedup never sets
// one, §5.2, so its batches record 0, which is left out).
func hasWatermark(h *history.History) bool { return h.DelayMs >= 0 }

// origin is the run's start: the first append time (ms), as
// check.Counts.StartMs.
func origin(h *history.History) (t0 int64) {
	for i, c := range h.Copies {
		if i == 0 || c.AppendedAtMs < t0 {
			t0 = c.AppendedAtMs
		}
	}
	return t0
}

// eventSet is a set of events, each named by one of its copies: a map of
// 64-bit hashes of the event id to the copy that added it (16 bytes a
// slot, where a map of the id strings costs 8 more, and sized once), the ids compared on a hit, and the rare event whose hash
// collides with another's kept by name.
//
// The simulator's names ("e0-123": check.NaturalKey) are kept apart, in a
// bitset per prefix ("e0-") over the number after it, up to denseLimit:
// a bit an event where the map cost 16 bytes and a cache miss. A name has
// a key or not whatever else is in the set, and two names with one key
// are one name, so the two parts never hold the same event.
type eventSet struct {
	h       *history.History
	hash    func(string) uint64
	byHash  map[uint64]int
	collide map[string]bool
	dense   map[uint64][]uint64 // by NaturalKey's prefix, bit n for number n
}

// denseLimit bounds the numbers a bitset holds (8 MiB a prefix at most).
const denseLimit = 1 << 26

func newEventSet(h *history.History) *eventSet {
	seed := maphash.MakeSeed()
	hashed := 0 // the copies whose names go to the map, which is sized once
	for i := range h.Copies {
		if !denseKey(h.Copies[i].Event) {
			hashed++
		}
	}
	return &eventSet{h: h, hash: func(s string) uint64 { return maphash.String(seed, s) }, byHash: make(map[uint64]int, hashed), dense: map[uint64][]uint64{}}
}

// denseKey says whether the set keeps name in a bitset.
func denseKey(name string) bool {
	key := check.NaturalKey(name)
	return key != check.NoNaturalKey && key&(1<<28-1) < denseLimit
}

// add puts copy c's event in the set; false when it was there already.
func (s *eventSet) add(c int) bool {
	ev := s.h.Copies[c].Event
	if s.dense != nil {
		if key := check.NaturalKey(ev); key != check.NoNaturalKey && key&(1<<28-1) < denseLimit {
			prefix, n := key>>28, key&(1<<28-1)
			bits := s.dense[prefix]
			if w := int(n / 64); w >= len(bits) {
				bits = append(bits, make([]uint64, max(w+1, 2*len(bits))-len(bits))...)
				s.dense[prefix] = bits
			}
			w, m := n/64, uint64(1)<<(n%64)
			if bits[w]&m != 0 {
				return false
			}
			bits[w] |= m
			return true
		}
	}
	k := s.hash(ev)
	first, ok := s.byHash[k]
	switch {
	case !ok:
		s.byHash[k] = c
		return true
	case s.h.Copies[first].Event == ev:
		return false
	}
	if s.collide == nil {
		s.collide = map[string]bool{}
	}
	if s.collide[ev] {
		return false
	}
	s.collide[ev] = true
	return true
}

package analyze

import (
	"container/heap"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/watermark"
	"github.com/dedupsim/dedupsim/internal/intmath"
)

// The trigger interval the replay accepts.
const (
	DefaultTrigger = time.Minute
	MinTrigger     = time.Millisecond
	MaxTrigger     = 24 * time.Hour
	TriggerRange   = "[1ms, 24h]"
)

// The state replay: the trace's events, in the order they were tracked
// (arrival order, impossible timestamps left out), cut into micro-batches
// by a processing-time trigger and run through Spark's rules for both
// APIs (docs/sizing.md, "The state curve"):
//
//   - batch k holds the events whose clock falls in [k x T, (k+1) x T);
//     the clock is the arrival column, or without one the newest event
//     time so far (a source read as it is written), never going back;
//   - a row is late when its event time is at or below the late watermark,
//     the eviction watermark of the batch before (engine: prevWmMs);
//   - the eviction watermark of a batch is the global watermark as of the
//     batch before: watermark.Tracker over every row's event time (late
//     and duplicate rows included), max event time - delay, never falling;
//   - dropDuplicates keeps (key, event time), evicted once the event time
//     is at or below the eviction watermark; dropDuplicatesWithinWatermark
//     keeps the key with the first accepted copy's event time + delay,
//     evicted once that is at or below it; eviction runs after the batch's
//     input, and numRowsTotal is counted after it;
//   - a trigger with no new events runs a no-data batch when the watermark
//     moved past the last eviction (spark.sql.streaming.noDataMicroBatches
//     .enabled, true by default), and the input's end is followed by one
//     such trigger: endKeys is the state a query reaches once the input
//     stops.
//
// These are the rules of engine/dedup.Operator and engine.Engine (the
// watermark itself is engine/watermark's Tracker); TestReplayMatchesExec
// checks the replay against the engine batch for batch.

// ReplayState is the state curve of one API.
type ReplayState struct {
	API string `json:"api"`
	// Keys: the key columns as stored ("[id]", "[id, ts]").
	Keys string `json:"keys"`
	// PeakKeys is the largest numRowsTotal after a batch; PeakAtMs the
	// trigger time of that batch (the clock's milliseconds), PeakAt the
	// same in RFC 3339 (or events read, without --arrival and event time).
	PeakKeys  int64   `json:"peakKeys"`
	PeakAtMs  int64   `json:"peakAtMs"`
	PeakAt    string  `json:"peakAt"`
	EndKeys   int64   `json:"endKeys"`
	PeakBytes float64 `json:"peakBytes"`
	EndBytes  float64 `json:"endBytes"`
	// LateRows are numRowsDroppedByWatermark summed over the batches;
	// DroppedDuplicates numDroppedDuplicateRows.
	LateRows          int64 `json:"lateRows"`
	DroppedDuplicates int64 `json:"droppedDuplicates"`
	// Overflow: the state passed --max-keys and the replay of this API
	// stopped there; PeakKeys is then a lower bound.
	Overflow bool `json:"overflow,omitempty"`
}

// ReplayBatch is one batch of the replay, for tests and OnBatch.
type ReplayBatch struct {
	ID                  int64
	TriggerMs           int64
	Rows                int64
	NoData              bool
	LateWatermarkMs     int64
	EvictionWatermarkMs int64
	// NumRowsTotal per API: [0] dropDuplicates (event time in the key),
	// [1] dropDuplicatesWithinWatermark.
	NumRowsTotal [2]int64
}

// replayAPI is the state of one API: a set of 64-bit key hashes and a
// min-heap of their expiries (24 bytes a key in the heap and about 20 to
// 40 in the map).
type replayAPI struct {
	within bool
	set    map[uint64]struct{}
	exp    expiryHeap
	st     ReplayState
	max    int
}

type expiryItem struct {
	at   int64 // µs
	hash uint64
}

type expiryHeap []expiryItem

func (h expiryHeap) Len() int { return len(h) }
func (h expiryHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].hash < h[j].hash
}
func (h expiryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)   { *h = append(*h, x.(expiryItem)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// replay runs the batches.
type replay struct {
	delayMs   int64
	triggerUs int64
	apis      [2]*replayAPI
	tracker   *watermark.Tracker
	stats     watermark.Stats
	// clock is the newest clock value; cur the trigger index of the open
	// batch (open: it has rows).
	clock         int64
	cur           int64
	open, started bool
	rows          int64
	nextID        int64
	prevWmMs      int64 // the eviction watermark of the batch before
	lastEvictMs   int64
	ranAny        bool
	onBatch       func(ReplayBatch)
}

func newReplay(delay, trigger time.Duration, maxKeys int, onBatch func(ReplayBatch)) *replay {
	r := &replay{delayMs: delay.Milliseconds(), triggerUs: trigger.Microseconds(), onBatch: onBatch}
	r.tracker = watermark.NewTracker(watermark.Min, []int64{r.delayMs}, 0)
	for i := range r.apis {
		r.apis[i] = &replayAPI{within: i == 1, set: map[uint64]struct{}{}, max: maxKeys}
	}
	r.apis[0].st.API = string(query.DropDuplicates)
	r.apis[1].st.API = string(query.DropDuplicatesWithinWatermark)
	return r
}

// add takes one tracked event: its key hash, event time (µs) and clock
// value (µs of arrival, or the event time without an arrival column).
func (r *replay) add(hash uint64, et, clock int64) {
	if !r.started || clock > r.clock {
		r.clock, r.started = clock, true
	}
	k := intmath.FloorDiv(r.clock, r.triggerUs)
	if r.open && k != r.cur {
		r.endBatch()
		if k > r.cur+1 {
			r.noData(r.cur + 1) // the trigger after it found no new data
		}
	}
	if !r.open {
		r.open, r.cur, r.rows = true, k, 0
	}
	r.rows++
	r.stats.Add(et, false)
	lateUs := r.prevWmMs * 1000
	for _, s := range r.apis {
		if et <= lateUs {
			s.st.LateRows++
			continue
		}
		if s.st.Overflow {
			continue
		}
		h, at := hash, et
		if s.within {
			at = et + r.delayMs*1000
		} else {
			h = mix(hash ^ mix(uint64(et)))
		}
		if _, ok := s.set[h]; ok {
			s.st.DroppedDuplicates++
			continue
		}
		if len(s.set) >= s.max {
			s.st.Overflow = true
			continue
		}
		s.set[h] = struct{}{}
		heap.Push(&s.exp, expiryItem{at: at, hash: h})
	}
}

// endBatch evicts, records the batch and moves the watermark.
func (r *replay) endBatch() {
	r.batch(r.cur, r.rows, false, []watermark.Stats{r.stats})
	r.open, r.stats = false, watermark.Stats{}
}

// noData runs a no-data batch at trigger k when one is due.
func (r *replay) noData(k int64) {
	if r.ranAny && r.tracker.Current() > r.lastEvictMs {
		r.batch(k, 0, true, nil)
	}
}

func (r *replay) batch(k, rows int64, noData bool, stats []watermark.Stats) {
	evictMs := r.tracker.Current()
	b := ReplayBatch{ID: r.nextID, TriggerMs: k * r.triggerUs / 1000, Rows: rows, NoData: noData,
		LateWatermarkMs: r.prevWmMs, EvictionWatermarkMs: evictMs}
	for i, s := range r.apis {
		for len(s.exp) > 0 && s.exp[0].at <= evictMs*1000 {
			it := heap.Pop(&s.exp).(expiryItem)
			delete(s.set, it.hash)
		}
		n := int64(len(s.set))
		b.NumRowsTotal[i] = n
		if n > s.st.PeakKeys || r.nextID == 0 {
			s.st.PeakKeys, s.st.PeakAtMs = n, b.TriggerMs
		}
		s.st.EndKeys = n
	}
	if r.onBatch != nil {
		r.onBatch(b)
	}
	r.tracker.Update(stats)
	r.ranAny, r.lastEvictMs, r.prevWmMs = true, evictMs, evictMs
	r.nextID++
}

// finish ends the last batch and runs the trigger after it.
func (r *replay) finish() {
	if r.open {
		r.endBatch()
		r.noData(r.cur + 1)
	}
}

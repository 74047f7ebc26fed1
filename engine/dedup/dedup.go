// Package dedup holds the deduplication operators of spark-semantics.md
// §1–§5 as pure functions over a state store: the late-row filter, the
// lookup-or-insert of each key, eviction after the input, and the metrics
// Spark reports, summed over partitions.
package dedup

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"

	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/state"
)

// Mode is the operator's flavour.
type Mode int

const (
	// Streaming is StreamingDeduplicateExec (dropDuplicates on a stream).
	Streaming Mode = iota
	// WithinWatermark is StreamingDeduplicateWithinWatermarkExec.
	WithinWatermark
	// Batch is dropDuplicates on the batch DataFrame inside foreachBatch:
	// an aggregate per micro-batch, no state, no late filter.
	Batch
)

// Outcome says what happened to one input row.
type Outcome uint8

const (
	Emitted   Outcome = iota + 1 // first copy: sent to the sink and remembered
	Duplicate                    // key already in state (or earlier in the batch)
	Late                         // event time at or below the late watermark
	Filtered                     // removed before the watermark by the future-events filter
)

func (o Outcome) String() string {
	switch o {
	case Emitted:
		return "emitted"
	case Duplicate:
		return "duplicate"
	case Late:
		return "late"
	case Filtered:
		return "filtered"
	}
	return "unknown"
}

// Operator is one dedup operator instance of a query.
type Operator struct {
	ID   int // state/<ID>/...
	Mode Mode
	// HasEventTime: the input carries a watermarked event-time column, so
	// late rows are filtered (§1.5), even when it is not a key (§3.3).
	HasEventTime bool
	// EventTimeInKey: case B1 (§3.2), stored keys are evicted by their
	// own event time.
	EventTimeInKey bool
	// DelayMs is the watermark delay used for WithinWatermark expiry (§4.2).
	DelayMs    int64
	Partitions int
}

// Metrics are the operator's figures for one batch, summed over partitions
// (StateOperatorProgress).
type Metrics struct {
	NumRowsTotal              int64
	NumRowsUpdated            int64
	NumRowsRemoved            int64
	NumRowsDroppedByWatermark int64
	NumDroppedDuplicateRows   int64
	// NumRowsReadDuringEviction are the state rows eviction visited:
	// every row of a partition's store after its input (kept or
	// removed) when the operator evicts, 0 when it does not (Spark 4.3's
	// EvictionIterator and StreamingDeduplicateWithinWatermarkExec.
	// iteratorForEviction read the whole store; spark-semantics §17.7).
	// Reported only when a Spark line has the metric.
	NumRowsReadDuringEviction int64
	MemoryUsedBytes           int64
	NumStateStoreInstances    int64
	Custom                    map[string]int64
}

// Result is what one batch of the operator produced.
type Result struct {
	// Output is what goes to the sink: partition 0 first, each partition in
	// arrival order, as a collect over the shuffled partitions returns it.
	Output []row.Row
	// Outcomes[i] is the fate of input row i.
	Outcomes []Outcome
	Metrics  Metrics
}

// Partition is the state partition of a key: a fixed hash of the encoded
// key modulo the number of partitions. (Spark uses Murmur3 over the typed
// key columns; dedupsim's rows are untyped JSON, so only the property that
// matters is kept: a key always lands in the same partition.)
func Partition(key []byte, n int) int {
	// FNV-1a, 32 bits (hash/fnv's New32a), inlined: it runs for every row.
	h := uint32(2166136261)
	for _, c := range key {
		h ^= uint32(c)
		h *= 16777619
	}
	return int(h % uint32(n))
}

// Run executes batch batchID over rows: state version batchID is loaded in
// every partition and version batchID+1 committed. lateWatermarkMs filters
// input (previous batch's watermark), evictionWatermarkMs evicts state
// (this batch's watermark), both in milliseconds (§1.6).
func (op *Operator) Run(p state.Provider, batchID int64, rows []row.Row, lateWatermarkMs, evictionWatermarkMs int64) (Result, error) {
	if op.Mode == Batch {
		return batchDedup(rows), nil
	}
	n := op.Partitions
	if n < 1 {
		return Result{}, fmt.Errorf("dedup: %d partitions", n)
	}
	// Shuffle: row indices per partition, arrival order kept.
	parts := make([][]int32, n)
	for i := range rows {
		k := Partition(rows[i].Key, n)
		parts[k] = append(parts[k], int32(i))
	}
	res := Result{Outcomes: make([]Outcome, len(rows)), Output: make([]row.Row, 0, len(rows)), Metrics: Metrics{Custom: map[string]int64{}}}
	stores := make([]state.Store, 0, n)
	abort := func() {
		for _, s := range stores {
			s.Abort()
		}
	}
	lateMicros := lateWatermarkMs * 1000
	evictMicros := evictionWatermarkMs * 1000
	var val [9]byte
	for pid := 0; pid < n; pid++ {
		st, err := p.Load(state.ID{Operator: op.ID, Partition: pid}, batchID)
		if err != nil {
			abort()
			return Result{}, err
		}
		stores = append(stores, st)
		ins, _ := st.(state.Inserter)
		if lay, ok := st.(state.ExpiryLayout); ok && op.evicts() {
			// Entries live for about the delay past the watermark: an
			// expiry (event time, or event time plus delay) is evicted
			// once the watermark, the latest event time less the delay,
			// passes it.
			lay.SetExpiryLayout(op.DelayMs*1000, expiry)
		}
		pf, _ := st.(state.Prefetcher)
		m := &res.Metrics
		idx := parts[pid]
		for j, i := range idx {
			if pf != nil && j+prefetchAhead < len(idx) {
				pf.Prefetch(rows[idx[j+prefetchAhead]].Key)
			}
			r := &rows[i]
			// §1.5: inclusive, against the previous batch's watermark; a
			// null event time makes the predicate null, i.e. false.
			if op.HasEventTime && !r.EventTimeNull && r.EventTime <= lateMicros {
				res.Outcomes[i] = Late
				m.NumRowsDroppedByWatermark++
				continue
			}
			stored, err := insert(st, ins, r.Key, op.value(r, val[:]))
			if err != nil {
				abort()
				return Result{}, err
			}
			if !stored {
				res.Outcomes[i] = Duplicate
				m.NumDroppedDuplicateRows++
				continue
			}
			res.Outcomes[i] = Emitted
			m.NumRowsUpdated++
			res.Output = append(res.Output, *r)
		}
		// Eviction runs after the whole partition's input (§1.4 step 3).
		removedBefore := m.NumRowsRemoved
		if op.evicts() {
			if err := evict(st, evictMicros, &m.NumRowsRemoved); err != nil {
				abort()
				return Result{}, err
			}
		}
		if _, err := st.Commit(); err != nil {
			stores = stores[:len(stores)-1]
			abort()
			return Result{}, err
		}
		sm := st.Metrics()
		m.NumRowsTotal += sm.NumKeys
		if op.evicts() {
			m.NumRowsReadDuringEviction += sm.NumKeys + m.NumRowsRemoved - removedBefore
		}
		m.MemoryUsedBytes += sm.MemoryUsedBytes
		m.NumStateStoreInstances++
		for k, v := range sm.Custom {
			m.Custom[k] += v
		}
	}
	res.Metrics.Custom["numDroppedDuplicateRows"] = res.Metrics.NumDroppedDuplicateRows
	return res, nil
}

// prefetchAhead is how many rows ahead of the one it inserts the operator
// asks a Prefetcher store to read (a few inserts' time covers a miss).
const prefetchAhead = 8

// insert stores value under key unless key is in st, in one step when st
// is a state.Inserter (ins, nil otherwise), and reports whether it stored.
func insert(st state.Store, ins state.Inserter, key, value []byte) (bool, error) {
	if ins != nil {
		return ins.PutIfAbsent(key, value)
	}
	if _, found, err := st.Get(key); err != nil || found {
		return false, err
	}
	return true, st.Put(key, value)
}

func (op *Operator) evicts() bool {
	return op.Mode == WithinWatermark || (op.HasEventTime && op.EventTimeInKey)
}

// value is what the store keeps per key. Spark keeps a dummy row for
// dropDuplicates (the event time lives in the key) and expiresAtMicros for
// WithinWatermark; dedupsim's keys are opaque bytes, so the event time
// needed for B1 eviction is kept in the value. Layout: 1 flag byte
// (1 = has time) + 8 bytes big-endian micros.
func (op *Operator) value(r *row.Row, buf []byte) []byte {
	switch {
	case op.Mode == WithinWatermark:
		// §4.2: first accepted copy's event time + delay; null reads as 0.
		et := r.EventTime
		if r.EventTimeNull {
			et = 0
		}
		buf[0] = 1
		binary.BigEndian.PutUint64(buf[1:], uint64(et+op.DelayMs*1000))
		return buf[:9]
	case op.evicts():
		if r.EventTimeNull {
			buf[0] = 0
			return buf[:1]
		}
		buf[0] = 1
		binary.BigEndian.PutUint64(buf[1:], uint64(r.EventTime))
		return buf[:9]
	}
	buf[0] = 0
	return buf[:1]
}

// expiry reads the eviction time of a stored value: the event time (B1) or
// the expiry (WithinWatermark). ok is false for a null event time, whose
// eviction predicate is null, never true.
func expiry(v []byte) (at int64, ok bool) {
	if len(v) != 9 || v[0] != 1 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(v[1:])), true
}

// expired evaluates the eviction predicate on a stored value: event time
// (B1) or expiry (WithinWatermark) at or below the eviction watermark.
func expired(v []byte, evictMicros int64) bool {
	at, ok := expiry(v)
	return ok && at <= evictMicros
}

// evict deletes every entry of st that expired at evictMicros and adds
// their number to removed. Stores that index entries by expiry
// (state.Expirer) visit only those entries; others are scanned with Range,
// as Spark's HDFS-backed provider does. Both remove the same set.
func evict(st state.Store, evictMicros int64, removed *int64) error {
	if x, ok := st.(state.Expirer); ok {
		n, err := x.EvictUpTo(evictMicros, expiry)
		*removed += n
		return err
	}
	var evictErr error
	err := st.Range(func(k, v []byte) bool {
		if expired(v, evictMicros) {
			if evictErr = st.Delete(k); evictErr != nil {
				return false
			}
			*removed++
		}
		return true
	})
	if err == nil {
		err = evictErr
	}
	return err
}

// batchDedup is §5: GROUP BY key with first() per micro-batch. The first
// row in input order wins (deterministic for a single input partition).
//
// The set of keys seen is an open-addressing table of row indices, not a
// map[string]: a map would copy every distinct key into a string of its
// own, an allocation per row that was most of this function's time.
func batchDedup(rows []row.Row) Result {
	res := Result{Outcomes: make([]Outcome, len(rows)), Output: make([]row.Row, 0, len(rows))}
	size := 16
	for size < 2*len(rows) {
		size *= 2
	}
	mask := uint64(size - 1)
	slots := make([]int32, size) // 1 + index of the first row of a key; 0: empty
	for i := range rows {
		key := rows[i].Key
		j := xxhash.Sum64(key) & mask
		dup := false
		for ; slots[j] != 0; j = (j + 1) & mask {
			if bytes.Equal(rows[slots[j]-1].Key, key) {
				dup = true
				break
			}
		}
		if dup {
			res.Outcomes[i] = Duplicate
			continue
		}
		slots[j] = int32(i) + 1
		res.Outcomes[i] = Emitted
		res.Output = append(res.Output, rows[i])
	}
	return res
}

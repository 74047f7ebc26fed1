package pebblestore

import (
	"bytes"
	"cmp"
	"container/heap"
	"errors"
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/expiry"
)

// Eviction under a watermark (state.Expirer).
//
// A working database keeps an expiry index (engine/state/expiry) of its
// entries on the Go heap, as the memory store does: built by one scan on
// the first EvictUpTo after the database was built from files, then kept
// by every Put, and kept with the database from version to version (a
// cache hit). EvictUpTo pops the items up to the limit, so a batch costs
// time proportional to its changes and evictions, not to the state. An
// aborted batch drops the index (the database is untouched, but the
// batch popped items of entries that are still there); so does a database
// built from files, which starts without one.
//
// The index costs expiry.ItemBytes plus the key's length per item. When
// its items pass Options.ExpiryIndexBudget it is dropped (the slack of its
// slices is reallocated away rather than counted: see fits) and EvictUpTo
// falls back to a Range over the whole state, as Spark's RocksDB provider
// evicts (removeKeysOlderThanWatermark iterates the store); it is tried
// again once the state has shrunk to half the keys it had then. The scan
// holds at most the budget's worth of the entries it finds expired (about
// 40 bytes plus the key each, before the slack of its slice and the size
// class of each key's copy: dueSet), the least in (expiry, key) order,
// and removes them in that order; if more expired, it scans again for the
// rest. That bounds only the scan's own list: every removal is also a
// remove record of the batch's changes (the key plus about 10 bytes, and a
// slot of the pending index), held until the commit, as for any batch
// that deletes that many keys. While a build is abandoned part way, the
// partial index and the list live together: up to twice the budget.
//
// Items are not checked against the database while the index holds no
// stale item, that is while every entry overwritten or deleted (other than
// by EvictUpTo) since the index was built has had its stale item popped:
// each key then has exactly one item, for its current value, whose length
// the item carries. The dedup operator only ever inserts absent
// keys, so its evictions read nothing from Pebble. After an overwrite or
// a Delete an item's key is looked up and acted on only if its value still
// has the item's expiry.

// DefaultExpiryIndexBudget is the default of Options.ExpiryIndexBudget.
const DefaultExpiryIndexBudget = 64 << 20

// minArenaCompaction: the arena of an index is compacted once the keys
// of popped items in it outweigh the live ones and reach this.
const minArenaCompaction = 1 << 20

// expiryIndex is a working database's index and the keys its items name.
type expiryIndex struct {
	x     *expiry.Index
	arena []byte
	dead  int64 // bytes of arena that only popped items named
	// changed bounds the stale items in the index: entries overwritten or
	// deleted since the index was built (each left one item stale), less
	// the stale items popped since. While it is 0 every item is current.
	changed int64
	// unindexed bounds the entries that have no item: it counts every
	// value without an expiry the index was built with or was Put since.
	// While it and changed are 0, the items' keys are exactly the
	// entries', besides those removed in the version at hand (see
	// store.filter).
	unindexed int64
}

func (e *expiryIndex) bytes() int64 { return e.x.Bytes() + int64(cap(e.arena)) }

// live is the part of bytes the items hold: 24 bytes each and their keys.
func (e *expiryIndex) live() int64 {
	return int64(e.x.Len())*expiry.ItemBytes + int64(len(e.arena)) - e.dead
}

// addKey returns an item of key (expiry at, a value of vlen bytes) and
// arena with the key appended, which the item names.
func addKey(arena, key []byte, at int64, vlen int) (expiry.Item, []byte) {
	it := expiry.Item{At: at, Off: uint64(len(arena)), Klen: uint32(len(key)), Vlen: uint32(vlen)}
	return it, append(arena, key...)
}

func (e *expiryIndex) push(key []byte, at int64, vlen int) {
	var it expiry.Item
	it, e.arena = addKey(e.arena, key, at, vlen)
	e.x.Push(it)
}

// compact copies the keys of the items left into a new arena once the
// popped ones' outweigh them.
func (e *expiryIndex) compact() {
	live := int64(len(e.arena)) - e.dead
	if e.dead < minArenaCompaction || e.dead <= live {
		return
	}
	e.rewrite(live)
}

// rewrite copies the keys of the items left into a new arena of capacity
// size.
func (e *expiryIndex) rewrite(size int64) {
	old := e.arena
	e.arena = make([]byte, 0, size)
	e.x.Retain(func(it *expiry.Item) bool {
		off := uint64(len(e.arena))
		e.arena = append(e.arena, it.Key(old)...)
		it.Off = off
		return true
	})
	e.dead = 0
}

// fits checks the index against budget after it grew: false if its items
// and their keys (live) pass it, and the index must be dropped. If only
// the slack of its slices does (append grows a slice by 1.25-2x), they are
// reallocated to the live bytes plus half of what the budget leaves (an
// eighth each for pend and the run it continues, half for the arena), so
// that the index stays within the budget, and the next reallocation comes
// only once the index has grown into part of that room. Near the budget
// that room is less than a batch's changes and every batch reallocates: a
// copy of the index (about 60 ms for 1.4 M items of 20-byte keys, against
// a scan of the whole state were it dropped). With 11-byte keys and 500
// changes a batch under 1 MiB: 13 reallocations in 200 batches at 67% of
// the budget, one a batch at 93%.
func (e *expiryIndex) fits(budget int64) bool {
	live := e.live()
	if live > budget {
		return false
	}
	if e.bytes() > budget {
		room := (budget - live) / 2
		e.x.Tighten(int(room / 4 / expiry.ItemBytes))
		e.rewrite(int64(len(e.arena)) - e.dead + room/2)
	}
	return true
}

// indexPut keeps the index, if any, after key was set to value (existed:
// the key had a value, whose item is now stale).
func (s *store) indexPut(key, value []byte, existed bool) {
	w := s.w
	e := w.idx
	if e == nil {
		return
	}
	if existed {
		e.changed++
	}
	at, ok := e.x.Expiry(value)
	if !ok {
		e.unindexed++
		return
	}
	if e.x.MostlyStale(s.numKeys) {
		w.idx = nil // rebuilt by the next EvictUpTo
		return
	}
	e.push(key, at, len(value))
	if !e.fits(w.p.opts.ExpiryIndexBudget) {
		w.idx, w.idxRefusedAt = nil, s.numKeys
	}
}

// EvictUpTo implements state.Expirer (see the comment at the top of this
// file).
func (s *store) EvictUpTo(limit int64, expiryOf func(value []byte) (int64, bool)) (int64, error) {
	n, err := s.evictUpTo(limit, expiryOf)
	if err != nil {
		s.ev.failed = true // its removals' excised bits are not to be trusted
	}
	if err == nil {
		// Every entry at or below limit is gone: the commit may excise
		// the buckets wholly below it (layout.go).
		if !s.ev.evicted || limit > s.ev.limit {
			s.ev.limit = limit
		}
		s.ev.evicted = true
	}
	return n, err
}

func (s *store) evictUpTo(limit int64, expiryOf func(value []byte) (int64, bool)) (int64, error) {
	if !s.Updating() {
		return 0, s.Done("EvictUpTo")
	}
	s.ev.cutNow = math.MinInt64
	if s.w.width > 0 {
		s.ev.cutNow = s.w.cutBucket(limit)
	}
	if len(s.ranges) > 0 {
		return 0, s.fail("EvictUpTo", errors.New("EvictUpTo inside Range"))
	}
	w := s.w
	if w.idx != nil && w.idx.x.MostlyStale(s.numKeys) {
		w.idx = nil
	}
	if w.idx == nil {
		due, err := s.buildIndex(limit, expiryOf)
		if err != nil {
			return 0, err
		}
		if due != nil { // over the budget
			return s.evictScanned(due, limit, expiryOf)
		}
	}
	e := w.idx
	var n int64
	for {
		if next, ok := e.x.Min(e.arena); !ok || next.At > limit {
			break
		}
		it := e.x.Pop(e.arena)
		e.dead += int64(it.Klen)
		removed, err := s.evictItem(it.Key(e.arena), &it, e.changed > 0, expiryOf)
		if err != nil {
			// The popped item is gone from the index while its entry may
			// still be there: the next EvictUpTo rebuilds the index.
			w.idx = nil
			return n, err
		}
		switch {
		case removed:
			n++
		case e.changed > 0:
			e.changed-- // a stale item, now gone from the index
		}
	}
	e.compact()
	// Settling the batch's items into a run may have grown its slice past
	// the budget (never the items: pops only take them away).
	if !e.fits(w.p.opts.ExpiryIndexBudget) {
		w.idx, w.idxRefusedAt = nil, s.numKeys
	}
	return n, nil
}

// dueSet holds expired entries an index-less EvictUpTo found, up to a
// budget of dueEntryBytes plus the key per entry: past it the greatest in
// (expiry, key) order are let go (full), so that what it holds is always
// the least of what was offered, and the next scan finds the rest. Since
// entries differ in size, an entry after one let go could still fit (a
// short key after a long one): cut, the least entry let go so far, keeps
// it out too, or it would be removed before the one let go.
type dueSet struct {
	budget, bytes int64
	heap          dueHeap
	full          bool
	cut           dueEntry // valid while full
}

type dueEntry struct {
	at   int64
	key  []byte
	vlen int
}

// dueEntryBytes is the heap a dueEntry takes besides its key.
const dueEntryBytes = 40

// dueHeap is a max-heap in (expiry, key) order (container/heap).
type dueHeap []dueEntry

// dueCompare orders entries by (expiry, key), as the index does.
func dueCompare(a, b *dueEntry) int {
	return cmp.Or(cmp.Compare(a.at, b.at), bytes.Compare(a.key, b.key))
}

func dueBefore(a, b *dueEntry) bool { return dueCompare(a, b) < 0 }

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return dueBefore(&h[j], &h[i]) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueEntry)) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// add offers an entry; key is copied if it is kept. One entry is always
// kept, whatever its size, so that each scan makes progress.
func (d *dueSet) add(at int64, key []byte, vlen int) {
	e := dueEntry{at: at, key: key, vlen: vlen}
	if d.full && !dueBefore(&e, &d.cut) {
		return // after an entry let go
	}
	size := dueEntryBytes + int64(len(key))
	for len(d.heap) > 0 && d.bytes+size > d.budget {
		// Everything kept is before cut: the cut only moves down.
		if !dueBefore(&e, &d.heap[0]) {
			d.letGo(e)
			return // after everything kept
		}
		top := heap.Pop(&d.heap).(dueEntry)
		d.bytes -= dueEntryBytes + int64(len(top.key))
		d.letGo(top)
	}
	e.key = bytes.Clone(key)
	heap.Push(&d.heap, e)
	d.bytes += size
}

// letGo records that e was not kept: it is the new cut (e.key is copied,
// as the caller's may be a view into the store).
func (d *dueSet) letGo(e dueEntry) {
	d.full = true
	d.cut = dueEntry{at: e.at, key: append(d.cut.key[:0], e.key...)}
}

// buildIndex scans the store and indexes every entry that has an expiry,
// unless the index would pass the budget (or passed it at twice as many
// keys). It returns nil if it built the index; else the least expired
// entries (those at or below limit) up to the budget, found by the same
// scan: collected only once the build is abandoned (from the items
// gathered so far, then from the rest of the scan), so that no entry is
// held twice.
func (s *store) buildIndex(limit int64, expiryOf func([]byte) (int64, bool)) (*dueSet, error) {
	w := s.w
	budget := w.p.opts.ExpiryIndexBudget
	try := s.numKeys*expiry.ItemBytes <= budget && (w.idxRefusedAt == 0 || s.numKeys <= w.idxRefusedAt/2)
	var items []expiry.Item
	var arena []byte
	var unindexed int64
	if try {
		items = make([]expiry.Item, 0, s.numKeys)
	}
	due := &dueSet{budget: budget}
	err := s.Range(func(k, v []byte) bool {
		at, ok := expiryOf(v)
		if !ok {
			unindexed++
			return true
		}
		if !try {
			if at <= limit {
				due.add(at, k, len(v))
			}
			return true
		}
		var it expiry.Item
		it, arena = addKey(arena, k, at, len(v))
		items = append(items, it)
		// items has its final capacity; the arena's slack is fitted once
		// the index is built.
		if int64(cap(items))*expiry.ItemBytes+int64(len(arena)) > budget {
			for i := range items {
				if it := &items[i]; it.At <= limit {
					due.add(it.At, it.Key(arena), int(it.Vlen))
				}
			}
			try, items, arena = false, nil, nil
			w.idxRefusedAt = s.numKeys
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if !try {
		return due, nil
	}
	w.idx = &expiryIndex{x: expiry.Sorted(arena, items, expiryOf), arena: arena, unindexed: unindexed}
	w.idx.fits(budget)
	w.idxRefusedAt = 0
	return nil, nil
}

// evictScanned removes the entries an index-less EvictUpTo found, in
// (expiry, key) order. They are current: the scan that found them has
// just run. While the set was full, the store is scanned again for the
// rest, which all come after what was removed.
func (s *store) evictScanned(due *dueSet, limit int64, expiryOf func([]byte) (int64, bool)) (int64, error) {
	var n int64
	for {
		slices.SortFunc(due.heap, func(a, b dueEntry) int { return dueCompare(&a, &b) })
		for i := range due.heap {
			e := &due.heap[i]
			h := keyHash(e.key)
			// Its expiry says where the database keeps it only if this
			// version did not change it.
			_, _, changed := s.pending.lookup(s.Delta, e.key, h)
			if err := s.remove(e.key, h, e.vlen, "EvictUpTo", e.at, !changed); err != nil {
				return n, err
			}
			n++
		}
		s.dueScans++
		if !due.full {
			return n, nil
		}
		due = &dueSet{budget: due.budget}
		err := s.Range(func(k, v []byte) bool {
			if at, ok := expiryOf(v); ok && at <= limit {
				due.add(at, k, len(v))
			}
			return true
		})
		if err != nil {
			return n, err
		}
	}
}

// evictItem removes the entry of a popped item unless the item is stale.
// verify: entries were overwritten or deleted since the index was built,
// so that an item of a key this version did not change must be checked
// against the database.
func (s *store) evictItem(key []byte, it *expiry.Item, verify bool, expiryOf func([]byte) (int64, bool)) (bool, error) {
	h := keyHash(key)
	old := int(it.Vlen)
	fromDB := true // the value evicted is the database's (not a change of this version's)
	if v, removed, ok := s.pending.lookup(s.Delta, key, h); ok {
		fromDB = false
		if removed {
			return false, nil
		}
		if at, ok := expiryOf(v); !ok || at != it.At {
			return false, nil
		}
		old = len(v)
	} else if verify {
		v, closer, _, err := s.w.lookup(dbGet, key, false)
		if errors.Is(err, pebble.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, s.fail("EvictUpTo", err)
		}
		at, ok := expiryOf(v)
		old = len(v)
		closer.Close()
		if !ok || at != it.At {
			return false, nil
		}
	}
	return true, s.remove(key, h, old, "EvictUpTo", it.At, fromDB)
}

// dbGet is the lookup evictItem verifies an item with; a test replaces
// it to fail.
var dbGet = (*pebble.DB).Get

var _ state.Expirer = (*store)(nil)

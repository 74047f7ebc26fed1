package state

import (
	"unsafe"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state/expiry"
)

// EntryOverheadBytes is the fixed per-entry cost in the memory estimate of
// the memory provider: MemoryUsedBytes = Σ(len(key)+len(value)) +
// EntryOverheadBytes × NumKeys. 64 is a round figure from when the store was
// a Go map (a map slot plus the string and slice headers and allocation
// rounding; the table of table.go needs less); it is kept because progress
// reports and golden files carry it, and it is an estimate,
// chosen to be deterministic, not a measurement. (Spark's figure comes from
// its JVM SizeEstimator and cannot be reproduced byte for byte.)
const EntryOverheadBytes = 64

// MemoryProvider is the analogue of Spark's HDFS-backed state store
// provider: every store is a hash table in memory (table.go), every commit writes the
// store's changes as <V>.delta under id.Dir(), and every
// MinDeltasForSnapshot versions the whole table as <V>.snapshot (see files.go
// for the format). Versions, caching, snapshots and cleanup are the
// Lifecycle's (lifecycle.go).
//
// The cached table of a store ID is changed in place by the next batch,
// which keeps an undo log for Abort, so a batch costs time proportional to
// its changes, not to the state size. A table rebuilt from the files (a
// miss) becomes the cached one when its store commits.
//
// A MemoryProvider may be used from several goroutines for different IDs;
// one store must be used by one goroutine at a time.
//
// Deliberate differences from Spark's provider, none visible in query
// results:
//   - Snapshot and cleanup run inside Commit (see Lifecycle). The snapshot
//     rule is "V - last snapshot >= MinDeltasForSnapshot" (Spark: more than
//     minDeltasForSnapshot deltas since the last snapshot, checked whenever
//     maintenance runs), and cleanup guarantees the last
//     MinVersionsToRetain versions (Spark's cut-off, latest -
//     minBatchesToRetain, guarantees one more).
//   - Files are not LZ4-compressed, and snapshot entries are written in a
//     deterministic order, as are eviction's removals in a delta ((expiry,
//     key) order, see Expirer; Spark's follow its map's iteration order).
//   - A commit deletes a stale <V>.snapshot before writing <V>.delta. Spark
//     leaves it, and a later load of V would prefer it over the new delta;
//     that only matters when a replay does not reproduce the first attempt.
//   - The cache holds one version per store ID (Spark keeps two by default,
//     spark.sql.streaming.maxBatchesToRetainInMemory), so after a commit of
//     V+1, reloading V in the same run is a miss here and a hit in Spark. A
//     miss-loaded map is cached when its store commits (Spark caches it at
//     load).
//   - MemoryUsedBytes is the deterministic estimate described at
//     EntryOverheadBytes, for the store's own map (Spark: SizeEstimator
//     over all of the provider's cached maps).
type MemoryProvider struct {
	lc *Lifecycle[*memCopy]
}

// memCopy is one working copy of the memory provider: a version's table.
type memCopy struct {
	t *table
	// idx indexes t by expiry for EvictUpTo; nil until first needed, and
	// after an abort or a compaction of t (it is then rebuilt from t on
	// the next use).
	idx *expiry.Index
	// undoBuf is the undo log of the last store on this copy, reused by
	// the next one.
	undoBuf []undoRecord
}

// An undo log longer than this is left to the garbage collector rather
// than kept for the next batch.
const maxKeptUndoRecords = 256 << 10

// NewMemoryProvider returns a provider that keeps its files in fs; opts are
// the lifecycle's (the memory provider has no settings of its own).
func NewMemoryProvider(fs fsys.FS, opts Options) *MemoryProvider {
	return &MemoryProvider{lc: NewLifecycle(fs, opts, memoryFiles, memoryBackend{})}
}

// Options returns the options in effect (defaults filled in).
func (p *MemoryProvider) Options() Options { return p.lc.Options() }

// SetBatchStamp implements Stamper.
func (p *MemoryProvider) SetBatchStamp(s BatchStamp) { p.lc.SetBatchStamp(s) }

// EnableFileChecksum implements FileChecksummer.
func (p *MemoryProvider) EnableFileChecksum(now func() int64) { p.lc.EnableFileChecksum(now) }

// EnableFormatV2 implements CheckpointIDer.
func (p *MemoryProvider) EnableFormatV2(newID func() string) { p.lc.EnableFormatV2(newID) }

// SetLoadIDs implements CheckpointIDer.
func (p *MemoryProvider) SetLoadIDs(version int64, ids map[ID]string) { p.lc.SetLoadIDs(version, ids) }

// CommittedIDs implements CheckpointIDer.
func (p *MemoryProvider) CommittedIDs(version int64) map[ID]string { return p.lc.CommittedIDs(version) }

// Close drops the cached maps. Stores still open can be committed (their
// files are written) but nothing is cached any more; Load fails.
func (p *MemoryProvider) Close() error { return p.lc.Close(nil) }

// Load opens store id at version; see Lifecycle for caching.
func (p *MemoryProvider) Load(id ID, version int64) (Store, error) {
	s := &memStore{}
	if err := p.lc.Open(id, version, &s.StoreBase, s); err != nil {
		return nil, err
	}
	s.w = s.Copy()
	if s.Hit() {
		s.undo, s.w.undoBuf = s.w.undoBuf[:0], nil
	}
	s.loadedKeys, s.loadedBytes = int64(s.w.t.n), s.w.t.live
	return s, nil
}

// memoryBackend materialises versions as tables.
type memoryBackend struct{}

func (memoryBackend) Empty(ID) (*memCopy, error) { return &memCopy{t: newTable(0)}, nil }

func (memoryBackend) ReadSnapshot(id ID, version int64, name string, data []byte) (*memCopy, error) {
	data, err := CheckTrailer(name, data, KindSnapshot, id, version)
	if err != nil {
		return nil, err
	}
	c := &memCopy{t: newTable(countRecords(data))}
	if err := c.t.apply(name, data, true); err != nil {
		return nil, err
	}
	return c, nil
}

func (memoryBackend) ApplyDelta(c *memCopy, name string, records []byte) error {
	return c.t.apply(name, records, false)
}

func (memoryBackend) Snapshot(c *memCopy, id ID, version int64, st BatchStamp) ([]byte, error) {
	return AppendStampedTrailer(c.t.encode(), KindSnapshot, id, version, st), nil
}

// Tidy compacts the arena once its dead bytes outweigh the live ones (and
// a floor, so that a small table is not copied every batch).
func (memoryBackend) Tidy(c *memCopy) error {
	c.tidy()
	return nil
}

func (memoryBackend) Dispose(*memCopy) error { return nil }

// minCompactionGarbage is the least number of dead arena bytes worth a
// compaction.
const minCompactionGarbage = 256 << 10

func (c *memCopy) tidy() {
	t := c.t
	if g := t.garbage(); g < minCompactionGarbage || g <= t.live {
		return
	}
	oldArena := t.arena
	oldOffs := t.compact()
	if c.idx != nil {
		translateIndex(c.idx, t, oldArena, oldOffs)
	}
}

// countRecords is a cheap pre-pass over a snapshot to size the table; it
// stops at anything odd and leaves the diagnosis to table.apply.
func countRecords(data []byte) int {
	n, off := 0, 0
	for len(data)-off >= 4 {
		kl := int32(uint32(data[off])<<24 | uint32(data[off+1])<<16 | uint32(data[off+2])<<8 | uint32(data[off+3]))
		if kl < 0 || len(data)-off-4-int(kl) < 4 {
			break
		}
		off += 4 + int(kl)
		vl := int32(uint32(data[off])<<24 | uint32(data[off+1])<<16 | uint32(data[off+2])<<8 | uint32(data[off+3]))
		if vl < 0 || len(data)-off-4 < int(vl) {
			break
		}
		off += 4 + int(vl)
		n++
	}
	return n
}

// memStore is a Store of the MemoryProvider. It changes its copy's table in
// place; when that table is the provider's cached one (Hit), undo records
// how to put it back.
type memStore struct {
	StoreBase[*memCopy]
	w    *memCopy
	undo []undoRecord

	loadedKeys, loadedBytes int64 // figures at Load, for Metrics after Abort
	finalKeys, finalBytes   int64 // figures after Commit or Abort
}

// Prefetch implements Prefetcher: it asks the CPU for the slot a lookup of
// key starts at, without waiting for it (on amd64; elsewhere it does
// nothing).
func (s *memStore) Prefetch(key []byte) {
	if s.w == nil || !s.Updating() {
		return
	}
	t := s.w.t
	prefetch(uintptr(unsafe.Pointer(&t.slots[t.home(keyHash(key))])))
}

// undoRecord restores one key to what it was before one change: entry e
// when the key existed (e is the entry it held), else absent (e is the
// entry the change inserted, whose key it names). Entries are immutable
// and the arena is compacted only between batches, so e stays valid.
type undoRecord struct {
	e       tslot
	existed bool
}

// Get returns the stored value. The slice belongs to the store: the caller
// must not modify it, and it is valid until the key is next changed.
func (s *memStore) Get(key []byte) ([]byte, bool, error) {
	if !s.Updating() {
		return nil, false, s.Done("Get")
	}
	v, ok := s.w.t.get(key, keyHash(key))
	return v, ok, nil
}

// Put stores copies of key and value.
func (s *memStore) Put(key, value []byte) error {
	if !s.Updating() {
		return s.Done("Put")
	}
	old, entry := s.w.t.put(key, value, keyHash(key))
	s.changed(old, entry, key, value)
	return nil
}

// PutIfAbsent implements Inserter with one probe of the table.
func (s *memStore) PutIfAbsent(key, value []byte) (bool, error) {
	if !s.Updating() {
		return false, s.Done("PutIfAbsent")
	}
	t := s.w.t
	hash := keyHash(key)
	i, free := t.find(key, hash)
	if i >= 0 {
		return false, nil
	}
	entry := t.appendEntry(key, value, hash)
	t.insertAt(free, entry)
	s.changed(tslot{}, entry, key, value)
	return true, nil
}

// changed records a Put of key and value, now entry, that replaced old
// (off 0: the key was absent): undo, expiry index, delta.
func (s *memStore) changed(old, entry tslot, key, value []byte) {
	w := s.w
	t := w.t
	if s.Hit() {
		if old.off != 0 {
			s.undo = append(s.undo, undoRecord{e: old, existed: true})
		} else {
			s.undo = append(s.undo, undoRecord{e: entry})
		}
	}
	if x := w.idx; x != nil {
		if at, ok := x.Expiry(value); ok {
			if x.MostlyStale(int64(t.n)) {
				w.idx = nil // rebuilt on the next EvictUpTo
			} else {
				x.Push(expiry.Item{At: at, Off: entry.off, Klen: entry.klen, Vlen: hashHi(entry.hash)})
			}
		}
	}
	s.Delta = AppendPut(s.Delta, key, value)
}

// Delete removes key; deleting an absent key changes nothing and, as in
// Spark, writes nothing to the delta.
func (s *memStore) Delete(key []byte) error {
	if !s.Updating() {
		return s.Done("Delete")
	}
	if i, _ := s.w.t.find(key, keyHash(key)); i >= 0 {
		s.remove(i)
	}
	return nil
}

// remove deletes the entry in slot i; the index, if any, keeps its now
// stale item.
func (s *memStore) remove(i int) {
	t := s.w.t
	e := t.slots[i]
	if s.Hit() {
		s.undo = append(s.undo, undoRecord{e: e, existed: true})
	}
	s.Delta = AppendRemove(s.Delta, t.key(&e))
	t.removeAt(i)
}

// EvictUpTo implements Expirer. The first call on a table loaded from
// files (or after an abort of a store on the cached table, or a
// compaction) builds the index from the table in O(n log n); after that
// Put adds to it and the index is cached with the table, so a batch costs
// time proportional to its changes and evictions. Delete and overwrites
// leave stale items behind: an item is acted on only if its key still
// holds the very entry the item was made for (entries are immutable, so
// the same arena offset). Every key whose value has an expiry has an item
// for its entry, so nothing expired is missed.
func (s *memStore) EvictUpTo(limit int64, expiryOf func(value []byte) (int64, bool)) (int64, error) {
	if !s.Updating() {
		return 0, s.Done("EvictUpTo")
	}
	w := s.w
	t := w.t
	x := w.idx
	if x == nil || x.MostlyStale(int64(t.n)) {
		x = buildExpiryIndex(t, expiryOf)
		w.idx = x
	}
	// Items are popped evictAhead before they are acted on, and their
	// slot and key prefetched meanwhile (both are scattered in memory);
	// removals leave the index and the arena as they are, so popping
	// early changes nothing else.
	var ahead [evictAhead]expiry.Item
	head, queued, drained := 0, 0, false
	var n int64
	for {
		for !drained && queued < evictAhead {
			if next, ok := x.Min(t.arena); !ok || next.At > limit {
				drained = true
				break
			}
			it := x.Pop(t.arena)
			t.prefetchEntry(it.Vlen, it.Off)
			ahead[(head+queued)%evictAhead] = it
			queued++
		}
		if queued == 0 {
			break
		}
		it := &ahead[head]
		head, queued = (head+1)%evictAhead, queued-1
		i := t.findEntry(it.Vlen, it.Off, nil, it.Key(t.arena))
		if i < 0 {
			continue // deleted or overwritten since; a current value has its own item
		}
		s.remove(i)
		n++
	}
	return n, nil
}

// evictAhead is how many expiry items EvictUpTo pops before acting on them.
const evictAhead = 8

// Range calls fn for every entry, in unspecified order, until fn returns
// false. fn may Delete the current key (or any other; a deleted entry not
// yet reached is not visited). An entry Put during Range may or may not be
// visited. key and value are views into the store, valid only during the
// call and never to be modified. Range walks a copy of the slots, so that
// a Put that grows the table cannot make it skip or repeat an entry.
func (s *memStore) Range(fn func(key, value []byte) bool) error {
	if !s.Updating() {
		return s.Done("Range")
	}
	t := s.w.t
	entries := make([]tslot, 0, t.n)
	for _, e := range t.slots {
		if e.off != 0 {
			entries = append(entries, e)
		}
	}
	for i := range entries {
		key := t.key(&entries[i])
		j, _ := t.find(key, entries[i].hash)
		if j < 0 {
			continue // deleted by fn
		}
		if !fn(key, t.value(&t.slots[j])) {
			break
		}
	}
	return nil
}

// ApplyLocked implements StoreHooks: the changes are in the table already.
func (s *memStore) ApplyLocked() error { return nil }

// RollbackLocked implements StoreHooks: on the cached table, the undo log
// is replayed backwards; a table of its own the store just drops.
func (s *memStore) RollbackLocked() {
	if !s.Hit() {
		return
	}
	t := s.w.t
	for i := len(s.undo) - 1; i >= 0; i-- {
		u := &s.undo[i]
		if u.existed {
			t.restore(u.e)
		} else if j, _ := t.find(t.key(&u.e), u.e.hash); j >= 0 {
			t.removeAt(j)
		}
	}
	// Evicted keys are back in the table without their index items:
	// rebuild the index on its next use.
	s.w.idx = nil
}

// FinishLocked implements StoreHooks: it keeps the figures for Metrics and
// hands the undo log back to the copy for its next batch.
func (s *memStore) FinishLocked(committed bool) {
	if committed {
		s.finalKeys, s.finalBytes = int64(s.w.t.n), s.w.t.live
	} else {
		s.finalKeys, s.finalBytes = s.loadedKeys, s.loadedBytes
	}
	if s.undo != nil && cap(s.undo) <= maxKeptUndoRecords {
		s.w.undoBuf = s.undo[:0]
	}
	s.w, s.undo = nil, nil
}

// encodeSnapshot writes every entry of m as the records of a snapshot, in
// the table's snapshot order (by keyHash of the key, then by
// key), which depends only on the keys, so that the bytes are
// deterministic although Go randomises map iteration. Readers do not
// depend on the order. (The store encodes its table directly; this is the
// same encoding from a map.)
func encodeSnapshot(m map[string][]byte, _ int64) []byte {
	t := newTable(len(m))
	for k, v := range m {
		t.put([]byte(k), v, keyHash([]byte(k)))
	}
	return t.encode()
}

// Metrics: NumKeys, the memory estimate (see EntryOverheadBytes) and the
// HDFS-backed provider's custom metrics. After Commit they describe the
// committed version; after Abort, the version that was loaded.
func (s *memStore) Metrics() Metrics {
	keys, data := s.finalKeys, s.finalBytes
	if s.Updating() {
		keys, data = int64(s.w.t.n), s.w.t.live
	}
	size := data + keys*EntryOverheadBytes
	hits, misses := s.CacheCounts()
	return Metrics{
		NumKeys:         keys,
		MemoryUsedBytes: size,
		Custom: map[string]int64{
			"loadedMapCacheHitCount":         hits,
			"loadedMapCacheMissCount":        misses,
			"stateOnCurrentVersionSizeBytes": size,
		},
	}
}

// buildExpiryIndex indexes every entry of t that has an expiry, by its
// arena offset (entries are immutable).
func buildExpiryIndex(t *table, expiryOf func([]byte) (int64, bool)) *expiry.Index {
	items := make([]expiry.Item, 0, t.n+t.n/4)
	for i := range t.slots {
		e := &t.slots[i]
		if e.off == 0 {
			continue
		}
		if at, ok := expiryOf(t.value(e)); ok {
			items = append(items, expiry.Item{At: at, Off: e.off, Klen: e.klen, Vlen: hashHi(e.hash)})
		}
	}
	return expiry.Sorted(t.arena, items, expiryOf)
}

// translateIndex points the items of x at the entries' new offsets after
// t.compact, which returned oldOffs, the old offset of each slot's entry;
// stale items, whose entries compact dropped, are dropped too. The order
// of the items, by expiry and key, is unchanged.
func translateIndex(x *expiry.Index, t *table, oldArena []byte, oldOffs []uint64) {
	x.Retain(func(it *expiry.Item) bool {
		if i := t.findEntry(it.Vlen, it.Off, oldOffs, it.Key(oldArena)); i >= 0 {
			it.Off = t.slots[i].off
			return true
		}
		return false
	})
}

var (
	_ Inserter = (*memStore)(nil)
	_ Provider = (*MemoryProvider)(nil)
	_ Stamper  = (*MemoryProvider)(nil)
	_ Expirer  = (*memStore)(nil)
)

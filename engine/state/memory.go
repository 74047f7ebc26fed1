package state

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

// EntryOverheadBytes is the fixed per-entry cost in the memory estimate of
// the memory provider: MemoryUsedBytes = Σ(len(key)+len(value)) +
// EntryOverheadBytes × NumKeys. 64 is a round figure for a Go map slot plus
// the string and slice headers and allocation rounding; it is an estimate,
// chosen to be deterministic, not a measurement. (Spark's figure comes from
// its JVM SizeEstimator and cannot be reproduced byte for byte.)
const EntryOverheadBytes = 64

// MemoryOptions configure a MemoryProvider: the lifecycle's Options (the
// memory provider has no settings of its own).
type MemoryOptions = Options

// MemoryProvider is the analogue of Spark's HDFS-backed state store
// provider: every store is a Go map in memory, every commit writes the
// store's changes as <V>.delta under id.Dir(), and every
// MinDeltasForSnapshot versions the whole map as <V>.snapshot (see files.go
// for the format). Versions, caching, snapshots and cleanup are the
// Lifecycle's (lifecycle.go).
//
// The cached map of a store ID is changed in place by the next batch,
// which keeps an undo log for Abort, so a batch costs time proportional to
// its changes, not to the state size. A map rebuilt from the files (a
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

// memCopy is one working copy of the memory provider: a version's map.
type memCopy struct {
	m         map[string][]byte
	dataBytes int64 // Σ len(key)+len(value)
	// idx indexes m by expiry for EvictUpTo; nil until first needed and
	// after an abort (it is then rebuilt from m on the next use).
	idx *expiryIndex
	// undoBuf is the undo log of the last store on this copy, reused by
	// the next one.
	undoBuf []undoRecord
}

// An undo log longer than this is left to the garbage collector rather
// than kept for the next batch.
const maxKeptUndoRecords = 256 << 10

// NewMemoryProvider returns a provider that keeps its files in fs.
func NewMemoryProvider(fs fsys.FS, opts MemoryOptions) *MemoryProvider {
	return &MemoryProvider{lc: NewLifecycle(fs, opts, memoryFiles, memoryBackend{})}
}

// Options returns the options in effect (defaults filled in).
func (p *MemoryProvider) Options() MemoryOptions { return p.lc.Options() }

// SetBatchStamp implements Stamper.
func (p *MemoryProvider) SetBatchStamp(s BatchStamp) { p.lc.SetBatchStamp(s) }

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
	s.loadedKeys, s.loadedBytes = int64(len(s.w.m)), s.w.dataBytes
	return s, nil
}

// memoryBackend materialises versions as maps.
type memoryBackend struct{}

func (memoryBackend) Empty(ID) (*memCopy, error) { return &memCopy{m: map[string][]byte{}}, nil }

func (memoryBackend) ReadSnapshot(id ID, version int64, name string, data []byte) (*memCopy, error) {
	data, err := CheckTrailer(name, data, KindSnapshot, id, version)
	if err != nil {
		return nil, err
	}
	c := &memCopy{m: make(map[string][]byte, countRecords(data))}
	if err := applyFile(name, data, true, c.m, &c.dataBytes); err != nil {
		return nil, err
	}
	return c, nil
}

func (memoryBackend) ApplyDelta(c *memCopy, name string, records []byte) error {
	return applyFile(name, records, false, c.m, &c.dataBytes)
}

func (memoryBackend) Snapshot(c *memCopy, id ID, version int64, st BatchStamp) ([]byte, error) {
	return AppendStampedTrailer(encodeSnapshot(c.m, c.dataBytes), KindSnapshot, id, version, st), nil
}

func (memoryBackend) Tidy(*memCopy) error    { return nil }
func (memoryBackend) Dispose(*memCopy) error { return nil }

// countRecords is a cheap pre-pass over a snapshot to size the map; it stops
// at anything odd and leaves the diagnosis to applyFile.
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

// memStore is a Store of the MemoryProvider. It changes its copy's map in
// place; when that map is the provider's cached one (Hit), undo records
// how to put it back.
type memStore struct {
	StoreBase[*memCopy]
	w    *memCopy
	undo []undoRecord

	loadedKeys, loadedBytes int64 // figures at Load, for Metrics after Abort
	finalKeys, finalBytes   int64 // figures after Commit or Abort
}

// undoRecord restores one key to what it was before one change.
type undoRecord struct {
	key     string
	old     []byte
	existed bool
}

// Get returns the stored value. The slice belongs to the store: the caller
// must not modify it, and it is valid until the key is next changed.
func (s *memStore) Get(key []byte) ([]byte, bool, error) {
	if !s.Updating() {
		return nil, false, s.Done("Get")
	}
	v, ok := s.w.m[string(key)]
	return v, ok, nil
}

// Put stores copies of key and value.
func (s *memStore) Put(key, value []byte) error {
	if !s.Updating() {
		return s.Done("Put")
	}
	w := s.w
	old, existed := w.m[string(key)]
	k, v := string(key), cloneValue(value)
	w.m[k] = v
	if existed {
		w.dataBytes += int64(len(v) - len(old))
	} else {
		w.dataBytes += int64(len(k) + len(v))
	}
	if s.Hit() {
		s.undo = append(s.undo, undoRecord{key: k, old: old, existed: existed})
	}
	if x := w.idx; x != nil {
		if at, ok := x.expiry(v); ok {
			if len(x.h) >= 2*len(w.m)+minStaleCompaction {
				w.idx = nil // mostly stale: rebuilt on the next EvictUpTo
			} else {
				x.push(expiryItem{at: at, key: k})
			}
		}
	}
	s.Delta = AppendPut(s.Delta, key, value)
	return nil
}

// Delete removes key; deleting an absent key changes nothing and, as in
// Spark, writes nothing to the delta.
func (s *memStore) Delete(key []byte) error {
	if !s.Updating() {
		return s.Done("Delete")
	}
	old, existed := s.w.m[string(key)]
	if !existed {
		return nil
	}
	s.remove(string(key), old)
	return nil
}

// remove deletes key, which holds old; the index, if any, keeps its now
// stale items.
func (s *memStore) remove(key string, old []byte) {
	delete(s.w.m, key)
	s.w.dataBytes -= int64(len(key) + len(old))
	if s.Hit() {
		s.undo = append(s.undo, undoRecord{key: key, old: old, existed: true})
	}
	s.Delta = AppendRemove(s.Delta, unsafe.Slice(unsafe.StringData(key), len(key)))
}

// EvictUpTo implements Expirer. The first call on a map loaded from files
// (or after an abort of a store on the cached map) builds a min-heap of
// (expiry, key) over the map in O(n); after that Put pushes onto it and the
// index is cached with the map, so a batch costs time proportional to its
// changes and evictions. Delete leaves stale heap items behind: an item is
// acted on only if its key still holds a value with that expiry. Every key
// whose value has an expiry has an item with that expiry in the heap, so
// nothing expired is missed.
func (s *memStore) EvictUpTo(limit int64, expiry func(value []byte) (int64, bool)) (int64, error) {
	if !s.Updating() {
		return 0, s.Done("EvictUpTo")
	}
	w := s.w
	x := w.idx
	if x == nil || len(x.h) >= 2*len(w.m)+minStaleCompaction {
		x = buildExpiryIndex(w.m, expiry)
		w.idx = x
	}
	var n int64
	for len(x.h) > 0 && x.h[0].at <= limit {
		it := x.pop()
		v, ok := w.m[it.key]
		if !ok {
			continue // deleted since it was pushed
		}
		if at, ok := expiry(v); !ok || at != it.at {
			continue // overwritten since; the current value has its own item
		}
		s.remove(it.key, v)
		n++
	}
	return n, nil
}

// Range calls fn for every entry, in unspecified (Go map) order, until fn
// returns false. fn may Delete the current key (or any other; a deleted
// entry not yet reached is not visited). An entry Put during Range may or
// may not be visited. key and value are views into the store, valid only
// during the call and never to be modified: key aliases the map's own
// string, which is what makes a full scan allocation-free.
func (s *memStore) Range(fn func(key, value []byte) bool) error {
	if !s.Updating() {
		return s.Done("Range")
	}
	for k, v := range s.w.m {
		if !fn(unsafe.Slice(unsafe.StringData(k), len(k)), v) {
			break
		}
	}
	return nil
}

// ApplyLocked implements StoreHooks: the changes are in the map already.
func (s *memStore) ApplyLocked() error { return nil }

// RollbackLocked implements StoreHooks: on the cached map, the undo log is
// replayed backwards; a map of its own the store just drops.
func (s *memStore) RollbackLocked() {
	if !s.Hit() {
		return
	}
	w := s.w
	for i := len(s.undo) - 1; i >= 0; i-- {
		u := s.undo[i]
		if u.existed {
			w.m[u.key] = u.old
		} else {
			delete(w.m, u.key)
		}
	}
	w.dataBytes = s.loadedBytes
	// Evicted keys are back in the map without their heap items: rebuild
	// the index on its next use.
	w.idx = nil
}

// FinishLocked implements StoreHooks: it keeps the figures for Metrics and
// hands the undo log back to the copy for its next batch.
func (s *memStore) FinishLocked(committed bool) {
	if committed {
		s.finalKeys, s.finalBytes = int64(len(s.w.m)), s.w.dataBytes
	} else {
		s.finalKeys, s.finalBytes = s.loadedKeys, s.loadedBytes
	}
	if s.undo != nil && cap(s.undo) <= maxKeptUndoRecords {
		clear(s.undo) // drop the references to old keys and values
		s.w.undoBuf = s.undo[:0]
	}
	s.w, s.undo = nil, nil
}

// encodeSnapshot writes every entry of m in an order that depends only on
// the keys, so that the bytes are deterministic although Go randomises map
// iteration. The order is by a fixed 64-bit FNV-1a hash of the key, then by
// key: at a million keys, sorting 16-byte (hash, index) pairs is several
// times faster than sorting the keys themselves and looking their values up
// again. Readers do not depend on the order.
func encodeSnapshot(m map[string][]byte, dataBytes int64) []byte {
	keys := make([]string, 0, len(m))
	values := make([][]byte, 0, len(m))
	order := make([]hashIndex, 0, len(m))
	for k, v := range m {
		order = append(order, hashIndex{fnv1a(k), int32(len(keys))})
		keys = append(keys, k)
		values = append(values, v)
	}
	slices.SortFunc(order, func(a, b hashIndex) int {
		if a.hash != b.hash {
			if a.hash < b.hash {
				return -1
			}
			return 1
		}
		return strings.Compare(keys[a.index], keys[b.index])
	})
	b := make([]byte, 0, dataBytes+8*int64(len(m))+4+int64(TrailerLen))
	for _, o := range order {
		k := keys[o.index]
		b = AppendPut(b, unsafe.Slice(unsafe.StringData(k), len(k)), values[o.index])
	}
	return AppendEnd(b)
}

type hashIndex struct {
	hash  uint64
	index int32
}

func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// Metrics: NumKeys, the memory estimate (see EntryOverheadBytes) and the
// HDFS-backed provider's custom metrics. After Commit they describe the
// committed version; after Abort, the version that was loaded.
func (s *memStore) Metrics() Metrics {
	keys, data := s.finalKeys, s.finalBytes
	if s.Updating() {
		keys, data = int64(len(s.w.m)), s.w.dataBytes
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

// minStaleCompaction: an expiry index is rebuilt once it holds at least
// twice as many items as the map has keys plus this many, so that stale
// items left by Delete or overwrites cannot pile up.
const minStaleCompaction = 1024

// expiryIndex is a binary min-heap of (expiry, key) over the entries of one
// map, possibly with stale items (see EvictUpTo). expiry is the function it
// was built with, used by Put.
type expiryIndex struct {
	expiry func([]byte) (int64, bool)
	h      []expiryItem
}

type expiryItem struct {
	at  int64
	key string // the map's key string, shared
}

// before orders the heap by expiry, then by key. The key makes the order
// total, so the heap pops entries of equal expiry in one order whatever
// order they were pushed in: buildExpiryIndex pushes in Go's randomised map
// order, and the removals EvictUpTo makes are written to the delta in pop
// order. Items equal in both are the same entry (a stale duplicate), whose
// order does not matter.
func (a expiryItem) before(b expiryItem) bool {
	return a.at < b.at || (a.at == b.at && a.key < b.key)
}

func buildExpiryIndex(m map[string][]byte, expiry func([]byte) (int64, bool)) *expiryIndex {
	x := &expiryIndex{expiry: expiry, h: make([]expiryItem, 0, len(m)+len(m)/4)}
	for k, v := range m {
		if at, ok := expiry(v); ok {
			x.h = append(x.h, expiryItem{at: at, key: k})
		}
	}
	for i := len(x.h)/2 - 1; i >= 0; i-- {
		x.down(i)
	}
	return x
}

func (x *expiryIndex) push(it expiryItem) {
	h := append(x.h, it)
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !it.before(h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = it
	x.h = h
}

func (x *expiryIndex) pop() expiryItem {
	h := x.h
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = expiryItem{} // drop the key reference
	x.h = h[:last]
	if last > 0 {
		x.down(0)
	}
	return top
}

func (x *expiryIndex) down(i int) {
	h := x.h
	n := len(h)
	it := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].before(h[c]) {
			c = r
		}
		if !h[c].before(it) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = it
}

var (
	_ Provider = (*MemoryProvider)(nil)
	_ Stamper  = (*MemoryProvider)(nil)
	_ Expirer  = (*memStore)(nil)
)

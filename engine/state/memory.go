package state

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
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

// Defaults of MemoryOptions, Spark's defaults for
// spark.sql.streaming.stateStore.minDeltasForSnapshot and
// spark.sql.streaming.minBatchesToRetain.
const (
	DefaultMinDeltasForSnapshot = 10
	DefaultMinVersionsToRetain  = 100
)

// MemoryOptions configure a MemoryProvider. Zero or negative values mean the
// default.
type MemoryOptions struct {
	// MinDeltasForSnapshot: committing version V also writes V.snapshot when
	// V - (newest snapshot version below V, or 0) >= MinDeltasForSnapshot.
	MinDeltasForSnapshot int
	// MinVersionsToRetain: after a commit of V, every version in
	// [V-MinVersionsToRetain+1, V] stays loadable; older files are deleted.
	MinVersionsToRetain int
	// OnMaintenanceError, when set, receives errors from writing a snapshot
	// or deleting old files. Like Spark's maintenance task, these do not fail
	// the commit (the delta that makes the version durable is already
	// written) and are retried by the next commit: a missed snapshot is due
	// again, undeleted files are still older than the cut-off. It is called
	// from Commit with the provider locked and must not call the provider.
	OnMaintenanceError func(id ID, err error)
}

func (o MemoryOptions) withDefaults() MemoryOptions {
	if o.MinDeltasForSnapshot <= 0 {
		o.MinDeltasForSnapshot = DefaultMinDeltasForSnapshot
	}
	if o.MinVersionsToRetain <= 0 {
		o.MinVersionsToRetain = DefaultMinVersionsToRetain
	}
	return o
}

// Errors of the memory provider's stores; use errors.Is.
var (
	// ErrStoreDone: the store was already committed or aborted.
	ErrStoreDone = errors.New("state store already committed or aborted")
	// ErrProviderClosed: Load after Close.
	ErrProviderClosed = errors.New("state provider closed")
)

// MemoryProvider is the analogue of Spark's HDFS-backed state store
// provider: every store is a Go map in memory, every commit writes the
// store's changes as <V>.delta under id.Dir(), and every
// MinDeltasForSnapshot versions the whole map as <V>.snapshot (see files.go
// for the format). Unlike Spark, snapshot and cleanup run synchronously at
// the end of Commit, so the files present after any commit are a
// deterministic function of the commits.
//
// The provider keeps the latest committed map of each store ID. Loading
// exactly that version is a cache hit: the store works on the cached map in
// place and keeps an undo log for Abort, so a batch costs time proportional
// to its changes, not to the state size. Any other version (a restart, an
// older version, a second concurrent open of the same ID) is rebuilt from the
// files: the newest snapshot at or below the version, then the deltas after
// it. A rebuilt map becomes the cached one when its store commits.
//
// Spark's counters loadedMapCacheHitCount and loadedMapCacheMissCount are
// kept per store ID for the life of the provider (one query run), as Spark
// keeps them per provider instance; a store's Metrics reports the counts of
// its ID. Loading version 0 counts as neither, as in Spark.
//
// A MemoryProvider may be used from several goroutines for different IDs;
// one store must be used by one goroutine at a time.
//
// Deliberate differences from Spark's provider, none visible in query
// results:
//   - Snapshot and cleanup run inside Commit, not in a background task every
//     spark.sql.streaming.stateStore.maintenanceInterval, so their timing is
//     deterministic. The snapshot rule is "V - last snapshot >=
//     MinDeltasForSnapshot" (Spark: more than minDeltasForSnapshot deltas
//     since the last snapshot, checked whenever maintenance runs), and
//     cleanup guarantees the last MinVersionsToRetain versions (Spark's
//     cut-off, latest - minBatchesToRetain, guarantees one more).
//   - Files are not LZ4-compressed, and snapshot entries are written in a
//     deterministic order.
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
	fs   fsys.FS
	opts MemoryOptions

	mu     sync.Mutex
	slots  map[ID]*slot
	closed bool
	stamp  BatchStamp // written into the files of the next commits
}

// SetBatchStamp implements Stamper.
func (p *MemoryProvider) SetBatchStamp(s BatchStamp) {
	p.mu.Lock()
	p.stamp = s
	p.mu.Unlock()
}

// slot is the provider's memory of one store ID.
type slot struct {
	cache        *cachedMap // latest committed version; nil before the first commit
	hits, misses int64

	// Buffers of the last finished store, reused by the next one so that a
	// batch does not regrow them (see recycleLocked).
	deltaBuf []byte
	undoBuf  []undoRecord
}

// Buffers larger than these are left to the garbage collector rather than
// kept for the next batch.
const (
	maxKeptDeltaBytes  = 16 << 20
	maxKeptUndoRecords = 256 << 10
)

type cachedMap struct {
	version   int64
	m         map[string][]byte
	dataBytes int64 // Σ len(key)+len(value)
	inUse     bool  // an open store is changing m in place
	// idx indexes m by expiry for EvictUpTo; nil until first needed and
	// after an abort (it is then rebuilt from m on the next use).
	idx *expiryIndex
}

// NewMemoryProvider returns a provider that keeps its files in fs.
func NewMemoryProvider(fs fsys.FS, opts MemoryOptions) *MemoryProvider {
	return &MemoryProvider{fs: fs, opts: opts.withDefaults(), slots: map[ID]*slot{}}
}

// Options returns the options in effect (defaults filled in).
func (p *MemoryProvider) Options() MemoryOptions { return p.opts }

// Close drops the cached maps. Stores still open can be committed (their
// files are written) but nothing is cached any more; Load fails.
func (p *MemoryProvider) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.slots = map[ID]*slot{}
	return nil
}

// Load opens store id at version; see the type comment for caching.
func (p *MemoryProvider) Load(id ID, version int64) (Store, error) {
	if version < 0 {
		return nil, fmt.Errorf("cannot load state version %d of %s: negative version", version, id.Dir())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("cannot load state version %d of %s: %w", version, id.Dir(), ErrProviderClosed)
	}
	sl := p.slots[id]
	if sl == nil {
		sl = &slot{}
		p.slots[id] = sl
	}
	s := &memStore{p: p, id: id, version: version, slot: sl, delta: sl.deltaBuf[:0]}
	sl.deltaBuf = nil
	switch c := sl.cache; {
	case version == 0:
		s.m = map[string][]byte{}
	case c != nil && c.version == version && !c.inUse:
		sl.hits++
		c.inUse = true
		s.cached, s.m, s.dataBytes, s.idx = c, c.m, c.dataBytes, c.idx
		s.undo, sl.undoBuf = sl.undoBuf[:0], nil
	default:
		sl.misses++ // counted even if the load fails, as in Spark
		m, dataBytes, err := p.loadFiles(id, version)
		if err != nil {
			sl.deltaBuf = s.delta
			return nil, err
		}
		s.m, s.dataBytes = m, dataBytes
	}
	s.loadedKeys, s.loadedBytes = int64(len(s.m)), s.dataBytes
	return s, nil
}

// loadFiles rebuilds version (> 0) of id from its files.
func (p *MemoryProvider) loadFiles(id ID, version int64) (map[string][]byte, int64, error) {
	dir := id.Dir()
	fail := func(err error) (map[string][]byte, int64, error) {
		return nil, 0, fmt.Errorf("cannot load state version %d of %s: %w", version, dir, err)
	}
	files, err := ListStoreFiles(p.fs, dir, memoryFiles)
	if err != nil {
		return fail(err)
	}
	m := map[string][]byte{}
	var dataBytes int64
	from := files.NewestSnapshot(version)
	if from > 0 {
		name := path.Join(dir, snapshotName(from))
		data, err := p.fs.ReadFile(name)
		if err != nil {
			return fail(err)
		}
		if data, err = CheckTrailer(name, data, KindSnapshot, id, from); err != nil {
			return fail(err)
		}
		m = make(map[string][]byte, countRecords(data))
		if err := applyFile(name, data, true, m, &dataBytes); err != nil {
			return fail(err)
		}
	}
	for v := from + 1; v <= version; v++ {
		name := path.Join(dir, deltaName(v))
		data, err := p.fs.ReadFile(name)
		if err != nil {
			if fsys.IsNotExist(err) {
				return fail(&MissingFileError{Path: name, Version: version})
			}
			return fail(err)
		}
		if data, err = CheckTrailer(name, data, KindDelta, id, v); err != nil {
			return fail(err)
		}
		if err := applyFile(name, data, false, m, &dataBytes); err != nil {
			return fail(err)
		}
	}
	return m, dataBytes, nil
}

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

type storeState uint8

const (
	updating storeState = iota
	committed
	aborted
)

func (s storeState) String() string {
	switch s {
	case committed:
		return "committed"
	case aborted:
		return "aborted"
	}
	return "updating"
}

// memStore is a Store of the MemoryProvider.
type memStore struct {
	p       *MemoryProvider
	id      ID
	version int64
	slot    *slot
	state   storeState

	m         map[string][]byte
	dataBytes int64 // Σ len(key)+len(value) of m

	// cached is set when m is the provider's cached map, changed in place;
	// undo then records how to put it back.
	cached *cachedMap
	undo   []undoRecord

	// idx, once EvictUpTo built it, indexes m by expiry; Put keeps it up
	// to date. When m is the cached map, idx is also cached.idx.
	idx *expiryIndex

	delta []byte // the records of <version+1>.delta, without the end marker

	loadedKeys, loadedBytes int64 // figures at Load, for Metrics after Abort
	finalKeys, finalBytes   int64 // figures after Commit or Abort
}

// undoRecord restores one key to what it was before one change.
type undoRecord struct {
	key     string
	old     []byte
	existed bool
}

func (s *memStore) done(op string) error {
	return fmt.Errorf("%s on state store %s version %d: %w (%s)", op, s.id.Dir(), s.version, ErrStoreDone, s.state)
}

func (s *memStore) Version() int64 { return s.version }

// Get returns the stored value. The slice belongs to the store: the caller
// must not modify it, and it is valid until the key is next changed.
func (s *memStore) Get(key []byte) ([]byte, bool, error) {
	if s.state != updating {
		return nil, false, s.done("Get")
	}
	v, ok := s.m[string(key)]
	return v, ok, nil
}

// Put stores copies of key and value.
func (s *memStore) Put(key, value []byte) error {
	if s.state != updating {
		return s.done("Put")
	}
	old, existed := s.m[string(key)]
	k, v := string(key), cloneValue(value)
	s.m[k] = v
	if existed {
		s.dataBytes += int64(len(v) - len(old))
	} else {
		s.dataBytes += int64(len(k) + len(v))
	}
	if s.cached != nil {
		s.undo = append(s.undo, undoRecord{key: k, old: old, existed: existed})
	}
	if x := s.idx; x != nil {
		if at, ok := x.expiry(v); ok {
			if len(x.h) >= 2*len(s.m)+minStaleCompaction {
				s.dropIndex() // mostly stale: rebuilt on the next EvictUpTo
			} else {
				x.push(expiryItem{at: at, key: k})
			}
		}
	}
	s.delta = appendPut(s.delta, key, value)
	return nil
}

// Delete removes key; deleting an absent key changes nothing and, as in
// Spark, writes nothing to the delta.
func (s *memStore) Delete(key []byte) error {
	if s.state != updating {
		return s.done("Delete")
	}
	old, existed := s.m[string(key)]
	if !existed {
		return nil
	}
	s.remove(string(key), old)
	return nil
}

// remove deletes key, which holds old; the index, if any, keeps its now
// stale items.
func (s *memStore) remove(key string, old []byte) {
	delete(s.m, key)
	s.dataBytes -= int64(len(key) + len(old))
	if s.cached != nil {
		s.undo = append(s.undo, undoRecord{key: key, old: old, existed: true})
	}
	s.delta = appendRemove(s.delta, unsafe.Slice(unsafe.StringData(key), len(key)))
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
	if s.state != updating {
		return 0, s.done("EvictUpTo")
	}
	x := s.idx
	if x == nil || len(x.h) >= 2*len(s.m)+minStaleCompaction {
		x = buildExpiryIndex(s.m, expiry)
		s.idx = x
		if s.cached != nil {
			s.cached.idx = x
		}
	}
	var n int64
	for len(x.h) > 0 && x.h[0].at <= limit {
		it := x.pop()
		v, ok := s.m[it.key]
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

// dropIndex forgets the expiry index; the next EvictUpTo rebuilds it.
func (s *memStore) dropIndex() {
	s.idx = nil
	if s.cached != nil {
		s.cached.idx = nil
	}
}

// Range calls fn for every entry, in unspecified (Go map) order, until fn
// returns false. fn may Delete the current key (or any other; a deleted
// entry not yet reached is not visited). An entry Put during Range may or
// may not be visited. key and value are views into the store, valid only
// during the call and never to be modified: key aliases the map's own
// string, which is what makes a full scan allocation-free.
func (s *memStore) Range(fn func(key, value []byte) bool) error {
	if s.state != updating {
		return s.done("Range")
	}
	for k, v := range s.m {
		if !fn(unsafe.Slice(unsafe.StringData(k), len(k)), v) {
			break
		}
	}
	return nil
}

// Commit writes <Version()+1>.delta, makes the result the provider's cached
// map, then writes a snapshot and deletes old files if due. If the delta
// cannot be written the changes are rolled back and the store is aborted.
func (s *memStore) Commit() (int64, error) {
	if s.state != updating {
		return 0, s.done("Commit")
	}
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	newVersion := s.version + 1
	dir := s.id.Dir()
	fail := func(err error) (int64, error) {
		s.rollbackLocked()
		return 0, fmt.Errorf("cannot commit state version %d of %s: %w", newVersion, dir, err)
	}
	files, err := ListStoreFiles(p.fs, dir, memoryFiles)
	if err != nil {
		return fail(err)
	}
	// A snapshot of newVersion can only be left by an earlier attempt at
	// this version (a replayed batch, or a query rewound to an older
	// version). It would shadow the delta we are about to write, so it goes
	// first, durably.
	if files.Snapshots[newVersion] {
		if err := p.fs.Remove(path.Join(dir, snapshotName(newVersion))); err != nil {
			return fail(err)
		}
		if err := p.fs.SyncDir(dir); err != nil {
			return fail(err)
		}
		delete(files.Snapshots, newVersion)
	}
	s.delta = AppendStampedTrailer(appendEnd(s.delta), KindDelta, s.id, newVersion, p.stamp)
	if err := fsys.WriteAtomic(p.fs, path.Join(dir, deltaName(newVersion)), s.delta); err != nil {
		return fail(err)
	}
	files.Deltas[newVersion] = true

	s.state = committed
	s.recycleLocked()
	s.finalKeys, s.finalBytes = int64(len(s.m)), s.dataBytes
	if !p.closed {
		c := s.cached
		if c == nil {
			c = &cachedMap{m: s.m}
		}
		c.version, c.dataBytes, c.inUse, c.idx = newVersion, s.dataBytes, false, s.idx
		s.slot.cache = c
	} else if s.cached != nil {
		s.cached.inUse = false
	}
	p.maintainLocked(s.id, newVersion, s.m, s.dataBytes, files)
	s.m, s.cached, s.idx = nil, nil, nil
	return newVersion, nil
}

// maintainLocked writes newVersion's snapshot if due and deletes the files
// no retained version needs. files is the directory listing including the
// new delta.
func (p *MemoryProvider) maintainLocked(id ID, newVersion int64, m map[string][]byte, dataBytes int64, files StoreFiles) {
	dir := id.Dir()
	report := func(err error) {
		if p.opts.OnMaintenanceError != nil {
			p.opts.OnMaintenanceError(id, err)
		}
	}
	lastSnapshot := files.NewestSnapshot(newVersion - 1)
	if newVersion-lastSnapshot >= int64(p.opts.MinDeltasForSnapshot) {
		name := path.Join(dir, snapshotName(newVersion))
		if err := fsys.WriteAtomic(p.fs, name, AppendStampedTrailer(encodeSnapshot(m, dataBytes), KindSnapshot, id, newVersion, p.stamp)); err != nil {
			report(fmt.Errorf("write snapshot %s: %w", name, err))
		} else {
			files.Snapshots[newVersion] = true
		}
	}

	minVersion := newVersion - int64(p.opts.MinVersionsToRetain) + 1
	if minVersion <= 0 {
		return
	}
	keepFrom := files.NewestSnapshot(minVersion)
	if keepFrom == 0 {
		return
	}
	var names []string
	for v := range files.Deltas {
		if v < keepFrom {
			names = append(names, deltaName(v))
		}
	}
	for v := range files.Snapshots {
		if v < keepFrom {
			names = append(names, snapshotName(v))
		}
	}
	if len(names) == 0 {
		return
	}
	slices.Sort(names) // a deterministic order of file operations
	removed := false
	for _, n := range names {
		name := path.Join(dir, n)
		if err := p.fs.Remove(name); err != nil {
			report(fmt.Errorf("delete old state file %s: %w", name, err))
			continue
		}
		removed = true
	}
	if removed {
		// Make the deletions durable so that the files after a crash are
		// the same as without one.
		if err := p.fs.SyncDir(dir); err != nil {
			report(fmt.Errorf("sync %s after deleting old files: %w", dir, err))
		}
	}
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
		b = appendPut(b, unsafe.Slice(unsafe.StringData(k), len(k)), values[o.index])
	}
	return appendEnd(b)
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

// Abort drops the changes. It is a no-op on a store already committed or
// aborted (the engine may abort unconditionally in cleanup, as Spark does).
func (s *memStore) Abort() {
	if s.state != updating {
		return
	}
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.rollbackLocked()
}

func (s *memStore) rollbackLocked() {
	if c := s.cached; c != nil {
		for i := len(s.undo) - 1; i >= 0; i-- {
			u := s.undo[i]
			if u.existed {
				s.m[u.key] = u.old
			} else {
				delete(s.m, u.key)
			}
		}
		c.inUse = false
		// Evicted keys are back in the map without their heap items:
		// rebuild the index on its next use.
		c.idx = nil
	}
	s.state = aborted
	s.finalKeys, s.finalBytes = s.loadedKeys, s.loadedBytes
	s.recycleLocked()
	s.m, s.cached, s.idx = nil, nil, nil
}

// recycleLocked hands the store's delta and undo buffers back to its slot
// for the next batch of the same ID. The FS keeps no reference to the
// delta once WriteAtomic returned.
func (s *memStore) recycleLocked() {
	if cap(s.delta) <= maxKeptDeltaBytes {
		s.slot.deltaBuf = s.delta[:0]
	}
	if s.undo != nil && cap(s.undo) <= maxKeptUndoRecords {
		clear(s.undo) // drop the references to old keys and values
		s.slot.undoBuf = s.undo[:0]
	}
	s.delta, s.undo = nil, nil
}

// Metrics: NumKeys, the memory estimate (see EntryOverheadBytes) and the
// HDFS-backed provider's custom metrics. After Commit they describe the
// committed version; after Abort, the version that was loaded.
func (s *memStore) Metrics() Metrics {
	keys, data := s.finalKeys, s.finalBytes
	if s.state == updating {
		keys, data = int64(len(s.m)), s.dataBytes
	}
	size := data + keys*EntryOverheadBytes
	s.p.mu.Lock()
	hits, misses := s.slot.hits, s.slot.misses
	s.p.mu.Unlock()
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

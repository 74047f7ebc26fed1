package state

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

// Defaults of Options, Spark's defaults for
// spark.sql.streaming.stateStore.minDeltasForSnapshot and
// spark.sql.streaming.minBatchesToRetain.
const (
	DefaultMinDeltasForSnapshot = 10
	DefaultMinVersionsToRetain  = 100
)

// Options configure the versioned-file lifecycle every provider built on
// Lifecycle shares. Zero or negative values mean the default.
type Options struct {
	// MinDeltasForSnapshot: committing version V also writes a snapshot of
	// V when V - (newest snapshot version below V, or 0) >=
	// MinDeltasForSnapshot.
	MinDeltasForSnapshot int
	// MinVersionsToRetain: after a commit of V, every version in
	// [V-MinVersionsToRetain+1, V] stays loadable; older files are deleted.
	MinVersionsToRetain int
	// OnMaintenanceError, when set, receives errors from writing a snapshot
	// or deleting old files (and the provider's own housekeeping, such as
	// compaction or disposal of a working copy). Like Spark's maintenance
	// task, these do not fail the commit (the delta that makes the version
	// durable is already written) and are retried by the next commit: a
	// missed snapshot is due again, undeleted files are still older than
	// the cut-off. It is called with the provider locked and must not call
	// the provider.
	OnMaintenanceError func(id ID, err error)
}

// WithDefaults returns o with the defaults filled in.
func (o Options) WithDefaults() Options {
	if o.MinDeltasForSnapshot <= 0 {
		o.MinDeltasForSnapshot = DefaultMinDeltasForSnapshot
	}
	if o.MinVersionsToRetain <= 0 {
		o.MinVersionsToRetain = DefaultMinVersionsToRetain
	}
	return o
}

// Errors of the stores built on Lifecycle; use errors.Is.
var (
	// ErrStoreDone: the store was already committed or aborted.
	ErrStoreDone = errors.New("state store already committed or aborted")
	// ErrProviderClosed: Load after Close.
	ErrProviderClosed = errors.New("state provider closed")
)

// Backend is what a provider plugs into a Lifecycle: how a version is
// materialised as a working copy W (a hash table, a Pebble database) and how a
// working copy is written as a snapshot. The changes themselves are
// encoded by the lifecycle: every store appends put and remove records to
// StoreBase.Delta. The Lifecycle calls a Backend with its lock held.
type Backend[W any] interface {
	// Empty returns a working copy of version 0 of id: no entries.
	Empty(id ID) (W, error)
	// ReadSnapshot returns a working copy of version of id from the bytes
	// of its snapshot file at path, after checking their integrity and
	// stamp (errors *CorruptFileError naming path).
	ReadSnapshot(id ID, version int64, path string, data []byte) (W, error)
	// ApplyDelta applies the records of the delta file at path (its
	// trailer checked and cut off, the end marker kept) to w. On error w
	// holds part of the changes; the Lifecycle disposes of it.
	ApplyDelta(w W, path string, records []byte) error
	// Snapshot returns the snapshot file of w, which holds version of id;
	// st is the stamp of the batch that made the version.
	Snapshot(w W, id ID, version int64, st BatchStamp) ([]byte, error)
	// Tidy is called after a commit of w that wrote no snapshot, for
	// housekeeping such as compaction; an error is reported like any
	// maintenance error.
	Tidy(w W) error
	// Dispose releases a working copy that neither a store nor the cache
	// holds any more.
	Dispose(w W) error
}

// StoreHooks is what a store does at the end of its batch, called by
// StoreBase with the provider locked.
type StoreHooks interface {
	// ApplyLocked makes the store's changes part of its working copy, once
	// their delta is durable (a store that changes its copy in place has
	// nothing to do). After an error the copy is disposed of and the
	// version is rebuilt from the files by the next Load.
	ApplyLocked() error
	// RollbackLocked undoes the changes: the store is aborted, or its
	// delta could not be written. A store on the cached copy (Hit) must
	// leave the copy as it was loaded.
	RollbackLocked()
	// FinishLocked records the figures Metrics reports once the store has
	// ended (committed: the new version, after maintenance; aborted: the
	// loaded version) and drops the store's references to its copy.
	FinishLocked(committed bool)
}

// Lifecycle is the versioned-file lifecycle that Spark's HDFS-backed and
// RocksDB (changelog checkpointing) providers share, and so do dedupsim's
// memory and Pebble providers. Each store ID has, in its folder id.Dir(),
// a delta file per version and a snapshot file every
// MinDeltasForSnapshot versions (FileNames says which suffixes); every
// delta ends with dedupsim's stamped trailer (see files.go).
//
// Load(id, V) of the version the provider cached for id (its latest
// commit, not in use by another store) reuses that working copy: a cache
// hit (loadedMapCacheHitCount). Any other version (a restart, an older
// version, a second concurrent open) is a miss (loadedMapCacheMissCount):
// a working copy is built from the newest snapshot S <= V and the deltas
// S+1..V. A delta or snapshot above V, such as the <N+1> delta of a
// failed attempt at batch N, is ignored, and the replayed batch's commit
// overwrites it. Version 0 is an empty copy and counts as neither. The
// counters are kept per store ID for the life of the provider (one query
// run), as Spark keeps them per provider instance; a miss is counted even
// if the load fails, as in Spark.
//
// Commit of V deletes a stale snapshot of V first (it would shadow the new
// delta), writes the delta of V with fsys.WriteAtomic, makes the store's
// copy the cached one, then, synchronously: a snapshot when V - (newest
// snapshot below V) >= MinDeltasForSnapshot, and deletion of the files no
// version in the last MinVersionsToRetain needs. Maintenance errors go to
// OnMaintenanceError and do not fail the commit. Unlike Spark, snapshot
// and cleanup run inside Commit, not in a background task every
// spark.sql.streaming.stateStore.maintenanceInterval, so the files present
// after any commit are a deterministic function of the commits.
//
// A Lifecycle may be used from several goroutines for different IDs; one
// store must be used by one goroutine at a time.
type Lifecycle[W any] struct {
	fs      fsys.FS
	opts    Options
	names   FileNames
	backend Backend[W]

	mu     sync.Mutex
	slots  map[ID]*slot[W]
	closed bool
	stamp  BatchStamp // written into the deltas of the next commits
	v2     *formatV2  // nil: format v1 (formatv2.go)
	// checksumNow, when set, writes Spark's checksum sidecars next to the
	// format-v1 files (checksum.go) with its time.
	checksumNow func() int64
}

// slot is the lifecycle's memory of one store ID.
type slot[W any] struct {
	cache        *held[W] // the latest committed version; nil before the first commit
	hits, misses int64
	// deltaBuf is the delta buffer of the last finished store, reused by
	// the next one so that a batch does not regrow it.
	deltaBuf []byte
}

// held is a working copy and what the lifecycle knows of it.
type held[W any] struct {
	w       W
	version int64 // the committed version it holds
	inUse   bool  // an open store works on it
	// Format v2: the checkpoint id of version and the lineage of its
	// delta (the versions before it, back to a snapshot).
	ckptID  string
	lineage []LineageItem
}

// A delta buffer larger than this is left to the garbage collector rather
// than kept for the next batch.
const maxKeptDeltaBytes = 16 << 20

// NewLifecycle returns the lifecycle of a provider that keeps its files,
// named by names, in fs.
func NewLifecycle[W any](fs fsys.FS, opts Options, names FileNames, b Backend[W]) *Lifecycle[W] {
	return &Lifecycle[W]{fs: fs, opts: opts.WithDefaults(), names: names, backend: b, slots: map[ID]*slot[W]{}}
}

// Options returns the options in effect (defaults filled in).
func (lc *Lifecycle[W]) Options() Options { return lc.opts }

// SetBatchStamp implements Stamper.
func (lc *Lifecycle[W]) SetBatchStamp(s BatchStamp) {
	lc.mu.Lock()
	lc.stamp = s
	lc.mu.Unlock()
}

// ClosedLocked reports whether Close was called; the caller holds the
// lock (a Backend method, or the finaliser passed to Close).
func (lc *Lifecycle[W]) ClosedLocked() bool { return lc.closed }

// Close disposes of the cached working copies not in use (those of open
// stores go when their store ends; such a store can still commit, its
// delta is written, but nothing is cached any more) and makes Load fail.
// finally, if not nil, runs last with the lock held. A second Close does
// nothing.
func (lc *Lifecycle[W]) Close(finally func() error) error {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.closed {
		return nil
	}
	lc.closed = true
	var errs []error
	// In ID order, so that the errors (and the disposals) do not follow
	// Go's map order.
	ids := make([]ID, 0, len(lc.slots))
	for id := range lc.slots {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b ID) int {
		return cmp.Or(cmp.Compare(a.Operator, b.Operator), cmp.Compare(a.Partition, b.Partition))
	})
	for _, id := range ids {
		sl := lc.slots[id]
		if c := sl.cache; c != nil {
			sl.cache = nil
			if !c.inUse {
				errs = append(errs, lc.backend.Dispose(c.w))
			}
		}
	}
	lc.slots = map[ID]*slot[W]{}
	if finally != nil {
		errs = append(errs, finally())
	}
	return errors.Join(errs...)
}

func (lc *Lifecycle[W]) report(id ID, err error) {
	if err != nil && lc.opts.OnMaintenanceError != nil {
		lc.opts.OnMaintenanceError(id, err)
	}
}

// Open opens store id at version into b, the StoreBase embedded in the
// provider's store, whose hooks end it; see the type comment for caching.
func (lc *Lifecycle[W]) Open(id ID, version int64, b *StoreBase[W], hooks StoreHooks) error {
	if version < 0 {
		return fmt.Errorf("cannot load state version %d of %s: negative version", version, id.Dir())
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.closed {
		return fmt.Errorf("cannot load state version %d of %s: %w", version, id.Dir(), ErrProviderClosed)
	}
	sl := lc.slots[id]
	if sl == nil {
		sl = &slot[W]{}
		lc.slots[id] = sl
	}
	var h *held[W]
	hit := false
	switch c := sl.cache; {
	case version == 0:
		w, err := lc.backend.Empty(id)
		if err != nil {
			return fmt.Errorf("cannot load state version 0 of %s: %w", id.Dir(), err)
		}
		h = &held[W]{w: w}
	case c != nil && c.version == version && !c.inUse && lc.cachedIDLocked(id, c.ckptID, version):
		sl.hits++
		h, hit = c, true
	default:
		sl.misses++ // counted even if the load fails, as in Spark
		if lc.v2 != nil {
			w, uid, lineage, err := lc.rebuildV2Locked(id, version)
			if err != nil {
				return err
			}
			h = &held[W]{w: w, version: version, ckptID: uid, lineage: lineage}
			break
		}
		w, err := lc.rebuildLocked(id, version)
		if err != nil {
			return err
		}
		h = &held[W]{w: w, version: version}
	}
	h.inUse = true
	*b = StoreBase[W]{lc: lc, hooks: hooks, id: id, version: version, slot: sl, h: h, hit: hit, Delta: sl.deltaBuf[:0]}
	sl.deltaBuf = nil
	return nil
}

// rebuildLocked builds version (> 0) of id from its files: the newest
// snapshot at or below version, then the deltas after it.
func (lc *Lifecycle[W]) rebuildLocked(id ID, version int64) (W, error) {
	dir := id.Dir()
	var w W
	built := false
	fail := func(err error) (W, error) {
		if built {
			lc.report(id, lc.backend.Dispose(w))
		}
		var zero W
		return zero, fmt.Errorf("cannot load state version %d of %s: %w", version, dir, err)
	}
	files, err := ListStoreFiles(lc.fs, dir, lc.names)
	if err != nil {
		return fail(err)
	}
	from := files.NewestSnapshot(version)
	if from > 0 {
		name := path.Join(dir, lc.names.SnapshotName(from))
		data, err := lc.fs.ReadFile(name)
		if err != nil {
			return fail(err)
		}
		if w, err = lc.backend.ReadSnapshot(id, from, name, data); err != nil {
			return fail(err)
		}
	} else if w, err = lc.backend.Empty(id); err != nil {
		return fail(err)
	}
	built = true
	for v := from + 1; v <= version; v++ {
		name := path.Join(dir, lc.names.DeltaName(v))
		data, err := lc.fs.ReadFile(name)
		if err != nil {
			if fsys.IsNotExist(err) {
				return fail(&MissingFileError{Path: name, Version: version})
			}
			return fail(err)
		}
		if data, err = CheckTrailer(name, data, lc.names.DeltaKind, id, v); err != nil {
			return fail(err)
		}
		if err := lc.backend.ApplyDelta(w, name, data); err != nil {
			return fail(err)
		}
	}
	return w, nil
}

// maintainLocked writes newVersion's snapshot if due and deletes the files
// no retained version needs. files is the directory listing including the
// new delta.
func (lc *Lifecycle[W]) maintainLocked(id ID, w W, newVersion int64, files StoreFiles) {
	dir := id.Dir()
	lastSnapshot := files.NewestSnapshot(newVersion - 1)
	if newVersion-lastSnapshot >= int64(lc.opts.MinDeltasForSnapshot) {
		name := path.Join(dir, lc.names.SnapshotName(newVersion))
		data, err := lc.backend.Snapshot(w, id, newVersion, lc.stamp)
		if err == nil {
			err = lc.writeLocked(name, data)
		}
		if err != nil {
			lc.report(id, fmt.Errorf("write snapshot %s: %w", name, err))
		} else {
			files.Snapshots[newVersion] = true
		}
	} else {
		lc.report(id, lc.backend.Tidy(w))
	}

	minVersion := newVersion - int64(lc.opts.MinVersionsToRetain) + 1
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
			names = append(names, lc.names.DeltaName(v))
		}
	}
	for v := range files.Snapshots {
		if v < keepFrom {
			names = append(names, lc.names.SnapshotName(v))
		}
	}
	lc.removeOldLocked(id, names)
}

// removeOldLocked deletes the files names of id's folder, durably.
func (lc *Lifecycle[W]) removeOldLocked(id ID, names []string) {
	dir := id.Dir()
	if len(names) == 0 {
		return
	}
	slices.Sort(names) // a deterministic order of file operations
	removed := false
	for _, n := range names {
		name := path.Join(dir, n)
		if err := lc.removeLocked(name); err != nil {
			lc.report(id, fmt.Errorf("delete old state file %s: %w", name, err))
			continue
		}
		removed = true
	}
	if removed {
		// Make the deletions durable so that the files after a crash are
		// the same as without one.
		if err := lc.fs.SyncDir(dir); err != nil {
			lc.report(id, fmt.Errorf("sync %s after deleting old files: %w", dir, err))
		}
	}
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

// StoreBase is the part of a store the Lifecycle runs: its identity, its
// state (updating, then committed or aborted), its working copy, the
// records of its delta, Commit and Abort. A provider's store embeds it and
// adds Get, Put, Delete, Range and Metrics.
type StoreBase[W any] struct {
	lc      *Lifecycle[W]
	hooks   StoreHooks
	id      ID
	version int64
	slot    *slot[W]
	h       *held[W]
	hit     bool
	state   storeState

	// Delta holds the records of the delta this store commits (without
	// the end marker): every change appends to it with AppendPut or
	// AppendRemove.
	Delta []byte
}

// ID is the store's ID.
func (b *StoreBase[W]) ID() ID { return b.id }

// Version implements Store.
func (b *StoreBase[W]) Version() int64 { return b.version }

// Copy is the store's working copy; only while the store is updating.
func (b *StoreBase[W]) Copy() W { return b.h.w }

// Hit reports whether the store works on the provider's cached copy,
// which a rollback must restore.
func (b *StoreBase[W]) Hit() bool { return b.hit }

// Updating reports whether the store is still open for changes.
func (b *StoreBase[W]) Updating() bool { return b.state == updating }

// Done is the error of op on a store that is no longer updating.
func (b *StoreBase[W]) Done(op string) error {
	return fmt.Errorf("%s on state store %s version %d: %w (%s)", op, b.id.Dir(), b.version, ErrStoreDone, b.state)
}

// CacheCounts returns the cache hit and miss counts of the store's ID.
func (b *StoreBase[W]) CacheCounts() (hits, misses int64) {
	b.lc.mu.Lock()
	defer b.lc.mu.Unlock()
	return b.slot.hits, b.slot.misses
}

// Commit implements Store: it writes the delta of Version()+1, applies the
// changes (StoreHooks.ApplyLocked), makes the result the cached copy, then
// writes a snapshot and deletes old files if due. If the delta cannot be
// written the changes are rolled back and the store is aborted.
func (b *StoreBase[W]) Commit() (int64, error) {
	if b.state != updating {
		return 0, b.Done("Commit")
	}
	lc := b.lc
	lc.mu.Lock()
	defer lc.mu.Unlock()
	newVersion := b.version + 1
	dir := b.id.Dir()
	fail := func(err error) (int64, error) {
		b.abortLocked()
		return 0, fmt.Errorf("cannot commit state version %d of %s: %w", newVersion, dir, err)
	}
	var files StoreFiles
	var v2 *v2Commit
	var err error
	if lc.v2 != nil {
		// Format v2: a new id, so no earlier attempt's file is in the way.
		if v2, err = lc.prepareV2Locked(b.id, b.h); err != nil {
			return fail(err)
		}
		file := make([]byte, 0, len(v2.header)+len(b.Delta)+4+TrailerLen)
		file = AppendStampedTrailer(AppendEnd(append(append(file, v2.header...), b.Delta...)), lc.names.DeltaKind, b.id, newVersion, lc.stamp)
		if err := fsys.WriteAtomic(lc.fs, path.Join(dir, V2Name(newVersion, v2.id, lc.names.Delta)), file); err != nil {
			return fail(err)
		}
	} else {
		if files, err = ListStoreFiles(lc.fs, dir, lc.names); err != nil {
			return fail(err)
		}
		// A snapshot of newVersion can only be left by an earlier attempt at
		// this version (a replayed batch, or a query rewound to an older
		// version). It would shadow the delta we are about to write, so it goes
		// first, durably.
		if files.Snapshots[newVersion] {
			if err := lc.removeLocked(path.Join(dir, lc.names.SnapshotName(newVersion))); err != nil {
				return fail(err)
			}
			if err := lc.fs.SyncDir(dir); err != nil {
				return fail(err)
			}
			delete(files.Snapshots, newVersion)
		}
		b.Delta = AppendStampedTrailer(AppendEnd(b.Delta), lc.names.DeltaKind, b.id, newVersion, lc.stamp)
		if err := lc.writeLocked(path.Join(dir, lc.names.DeltaName(newVersion)), b.Delta); err != nil {
			return fail(err)
		}
		files.Deltas[newVersion] = true
	}

	h := b.h
	if err := b.hooks.ApplyLocked(); err != nil {
		// The version is durable, but the working copy may hold part of
		// it: drop the copy; the next Load rebuilds from the files.
		if b.slot.cache == h {
			b.slot.cache = nil
		}
		return fail(err)
	}
	h.version, h.inUse = newVersion, false
	if v2 != nil {
		h.ckptID, h.lineage = v2.id, v2.lineage
		lc.v2.committed[b.id] = LineageItem{newVersion, v2.id}
	}
	b.state = committed
	if !lc.closed {
		if old := b.slot.cache; old != h {
			b.slot.cache = h
			if old != nil && !old.inUse {
				lc.report(b.id, lc.backend.Dispose(old.w))
			}
		}
	}
	if v2 != nil {
		lc.maintainV2Locked(b.id, h.w, h)
	} else {
		lc.maintainLocked(b.id, h.w, newVersion, files)
	}
	b.hooks.FinishLocked(true)
	b.releaseLocked()
	return newVersion, nil
}

// Abort implements Store: it drops the changes. It is a no-op on a store
// already committed or aborted (the engine may abort unconditionally in
// cleanup, as Spark does).
func (b *StoreBase[W]) Abort() {
	if b.state != updating {
		return
	}
	b.lc.mu.Lock()
	defer b.lc.mu.Unlock()
	b.abortLocked()
}

func (b *StoreBase[W]) abortLocked() {
	b.hooks.RollbackLocked()
	b.state = aborted
	b.h.inUse = false
	b.hooks.FinishLocked(false)
	b.releaseLocked()
}

// releaseLocked disposes of the store's working copy unless it is the
// cached one, and hands the delta buffer back to the slot for the next
// batch of the same ID (the FS keeps no reference to it once WriteAtomic
// returned).
func (b *StoreBase[W]) releaseLocked() {
	if b.lc.closed || b.slot.cache != b.h {
		b.lc.report(b.id, b.lc.backend.Dispose(b.h.w))
	}
	b.h = nil
	if cap(b.Delta) <= maxKeptDeltaBytes {
		b.slot.deltaBuf = b.Delta[:0]
	}
	b.Delta = nil
}

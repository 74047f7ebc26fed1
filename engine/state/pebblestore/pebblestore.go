// Package pebblestore is the analogue of Spark's RocksDB state store provider
// with changelog checkpointing (spark-semantics.md §8.5), on Pebble v2.
//
// # Design
//
// As in Spark, the database a store works on is a local, disposable working
// copy; the checkpoint holds only what is needed to rebuild any retained
// version, and every byte of it goes through the engine's fsys.FS:
//
//	state/<op>/<partition>/<V>.changelog  the changes of version V (see files.go)
//	state/<op>/<partition>/<V>.zip        a Pebble checkpoint of version V, every
//	                                      MinDeltasForSnapshot versions
//
// So the simulator's crashable disk (fsys.Mem) covers all durable state of
// this provider, exactly as it covers the memory provider's, and no adapter
// from fsys.FS to Pebble's vfs.FS is needed: the working databases live in
// Pebble's in-memory vfs (Options.WorkDir empty) or in a private directory of
// the local disk (Options.WorkDir set), are opened without a WAL, and are
// thrown away on Close or when a run dies. Commit makes a version durable by
// writing its changelog with fsys.WriteAtomic before the version is applied
// to the working database.
//
// Versions, caching, replay, snapshots and retention are state.Lifecycle's,
// which the memory provider (state.MemoryProvider) runs too, so that
// results and every count-valued metric are identical. A working copy is a
// Pebble database: a cache hit reuses the database of the provider's
// latest commit for id. Changes are the changelog's records and a hash
// index over them (read-your-writes, pending.go); Commit applies them once
// the changelog is durable, as one ingested sstable or, when few, a batch
// through the memtable; Abort drops them, so the database is untouched by
// an aborted batch. A
// miss builds a fresh database from the newest <S>.zip with S <= V
// (unpacked into a new directory: opening a checkpoint read-write would
// change it) and the changelogs S+1..V.
//
// # Metrics
//
// NumKeys is exact: Put of an absent key adds one, Delete of a present key
// removes one (each write looks the key up, as Spark's RocksDB store does
// when it tracks the number of rows); the count is stored in each snapshot's
// metadata and recomputed while replaying changelogs.
//
// MemoryUsedBytes is, as for Spark's RocksDB provider, what the database
// holds in memory: bytes allocated to memtables plus the bytes in use in the
// block cache and the table (file) cache. It depends on Pebble's memtable
// growth and cache behaviour, so it is not comparable with the memory
// provider's estimate. (With an in-memory WorkDir the sstables are in RAM
// too; they are reported as rocksdbSstFileSize.)
//
// Custom metrics:
//   - loadedMapCacheHitCount, loadedMapCacheMissCount: as the memory
//     provider's (per store ID, for the provider's life), equal to them.
//   - stateOnCurrentVersionSizeBytes: Σ len(key)+len(value) over the
//     version's entries, the logical size of the state (exact and
//     deterministic; the memory provider adds its per-entry overhead).
//   - rocksdbSstFileSize: bytes of the working database's live sstables
//     (Spark's metric of the same name): the on-disk form of the flushed part
//     of the state.
//
// Deliberate differences from Spark's RocksDB provider, none visible in
// query results:
//   - Snapshots are written inside Commit, not uploaded in the background,
//     and each <V>.zip holds all of the version's sstables (Spark shares
//     sstables between snapshots under SSTs/ and zips only the rest).
//   - Changelogs are not LZ4-compressed.
//   - Spark's RocksDB provider reports rocksdb* metrics (latencies, counts of
//     RocksDB operations) instead of loadedMapCache*; this provider keeps
//     the HDFS provider's cache counters so that both stores report the same
//     count-valued metrics, and adds only byte figures.
//   - Range visits keys in byte order (the memory provider: its table's slot
//     order).
//   - Eviction (state.Expirer, expiry.go) visits only the entries that
//     expire, through an expiry index on the Go heap, where Spark's
//     removeKeysOlderThanWatermark iterates the whole database every batch;
//     the index's bytes (capped by Options.ExpiryIndexBudget, past which
//     eviction scans as Spark's does) are not in MemoryUsedBytes, as the
//     memory provider's index is not in its estimate. A changelog's remove
//     records are in (expiry, key) order, not key order.
//
// Keys: a store key k is kept in Pebble as the byte 0x01 followed by k,
// or, in a store laid out by expiry (state.ExpiryLayout, layout.go), as
// 0x02, the 8-byte bucket of its value's expiry and k, so that eviction
// drops whole buckets with DB.Excise instead of writing a tombstone per
// key; the bucket width is kept under the key 0x00 'w'. Pebble v2.1.7
// cannot flush a data block whose only key is the empty key in its
// columnar sstable format (a panic in colblk.PrefixBytesBuilder), and the
// Store contract allows the empty key; prefix compression makes the extra
// bytes nearly free on disk. Changelogs and Range see the keys as given.
//
// Determinism: Pebble runs with automatic compactions and table statistics
// disabled, no WAL and a quiet logger. Memtables still flush in the
// background when full, and a commit compacts the whole key range when level
// 0 gets deep (CompactL0Sublevels, see maybeCompact) or when the deletes and overwrites since
// the last compaction outnumber the live keys (and CompactGarbageMin):
// eviction without the layout leaves a tombstone per evicted key, and
// without compaction every later Range would step over all of them (with
// it, only the keys of the bucket the watermark splits leave one). None of this changes any result,
// only byte figures and speed. A snapshot's MANIFEST also records each
// ingested sstable's creation time (Pebble's wall clock, in seconds, not
// injectable), so two runs' <V>.zip files may differ in those bytes, never
// in their sizes or contents as read back.
package pebblestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/expiry"
)

// Defaults of Options.
const (
	DefaultMemTableSize       = 64 << 20
	DefaultCompactL0Sublevels = 8
	DefaultCompactGarbageMin  = 1 << 16
	DefaultIngestMinKeys      = 4096
	// DefaultExpiryIndexBudget (expiry.go) is 64 MiB.
)

// Options configure a Provider. Zero values mean the defaults.
type Options struct {
	// MinDeltasForSnapshot and MinVersionsToRetain: as in state.Options
	// (defaults state.DefaultMinDeltasForSnapshot and
	// state.DefaultMinVersionsToRetain).
	MinDeltasForSnapshot int
	MinVersionsToRetain  int
	// WorkDir is a directory of the local disk under which the provider
	// keeps its working databases (in a fresh subdirectory of its own,
	// removed by Close, and by the next provider to start if the process
	// dies first: see workdir.go). Empty: the working databases live in
	// memory.
	WorkDir string
	// MemTableSize is Pebble's steady-state memtable size (it starts at
	// 256 KiB and doubles up to this).
	MemTableSize uint64
	// CompactL0Sublevels: a commit that finds this many level-0 sublevels
	// compacts the database.
	CompactL0Sublevels int
	// CompactGarbageMin: a commit compacts when the deletes and overwrites
	// since the last compaction reach both this and the number of keys.
	CompactGarbageMin int
	// IngestMinKeys: a commit (or a changelog replayed) that changes at
	// least this many keys writes them as an sstable and ingests it;
	// fewer go through the memtable (see pending.go).
	IngestMinKeys int
	// ExpiryIndexBudget caps the heap bytes of a working database's expiry
	// index (expiry.go): 24 bytes plus the key per item (stale ones
	// included), so the 64 MiB default indexes a partition of about 1.5 M
	// keys of 20 bytes. The index is dropped when its items pass it; the
	// slack of its slices is kept within it (they are reallocated tightly
	// when their growth would pass it), except while one is being copied.
	// Past it, eviction scans the whole state every batch, as Spark's
	// RocksDB provider does, holding at most this many bytes of the
	// expired entries it found (about 40 plus the key each; if more
	// expired, it removes those and scans again). The batch's remove
	// records hold every expired key besides, until the commit; while a
	// build is abandoned part way, up to twice this is held.
	ExpiryIndexBudget int64
	// OnMaintenanceError receives errors of snapshots, deletion of old files,
	// compaction and disposal of working databases; they do not fail a
	// commit. It is called with the provider locked and must not call the
	// provider.
	OnMaintenanceError func(id state.ID, err error)
}

// lifecycle is the part of o that state.Lifecycle runs.
func (o Options) lifecycle() state.Options {
	return state.Options{MinDeltasForSnapshot: o.MinDeltasForSnapshot, MinVersionsToRetain: o.MinVersionsToRetain, OnMaintenanceError: o.OnMaintenanceError}
}

func (o Options) withDefaults() Options {
	lo := o.lifecycle().WithDefaults()
	o.MinDeltasForSnapshot, o.MinVersionsToRetain = lo.MinDeltasForSnapshot, lo.MinVersionsToRetain
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableSize
	}
	if o.CompactL0Sublevels <= 0 {
		o.CompactL0Sublevels = DefaultCompactL0Sublevels
	}
	if o.CompactGarbageMin <= 0 {
		o.CompactGarbageMin = DefaultCompactGarbageMin
	}
	if o.IngestMinKeys <= 0 {
		o.IngestMinKeys = DefaultIngestMinKeys
	}
	if o.ExpiryIndexBudget <= 0 {
		o.ExpiryIndexBudget = DefaultExpiryIndexBudget
	}
	return o
}

// Provider is the Pebble-backed state store provider. It may be used from
// several goroutines for different IDs; one store must be used by one
// goroutine at a time.
type Provider struct {
	lc       *state.Lifecycle[*workDB]
	opts     Options
	workRoot string   // the provider's own directory under WorkDir; "" in memory
	workLock *os.File // holds the flock on workRoot (see workdir.go)

	// Guarded by the lifecycle's lock: they change only in Backend methods
	// and in Close's finaliser.
	nextDB  int64
	openDBs int
	// excised counts the buckets its databases excised (tests: a run of
	// the twin test that never excised proves nothing of the excise).
	excised int64
}

// workDB is one working database: the working copy of a version.
type workDB struct {
	p   *Provider
	id  state.ID
	db  *pebble.DB
	fs  vfs.FS
	dir string

	numKeys, dataBytes int64
	garbage            int64 // deletes and overwrites since the last compaction
	closed             bool

	// absent answers "certainly not in the database" for PutIfAbsent, so
	// that the first copy of a key, the common row, needs no Pebble
	// lookup: every key Put into this database (or into a batch on it)
	// since the filter was built (from a scan, or from the expiry index:
	// see store.filter) is in it; deletes and aborted
	// batches leave keys behind, which only cost a lookup. nil until the
	// first PutIfAbsent, and on a database rebuilt from files.
	absent *keyFilter
	// pendingSlots is the slot array of the last store's pending index,
	// cleared: the next version's changes, likely as many, start in it
	// instead of growing one from empty.
	pendingSlots []pendingSlot
	ingests      int64 // sstables ingested, to name the next one
	// sortScratch: the slices of the last commit's sort, for the next.
	sortScratch sortScratch
	// idx indexes the entries by expiry for EvictUpTo (expiry.go); nil
	// until the first EvictUpTo, after an abort, and past the budget.
	idx *expiryIndex
	// idxRefusedAt is the number of keys at which the index last passed
	// its budget (0: it did not).
	idxRefusedAt int64
	// filtersFromIndex counts the key filters built from the index rather
	// than a scan (for the tests).
	filtersFromIndex int

	// The layout by expiry (layout.go). width: of a bucket, 0 while the
	// store was never told (state.ExpiryLayout); widthStored: it is in
	// the database (metaWidthKey). laid: a commit has laid the database
	// out (or it was built from a snapshot that was); until then every key
	// is in the 0x01 space. buckets: the live buckets, in order.
	// unbucketed bounds the keys in the 0x01 space while laid.
	width       int64
	widthStored bool
	expiryOf    func([]byte) (int64, bool)
	laid        bool
	buckets     []int64
	unbucketed  int64
	excised     int64 // buckets excised (for the tests)
	kbuf        []byte
	laidOps     []laidOp
	fresh       []int64     // the buckets the commit running made live
	hints       []evictHint // the last store's, for the next
}

// New returns a provider that keeps its checkpoint files in fs.
func New(fs fsys.FS, opts Options) (*Provider, error) {
	p := &Provider{opts: opts.withDefaults()}
	if p.opts.WorkDir != "" {
		dir, lock, err := claimWorkRoot(p.opts.WorkDir)
		if err != nil {
			return nil, fmt.Errorf("pebble state store: %w", err)
		}
		p.workRoot, p.workLock = dir, lock
	}
	p.lc = state.NewLifecycle(fs, p.opts.lifecycle(), fileNames, backend{p})
	return p, nil
}

// Options returns the options in effect (defaults filled in).
func (p *Provider) Options() Options { return p.opts }

// SetBatchStamp implements state.Stamper.
func (p *Provider) SetBatchStamp(s state.BatchStamp) { p.lc.SetBatchStamp(s) }

// EnableFormatV2 implements state.CheckpointIDer: files named
// <V>_<id>.changelog and <V>_<id>.zip, a lineage in each changelog
// (Spark's checkpointFormatVersion=2, state/formatv2.go).
func (p *Provider) EnableFormatV2(newID func() string) { p.lc.EnableFormatV2(newID) }

// SetLoadIDs implements state.CheckpointIDer.
func (p *Provider) SetLoadIDs(version int64, ids map[state.ID]string) { p.lc.SetLoadIDs(version, ids) }

// CommittedIDs implements state.CheckpointIDer.
func (p *Provider) CommittedIDs(version int64) map[state.ID]string { return p.lc.CommittedIDs(version) }

// Close closes the working databases not in use (those of open stores close
// when their store ends) and makes Load fail.
func (p *Provider) Close() error { return p.lc.Close(p.removeRootLocked) }

// removeRootLocked removes the working directory once the provider is
// closed and its last database is gone.
func (p *Provider) removeRootLocked() error {
	if p.lc.ClosedLocked() && p.openDBs == 0 && p.workRoot != "" {
		root := p.workRoot
		p.workRoot = ""
		err := os.RemoveAll(root)
		p.workLock.Close() // after the removal: until then the folder is ours
		return err
	}
	return nil
}

// backend plugs the working databases into the lifecycle.
type backend struct{ p *Provider }

func (b backend) Empty(id state.ID) (*workDB, error) { return b.p.newDB(id, nil) }

func (b backend) ReadSnapshot(id state.ID, version int64, name string, data []byte) (*workDB, error) {
	meta, files, err := decodeSnapshot(name, data, id, version)
	if err != nil {
		return nil, err
	}
	w, err := b.p.newDB(id, files)
	if err != nil {
		return nil, fmt.Errorf("%w %s: open the checkpoint: %v", state.ErrCorrupt, name, err)
	}
	w.numKeys, w.dataBytes = meta.NumKeys, meta.DataBytes
	if err := w.readLayout(); err != nil {
		w.close()
		return nil, fmt.Errorf("%w %s: the working database's layout: %v", state.ErrCorrupt, name, err)
	}
	return w, nil
}

func (backend) ApplyDelta(w *workDB, name string, records []byte) error {
	return w.replay(name, records)
}

func (backend) Snapshot(w *workDB, _ state.ID, version int64, _ state.BatchStamp) ([]byte, error) {
	return w.snapshot(version)
}

func (backend) Tidy(w *workDB) error    { return w.maybeCompact() }
func (backend) Dispose(w *workDB) error { return w.close() }

// quietLogger drops Pebble's informational and error logs (errors reach us
// as return values); Fatalf still stops.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

func (p *Provider) pebbleOptions(fs vfs.FS) *pebble.Options {
	o := &pebble.Options{
		FS:                          fs,
		DisableWAL:                  true, // the changelogs are the log
		DisableAutomaticCompactions: true,
		DisableTableStats:           true,
		Logger:                      quietLogger{},
		MemTableSize:                p.opts.MemTableSize,
		FormatMajorVersion:          pebble.FormatNewest,
		// Without automatic compactions, a stall on level 0 would never
		// clear; commits compact instead (CompactL0Sublevels).
		L0CompactionThreshold: 1000,
		L0StopWritesThreshold: 1000,
	}
	// Most lookups are of new keys: a Bloom filter answers them without
	// reading data blocks.
	o.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	for i := range o.Levels {
		o.Levels[i].BlockSize = blockSize
	}
	return o
}

// newDB opens a fresh working database holding files (a checkpoint's
// files, or none for an empty database). Called with the lifecycle's lock held.
func (p *Provider) newDB(id state.ID, files []snapshotFile) (*workDB, error) {
	var fs vfs.FS
	dir := "db"
	if p.workRoot == "" {
		fs = vfs.NewMem()
	} else {
		fs = noSyncFS{vfs.Default}
		p.nextDB++
		dir = filepath.Join(p.workRoot, strconv.FormatInt(p.nextDB, 10))
	}
	cleanup := func(err error) (*workDB, error) {
		if p.workRoot != "" {
			_ = fs.RemoveAll(dir)
		}
		return nil, err
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return cleanup(err)
	}
	for _, f := range files {
		fh, err := fs.Create(fs.PathJoin(dir, f.name), vfs.WriteCategoryUnspecified)
		if err != nil {
			return cleanup(err)
		}
		_, err = fh.Write(f.data)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return cleanup(err)
		}
	}
	db, err := pebble.Open(dir, p.pebbleOptions(fs))
	if err != nil {
		return cleanup(err)
	}
	p.openDBs++
	return &workDB{p: p, id: id, db: db, fs: fs, dir: dir}, nil
}

// close disposes of the database. Called with the lifecycle's lock held.
func (w *workDB) close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.db.Close()
	if w.p.workRoot != "" {
		err = errors.Join(err, w.fs.RemoveAll(w.dir))
	}
	w.p.openDBs--
	err = errors.Join(err, w.p.removeRootLocked())
	if err != nil {
		return fmt.Errorf("close working database of %s: %w", w.id.Dir(), err)
	}
	return nil
}

// figures returns the byte metrics of the database: memory (memtables,
// block and file caches) and live sstables.
func (w *workDB) figures() (mem, sst int64) {
	if w.closed {
		return 0, 0
	}
	m := w.db.Metrics()
	return int64(m.MemTable.Size) + m.BlockCache.Size + m.FileCache.Size, m.Total().TablesSize
}

// maybeCompact compacts the whole key range when level 0 is deep or the
// garbage outweighs the live keys (see the package comment).
//
// Level 0 counts as deep at CompactL0Sublevels sublevels only once it also
// holds a quarter of the bytes below it, or at four times as many
// sublevels. Every big commit is an ingested sstable, one sublevel, and
// compacting at a fixed depth rewrites the whole database every few
// commits. The ratio makes each compaction grow the base by a quarter at
// least, so while the base is under about 4 x 4 x CompactL0Sublevels
// commits' worth of keys a key is rewritten about five times in all.
// Beyond that the sublevel cap decides, which bounds the cost of a lookup
// (a probe per sublevel) at the price of a full rewrite every
// 4 x CompactL0Sublevels commits, quadratic in the run's length again:
// what Pebble's own leveled compactions avoid, which stay off here for
// deterministic byte figures (see the package comment).
func (w *workDB) maybeCompact() error {
	m := w.db.Metrics()
	l0 := m.Levels[0]
	rest := m.Total().TablesSize - l0.TablesSize
	sub := int(l0.Sublevels)
	deep := sub >= w.p.opts.CompactL0Sublevels && (4*l0.TablesSize >= rest || sub >= 4*w.p.opts.CompactL0Sublevels)
	garbage := w.garbage >= max(w.numKeys, int64(w.p.opts.CompactGarbageMin))
	if !deep && !garbage {
		return nil
	}
	if garbage {
		// Deleted entries still in the memtable can only go once flushed.
		if err := w.db.Flush(); err != nil {
			return fmt.Errorf("flush working database of %s: %w", w.id.Dir(), err)
		}
	}
	if err := w.db.Compact(context.Background(), allKeys.LowerBound, allKeys.UpperBound, false); err != nil {
		return fmt.Errorf("compact working database of %s: %w", w.id.Dir(), err)
	}
	w.garbage = 0
	return nil
}

// snapshot flushes the database and returns a zip of a Pebble checkpoint
// of it, stamped as version.
func (w *workDB) snapshot(version int64) ([]byte, error) {
	if err := w.db.Flush(); err != nil {
		return nil, err
	}
	if err := w.maybeCompact(); err != nil {
		return nil, err
	}
	ck := w.dir + "-checkpoint"
	_ = w.fs.RemoveAll(ck)
	if err := w.db.Checkpoint(ck); err != nil {
		return nil, err
	}
	defer w.fs.RemoveAll(ck)
	names, err := w.fs.List(ck)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	files := make([]snapshotFile, 0, len(names))
	for _, n := range names {
		f, err := w.fs.Open(w.fs.PathJoin(ck, n))
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		files = append(files, snapshotFile{name: n, data: data})
	}
	meta := snapshotMeta{NumKeys: w.numKeys, DataBytes: w.dataBytes}
	meta.Operator, meta.Partition, meta.Version = stamp(w.id, version)
	return encodeSnapshot(meta, files)
}

// keyPrefix starts every key in Pebble (see the package comment).
const keyPrefix = 0x01

// userKeys bounds iteration to the prefixed keys.
var userKeys = &pebble.IterOptions{LowerBound: []byte{keyPrefix}, UpperBound: []byte{keyPrefix + 1}}

func appendKey(buf, key []byte) []byte { return append(append(buf[:0], keyPrefix), key...) }

// valueLen looks key up in r (a batch or the database) and returns the
// length of its value, copying nothing.
func valueLen(r pebble.Reader, key []byte) (int, bool, error) {
	v, closer, err := r.Get(key)
	return lenAndClose(v, closer, err)
}

// lenAndClose is the length of the value a lookup returned (found false
// for pebble.ErrNotFound), its closer closed.
func lenAndClose(v []byte, closer io.Closer, err error) (int, bool, error) {
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	n := len(v)
	closer.Close()
	return n, true, nil
}

// replay applies one changelog, keeping the key count and data size. Its
// records index themselves, as a store's do (pending.go).
func (w *workDB) replay(name string, data []byte) error {
	w.idx = nil // built by the next EvictUpTo, from a scan
	// A laid-out database (layout.go) looks for a key it does not hold in
	// every bucket: replaying three changelogs of 25 k new keys each onto
	// a snapshot of 14 buckets took a second, against 0.18 s without the
	// layout. So it keeps a key filter, built by one scan and then by
	// every key replayed, which answers most of those lookups, and stays
	// the database's (workDB.absent) for the PutIfAbsent that follow.
	var f *keyFilter
	if w.laid && len(w.buckets) > 0 {
		if f = w.absent; f == nil || f.full() {
			f = newKeyFilter(w.numKeys)
			if err := w.scanInto(f); err != nil {
				return err
			}
			f.added = uint(w.numKeys)
		}
	}
	w.absent = nil // else built by the next PutIfAbsent, from a scan
	var idx pendingIndex
	keys, size, garbage := w.numKeys, w.dataBytes, w.garbage
	off := 0 // of the record being walked: records follow each other from 0
	// The places where the removed keys were found, for the commit
	// (layout.go), which would otherwise look for them again.
	found := commitEvictions{exact: true}
	// existing returns the length of k's value and, if the database holds
	// it and this changelog did not change it yet, its place (else noLoc).
	existing := func(k []byte, h uint64) (int, bool, int64, error) {
		if v, removed, ok := idx.lookup(data, k, h); ok {
			return len(v), !removed, noLoc, nil
		}
		if f != nil && !f.mayHave(h) {
			return 0, false, noLoc, nil
		}
		v, closer, loc, err := w.lookup((*pebble.DB).Get, k, false)
		if errors.Is(err, pebble.ErrNotFound) {
			return 0, false, noLoc, nil
		}
		if err != nil {
			return 0, false, noLoc, err
		}
		n := len(v)
		closer.Close()
		return n, true, loc, nil
	}
	err := state.WalkRecords(name, data,
		func(k, v []byte) error {
			rec := off
			off += 8 + len(k) + len(v)
			h := keyHash(k)
			old, existed, _, err := existing(k, h)
			if err != nil {
				return err
			}
			inDB, err := idx.set(data[:off], k, h, rec, existed)
			if err != nil {
				return err
			}
			if f != nil {
				f.add(h)
			}
			if existed {
				size += int64(len(v) - old)
			} else {
				keys++
				size += int64(len(k) + len(v))
			}
			if existed && inDB {
				garbage++
			}
			return nil
		},
		func(k []byte) error {
			rec := off
			off += 8 + len(k)
			h := keyHash(k)
			old, existed, loc, err := existing(k, h)
			if err != nil || !existed {
				return err
			}
			inDB, err := idx.set(data[:off], k, h, rec, true)
			if err != nil {
				return err
			}
			if loc != noLoc && w.laid {
				found.hints = append(found.hints, evictHint{off: uint32(rec), b: loc})
			}
			keys--
			size -= int64(len(k) + old)
			if inDB {
				garbage++
			}
			return nil
		})
	if err != nil {
		return err
	}
	laid, err := w.applyPending(data, &idx, &found)
	if err != nil {
		return err
	}
	w.numKeys, w.dataBytes = keys, size
	w.absent = f
	if !laid { // a laid-out commit counts the tombstones it writes
		w.garbage = garbage
	}
	return nil
}

// Load opens store id at version; see state.Lifecycle for caching.
func (p *Provider) Load(id state.ID, version int64) (state.Store, error) {
	s := &store{}
	if err := p.lc.Open(id, version, &s.StoreBase, s); err != nil {
		return nil, err
	}
	w := s.Copy()
	s.w = w
	s.pending.slots, w.pendingSlots = w.pendingSlots, nil
	s.ev.hints, w.hints = w.hints[:0], nil
	s.numKeys, s.dataBytes = w.numKeys, w.dataBytes
	s.loadedKeys, s.loadedBytes = w.numKeys, w.dataBytes
	return s, nil
}

// store is a Store of the Provider.
type store struct {
	state.StoreBase[*workDB] // Delta: the records of <version+1>.changelog

	w *workDB
	// pending maps every key changed in this version to its latest record
	// in Delta: read-your-writes over the untouched working database.
	pending pendingIndex

	numKeys, dataBytes int64
	garbage            int64 // deletes and overwrites

	getBuf []byte // Get's result
	// lastMiss is the last key Get did not find, while it is still absent:
	// the Put that follows (the dedup operator's pattern) needs no lookup.
	lastMiss   []byte
	lastMissOK bool
	ranges     []*rangeState // the Range calls in progress, innermost last
	// abortInRange: fn called Abort inside Range (see Abort).
	abortInRange bool
	// ev: this version's evictions, for a laid-out commit (layout.go).
	ev commitEvictions
	// dueScans counts the scans of index-less evictions (expiry.go), each
	// removing at most the budget's worth of entries (for the tests).
	dueScans int

	loadedKeys, loadedBytes int64 // figures at Load, for Metrics after Abort
	final                   finalFigures
}

type finalFigures struct {
	keys, bytes, mem, sst int64
}

// rangeState is one Range in progress: the entry being visited, while
// it is unchanged (live), so that a Put or Delete of it needs no lookup.
type rangeState struct {
	key, value []byte
	live       bool
}

func (s *store) fail(op string, err error) error {
	return fmt.Errorf("%s on state store %s version %d: %w", op, s.ID().Dir(), s.Version(), err)
}

// Get returns the stored value. The slice belongs to the store: the caller
// must not modify it, and it is valid until the next call on the store.
func (s *store) Get(key []byte) ([]byte, bool, error) {
	if !s.Updating() {
		return nil, false, s.Done("Get")
	}
	return s.get(key, keyHash(key))
}

func (s *store) get(key []byte, h uint64) ([]byte, bool, error) {
	if v, removed, ok := s.pending.lookup(s.Delta, key, h); ok {
		if removed {
			s.noteMiss(key)
			return nil, false, nil
		}
		s.getBuf = append(s.getBuf[:0], v...)
		return s.getBuf, true, nil
	}
	v, closer, _, err := s.w.lookup((*pebble.DB).Get, key, true)
	if errors.Is(err, pebble.ErrNotFound) {
		s.noteMiss(key)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.fail("Get", err)
	}
	s.getBuf = append(s.getBuf[:0], v...)
	closer.Close()
	return s.getBuf, true, nil
}

func (s *store) noteMiss(key []byte) {
	s.lastMiss = append(s.lastMiss[:0], key...)
	s.lastMissOK = true
}

// current reports whether key is the entry being visited by the innermost
// Range, unchanged since, and returns its value length.
func (s *store) current(key []byte) (int, bool) {
	if n := len(s.ranges); n > 0 {
		r := s.ranges[n-1]
		if r.live && bytes.Equal(key, r.key) {
			return len(r.value), true
		}
	}
	return 0, false
}

// existing returns whether key (of hash h) is present and its value's
// length.
func (s *store) existing(key []byte, h uint64) (int, bool, error) {
	if s.lastMissOK && bytes.Equal(key, s.lastMiss) {
		return 0, false, nil
	}
	if n, ok := s.current(key); ok {
		return n, true, nil
	}
	if v, removed, ok := s.pending.lookup(s.Delta, key, h); ok {
		return len(v), !removed, nil
	}
	// The key filter holds every key of the database: a laid-out one
	// would look for an absent key in every bucket.
	if f := s.w.absent; f != nil && !f.mayHave(h) {
		return 0, false, nil
	}
	return s.w.valueLen(key)
}

// changed records that key now has the record at off of Delta, the last
// one; inDB: whether the key was present before this change, which for its
// first change in the version is whether the database holds it. It
// returns whether the database holds the key. On error the record is cut
// off again, so that Delta and the index agree.
func (s *store) changed(key []byte, h uint64, off int, inDB bool) (bool, error) {
	return s.changedExcised(key, h, off, inDB, false)
}

// changedExcised is changed, setting the slot's excised bit if excised
// (pendingSlot).
func (s *store) changedExcised(key []byte, h uint64, off int, inDB, excised bool) (bool, error) {
	inDB, err := s.pending.setExcised(s.Delta, key, h, off, inDB, excised)
	if err != nil {
		s.Delta = s.Delta[:off]
		return false, err
	}
	if s.lastMissOK && bytes.Equal(key, s.lastMiss) {
		s.lastMissOK = false
	}
	for _, r := range s.ranges {
		if r.live && bytes.Equal(key, r.key) {
			r.live = false
		}
	}
	return inDB, nil
}

// Put stores key and value.
func (s *store) Put(key, value []byte) error {
	if !s.Updating() {
		return s.Done("Put")
	}
	return s.put(key, value, keyHash(key))
}

func (s *store) put(key, value []byte, h uint64) error {
	old, existed, err := s.existing(key, h)
	if err != nil {
		return s.fail("Put", err)
	}
	off := len(s.Delta)
	s.Delta = state.AppendPut(s.Delta, key, value)
	inDB, err := s.changed(key, h, off, existed)
	if err != nil {
		return s.fail("Put", err)
	}
	if f := s.w.absent; f != nil {
		f.add(h)
	}
	s.indexPut(key, value, existed)
	if existed {
		s.dataBytes += int64(len(value) - old)
		if inDB { // an overwrite of a key only this version wrote costs nothing
			s.garbage++
		}
	} else {
		s.numKeys++
		s.dataBytes += int64(len(key) + len(value))
	}
	return nil
}

// PutIfAbsent implements state.Inserter: when the key filter says key is
// absent, the key is set without any lookup; otherwise it is Get and Put.
// The key count stays exact either way.
func (s *store) PutIfAbsent(key, value []byte) (bool, error) {
	if !s.Updating() {
		return false, s.Done("PutIfAbsent")
	}
	f, err := s.filter()
	if err != nil {
		return false, s.fail("PutIfAbsent", err)
	}
	h := keyHash(key)
	if f.mayHave(h) {
		if _, found, err := s.get(key, h); err != nil || found {
			return false, err
		}
		return true, s.put(key, value, h) // get left key as lastMiss: no second lookup
	}
	off := len(s.Delta)
	s.Delta = state.AppendPut(s.Delta, key, value)
	if _, err := s.changed(key, h, off, false); err != nil { // never added: not in the database
		return false, s.fail("PutIfAbsent", err)
	}
	f.add(h)
	s.numKeys++
	s.dataBytes += int64(len(key) + len(value))
	s.indexPut(key, value, false)
	return true, nil
}

// filter returns the working database's key filter, built when there is
// none or it is full from the database's keys and this version's changes:
// a key this version deleted is still in the database, and must stay in
// the filter should the version abort.
//
// The database's keys come from the expiry index when its items name
// every entry (no stale item, no entry without one: expiryIndex.changed
// and unindexed are 0), else from a scan. Under a watermark the scan
// steps over the tombstone of every key evicted since the last
// compaction, and was a tenth of the 1 M-key EventTimeKey benchmark's
// store time; the index holds the live keys alone. An entry the index no
// longer names, popped by this version's eviction, is among the changes.
func (s *store) filter() (*keyFilter, error) {
	w := s.w
	if w.absent != nil && !w.absent.full() {
		return w.absent, nil
	}
	f := newKeyFilter(max(s.numKeys, w.numKeys))
	if e := w.idx; e != nil && e.changed == 0 && e.unindexed == 0 {
		e.x.Each(func(it *expiry.Item) { f.add(keyHash(it.Key(e.arena))) })
		w.filtersFromIndex++
	} else if err := w.scanInto(f); err != nil {
		return nil, err
	}
	for _, sl := range s.pending.slots {
		if sl.off1 != 0 {
			k, _, _ := recordAt(s.Delta, sl.off1-1)
			f.add(keyHash(k))
		}
	}
	// The scans added some keys twice: count them once, so that full()
	// reports the filter's design capacity reached.
	f.added = uint(max(s.numKeys, w.numKeys))
	w.absent = f
	return f, nil
}

// scanInto adds every key of the database to f.
func (w *workDB) scanInto(f *keyFilter) error {
	it, err := w.db.NewIter(allKeys) // every place: the order does not matter
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		_, k := splitKey(it.Key())
		f.add(keyHash(k))
	}
	return it.Close()
}

// Delete removes key; deleting an absent key changes nothing and writes
// nothing to the changelog.
func (s *store) Delete(key []byte) error {
	if !s.Updating() {
		return s.Done("Delete")
	}
	h := keyHash(key)
	old, existed, err := s.existing(key, h)
	if err != nil {
		return s.fail("Delete", err)
	}
	if !existed {
		return nil
	}
	if e := s.w.idx; e != nil {
		e.changed++ // its item is stale
	}
	return s.remove(key, h, old, "Delete", 0, false)
}

// remove deletes key (hash h), which is present with a value of old
// bytes; evicted: by EvictUpTo, its value the database's (unchanged in
// this version) with expiry at, which a laid-out commit finds its bucket
// by.
func (s *store) remove(key []byte, h uint64, old int, op string, at int64, evicted bool) error {
	off := len(s.Delta)
	s.Delta = state.AppendRemove(s.Delta, key)
	// Where the key is, for a laid-out commit (layout.go): a bucket before
	// the cut of this eviction's limit is excised whole (the cut only
	// moves up within a version); the split bucket's keys get a hint.
	evicted = evicted && s.w.width > 0
	b := int64(0)
	if evicted {
		b = s.w.bucketOf(at)
	}
	excised := evicted && b < s.ev.cutNow
	inDB, err := s.changedExcised(key, h, off, true, excised)
	if err != nil {
		return s.fail(op, err)
	}
	if evicted && !excised && inDB {
		s.ev.hints = append(s.ev.hints, evictHint{off: uint32(off), b: b})
	}
	s.numKeys--
	if inDB { // a key only this version wrote leaves no tombstone
		s.garbage++
	}
	s.dataBytes -= int64(len(key) + old)
	return nil
}

// Range calls fn for every entry in key order until fn returns false. fn
// may Delete the current key or any other (a deleted entry not yet reached
// is not visited, a changed one is visited with its new value); an entry
// Put during Range may or may not be visited. key and value are valid only
// during the call and must not be modified.
//
// It merges the working database, which no change of this version has
// touched, with this version's changed keys sorted at the start; every key
// reached is looked up among the changes first, so that changes made by fn
// are seen.
func (s *store) Range(fn func(key, value []byte) bool) error {
	if !s.Updating() {
		return s.Done("Range")
	}
	var offs []uint32
	if s.pending.n > 0 {
		offs = s.pending.sorted(s.Delta)
	}
	it, err := s.w.newUserIter()
	if err != nil {
		return s.fail("Range", err)
	}
	r := &rangeState{}
	s.ranges = append(s.ranges, r)
	defer func() { s.ranges = s.ranges[:len(s.ranges)-1] }()
	inDB := it.First()
	for next := 0; inDB || next < len(offs); {
		var k, pk []byte
		inPending := next < len(offs)
		if inPending {
			pk, _, _ = recordAt(s.Delta, offs[next])
		}
		var c int // < 0: the database's key comes first, > 0: the change's
		switch {
		case !inDB:
			c = 1
		case !inPending:
			c = -1
		default:
			c = bytes.Compare(it.Key(), pk)
		}
		if c <= 0 {
			k = it.Key()
		} else {
			k = pk
		}
		if c >= 0 {
			next++
		}
		// The key's current entry: its latest change if it has one (a
		// change's key always has), else the database's. Without changes
		// (a no-data batch's eviction) no key is hashed.
		var v []byte
		visit, changed := true, false
		if s.pending.n > 0 {
			var cur []byte
			var removed bool
			if cur, removed, changed = s.pending.lookup(s.Delta, k, keyHash(k)); changed {
				v, visit = cur, !removed
			}
		}
		if !changed {
			if c > 0 {
				it.Close()
				return s.fail("Range", fmt.Errorf("changed key %q is not in the pending index", k))
			}
			if v, err = it.ValueAndErr(); err != nil {
				it.Close()
				return s.fail("Range", err)
			}
		}
		cont := true
		if visit {
			r.key, r.value, r.live = k, v, true
			cont = fn(k, v)
			r.live = false
		}
		if !cont || s.abortInRange {
			break
		}
		if c <= 0 {
			inDB = it.Next()
		}
	}
	if err := it.Close(); err != nil {
		return s.fail("Range", err)
	}
	if s.abortInRange && len(s.ranges) == 1 {
		s.abortInRange = false
		s.StoreBase.Abort()
		return s.Done("Range")
	}
	return nil
}

// Abort drops the version's changes (state.StoreBase.Abort). Called by fn
// inside Range, it takes effect when the outermost Range returns, which
// visits nothing more: the iterator over the working database must be
// closed before an abort may dispose of the database.
func (s *store) Abort() {
	if len(s.ranges) > 0 {
		s.abortInRange = true
		return
	}
	s.StoreBase.Abort()
}

// Commit writes <Version()+1>.changelog, applies the batch to the working
// database and makes that the cached one (state.StoreBase.Commit). It
// refuses to run inside Range.
func (s *store) Commit() (int64, error) {
	if !s.Updating() {
		return 0, s.Done("Commit")
	}
	if len(s.ranges) > 0 {
		return 0, s.fail("Commit", errors.New("commit inside Range"))
	}
	return s.StoreBase.Commit()
}

// ApplyLocked implements state.StoreHooks: the version's changes go into
// the working database.
func (s *store) ApplyLocked() error {
	w := s.w
	laid, err := w.applyPending(s.Delta, &s.pending, &s.ev)
	if err != nil {
		return fmt.Errorf("apply to the working database: %w", err)
	}
	s.pending.reset()
	w.pendingSlots, s.pending.slots = s.pending.slots, nil
	w.hints, s.ev.hints = s.ev.hints[:0], nil
	w.numKeys, w.dataBytes = s.numKeys, s.dataBytes
	if !laid { // a laid-out commit counts the tombstones it writes
		w.garbage += s.garbage
	}
	return nil
}

// RollbackLocked implements state.StoreHooks: the changes are dropped, the
// database never saw them. The expiry index is dropped too: the batch may
// have popped items of entries the database still holds.
func (s *store) RollbackLocked() {
	s.w.idx = nil
	s.pending.reset()
	s.w.pendingSlots, s.pending.slots = s.pending.slots, nil
	s.w.hints, s.ev.hints = s.ev.hints[:0], nil
}

// FinishLocked implements state.StoreHooks.
func (s *store) FinishLocked(committed bool) {
	if committed {
		s.final.keys, s.final.bytes = s.numKeys, s.dataBytes
	} else {
		s.final.keys, s.final.bytes = s.loadedKeys, s.loadedBytes
	}
	s.final.mem, s.final.sst = s.w.figures()
	s.w = nil
}

// Metrics: see the package comment. After Commit they describe the
// committed version; after Abort, the version that was loaded.
func (s *store) Metrics() state.Metrics {
	f := s.final
	if s.Updating() {
		f.keys, f.bytes = s.numKeys, s.dataBytes
		f.mem, f.sst = s.w.figures()
	}
	hits, misses := s.CacheCounts()
	return state.Metrics{
		NumKeys:         f.keys,
		MemoryUsedBytes: f.mem,
		Custom: map[string]int64{
			"loadedMapCacheHitCount":         hits,
			"loadedMapCacheMissCount":        misses,
			"stateOnCurrentVersionSizeBytes": f.bytes,
			"rocksdbSstFileSize":             f.sst,
		},
	}
}

// ByteMetrics are the custom metrics of this provider that count bytes and
// so differ from the memory provider's by design.
var ByteMetrics = []string{"stateOnCurrentVersionSizeBytes", "rocksdbSstFileSize"}

var (
	_ state.Inserter         = (*store)(nil)
	_ state.Provider         = (*Provider)(nil)
	_ state.Stamper          = (*Provider)(nil)
	_ state.Backend[*workDB] = backend{}
)

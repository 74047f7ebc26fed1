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
// Versions, caching and replay follow the memory provider (state.MemoryProvider)
// rule for rule, so that results and every count-valued metric are
// identical:
//   - Load(id, V) of the version the provider's working database for id holds
//     (its latest commit) reuses that database: a cache hit
//     (loadedMapCacheHitCount). Changes go to an indexed pebble.Batch
//     (read-your-writes); Commit applies it, Abort discards it, so the
//     database is untouched by an aborted batch.
//   - Any other version (a restart, an older version, a second concurrent
//     open) is a miss (loadedMapCacheMissCount): a fresh working database is
//     built from the newest <S>.zip with S <= V (unpacked into a new
//     directory: opening a checkpoint read-write would change it) and the
//     changelogs S+1..V. A changelog or snapshot above V, such as the
//     <N+1>.changelog of a failed attempt at batch N, is ignored, and the
//     replayed batch's commit overwrites it. The rebuilt database becomes the
//     cached one when its store commits.
//   - Version 0 is an empty database and counts as neither.
//   - A commit of V deletes a stale <V>.zip first, writes <V>.changelog,
//     then, synchronously: a snapshot when V - (newest snapshot below V) >=
//     MinDeltasForSnapshot, and deletion of the files no version in the last
//     MinVersionsToRetain needs. Maintenance errors are reported to
//     OnMaintenanceError and do not fail the commit.
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
//   - Range visits keys in byte order (the memory provider: Go map order).
//
// Keys: a store key k is kept in Pebble as the byte 0x01 followed by k.
// Pebble v2.1.7 cannot flush a data block whose only key is the empty key
// in its columnar sstable format (a panic in colblk.PrefixBytesBuilder),
// and the Store contract allows the empty key; prefix compression makes
// the extra byte free on disk. Changelogs and Range see the keys as given.
//
// Determinism: Pebble runs with automatic compactions and table statistics
// disabled, no WAL and a quiet logger. Memtables still flush in the
// background when full, and a commit compacts the whole key range when level
// 0 gets deep (CompactL0Sublevels) or when the deletes and overwrites since
// the last compaction outnumber the live keys (and CompactGarbageMin):
// eviction leaves a tombstone per evicted key, and without compaction every
// later Range would step over all of them. None of this changes any result,
// only byte figures and speed.
package pebblestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
)

// Defaults of Options.
const (
	DefaultMinDeltasForSnapshot = state.DefaultMinDeltasForSnapshot
	DefaultMinVersionsToRetain  = state.DefaultMinVersionsToRetain
	DefaultMemTableSize         = 64 << 20
	DefaultCompactL0Sublevels   = 8
	DefaultCompactGarbageMin    = 1 << 16
)

// Options configure a Provider. Zero values mean the defaults.
type Options struct {
	// MinDeltasForSnapshot and MinVersionsToRetain: as in state.MemoryOptions.
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
	// OnMaintenanceError receives errors of snapshots, deletion of old files
	// and disposal of working databases; they do not fail a commit. It is
	// called with the provider locked and must not call the provider.
	OnMaintenanceError func(id state.ID, err error)
}

func (o Options) withDefaults() Options {
	if o.MinDeltasForSnapshot <= 0 {
		o.MinDeltasForSnapshot = DefaultMinDeltasForSnapshot
	}
	if o.MinVersionsToRetain <= 0 {
		o.MinVersionsToRetain = DefaultMinVersionsToRetain
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableSize
	}
	if o.CompactL0Sublevels <= 0 {
		o.CompactL0Sublevels = DefaultCompactL0Sublevels
	}
	if o.CompactGarbageMin <= 0 {
		o.CompactGarbageMin = DefaultCompactGarbageMin
	}
	return o
}

// Provider is the Pebble-backed state store provider. It may be used from
// several goroutines for different IDs; one store must be used by one
// goroutine at a time.
type Provider struct {
	fs       fsys.FS
	opts     Options
	workRoot string   // the provider's own directory under WorkDir; "" in memory
	workLock *os.File // holds the flock on workRoot (see workdir.go)

	mu      sync.Mutex
	slots   map[state.ID]*slot
	closed  bool
	nextDB  int64
	openDBs int
	stamp   state.BatchStamp // written into the changelogs of the next commits
}

// SetBatchStamp implements state.Stamper.
func (p *Provider) SetBatchStamp(s state.BatchStamp) {
	p.mu.Lock()
	p.stamp = s
	p.mu.Unlock()
}

// slot is the provider's memory of one store ID.
type slot struct {
	cache        *workDB // holds the latest committed version; nil before the first commit
	hits, misses int64
	changelogBuf []byte // reused by the next store of the ID
}

const maxKeptChangelogBytes = 16 << 20

// workDB is one working database.
type workDB struct {
	p   *Provider
	id  state.ID
	db  *pebble.DB
	fs  vfs.FS
	dir string

	version            int64 // the committed version it holds
	numKeys, dataBytes int64
	garbage            int64 // deletes and overwrites since the last compaction
	inUse              bool  // an open store has a batch on it
	closed             bool
}

// New returns a provider that keeps its checkpoint files in fs.
func New(fs fsys.FS, opts Options) (*Provider, error) {
	p := &Provider{fs: fs, opts: opts.withDefaults(), slots: map[state.ID]*slot{}}
	if p.opts.WorkDir != "" {
		dir, lock, err := claimWorkRoot(p.opts.WorkDir)
		if err != nil {
			return nil, fmt.Errorf("pebble state store: %w", err)
		}
		p.workRoot, p.workLock = dir, lock
	}
	return p, nil
}

// Options returns the options in effect (defaults filled in).
func (p *Provider) Options() Options { return p.opts }

// Close closes the working databases not in use (those of open stores close
// when their store ends) and makes Load fail.
func (p *Provider) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	for _, sl := range p.slots {
		if c := sl.cache; c != nil {
			sl.cache = nil
			if !c.inUse {
				errs = append(errs, c.close())
			}
		}
	}
	p.slots = map[state.ID]*slot{}
	errs = append(errs, p.removeRootLocked())
	return errors.Join(errs...)
}

func (p *Provider) removeRootLocked() error {
	if p.closed && p.openDBs == 0 && p.workRoot != "" {
		root := p.workRoot
		p.workRoot = ""
		err := os.RemoveAll(root)
		p.workLock.Close() // after the removal: until then the folder is ours
		return err
	}
	return nil
}

func (p *Provider) report(id state.ID, err error) {
	if err != nil && p.opts.OnMaintenanceError != nil {
		p.opts.OnMaintenanceError(id, err)
	}
}

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
	return o
}

// newDB opens a fresh working database holding files (a checkpoint's
// files, or none for an empty database). Called with p.mu held.
func (p *Provider) newDB(id state.ID, files []snapshotFile) (*workDB, error) {
	var fs vfs.FS
	dir := "db"
	if p.workRoot == "" {
		fs = vfs.NewMem()
	} else {
		fs = vfs.Default
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

// close disposes of the database. Called with p.mu held.
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
func (w *workDB) maybeCompact() error {
	deep := int(w.db.Metrics().Levels[0].Sublevels) >= w.p.opts.CompactL0Sublevels
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
	if err := w.db.Compact(context.Background(), userKeys.LowerBound, userKeys.UpperBound, false); err != nil {
		return fmt.Errorf("compact working database of %s: %w", w.id.Dir(), err)
	}
	w.garbage = 0
	return nil
}

// snapshot flushes the database and returns a zip of a Pebble checkpoint
// of it.
func (w *workDB) snapshot() ([]byte, error) {
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
	meta.Operator, meta.Partition, meta.Version = stamp(w.id, w.version)
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

// replay applies one changelog, keeping the key count and data size.
func (w *workDB) replay(name string, data []byte) error {
	b := w.db.NewIndexedBatch()
	defer b.Close()
	keys, size, garbage := w.numKeys, w.dataBytes, w.garbage
	var kbuf []byte
	err := state.WalkRecords(name, data,
		func(k, v []byte) error {
			kbuf = appendKey(kbuf, k)
			old, existed, err := valueLen(b, kbuf)
			if err != nil {
				return err
			}
			if existed {
				size += int64(len(v) - old)
				garbage++
			} else {
				keys++
				size += int64(len(k) + len(v))
			}
			return b.Set(kbuf, v, nil)
		},
		func(k []byte) error {
			kbuf = appendKey(kbuf, k)
			old, existed, err := valueLen(b, kbuf)
			if err != nil || !existed {
				return err
			}
			keys--
			garbage++
			size -= int64(len(k) + old)
			return b.Delete(kbuf, nil)
		})
	if err != nil {
		return err
	}
	if err := w.db.Apply(b, pebble.NoSync); err != nil {
		return err
	}
	w.numKeys, w.dataBytes, w.garbage = keys, size, garbage
	return nil
}

// rebuild builds version (> 0) of id from its files. Called with p.mu held.
func (p *Provider) rebuild(id state.ID, version int64) (*workDB, error) {
	dir := id.Dir()
	var w *workDB
	fail := func(err error) (*workDB, error) {
		if w != nil {
			p.report(id, w.close())
		}
		return nil, fmt.Errorf("cannot load state version %d of %s: %w", version, dir, err)
	}
	files, err := state.ListStoreFiles(p.fs, dir, fileNames)
	if err != nil {
		return fail(err)
	}
	from := files.NewestSnapshot(version)
	if from > 0 {
		name := path.Join(dir, zipName(from))
		data, err := p.fs.ReadFile(name)
		if err != nil {
			return fail(err)
		}
		meta, sfiles, err := decodeSnapshot(name, data, id, from)
		if err != nil {
			return fail(err)
		}
		if w, err = p.newDB(id, sfiles); err != nil {
			return fail(fmt.Errorf("%w %s: open the checkpoint: %v", state.ErrCorrupt, name, err))
		}
		w.numKeys, w.dataBytes = meta.NumKeys, meta.DataBytes
	} else if w, err = p.newDB(id, nil); err != nil {
		return fail(err)
	}
	for v := from + 1; v <= version; v++ {
		name := path.Join(dir, changelogName(v))
		data, err := p.fs.ReadFile(name)
		if err != nil {
			if fsys.IsNotExist(err) {
				return fail(&state.MissingFileError{Path: name, Version: version})
			}
			return fail(err)
		}
		if data, err = checkChangelog(name, data, id, v); err != nil {
			return fail(err)
		}
		if err := w.replay(name, data); err != nil {
			return fail(err)
		}
	}
	w.version = version
	return w, nil
}

// Load opens store id at version; see the package comment for caching.
func (p *Provider) Load(id state.ID, version int64) (state.Store, error) {
	if version < 0 {
		return nil, fmt.Errorf("cannot load state version %d of %s: negative version", version, id.Dir())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("cannot load state version %d of %s: %w", version, id.Dir(), state.ErrProviderClosed)
	}
	sl := p.slots[id]
	if sl == nil {
		sl = &slot{}
		p.slots[id] = sl
	}
	var w *workDB
	var err error
	switch c := sl.cache; {
	case version == 0:
		if w, err = p.newDB(id, nil); err != nil {
			return nil, fmt.Errorf("cannot load state version 0 of %s: %w", id.Dir(), err)
		}
	case c != nil && c.version == version && !c.inUse:
		sl.hits++
		w = c
	default:
		sl.misses++ // counted even if the load fails, as in Spark
		if w, err = p.rebuild(id, version); err != nil {
			return nil, err
		}
	}
	w.inUse = true
	s := &store{p: p, id: id, version: version, slot: sl, w: w, batch: w.db.NewIndexedBatch(),
		numKeys: w.numKeys, dataBytes: w.dataBytes, changelog: sl.changelogBuf[:0]}
	sl.changelogBuf = nil
	s.loadedKeys, s.loadedBytes = w.numKeys, w.dataBytes
	return s, nil
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

// store is a Store of the Provider.
type store struct {
	p       *Provider
	id      state.ID
	version int64
	slot    *slot
	st      storeState

	w     *workDB
	batch *pebble.Batch // indexed: the changes of this version

	numKeys, dataBytes int64
	garbage            int64  // deletes and overwrites
	changelog          []byte // records of <version+1>.changelog, without the end marker

	getBuf []byte // Get's result
	kbuf   []byte // the Pebble key of the last call
	// lastMiss is the last key Get did not find, while it is still absent:
	// the Put that follows (the dedup operator's pattern) needs no lookup.
	lastMiss   []byte
	lastMissOK bool
	ranges     []*rangeState // the Range calls in progress, innermost last

	loadedKeys, loadedBytes int64 // figures at Load, for Metrics after Abort
	final                   finalFigures
}

type finalFigures struct {
	keys, bytes, mem, sst int64
}

// rangeState is one Range in progress. The iterator sees the batch as it
// was when Range started, so changes made by fn to keys after the current
// one are recorded in changed and those keys are read again when reached.
type rangeState struct {
	key, value []byte // the entry being visited
	live       bool   // key and value are still the entry's
	changed    map[string]struct{}
	buf        []byte
}

func (s *store) done(op string) error {
	return fmt.Errorf("%s on state store %s version %d: %w (%s)", op, s.id.Dir(), s.version, state.ErrStoreDone, s.st)
}

func (s *store) fail(op string, err error) error {
	return fmt.Errorf("%s on state store %s version %d: %w", op, s.id.Dir(), s.version, err)
}

func (s *store) Version() int64 { return s.version }

// ikey returns key as kept in Pebble, in a buffer reused by the next call.
func (s *store) ikey(key []byte) []byte {
	s.kbuf = appendKey(s.kbuf, key)
	return s.kbuf
}

// Get returns the stored value. The slice belongs to the store: the caller
// must not modify it, and it is valid until the next call on the store.
func (s *store) Get(key []byte) ([]byte, bool, error) {
	if s.st != updating {
		return nil, false, s.done("Get")
	}
	v, closer, err := s.batch.Get(s.ikey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		s.lastMiss = append(s.lastMiss[:0], key...)
		s.lastMissOK = true
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.fail("Get", err)
	}
	s.getBuf = append(s.getBuf[:0], v...)
	closer.Close()
	return s.getBuf, true, nil
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

// existing returns whether key is present and its value's length.
func (s *store) existing(key []byte) (int, bool, error) {
	if s.lastMissOK && bytes.Equal(key, s.lastMiss) {
		return 0, false, nil
	}
	if n, ok := s.current(key); ok {
		return n, true, nil
	}
	return valueLen(s.batch, s.ikey(key))
}

// changedInRanges tells the Range calls in progress that key changed.
func (s *store) changedInRanges(key []byte) {
	for _, r := range s.ranges {
		if r.live && bytes.Equal(key, r.key) {
			r.live = false
			continue
		}
		if r.changed == nil {
			r.changed = map[string]struct{}{}
		}
		r.changed[string(key)] = struct{}{}
	}
}

// Put stores key and value (Pebble copies them into the batch).
func (s *store) Put(key, value []byte) error {
	if s.st != updating {
		return s.done("Put")
	}
	old, existed, err := s.existing(key)
	if err != nil {
		return s.fail("Put", err)
	}
	if err := s.batch.Set(s.ikey(key), value, nil); err != nil {
		return s.fail("Put", err)
	}
	if existed {
		s.dataBytes += int64(len(value) - old)
		s.garbage++
	} else {
		s.numKeys++
		s.dataBytes += int64(len(key) + len(value))
	}
	if s.lastMissOK && bytes.Equal(key, s.lastMiss) {
		s.lastMissOK = false
	}
	if len(s.ranges) > 0 {
		s.changedInRanges(key)
	}
	s.changelog = appendPut(s.changelog, key, value)
	return nil
}

// Delete removes key; deleting an absent key changes nothing and writes
// nothing to the changelog.
func (s *store) Delete(key []byte) error {
	if s.st != updating {
		return s.done("Delete")
	}
	old, existed, err := s.existing(key)
	if err != nil {
		return s.fail("Delete", err)
	}
	if !existed {
		return nil
	}
	if err := s.batch.Delete(s.ikey(key), nil); err != nil {
		return s.fail("Delete", err)
	}
	s.numKeys--
	s.garbage++
	s.dataBytes -= int64(len(key) + old)
	if len(s.ranges) > 0 {
		s.changedInRanges(key)
	}
	s.changelog = appendRemove(s.changelog, key)
	return nil
}

// Range calls fn for every entry in key order until fn returns false. fn
// may Delete the current key or any other (a deleted entry not yet reached
// is not visited, a changed one is visited with its new value); an entry
// Put during Range may or may not be visited. key and value are valid only
// during the call and must not be modified.
func (s *store) Range(fn func(key, value []byte) bool) error {
	if s.st != updating {
		return s.done("Range")
	}
	it, err := s.batch.NewIter(userKeys)
	if err != nil {
		return s.fail("Range", err)
	}
	r := &rangeState{}
	s.ranges = append(s.ranges, r)
	defer func() { s.ranges = s.ranges[:len(s.ranges)-1] }()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()[1:]
		var v []byte
		if _, changed := r.changed[string(k)]; changed {
			cur, closer, err := s.batch.Get(it.Key())
			if errors.Is(err, pebble.ErrNotFound) {
				continue
			}
			if err != nil {
				it.Close()
				return s.fail("Range", err)
			}
			r.buf = append(r.buf[:0], cur...)
			closer.Close()
			v = r.buf
		} else if v, err = it.ValueAndErr(); err != nil {
			it.Close()
			return s.fail("Range", err)
		}
		r.key, r.value, r.live = k, v, true
		cont := fn(k, v)
		r.live = false
		if !cont {
			break
		}
	}
	if err := it.Close(); err != nil {
		return s.fail("Range", err)
	}
	return nil
}

// Commit writes <Version()+1>.changelog, applies the batch to the working
// database, makes that the cached one, then writes a snapshot and deletes
// old files if due. If the changelog cannot be written the batch is
// dropped and the store aborted.
func (s *store) Commit() (int64, error) {
	if s.st != updating {
		return 0, s.done("Commit")
	}
	if len(s.ranges) > 0 {
		return 0, s.fail("Commit", errors.New("commit inside Range"))
	}
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	newVersion := s.version + 1
	dir := s.id.Dir()
	fail := func(err error) (int64, error) {
		s.abortLocked()
		return 0, fmt.Errorf("cannot commit state version %d of %s: %w", newVersion, dir, err)
	}
	files, err := state.ListStoreFiles(p.fs, dir, fileNames)
	if err != nil {
		return fail(err)
	}
	// A snapshot of newVersion can only be left by an earlier attempt at
	// this version; it would shadow the changelog about to be written.
	if files.Snapshots[newVersion] {
		if err := p.fs.Remove(path.Join(dir, zipName(newVersion))); err != nil {
			return fail(err)
		}
		if err := p.fs.SyncDir(dir); err != nil {
			return fail(err)
		}
		delete(files.Snapshots, newVersion)
	}
	s.changelog = state.AppendStampedTrailer(appendEnd(s.changelog), state.KindChangelog, s.id, newVersion, p.stamp)
	if err := fsys.WriteAtomic(p.fs, path.Join(dir, changelogName(newVersion)), s.changelog); err != nil {
		return fail(err)
	}
	files.Deltas[newVersion] = true

	w := s.w
	if err := w.db.Apply(s.batch, pebble.NoSync); err != nil {
		// The version is durable, but the working database may hold part
		// of it: drop the database; the next Load rebuilds from the files.
		if s.slot.cache == w {
			s.slot.cache = nil
		}
		s.abortLocked()
		return 0, fmt.Errorf("cannot commit state version %d of %s: apply to the working database: %w", newVersion, dir, err)
	}
	s.batch.Close()
	s.batch = nil
	w.version, w.numKeys, w.dataBytes = newVersion, s.numKeys, s.dataBytes
	w.garbage += s.garbage
	w.inUse = false
	s.st = committed
	if !p.closed {
		if old := s.slot.cache; old != w {
			s.slot.cache = w
			if old != nil && !old.inUse {
				p.report(s.id, old.close())
			}
		}
	}
	p.maintainLocked(s.id, w, newVersion, files)
	s.final.keys, s.final.bytes = s.numKeys, s.dataBytes
	s.final.mem, s.final.sst = w.figures()
	s.releaseLocked()
	return newVersion, nil
}

// maintainLocked compacts level 0 if deep, writes newVersion's snapshot if
// due and deletes the files no retained version needs.
func (p *Provider) maintainLocked(id state.ID, w *workDB, newVersion int64, files state.StoreFiles) {
	dir := id.Dir()
	lastSnapshot := files.NewestSnapshot(newVersion - 1)
	if newVersion-lastSnapshot >= int64(p.opts.MinDeltasForSnapshot) {
		name := path.Join(dir, zipName(newVersion))
		data, err := w.snapshot()
		if err == nil {
			err = fsys.WriteAtomic(p.fs, name, data)
		}
		if err != nil {
			p.report(id, fmt.Errorf("write snapshot %s: %w", name, err))
		} else {
			files.Snapshots[newVersion] = true
		}
	} else {
		p.report(id, w.maybeCompact())
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
			names = append(names, changelogName(v))
		}
	}
	for v := range files.Snapshots {
		if v < keepFrom {
			names = append(names, zipName(v))
		}
	}
	if len(names) == 0 {
		return
	}
	slices.Sort(names)
	removed := false
	for _, n := range names {
		name := path.Join(dir, n)
		if err := p.fs.Remove(name); err != nil {
			p.report(id, fmt.Errorf("delete old state file %s: %w", name, err))
			continue
		}
		removed = true
	}
	if removed {
		if err := p.fs.SyncDir(dir); err != nil {
			p.report(id, fmt.Errorf("sync %s after deleting old files: %w", dir, err))
		}
	}
}

// Abort drops the changes. It is a no-op on a store already committed or
// aborted.
func (s *store) Abort() {
	if s.st != updating {
		return
	}
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.abortLocked()
}

func (s *store) abortLocked() {
	s.batch.Close()
	s.batch = nil
	s.st = aborted
	s.w.inUse = false
	s.final.keys, s.final.bytes = s.loadedKeys, s.loadedBytes
	s.final.mem, s.final.sst = s.w.figures()
	s.releaseLocked()
}

// releaseLocked disposes of the store's database unless it is the cached
// one, and hands the changelog buffer back to the slot.
func (s *store) releaseLocked() {
	if s.p.closed || s.slot.cache != s.w {
		s.p.report(s.id, s.w.close())
	}
	s.w = nil
	if cap(s.changelog) <= maxKeptChangelogBytes {
		s.slot.changelogBuf = s.changelog[:0]
	}
	s.changelog = nil
}

// Metrics: see the package comment. After Commit they describe the
// committed version; after Abort, the version that was loaded.
func (s *store) Metrics() state.Metrics {
	f := s.final
	if s.st == updating {
		f.keys, f.bytes = s.numKeys, s.dataBytes
		f.mem, f.sst = s.w.figures()
	}
	s.p.mu.Lock()
	hits, misses := s.slot.hits, s.slot.misses
	s.p.mu.Unlock()
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
	_ state.Provider = (*Provider)(nil)
	_ state.Stamper  = (*Provider)(nil)
)

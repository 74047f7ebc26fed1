package pebblestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/cockroachdb/pebble/v2"
)

// Entries laid out by expiry (issue 32, goal 4).
//
// Under a watermark every key is evicted a delay after it came, and a
// tombstone per evicted key cost a third of a 1 M-key run: the sstable
// writer wrote them, and compactions stepped over them and the keys they
// delete. So a store told how its entries expire (state.ExpiryLayout, which
// the dedup operator calls on every store it loads) keeps each entry in a
// bucket of its expiry: Pebble key 0x02, the bucket expiry/width as a
// big-endian number with its sign bit flipped (buckets sort in time
// order), then the key. width is a quarter of the span the operator gives
// (its watermark delay), at least minBucketWidth, fixed for the database's
// life and kept in it (metaWidthKey), so that a database rebuilt from a
// snapshot finds its keys where they were put.
//
// Once EvictUpTo(limit) has run, every entry of a bucket wholly at or below
// limit is gone from the state, so the commit drops those buckets with one
// DB.Excise: files wholly inside leave the manifest, files across the span's
// edges become virtual sstables over what is left; nothing is rewritten,
// and no tombstone is written for their keys. Only the bucket limit splits
// gets point tombstones: EvictUpTo records each evicted key's bucket
// (store.hints), as the remove records in the changelog do not say where
// the key is. Changelogs, the expiry index and every result are as without
// the layout; only the working database's keys, and so its sstables, byte
// figures and the files in <V>.zip, differ.
//
// A key is in at most one place: the 0x01 space of the plain layout
// (entries with no expiry, entries put before the layout was known or
// while replaying a changelog, whose values the store cannot read, and
// entries past maxLiveBuckets) or one bucket. A lookup probes the 0x01
// space while it may hold a key (unbucketed) and then every live bucket;
// only duplicates and the key filter's false positives look up. A commit
// that moves a key (an overwrite with another expiry) deletes it where it
// was. Range merges the places in key order (userIter).
//
// Pebble v2.1.7's DB.Excise is a stable API (excise.go) that needs only
// FormatVirtualSSTables (the working databases run at FormatNewest) and
// keys without a suffix (the default comparer has none); shared or
// external storage is not involved.

const (
	bucketPrefix = 0x02 // then the bucket, 8 bytes, then the key
	bucketKeyLen = 9
	// bucketsPerSpan: buckets per state.ExpiryLayout span. The dedup
	// operator's state spans one or two delays plus a batch's advance;
	// a smaller bucket leaves fewer tombstones in the split bucket and
	// costs more probes per lookup.
	bucketsPerSpan = 4
	// minBucketWidth bounds the number of buckets under a tiny span.
	minBucketWidth = 1000
	// maxLiveBuckets bounds the probes of a lookup: a key whose bucket
	// would be one more goes to the 0x01 space, deleted by a tombstone as
	// without the layout.
	maxLiveBuckets = 64
	// plainLoc is the place of a key in the 0x01 space.
	plainLoc int64 = math.MinInt64
	// noLoc: the key is in no place (not in the database).
	noLoc int64 = math.MaxInt64
)

// metaWidthKey holds the database's bucket width (8 bytes big-endian).
var metaWidthKey = []byte{0x00, 'w'}

// allKeys bounds the entries of every place.
var allKeys = &pebble.IterOptions{LowerBound: []byte{keyPrefix}, UpperBound: []byte{bucketPrefix + 1}}

// appendLocKey returns buf with key as kept in place loc.
func appendLocKey(buf []byte, loc int64, key []byte) []byte {
	if loc == plainLoc {
		return appendKey(buf, key)
	}
	buf = append(buf[:0], bucketPrefix)
	buf = binary.BigEndian.AppendUint64(buf, uint64(loc)^1<<63)
	return append(buf, key...)
}

// splitKey returns the place and the store key of a Pebble key in
// allKeys.
func splitKey(k []byte) (int64, []byte) {
	if k[0] == keyPrefix {
		return plainLoc, k[1:]
	}
	return int64(binary.BigEndian.Uint64(k[1:bucketKeyLen]) ^ 1<<63), k[bucketKeyLen:]
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// bucketOf returns the bucket of expiry at.
func (w *workDB) bucketOf(at int64) int64 { return floorDiv(at, w.width) }

// cutBucket returns the first bucket not wholly at or below limit.
func (w *workDB) cutBucket(limit int64) int64 {
	b := w.bucketOf(limit)
	if limit-b*w.width == w.width-1 {
		b++
	}
	return b
}

// SetExpiryLayout implements state.ExpiryLayout: the database takes width
// span/bucketsPerSpan unless it has one.
func (s *store) SetExpiryLayout(span int64, expiryOf func([]byte) (int64, bool)) {
	w := s.w
	if w == nil {
		return
	}
	w.expiryOf = expiryOf
	if w.width == 0 {
		w.width = max(span/bucketsPerSpan, minBucketWidth)
	}
}

// evictHint is where an evicted key is: the record at off of the
// version's changes removed a key of bucket b (unless it is in the 0x01
// space). Only keys of the bucket the limit splits have one: the others
// are in buckets the commit excises, which their pending slot says
// (excisedBit).
type evictHint struct {
	off uint32
	b   int64
}

// commitEvictions is what a version's evictions tell its commit (or, hints
// alone, what a replayed changelog's lookups found).
type commitEvictions struct {
	hints   []evictHint // in record order
	limit   int64       // the greatest limit of an EvictUpTo that completed
	evicted bool        // one did
	// failed: an EvictUpTo of the version failed part way. The keys it
	// removed carry the excised bit of its own cut, which may be above
	// the cut of limit (the greatest completed call's): the commit then
	// trusts no bit and looks every removed key up (trustBits).
	failed bool
	cutNow int64 // the cut of the EvictUpTo running
	// exact: the hints are where a lookup found the keys (a replay), not
	// buckets of expiries, which the 0x01 space may hold instead.
	exact bool
}

// trustBits reports whether the excised bits of the version's removals
// say where the keys are: an EvictUpTo completed (so its buckets are
// excised) and none failed.
func (ev *commitEvictions) trustBits() bool { return ev != nil && ev.evicted && !ev.failed }

func (ev *commitEvictions) hint(off uint32) (int64, bool) {
	if ev == nil {
		return 0, false
	}
	i, ok := slices.BinarySearchFunc(ev.hints, off, func(h evictHint, off uint32) int {
		return int(int64(h.off) - int64(off))
	})
	if !ok {
		return 0, false
	}
	return ev.hints[i].b, true
}

// readLayout finds the layout of a database built from a snapshot: its
// width, its live buckets and how many keys its 0x01 space holds. A
// database without a width was never laid out: every key is in the 0x01
// space.
func (w *workDB) readLayout() error {
	v, closer, err := w.db.Get(metaWidthKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(v) != 8 {
		closer.Close()
		return fmt.Errorf("bucket width of %d bytes", len(v))
	}
	w.width = int64(binary.BigEndian.Uint64(v))
	closer.Close()
	if w.width < minBucketWidth {
		return fmt.Errorf("bucket width %d", w.width)
	}
	w.widthStored, w.laid = true, true
	it, err := w.db.NewIter(allKeys)
	if err != nil {
		return err
	}
	w.unbucketed = 0
	ok := it.First()
	for ; ok && it.Key()[0] == keyPrefix; ok = it.Next() {
		w.unbucketed++
	}
	w.buckets = w.buckets[:0]
	var kb []byte
	for ok {
		b, _ := splitKey(it.Key())
		w.buckets = append(w.buckets, b)
		if b == math.MaxInt64 {
			break
		}
		kb = appendLocKey(kb, b+1, nil)
		ok = it.SeekGE(kb)
	}
	return it.Close()
}

// getFunc is a point lookup in the database (dbGet, or a test's).
type getFunc func(*pebble.DB, []byte) ([]byte, io.Closer, error)

// lookup finds key in the database: its value (valid until closer is
// closed) and place, or pebble.ErrNotFound. It probes the buckets from
// the newest if recent, else from the oldest: a duplicate is most often a
// recent key, a key being evicted or deleted (a commit's probe, a
// changelog's remove replayed) an old one.
func (w *workDB) lookup(get getFunc, key []byte, recent bool) ([]byte, io.Closer, int64, error) {
	if !w.laid || w.unbucketed > 0 {
		w.kbuf = appendKey(w.kbuf, key)
		v, closer, err := get(w.db, w.kbuf)
		if !errors.Is(err, pebble.ErrNotFound) || !w.laid {
			return v, closer, plainLoc, err
		}
	}
	for j := range w.buckets {
		i := j
		if recent {
			i = len(w.buckets) - 1 - j
		}
		b := w.buckets[i]
		w.kbuf = appendLocKey(w.kbuf, b, key)
		v, closer, err := get(w.db, w.kbuf)
		if !errors.Is(err, pebble.ErrNotFound) {
			return v, closer, b, err
		}
	}
	return nil, nil, noLoc, pebble.ErrNotFound
}

// valueLen looks key up and returns the length of its value, copying
// nothing.
func (w *workDB) valueLen(key []byte) (int, bool, error) {
	v, closer, _, err := w.lookup((*pebble.DB).Get, key, false)
	return lenAndClose(v, closer, err)
}

// locOf returns the place of key (hash-less: a commit's probe), noLoc if
// the database does not hold it.
func (w *workDB) locOf(key []byte) (int64, error) {
	_, closer, loc, err := w.lookup((*pebble.DB).Get, key, false)
	if errors.Is(err, pebble.ErrNotFound) {
		return noLoc, nil
	}
	if err != nil {
		return noLoc, err
	}
	closer.Close()
	return loc, nil
}

// place returns where a commit puts a key of value v: its expiry's bucket,
// made live if it is not (at most maxLiveBuckets), or the 0x01 space.
func (w *workDB) place(v []byte) int64 {
	if w.expiryOf == nil {
		return plainLoc
	}
	at, ok := w.expiryOf(v)
	if !ok {
		return plainLoc
	}
	b := w.bucketOf(at)
	i, live := slices.BinarySearch(w.buckets, b)
	if live {
		return b
	}
	if len(w.buckets) >= maxLiveBuckets {
		return plainLoc
	}
	w.buckets = slices.Insert(w.buckets, i, b)
	j, _ := slices.BinarySearch(w.fresh, b)
	w.fresh = slices.Insert(w.fresh, j, b)
	return b
}

// freshAfter reports whether bucket b was made live by this commit and
// follows bucket a, made live by it too, with no other live bucket
// between: their keys can share an sstable that overlaps no other.
func (w *workDB) freshAfter(a, b int64) bool {
	if a == plainLoc {
		return false
	}
	if _, ok := slices.BinarySearch(w.fresh, a); !ok {
		return false
	}
	if _, ok := slices.BinarySearch(w.fresh, b); !ok {
		return false
	}
	i, _ := slices.BinarySearch(w.buckets, a)
	return i+1 < len(w.buckets) && w.buckets[i+1] == b
}

// laidOp is one key a laid-out commit writes: the record at off, set in
// place loc or (del) deleted there.
type laidOp struct {
	loc int64
	off uint32
	del bool
}

// excise drops every live bucket before cut.
func (w *workDB) excise(cut int64) error {
	n, _ := slices.BinarySearch(w.buckets, cut)
	if n == 0 {
		return nil
	}
	span := pebble.KeyRange{Start: appendLocKey(nil, w.buckets[0], nil), End: appendLocKey(nil, cut, nil)}
	if err := w.db.Excise(context.Background(), span); err != nil {
		return fmt.Errorf("excise: %w", err)
	}
	w.buckets = slices.Delete(w.buckets, 0, n)
	w.excised += int64(n)
	w.p.excised += int64(n)
	return nil
}

// applyLaid is applyPending for a laid-out database (see the top of this
// file): the buckets the evictions emptied are excised first, then every
// change is written where its value puts it, and deleted where it was
// when that is elsewhere and still there.
func (w *workDB) applyLaid(recs []byte, idx *pendingIndex, ev *commitEvictions) error {
	if !w.laid {
		w.laid, w.unbucketed = true, w.numKeys
	}
	if !w.widthStored {
		if err := w.db.Set(metaWidthKey, binary.BigEndian.AppendUint64(nil, uint64(w.width)), pebble.NoSync); err != nil {
			return err
		}
		w.widthStored = true
	}
	cut := int64(math.MinInt64)
	if ev != nil && ev.evicted {
		cut = w.cutBucket(ev.limit)
		if err := w.excise(cut); err != nil {
			return err
		}
	}
	if idx.n == 0 {
		return nil
	}
	// With nothing in the 0x01 space, a key evicted from a bucket the
	// excise dropped needs nothing more: not even a place in the sort.
	offs := idx.sortedWith(recs, &w.sortScratch, ev.trustBits() && w.unbucketed == 0)
	w.fresh = w.fresh[:0]
	flags := w.sortScratch.flags
	ops := w.laidOps[:0]
	var garbage int64
	for i, off := range offs {
		k, v, removed := recordAt(recs, off)
		old := noLoc
		if f := flags[i]; f&changeInDB != 0 {
			var err error
			// The bit is good only if the eviction that set it completed
			// (and so the excise above ran), and none failed.
			excised := f&changeExcised != 0 && ev.trustBits()
			if old, err = w.locate(k, off, excised, removed, ev, cut); err != nil {
				return err
			}
		}
		target := noLoc
		if !removed {
			target = w.place(v)
		}
		if old != noLoc && old != target {
			ops = append(ops, laidOp{loc: old, off: off, del: true})
			garbage++
			if old == plainLoc {
				w.unbucketed--
			}
		}
		if target != noLoc {
			ops = append(ops, laidOp{loc: target, off: off})
			switch {
			case old == target:
				garbage++ // an overwrite in place
			case target == plainLoc:
				w.unbucketed++
			}
		}
	}
	w.laidOps = ops
	w.garbage += garbage
	if len(ops) == 0 {
		return nil
	}
	// Each place's ops are in key order already: a stable sort by place
	// keeps it.
	slices.SortStableFunc(ops, func(a, b laidOp) int {
		switch {
		case a.loc < b.loc:
			return -1
		case a.loc > b.loc:
			return 1
		}
		return 0
	})
	// An sstable per bucket that held keys before, and one for each run
	// of buckets this commit made live (adjacent among the live ones): a
	// new bucket's table overlaps nothing and is ingested into the bottom
	// level, where no compaction visits it. A table per bucket was 12 a
	// commit under the benchmark's watermark, and on the disk creating
	// the files was a fifth of the run's CPU; a table over several
	// buckets is cut by the excise of the first ones into a virtual
	// sstable over the rest, its file kept until the last is excised.
	// Buckets never go through the memtable, however few their keys: an
	// excise whose span holds unflushed keys is ingested as a flushable,
	// which rotates the memtable (a new arena of up to MemTableSize,
	// zeroed: a quarter of a second in six 1 M-key runs), and every
	// later ingest overlapping it queues behind it. The 0x01 space is
	// never excised: its keys go through the memtable when they are fewer
	// than IngestMinKeys.
	var paths []string
	fail := func(err error) error {
		for _, p := range paths {
			_ = w.fs.Remove(p)
		}
		return err
	}
	var plain []laidOp
	for i := 0; i < len(ops); {
		j := i + 1
		for j < len(ops) && (ops[j].loc == ops[j-1].loc || w.freshAfter(ops[j-1].loc, ops[j].loc)) {
			j++
		}
		group := ops[i:j]
		i = j
		if group[0].loc == plainLoc && len(group) < w.p.opts.IngestMinKeys {
			plain = group
			continue
		}
		w.ingests++
		path := w.fs.PathJoin(w.dir, "ingest-"+strconv.FormatInt(w.ingests, 10)+".sst")
		paths = append(paths, path)
		if err := w.writeTable(path, func(fn func(k, v []byte, del bool) error) error {
			return eachLaid(recs, group, fn)
		}); err != nil {
			return fail(err)
		}
	}
	if len(paths) > 0 {
		if err := w.db.Ingest(context.Background(), paths); err != nil {
			return fail(fmt.Errorf("ingest: %w", err))
		}
	}
	if len(plain) == 0 {
		return nil
	}
	b := w.db.NewBatch()
	defer b.Close()
	err := eachLaid(recs, plain, func(k, v []byte, del bool) error {
		if del {
			return b.Delete(k, nil)
		}
		return b.Set(k, v, nil)
	})
	if err != nil {
		return err
	}
	return w.db.Apply(b, pebble.NoSync)
}

// locate returns the place of key, which the database held when the
// version began (its latest change is the record at off): the 0x01 space
// if it is there, else none if EvictUpTo found it in a bucket before the
// cut (excised) or the bucket it recorded, else a probe of every bucket (a
// Delete, an overwrite, a replayed change).
func (w *workDB) locate(key []byte, off uint32, excised, removed bool, ev *commitEvictions, cut int64) (int64, error) {
	if !w.laid {
		return plainLoc, nil
	}
	b, hinted := int64(0), false
	if !excised && removed {
		b, hinted = ev.hint(off)
	}
	if excised || hinted {
		if w.unbucketed > 0 && !ev.exact {
			w.kbuf = appendKey(w.kbuf, key)
			_, found, err := valueLen(w.db, w.kbuf)
			if err != nil {
				return noLoc, err
			}
			if found {
				return plainLoc, nil
			}
		}
		if excised || b < cut {
			return noLoc, nil
		}
		return b, nil
	}
	return w.locOf(key)
}

// eachLaid calls fn with the Pebble key (valid until the next call),
// value and kind of each op, in order.
func eachLaid(recs []byte, ops []laidOp, fn func(k, v []byte, del bool) error) error {
	var kbuf []byte
	for _, op := range ops {
		k, v, _ := recordAt(recs, op.off)
		kbuf = appendLocKey(kbuf, op.loc, k)
		if err := fn(kbuf, v, op.del); err != nil {
			return err
		}
	}
	return nil
}

// userIter visits the store keys of the database in key order, merging
// its places (one Pebble iterator each; one in all for a database not
// laid out).
type userIter struct {
	srcs []*pebble.Iterator
	heap []int // sources positioned on a key, the least key first
}

func (w *workDB) newUserIter() (*userIter, error) {
	u := &userIter{}
	add := func(o *pebble.IterOptions) error {
		it, err := w.db.NewIter(o)
		if err != nil {
			return err
		}
		u.srcs = append(u.srcs, it)
		return nil
	}
	var err error
	if !w.laid || w.unbucketed > 0 {
		err = add(userKeys)
	}
	if w.laid {
		for _, b := range w.buckets {
			if err != nil {
				break
			}
			err = add(&pebble.IterOptions{LowerBound: appendLocKey(nil, b, nil), UpperBound: bucketEnd(b)})
		}
	}
	if err != nil {
		u.Close()
		return nil, err
	}
	return u, nil
}

// bucketEnd is the upper bound of bucket b's keys.
func bucketEnd(b int64) []byte {
	if b == math.MaxInt64 {
		return []byte{bucketPrefix + 1}
	}
	return appendLocKey(nil, b+1, nil)
}

func (u *userIter) less(i, j int) bool {
	_, ki := splitKey(u.srcs[u.heap[i]].Key())
	_, kj := splitKey(u.srcs[u.heap[j]].Key())
	return bytes.Compare(ki, kj) < 0
}

func (u *userIter) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(u.heap) {
			return
		}
		m := l
		if r := l + 1; r < len(u.heap) && u.less(r, l) {
			m = r
		}
		if !u.less(m, i) {
			return
		}
		u.heap[i], u.heap[m] = u.heap[m], u.heap[i]
		i = m
	}
}

// First positions the iterator on the least key.
func (u *userIter) First() bool {
	u.heap = u.heap[:0]
	for i, it := range u.srcs {
		if it.First() {
			u.heap = append(u.heap, i)
		}
	}
	for i := len(u.heap)/2 - 1; i >= 0; i-- {
		u.down(i)
	}
	return len(u.heap) > 0
}

// Next moves to the next key.
func (u *userIter) Next() bool {
	if u.srcs[u.heap[0]].Next() {
		u.down(0)
	} else {
		last := len(u.heap) - 1
		u.heap[0] = u.heap[last]
		u.heap = u.heap[:last]
		if last > 0 {
			u.down(0)
		}
	}
	return len(u.heap) > 0
}

// Key is the store key at the iterator.
func (u *userIter) Key() []byte {
	_, k := splitKey(u.srcs[u.heap[0]].Key())
	return k
}

// ValueAndErr is the value at the iterator.
func (u *userIter) ValueAndErr() ([]byte, error) { return u.srcs[u.heap[0]].ValueAndErr() }

// Close closes every source.
func (u *userIter) Close() error {
	var err error
	for _, it := range u.srcs {
		err = errors.Join(err, it.Close())
	}
	return err
}

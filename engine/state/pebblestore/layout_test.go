package pebblestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/statetest"
	"pgregory.net/rapid"
)

// layoutExpiry reads a value as a big-endian expiry (8 bytes); other
// values have none.
func layoutExpiry(v []byte) (int64, bool) {
	if len(v) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(v)), true
}

func expiryValue(at int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(at)) }

// layoutSpan gives buckets of 1000 (bucketsPerSpan of them a span).
const layoutSpan = 1000 * bucketsPerSpan

// layoutRun drives one store ID of a provider laid out by layoutExpiry.
type layoutRun struct {
	t       statetest.TB
	fs      *fsys.Mem
	p       *Provider
	id      state.ID
	version int64
	opts    Options
}

// newLayoutRun starts a run; its last provider is closed by the caller
// (close).
func newLayoutRun(t statetest.TB, opts Options) *layoutRun {
	r := &layoutRun{t: t, fs: fsys.NewMem(), id: state.ID{Operator: 0, Partition: 3}, opts: opts}
	r.restart()
	return r
}

func (r *layoutRun) close() { r.p.Close() }

func (r *layoutRun) restart() {
	if r.p != nil {
		r.p.Close()
	}
	p, err := New(r.fs, r.opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.p = p
}

func (r *layoutRun) load() *store {
	r.t.Helper()
	st := statetest.MustLoad(r.t, r.p, r.id, r.version).(*store)
	st.SetExpiryLayout(layoutSpan, layoutExpiry)
	return st
}

func (r *layoutRun) commit(st *store) {
	r.t.Helper()
	if _, err := st.Commit(); err != nil {
		r.t.Fatal(err)
	}
	r.version++
}

// placeOf returns the place the working database keeps key in, noLoc if
// none, checking that it is in one place at most.
func placeOf(t statetest.TB, w *workDB, key []byte) int64 {
	t.Helper()
	found := noLoc
	locs := append([]int64{plainLoc}, w.buckets...)
	for _, loc := range locs {
		_, closer, err := w.db.Get(appendLocKey(nil, loc, key))
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		closer.Close()
		if found != noLoc {
			t.Fatalf("key %q in places %d and %d", key, found, loc)
		}
		found = loc
	}
	return found
}

func mustHave(t statetest.TB, st state.Store, want map[string]string) {
	t.Helper()
	if got := statetest.Contents(t, st); !maps.Equal(got, want) {
		t.Fatalf("store holds %q, want %q", got, want)
	}
}

func layoutKey(i int) []byte { return fmt.Appendf(nil, "k%04d", i) }

// TestLayoutExcise: keys are put in the bucket of their expiry; an
// eviction excises the buckets wholly at or below its limit and writes
// tombstones only for the keys of the bucket the limit splits; a key
// without an expiry stays in the plain space and is deleted there.
func TestLayoutExcise(t *testing.T) {
	for _, tc := range []struct {
		ingest int // 1: every commit ingests; 0: the memtable
		disk   bool
	}{{1, false}, {0, false}, {1, true}} {
		ingest := tc.ingest
		t.Run(fmt.Sprint("ingestMinKeys=", ingest, ",disk=", tc.disk), func(t *testing.T) {
			opts := Options{IngestMinKeys: ingest}
			if tc.disk {
				// The working database on the local disk, through the
				// vfs whose syncs do nothing (nosync.go).
				opts.WorkDir = t.TempDir()
			}
			r := newLayoutRun(t, opts)
			defer r.close()
			st := r.load()
			for i := range 50 { // expiries 0, 100, ..., 4900: buckets 0 to 4
				if err := st.Put(layoutKey(i), expiryValue(int64(i)*100)); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.Put([]byte("plain"), []byte("no expiry")); err != nil {
				t.Fatal(err)
			}
			w := st.w
			r.commit(st)
			if !slices.Equal(w.buckets, []int64{0, 1, 2, 3, 4}) {
				t.Fatalf("live buckets %v, want 0 to 4", w.buckets)
			}
			for i := range 50 {
				if got := placeOf(t, w, layoutKey(i)); got != int64(i/10) {
					t.Fatalf("key %d in place %d, want bucket %d", i, got, i/10)
				}
			}
			if got := placeOf(t, w, []byte("plain")); got != plainLoc {
				t.Fatalf("plain key in place %d", got)
			}

			// 2500: buckets 0 and 1 go whole, bucket 2 is split (keys 20-25
			// evicted, 26-29 left).
			st = r.load()
			if n, err := st.EvictUpTo(2500, layoutExpiry); err != nil || n != 26 {
				t.Fatalf("EvictUpTo: %d, %v", n, err)
			}
			garbage := w.garbage
			r.commit(st)
			if w.excised != 2 || !slices.Equal(w.buckets, []int64{2, 3, 4}) {
				t.Fatalf("excised %d, live buckets %v", w.excised, w.buckets)
			}
			if got := w.garbage - garbage; got != 6 {
				t.Fatalf("%d tombstones, want 6 (keys 20-25 of the split bucket)", got)
			}
			for i := range 50 {
				want := noLoc
				if i > 25 {
					want = int64(i / 10)
				}
				if got := placeOf(t, w, layoutKey(i)); got != want {
					t.Fatalf("key %d in place %d, want %d", i, got, want)
				}
			}

			// A limit at the last expiry of a bucket takes it whole.
			st = r.load()
			if n, err := st.EvictUpTo(3999, layoutExpiry); err != nil || n != 14 {
				t.Fatalf("EvictUpTo: %d, %v", n, err)
			}
			if err := st.Delete([]byte("plain")); err != nil {
				t.Fatal(err)
			}
			garbage = w.garbage
			r.commit(st)
			if w.excised != 4 || !slices.Equal(w.buckets, []int64{4}) || w.garbage-garbage != 1 {
				t.Fatalf("excised %d, live buckets %v, %d tombstones", w.excised, w.buckets, w.garbage-garbage)
			}
			if got := placeOf(t, w, []byte("plain")); got != noLoc {
				t.Fatalf("deleted plain key in place %d", got)
			}
			want := map[string]string{}
			for i := 40; i < 50; i++ {
				want[string(layoutKey(i))] = string(expiryValue(int64(i) * 100))
			}
			mustHave(t, r.load(), want)
		})
	}
}

// TestLayoutMove: a key overwritten with another expiry moves to its new
// bucket; one overwritten without an expiry moves to the plain space, and
// back.
func TestLayoutMove(t *testing.T) {
	r := newLayoutRun(t, Options{IngestMinKeys: 1})
	defer r.close()
	k := []byte("key")
	for _, v := range [][]byte{expiryValue(500), expiryValue(7500), []byte("none"), expiryValue(1500)} {
		st := r.load()
		if err := st.Put(k, v); err != nil {
			t.Fatal(err)
		}
		w := st.w
		r.commit(st)
		want := plainLoc
		if at, ok := layoutExpiry(v); ok {
			want = at / 1000
		}
		if got := placeOf(t, w, k); got != want {
			t.Fatalf("after Put(%x): place %d, want %d", v, got, want)
		}
		if w.unbucketed != boolInt(want == plainLoc) {
			t.Fatalf("unbucketed %d", w.unbucketed)
		}
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestLayoutRestart: a database rebuilt from a snapshot finds its width,
// its live buckets and its keys where they were; one rebuilt from
// changelogs alone has its keys in the plain space, where evictions find
// them.
func TestLayoutRestart(t *testing.T) {
	for _, snap := range []int{1, 100} {
		t.Run(fmt.Sprint("minDeltasForSnapshot=", snap), func(t *testing.T) {
			r := newLayoutRun(t, Options{IngestMinKeys: 1, MinDeltasForSnapshot: snap})
			defer r.close()
			want := map[string]string{}
			for b := range 3 {
				st := r.load()
				for i := range 20 {
					k, v := layoutKey(b*20+i), expiryValue(int64(b*20+i)*100)
					if err := st.Put(k, v); err != nil {
						t.Fatal(err)
					}
					want[string(k)] = string(v)
				}
				r.commit(st)
			}
			r.restart()
			st := r.load()
			w := st.w
			if snap == 1 {
				if w.width != 1000 || !w.laid || !slices.Equal(w.buckets, []int64{0, 1, 2, 3, 4, 5}) || w.unbucketed != 0 {
					t.Fatalf("after a snapshot: width %d, laid %v, buckets %v, unbucketed %d", w.width, w.laid, w.buckets, w.unbucketed)
				}
				for i := range 60 {
					if got := placeOf(t, w, layoutKey(i)); got != int64(i/10) {
						t.Fatalf("key %d in place %d", i, got)
					}
				}
			} else if w.laid || len(w.buckets) != 0 {
				t.Fatalf("after replay: laid %v, buckets %v", w.laid, w.buckets)
			}
			mustHave(t, st, want)
			for k := range want {
				if v, ok, err := st.Get([]byte(k)); err != nil || !ok || string(v) != want[k] {
					t.Fatalf("Get(%s): %x %v %v", k, v, ok, err)
				}
			}
			if n, err := st.EvictUpTo(2999, layoutExpiry); err != nil || n != 30 {
				t.Fatalf("EvictUpTo: %d, %v", n, err)
			}
			r.commit(st)
			for i := range 30 {
				delete(want, string(layoutKey(i)))
			}
			st = r.load()
			mustHave(t, st, want)
			for i := range 60 {
				if got := placeOf(t, st.w, layoutKey(i)); (got == noLoc) != (i < 30) {
					t.Fatalf("key %d in place %d", i, got)
				}
			}
		})
	}
}

// TestLayoutBucketCap: past maxLiveBuckets, keys go to the plain space,
// and are still found and evicted.
func TestLayoutBucketCap(t *testing.T) {
	r := newLayoutRun(t, Options{IngestMinKeys: 1})
	defer r.close()
	st := r.load()
	n := maxLiveBuckets + 6
	for i := range n {
		if err := st.Put(layoutKey(i), expiryValue(int64(i)*1000)); err != nil {
			t.Fatal(err)
		}
	}
	w := st.w
	r.commit(st)
	if len(w.buckets) != maxLiveBuckets || w.unbucketed != 6 {
		t.Fatalf("%d buckets, %d keys unbucketed", len(w.buckets), w.unbucketed)
	}
	st = r.load()
	for i := range n {
		if _, ok, err := st.Get(layoutKey(i)); err != nil || !ok {
			t.Fatalf("Get(%d): %v %v", i, ok, err)
		}
	}
	if got, err := st.EvictUpTo(int64(n)*1000, layoutExpiry); err != nil || got != int64(n) {
		t.Fatalf("EvictUpTo: %d, %v", got, err)
	}
	r.commit(st)
	if len(w.buckets) != 0 || w.unbucketed != 0 || placeOf(t, w, layoutKey(n-1)) != noLoc {
		t.Fatalf("after evicting all: buckets %v, unbucketed %d", w.buckets, w.unbucketed)
	}
}

// TestLayoutModel: random puts (expiries over a few buckets, or none),
// deletes, evictions, commits, aborts and restarts against a map; Range
// must visit the model's entries in key order, and every key must be in
// one place at most.
func TestLayoutModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := newLayoutRun(rt, Options{IngestMinKeys: rapid.IntRange(1, 8).Draw(rt, "ingestMinKeys"),
			MinDeltasForSnapshot: rapid.IntRange(1, 4).Draw(rt, "minDeltasForSnapshot")})
		defer r.close()
		model := map[string]string{}
		limit := int64(-1)
		for range rapid.IntRange(1, 12).Draw(rt, "batches") {
			st := r.load()
			next := maps.Clone(model)
			for range rapid.IntRange(0, 20).Draw(rt, "ops") {
				k := layoutKey(rapid.IntRange(0, 30).Draw(rt, "key"))
				switch rapid.IntRange(0, 3).Draw(rt, "op") {
				case 0, 1:
					v := []byte("x")
					if rapid.IntRange(0, 5).Draw(rt, "expiry") > 0 {
						v = expiryValue(limit + 1 + int64(rapid.IntRange(0, 6000).Draw(rt, "at")))
					}
					if err := st.Put(k, v); err != nil {
						rt.Fatal(err)
					}
					next[string(k)] = string(v)
				case 2:
					if err := st.Delete(k); err != nil {
						rt.Fatal(err)
					}
					delete(next, string(k))
				case 3:
					limit += int64(rapid.IntRange(0, 2500).Draw(rt, "advance"))
					if _, err := st.EvictUpTo(limit, layoutExpiry); err != nil {
						rt.Fatal(err)
					}
					for k, v := range next {
						if at, ok := layoutExpiry([]byte(v)); ok && at <= limit {
							delete(next, k)
						}
					}
				}
			}
			if rapid.IntRange(0, 4).Draw(rt, "abort") == 0 {
				st.Abort()
			} else {
				r.commit(st)
				model = next
			}
			if rapid.IntRange(0, 3).Draw(rt, "restart") == 0 {
				r.restart()
			}
			st = r.load()
			var keys []string
			if err := st.Range(func(k, v []byte) bool {
				keys = append(keys, string(k))
				if model[string(k)] != string(v) {
					rt.Fatalf("Range: %s = %x, model %x", k, v, model[string(k)])
				}
				return true
			}); err != nil {
				rt.Fatal(err)
			}
			if !slices.IsSorted(keys) || len(keys) != len(model) {
				rt.Fatalf("Range visited %q, model %v", keys, model)
			}
			for i := range 31 {
				placeOf(rt, st.w, layoutKey(i))
			}
			st.Abort()
		}
	})
}

// TestLayoutFailedEviction: an EvictUpTo that fails part way, after one
// that completed, leaves the keys it removed marked as in buckets its own
// cut would excise, above the cut the commit excises (the completed
// call's): the commit must look those keys up and tombstone them, not
// take the marks, or they stay in the database after the changelog has
// removed them.
func TestLayoutFailedEviction(t *testing.T) {
	r := newLayoutRun(t, Options{IngestMinKeys: 1})
	defer r.close()
	st := r.load()
	for i := range 50 { // expiries 0, 100, ..., 4900: buckets 0 to 4
		if err := st.Put(layoutKey(i), expiryValue(int64(i)*100)); err != nil {
			t.Fatal(err)
		}
	}
	w := st.w
	r.commit(st)

	st = r.load()
	if n, err := st.EvictUpTo(1500, layoutExpiry); err != nil || n != 16 {
		t.Fatalf("EvictUpTo(1500): %d, %v", n, err)
	}
	// A key deleted since the index was built makes the next eviction
	// check each item against the database, through dbGet.
	if err := st.Delete(layoutKey(49)); err != nil {
		t.Fatal(err)
	}
	failure := errors.New("injected read error")
	calls := 0
	dbGet = func(db *pebble.DB, key []byte) ([]byte, io.Closer, error) {
		if calls++; calls > 3 {
			return nil, nil, failure
		}
		return db.Get(key)
	}
	defer func() { dbGet = (*pebble.DB).Get }()
	n, err := st.EvictUpTo(3500, layoutExpiry)
	dbGet = (*pebble.DB).Get
	// A lookup probes bucket by bucket, each a dbGet: some keys are
	// removed, all of bucket 1 (keys 16-19), before the failure.
	if !errors.Is(err, failure) || n < 1 || n > 4 {
		t.Fatalf("EvictUpTo(3500): %d, %v; want 1 to 4 keys removed, then the injected error", n, err)
	}
	r.commit(st)
	gone := 16 + int(n)
	for i := range gone {
		if got := placeOf(t, w, layoutKey(i)); got != noLoc {
			t.Fatalf("key %d, evicted, still in place %d", i, got)
		}
	}
	want := map[string]string{}
	for i := gone; i < 49; i++ {
		want[string(layoutKey(i))] = string(expiryValue(int64(i) * 100))
	}
	mustHave(t, r.load(), want)
	r.restart()
	mustHave(t, r.load(), want)
}

package pebblestore_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/pebblestore"
	"github.com/dedupsim/dedupsim/engine/state/statetest"
)

var id03 = state.ID{Operator: 0, Partition: 3}

var (
	mustLoad = statetest.MustLoad
	contents = statetest.Contents
	apply    = statetest.Apply
)

type change = statetest.Change

func newProvider(t testing.TB, f fsys.FS, opts pebblestore.Options) *pebblestore.Provider {
	t.Helper()
	p, err := pebblestore.New(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// pebbleStore is the Pebble provider as the contract suite sees it, with
// its working databases in memory.
var pebbleStore = statetest.Store{
	New: func(t testing.TB, f fsys.FS, o state.Options) state.Provider {
		return newProvider(t, f, pebblestore.Options{MinDeltasForSnapshot: o.MinDeltasForSnapshot,
			MinVersionsToRetain: o.MinVersionsToRetain, OnMaintenanceError: o.OnMaintenanceError})
	},
	Files: state.FileNames{Delta: ".changelog", Snapshot: ".zip", DeltaKind: state.KindChangelog},
	// stateOnCurrentVersionSizeBytes is the logical size; MemoryUsedBytes
	// is Pebble's own figure.
	EntryOverhead: 0,
}

// pebbleStoreWith is pebbleStore with options on top of the suite's.
func pebbleStoreWith(extra func(*pebblestore.Options)) statetest.Store {
	s := pebbleStore
	s.New = func(t testing.TB, f fsys.FS, o state.Options) state.Provider {
		po := pebblestore.Options{MinDeltasForSnapshot: o.MinDeltasForSnapshot,
			MinVersionsToRetain: o.MinVersionsToRetain, OnMaintenanceError: o.OnMaintenanceError}
		extra(&po)
		return newProvider(t, f, po)
	}
	return s
}

// TestPebbleContract runs the providers' contract suite (statetest) on
// the Pebble provider, with commits through the memtable (the default for
// the suite's few keys), with every commit and replay ingested as an
// sstable, and with an expiry index budget of one byte, so that every
// EvictUpTo scans (the fallback past the budget).
func TestPebbleContract(t *testing.T) {
	t.Run("memtable", func(t *testing.T) { statetest.Run(t, pebbleStore) })
	t.Run("ingest", func(t *testing.T) {
		statetest.Run(t, pebbleStoreWith(func(o *pebblestore.Options) { o.IngestMinKeys = 1 }))
	})
	t.Run("scan", func(t *testing.T) {
		statetest.Run(t, pebbleStoreWith(func(o *pebblestore.Options) { o.ExpiryIndexBudget = 1 }))
	})
}

func TestDefaults(t *testing.T) {
	o := newProvider(t, fsys.NewMem(), pebblestore.Options{}).Options()
	if o.MinDeltasForSnapshot != 10 || o.MinVersionsToRetain != 100 || o.MemTableSize != 64<<20 ||
		o.CompactL0Sublevels != 8 || o.CompactGarbageMin != 1<<16 || o.IngestMinKeys != 4096 || o.WorkDir != "" ||
		o.ExpiryIndexBudget != 64<<20 {
		t.Fatalf("defaults = %+v", o)
	}
}

// TestRangeWithDeletes: Pebble's Range visits keys in byte order (the
// memory store's visits map order, so this is not in the contract suite),
// sees a key changed ahead of it with its new value and a key Put in the
// batch, skips a key deleted ahead of it, and lets fn delete the current
// key.
func TestRangeWithDeletes(t *testing.T) {
	p := newProvider(t, fsys.NewMem(), pebblestore.Options{})
	c := change{Put: map[string]string{}}
	for i := range 100 {
		c.Put[fmt.Sprintf("k%03d", i)] = fmt.Sprint(i)
	}
	apply(t, p, id03, 0, c)
	st := mustLoad(t, p, id03, 1)
	st.Put([]byte("k100"), []byte("new")) // in the batch only
	// Eviction: delete every even key while iterating; delete k099 early
	// (never visited), change k098 before it is reached.
	var seen []string
	err := st.Range(func(k, v []byte) bool {
		seen = append(seen, string(k)+"="+string(v))
		if string(k) == "k010" {
			st.Delete([]byte("k099"))
			st.Put([]byte("k098"), []byte("changed"))
		}
		var n int
		fmt.Sscanf(string(k), "k%d", &n)
		if n%2 == 0 {
			if err := st.Delete(k); err != nil {
				t.Fatal(err)
			}
			st.Delete(k) // twice: a no-op
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 100 || seen[98] != "k098=changed" || seen[99] != "k100=new" {
		t.Fatalf("visited %d: ... %v", len(seen), seen[95:])
	}
	if n := st.Metrics().NumKeys; n != 49 {
		t.Fatalf("NumKeys = %d, want 49", n)
	}
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	st = mustLoad(t, newProvider(t, fsys.NewMem(), pebblestore.Options{}), id03, 0)
	st.Abort()

	// Stopping early.
	st = mustLoad(t, p, id03, 2)
	n := 0
	st.Range(func(k, v []byte) bool { n++; return n < 3 })
	if n != 3 {
		t.Fatalf("Range went on after false: %d", n)
	}
	if got := contents(t, st); len(got) != 49 {
		t.Fatalf("%d keys", len(got))
	}
	st.Abort()
}

// TestAbortInsideRange: fn may Abort; Range stops visiting, returns the
// store-done error and leaves the version as it was (before, the next step
// of the iteration read the dropped changes and panicked).
func TestAbortInsideRange(t *testing.T) {
	for _, ingest := range []int{0, 1} {
		p := newProvider(t, fsys.NewMem(), pebblestore.Options{IngestMinKeys: ingest})
		apply(t, p, id03, 0, change{Put: map[string]string{"a": "1", "b": "2", "c": "3"}})
		st := mustLoad(t, p, id03, 1)
		st.Put([]byte("d"), []byte("4"))
		visited := 0
		err := st.Range(func(k, v []byte) bool {
			visited++
			if err := st.Range(func(k, v []byte) bool { st.Abort(); return true }); err != nil {
				t.Errorf("inner Range: %v", err)
			}
			return true
		})
		if !errors.Is(err, state.ErrStoreDone) || visited != 1 {
			t.Fatalf("Range = %v after %d visits, want ErrStoreDone after 1", err, visited)
		}
		if _, err := st.Commit(); !errors.Is(err, state.ErrStoreDone) {
			t.Fatalf("Commit after the abort = %v", err)
		}
		if got := contents(t, mustLoad(t, p, id03, 1)); len(got) != 3 {
			t.Fatalf("version 1 holds %v", got)
		}
	}
}

// TestWorkDirOnDisk runs the working databases on the local disk, with a
// small memtable and low compaction thresholds so that flushes, both kinds
// of compaction and multi-file snapshots happen, and checks that Close
// removes the working directory.
func TestWorkDirOnDisk(t *testing.T) {
	work := t.TempDir()
	ckpt := fsys.NewOS(t.TempDir())
	opts := pebblestore.Options{WorkDir: work, MemTableSize: 1 << 20, CompactL0Sublevels: 2, CompactGarbageMin: 1000, MinDeltasForSnapshot: 3}
	p := newProvider(t, ckpt, opts)
	model := map[string]string{}
	for v := int64(0); v < 12; v++ {
		st := mustLoad(t, p, id03, v)
		for i := range 5000 {
			k := fmt.Sprintf("key-%06d", (int(v)*3001+i*7)%20000)
			val := fmt.Sprintf("value-%d-%d", v, i)
			if _, ok, _ := st.Get([]byte(k)); !ok {
				st.Put([]byte(k), []byte(val))
				model[k] = val
			}
		}
		// Evict a third.
		st.Range(func(k, val []byte) bool {
			if len(k) > 0 && int(k[len(k)-1])%3 == int(v)%3 {
				st.Delete(k)
				delete(model, string(k))
			}
			return true
		})
		if _, err := st.Commit(); err != nil {
			t.Fatal(err)
		}
		if n := st.Metrics().NumKeys; n != int64(len(model)) {
			t.Fatalf("version %d: NumKeys %d, want %d", v+1, n, len(model))
		}
	}
	entries, _ := os.ReadDir(work)
	if len(entries) != 1 {
		t.Fatalf("work dir holds %d entries", len(entries))
	}
	st := mustLoad(t, newProvider(t, ckpt, opts), id03, 12)
	if got := contents(t, st); !maps.Equal(got, model) {
		t.Fatalf("version 12 rebuilt: %d keys, want %d", len(got), len(model))
	}
	if m := st.Metrics(); m.NumKeys != int64(len(model)) || m.Custom["rocksdbSstFileSize"] == 0 {
		t.Fatalf("metrics: %+v", m)
	}
	st.Abort()
	p.Close()
	entries, _ = os.ReadDir(work)
	if len(entries) != 1 { // the second provider is still open
		t.Fatalf("after Close the work dir holds %d entries", len(entries))
	}
}

// TestCloseWithOpenStore: Close leaves an open store usable; its commit is
// written, its database disposed of, and the working directory goes with
// the last database.
func TestCloseWithOpenStore(t *testing.T) {
	work := t.TempDir()
	m := fsys.NewMem()
	p := newProvider(t, m, pebblestore.Options{WorkDir: work})
	apply(t, p, id03, 0, change{Put: map[string]string{"a": "1"}})
	st := mustLoad(t, p, id03, 1)
	other := mustLoad(t, p, state.ID{Partition: 1}, 0)
	st.Put([]byte("b"), []byte("2"))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if v, err := st.Commit(); err != nil || v != 2 {
		t.Fatalf("Commit after Close = %d, %v", v, err)
	}
	if n := st.Metrics().NumKeys; n != 2 {
		t.Fatalf("NumKeys = %d", n)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 1 {
		t.Fatalf("work dir removed while a store is open: %d entries", len(entries))
	}
	other.Abort()
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Fatalf("work dir holds %d entries after the last store ended", len(entries))
	}
	st = mustLoad(t, newProvider(t, m, pebblestore.Options{}), id03, 2)
	if got := contents(t, st); !maps.Equal(got, map[string]string{"a": "1", "b": "2"}) {
		t.Fatalf("version 2 = %v", got)
	}
	st.Abort()
}

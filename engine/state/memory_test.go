package state_test

import (
	"bytes"
	"fmt"
	"maps"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/statetest"
	"pgregory.net/rapid"
)

var id03 = state.ID{Operator: 0, Partition: 3}

var (
	mustLoad = statetest.MustLoad
	contents = statetest.Contents
	apply    = statetest.Apply
)

// memoryStore is the memory provider as the contract suite sees it.
var memoryStore = statetest.Store{
	New: func(_ testing.TB, f fsys.FS, o state.Options) state.Provider {
		return state.NewMemoryProvider(f, o)
	},
	Files:         state.FileNames{Delta: ".delta", Snapshot: ".snapshot", DeltaKind: state.KindDelta},
	EntryOverhead: state.EntryOverheadBytes,
	MemoryIsSize:  true,
}

// TestMemoryContract runs the providers' contract suite (statetest) on
// the memory provider.
func TestMemoryContract(t *testing.T) { statetest.Run(t, memoryStore) }

func TestDefaults(t *testing.T) {
	p := state.NewMemoryProvider(fsys.NewMem(), state.MemoryOptions{})
	if o := p.Options(); o.MinDeltasForSnapshot != 10 || o.MinVersionsToRetain != 100 {
		t.Fatalf("defaults = %+v", o)
	}
	p = state.NewMemoryProvider(fsys.NewMem(), state.MemoryOptions{MinDeltasForSnapshot: -1, MinVersionsToRetain: 3})
	if o := p.Options(); o.MinDeltasForSnapshot != 10 || o.MinVersionsToRetain != 3 {
		t.Fatalf("options = %+v", o)
	}
}

// testExpiry is the expiry layout of the EvictUpTo property test: an empty
// value or one whose first byte is a multiple of 5 has none (like a null
// event time); otherwise the first two bytes, big-endian.
func testExpiry(v []byte) (int64, bool) {
	if len(v) == 0 || v[0]%5 == 0 {
		return 0, false
	}
	at := int64(v[0]) << 8
	if len(v) > 1 {
		at |= int64(v[1])
	}
	return at, true
}

// evictUpTo runs EvictUpTo and checks it against a Range-based reference
// taken from the same store just before: the entries left and the count.
func (m *propModel) evictUpTo(t *rapid.T) {
	m.requireOpen(t)
	x, ok := m.st.(state.Expirer)
	if !ok {
		t.Fatalf("%T does not implement state.Expirer", m.st)
	}
	limit := int64(rapid.IntRange(0, 256).Draw(t, "limit"))<<8 + int64(rapid.IntRange(0, 255).Draw(t, "limitLow"))
	want := contents(t, m.st)
	if !maps.Equal(want, m.work) {
		t.Fatalf("before EvictUpTo: store %q, model %q", want, m.work)
	}
	wantN := int64(0)
	for k, v := range want {
		if at, ok := testExpiry([]byte(v)); ok && at <= limit {
			delete(want, k)
			wantN++
		}
	}
	n, err := x.EvictUpTo(limit, testExpiry)
	if err != nil {
		t.Fatal(err)
	}
	if got := contents(t, m.st); n != wantN || !maps.Equal(got, want) {
		t.Fatalf("EvictUpTo(%d) removed %d, left %q; want %d, %q", limit, n, got, wantN, want)
	}
	m.work = want
	m.checkMetrics(t)
}

// evictBatch is a micro-batch that ends with EvictUpTo, as the dedup
// operator's are, then commits or aborts.
func (m *propModel) evictBatch(t *rapid.T) {
	m.load(t)
	ops := []func(*rapid.T){m.put, m.put, m.put, m.delete, m.get, m.evictUpTo}
	for range rapid.IntRange(0, 8).Draw(t, "ops") {
		ops[rapid.IntRange(0, len(ops)-1).Draw(t, "op")](t)
	}
	m.evictUpTo(t)
	if rapid.IntRange(0, 3).Draw(t, "abort") == 0 {
		m.abort(t)
	} else {
		m.commit(t)
	}
}

// TestEvictUpToProperties: on random sequences of puts, deletes,
// evictions, commits, aborts, cache-hit and cache-miss loads and restarts,
// EvictUpTo removes exactly what a Range scan with the same predicate
// removes, and everything else (files, reloads, metrics) stays as the
// model says.
func TestEvictUpToProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newPropModel(t)
		t.Repeat(map[string]func(*rapid.T){
			"batch":     m.evictBatch,
			"batch2":    m.evictBatch,
			"load":      m.load,
			"put":       m.put,
			"delete":    m.delete,
			"evict":     m.evict,
			"evictUpTo": m.evictUpTo,
			"commit":    m.commit,
			"abort":     m.abort,
			"restart":   m.restart,
			"":          m.check,
		})
	})
}

// TestEvictUpToStaleItems: many overwrites and deletes between evictions
// (stale heap items, compaction) never make EvictUpTo remove a live entry
// that is not due or miss one that is.
func TestEvictUpToStaleItems(t *testing.T) {
	p := state.NewMemoryProvider(fsys.NewMem(), state.MemoryOptions{})
	id := state.ID{Operator: 7, Partition: 0}
	model := map[string]string{}
	val := func(at int) string { return string([]byte{byte(at>>8) | 1, byte(at)}) }
	for v := int64(0); v < 8; v++ {
		st := mustLoad(t, p, id, v)
		x := st.(state.Expirer)
		if v > 0 {
			// Build (or reuse) the index first so the changes below go
			// through Put's pushes.
			if _, err := x.EvictUpTo(-1, testExpiry); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 3000 {
			k := fmt.Sprint("k", i%(500+1500*int(v%2))) // odd versions: no compaction
			at := (int(v)*3000 + i*7919) % 4000
			if v%2 == 1 {
				// Mostly ascending, as event times arrive, with a few
				// stragglers.
				at = int(v)*600 + i/5
				if i%10 == 0 {
					at -= 300
				}
			}
			if i%3 == 0 {
				if err := st.Delete([]byte(k)); err != nil {
					t.Fatal(err)
				}
				delete(model, k)
				continue
			}
			if err := st.Put([]byte(k), []byte(val(at))); err != nil {
				t.Fatal(err)
			}
			model[k] = val(at)
		}
		limit := int64(v+1) * 4096 / 8
		if v%2 == 1 {
			limit, _ = testExpiry([]byte(val(int(v)*600 + 200)))
		}
		want := int64(0)
		for k, s := range model {
			if at, ok := testExpiry([]byte(s)); ok && at <= limit {
				delete(model, k)
				want++
			}
		}
		n, err := x.EvictUpTo(limit, testExpiry)
		if err != nil {
			t.Fatal(err)
		}
		if got := contents(t, st); n != want || !maps.Equal(got, model) {
			t.Fatalf("version %d: removed %d (want %d), %d keys left, want %d", v, n, want, len(got), len(model))
		}
		if _, err := st.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEvictUpToOrder: EvictUpTo removes in ascending (expiry, key) order,
// whatever order the entries were put or indexed in, so the delta's bytes
// do not follow Go's map order.
func TestEvictUpToOrder(t *testing.T) {
	m := fsys.NewMem()
	p := state.NewMemoryProvider(m, state.MemoryOptions{})
	keys := []string{"q", "b", "z", "a", "m", "c", "y", "d"}
	val := func(at int) []byte { return []byte{1, byte(at)} }
	// Version 1 holds the first half; the index of version 2 is built from
	// the map (map order), and Put pushes the second half onto it.
	st := mustLoad(t, p, id03, 0)
	for i, k := range keys[:4] {
		st.Put([]byte(k), val(i%2))
	}
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	st = mustLoad(t, state.NewMemoryProvider(m, state.MemoryOptions{}), id03, 1)
	x := st.(state.Expirer)
	if _, err := x.EvictUpTo(-1, testExpiry); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys[4:] {
		st.Put([]byte(k), val(i%2))
	}
	if n, err := x.EvictUpTo(257, testExpiry); err != nil || n != 8 {
		t.Fatalf("EvictUpTo = %d, %v", n, err)
	}
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	// Expiry 256 (byte 0 is 1): q z m y; 257: b a c d.
	var want []byte
	for i, k := range keys[4:] {
		want = state.AppendPut(want, []byte(k), val(i%2))
	}
	for _, k := range []string{"m", "q", "y", "z", "a", "b", "c", "d"} {
		want = state.AppendRemove(want, []byte(k))
	}
	want = state.AppendTrailer(state.AppendEnd(want), state.KindDelta, id03, 2)
	if got, err := m.ReadFile("state/0/3/2.delta"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("2.delta = %q, %v\nwant %q", got, err, want)
	}
}

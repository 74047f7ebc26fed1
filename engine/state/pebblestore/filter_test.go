package pebblestore

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/statetest"

	"pgregory.net/rapid"
)

// TestKeyFilterNoFalseNegatives: every key added is reported as maybe
// present, whatever the keys and the filter's size.
func TestKeyFilterNoFalseNegatives(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := newKeyFilter(rapid.Int64Range(0, 1<<17).Draw(rt, "keys"))
		keys := rapid.SliceOf(rapid.SliceOfN(rapid.Byte(), 0, 24)).Draw(rt, "added")
		for _, k := range keys {
			f.add(keyHash(k))
		}
		for _, k := range keys {
			if !f.mayHave(keyHash(k)) {
				rt.Fatalf("added %x, mayHave says absent", k)
			}
		}
		if f.added != uint(len(keys)) {
			rt.Fatalf("added %d, counted %d", len(keys), f.added)
		}
	})
}

// TestKeyFilterFalsePositives: filled to its design capacity with the
// engine benchmark's key shape (8-byte big-endian numbers), the filter
// answers "maybe" for under 1% of keys never added.
func TestKeyFilterFalsePositives(t *testing.T) {
	const keys = 200_000
	f := newKeyFilter(keys / 4) // capacity: four times the keys it was built with
	var k [8]byte
	for n := range uint64(keys) {
		binary.BigEndian.PutUint64(k[:], n)
		f.add(keyHash(k[:]))
	}
	if !f.full() {
		t.Fatalf("after %d keys the filter (cap %d) is not full", keys, f.cap)
	}
	fp := 0
	for n := uint64(keys); n < 2*keys; n++ {
		binary.BigEndian.PutUint64(k[:], n)
		if f.mayHave(keyHash(k[:])) {
			fp++
		}
	}
	if rate := float64(fp) / keys; rate > 0.01 {
		t.Fatalf("false-positive rate %.4f at capacity, want <= 0.01", rate)
	} else {
		t.Logf("false-positive rate %.4f at capacity", rate)
	}
}

// TestKeyFilterRebuilds: the key filter is rebuilt at the start of every
// batch of a watermark's churn, from the expiry index while its items name
// every entry, from a scan after an overwrite (until its stale item is
// popped) and after a value without expiry; PutIfAbsent stays exact,
// checked against a model for every key offered: new keys, live keys
// again and evicted keys again.
func TestKeyFilterRebuilds(t *testing.T) {
	p, err := New(fsys.NewMem(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	id := state.ID{Operator: 0, Partition: 2}
	model := map[string]int64{} // key -> expiry; -1: none
	const perBatch = 20_000
	for b := range 12 {
		st := statetest.MustLoad(t, p, id, int64(b))
		w := st.(*store).w
		w.absent = nil // rebuilt by the first PutIfAbsent
		before := w.filtersFromIndex
		ins := st.(state.Inserter)
		at := int64(256 + b) // first byte 1: an expiry (statetest.TestExpiry)
		offer := func(k string, v []byte, exp int64) {
			t.Helper()
			_, had := model[k]
			stored, err := ins.PutIfAbsent([]byte(k), v)
			if err != nil || stored == had {
				t.Fatalf("batch %d: PutIfAbsent(%s) = %v, %v; present before: %v", b, k, stored, err, had)
			}
			if stored {
				model[k] = exp
			}
		}
		if b >= 10 { // present, in no index item
			offer("no-expiry", []byte{0}, -1)
		}
		for i := range perBatch {
			offer(fmt.Sprintf("k%08d", b*perBatch+i), []byte{byte(at >> 8), byte(at)}, at)
			if i%50 == 0 && b > 0 { // a key of the last batch (live) and one of two batches ago (evicted)
				offer(fmt.Sprintf("k%08d", (b-1)*perBatch+i), []byte{1, 0}, 256)
				if b > 1 {
					offer(fmt.Sprintf("k%08d", (b-2)*perBatch+i), []byte{1, 0}, 256)
				}
			}
		}
		// The index was there (from batch 1) and named every entry, but
		// for the overwrite of batch 6 (its stale item popped by batch 7's
		// eviction) and the value without expiry of batch 9.
		if got, want := w.filtersFromIndex-before, b >= 1 && b != 7 && b <= 9; got != map[bool]int{false: 0, true: 1}[want] {
			t.Fatalf("batch %d: %d filters built from the index, want it %v", b, got, want)
		}
		switch b {
		case 6: // an overwrite: the index holds a stale item
			k := fmt.Sprintf("k%08d", b*perBatch+1)
			if err := st.Put([]byte(k), []byte{byte(at >> 8), byte(at)}); err != nil {
				t.Fatal(err)
			}
		case 9: // a value without expiry: an entry without an item
			k := "no-expiry"
			if err := st.Put([]byte(k), []byte{0}); err != nil {
				t.Fatal(err)
			}
			model[k] = -1
		}
		n, err := st.(state.Expirer).EvictUpTo(at-1, statetest.TestExpiry)
		if err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		for k, e := range model {
			if e >= 0 && e <= at-1 {
				delete(model, k)
				want++
			}
		}
		if n != want {
			t.Fatalf("batch %d: evicted %d, want %d", b, n, want)
		}
		if _, err := st.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

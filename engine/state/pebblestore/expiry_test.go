package pebblestore

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/statetest"
	"pgregory.net/rapid"
)

// budgetRun drives one store ID of a provider with an expiry index budget
// of budgetBytes through batches, checking every eviction against a Range
// reference (statetest.EvictChecked).
type budgetRun struct {
	t       *testing.T
	p       *Provider
	id      state.ID
	version int64
}

const budgetBytes = 8 << 10

func newBudgetRun(t *testing.T) *budgetRun {
	p, err := New(fsys.NewMem(), Options{ExpiryIndexBudget: budgetBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return &budgetRun{t: t, p: p, id: state.ID{Operator: 0, Partition: 1}}
}

// batch puts keys [from, to) (padded to keyLen bytes) with expiry 256+i,
// evicts up to 256+upTo, commits, and returns the working database, which
// holds the index if there is one.
func (r *budgetRun) batch(from, to, keyLen, upTo int) *workDB {
	t := r.t
	t.Helper()
	st := statetest.MustLoad(t, r.p, r.id, r.version)
	for i := from; i < to; i++ {
		k := fmt.Sprintf("key-%05d", i)
		k += strings.Repeat(".", max(0, keyLen-len(k)))
		at := 256 + i // for i < 1024 the first byte is 1 to 4: an expiry (statetest.TestExpiry)
		if err := st.Put([]byte(k), []byte{byte(at >> 8), byte(at)}); err != nil {
			t.Fatal(err)
		}
	}
	statetest.EvictChecked(t, st, nil, int64(256+upTo))
	w := st.(*store).w
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	r.version++
	if w.idx != nil && w.idx.bytes() > budgetBytes {
		t.Fatalf("index of %d bytes, over the budget of %d", w.idx.bytes(), budgetBytes)
	}
	return w
}

// TestExpiryIndexBudget: the index is built while it fits the budget and
// kept from batch to batch; Put taking it past the budget drops it, and
// EvictUpTo then scans (with the same result) and does not try again
// while the state is above half the keys it had when the index was
// dropped, nor while its keys alone would pass the budget; once the state
// is small enough, the eviction's scan builds it again.
func TestExpiryIndexBudget(t *testing.T) {
	r := newBudgetRun(t)
	if w := r.batch(0, 100, 0, 10); w.idx == nil {
		t.Fatal("after 100 keys: no index")
	}
	if w := r.batch(100, 130, 0, 20); w.idx == nil {
		t.Fatal("after 130 keys: the index was not kept")
	}
	w := r.batch(130, 530, 0, 30)
	refused := w.idxRefusedAt
	if w.idx != nil || refused == 0 {
		t.Fatalf("after 530 keys: index %v, refused at %d keys; want none, refused", w.idx != nil, refused)
	}
	// Evict down to 200 keys (the eviction starts with keys that alone
	// would pass the budget), then to refused/2 - 1: that eviction starts
	// with 200 keys, which would fit, but above half the refused size.
	if w := r.batch(530, 530, 0, 329); w.idx != nil || w.numKeys != 200 {
		t.Fatalf("index %v with %d keys (want none, 200 keys)", w.idx != nil, w.numKeys)
	}
	if 200*24 > budgetBytes || 2*200 <= refused {
		t.Fatalf("refused at %d keys: the test's sizes need adjusting", refused)
	}
	keep := int(refused)/2 - 1
	if w := r.batch(530, 530, 0, 529-keep); w.idx != nil || w.numKeys != int64(keep) {
		t.Fatalf("index %v with %d keys (want none, %d keys)", w.idx != nil, w.numKeys, keep)
	}
	// Now at most half: built again by the eviction's scan.
	if w := r.batch(530, 531, 0, 0); w.idx == nil || w.idxRefusedAt != 0 {
		t.Fatalf("after shrinking to %d keys: index %v, refused at %d; want one", keep+1, w.idx != nil, w.idxRefusedAt)
	}
	// 480 more keys: dropped by Put; the eviction's state is too large to
	// try (keys x 24 bytes over the budget).
	if w := r.batch(531, 1011, 0, 0); w.idx != nil || w.idxRefusedAt == 0 {
		t.Fatal("after 1011 keys: an index")
	}
}

// TestExpiryIndexBudgetLongKeys: keys so long that the index passes the
// budget during the scan that builds it (the key count alone would fit):
// the build is abandoned and the eviction still removes what expired.
func TestExpiryIndexBudgetLongKeys(t *testing.T) {
	r := newBudgetRun(t)
	w := r.batch(0, 70, 200, 30)
	if w.idx != nil || w.idxRefusedAt != 70 {
		t.Fatalf("index %v, refused at %d keys; want none, refused at 70", w.idx != nil, w.idxRefusedAt)
	}
	if w.numKeys != 70-31 {
		t.Fatalf("%d keys left, want %d", w.numKeys, 70-31)
	}
}

// TestExpiryIndexBudgetSlack: the budget is on the index's live bytes, not
// on the slack its slices grow by. An index of 150 keys, then 170, then
// 171 (about 5.6 KiB live under a budget of 8 KiB) is kept, within the
// budget, through every batch (the review's sequence: appending a batch's
// items to a run used to grow its capacity past the budget, so that the
// next Put dropped an index that fits).
func TestExpiryIndexBudgetSlack(t *testing.T) {
	r := newBudgetRun(t)
	for _, b := range [][2]int{{0, 150}, {150, 170}, {170, 171}, {171, 171}} {
		w := r.batch(b[0], b[1], 0, -1)
		if w.idx == nil || w.idxRefusedAt != 0 {
			t.Fatalf("after batch(%d, %d): index %v, refused at %d keys; want the index kept", b[0], b[1], w.idx != nil, w.idxRefusedAt)
		}
		if live := w.idx.live(); live != int64(b[1])*(24+9) {
			t.Fatalf("after batch(%d, %d): %d live bytes, want %d", b[0], b[1], live, b[1]*(24+9))
		}
	}
}

// TestEvictUpToErrorDropsIndex: an EvictUpTo that fails after popping an
// item (here the lookup that verifies it, after a Delete made items
// suspect) drops the index, which would otherwise have lost that item
// for good should the caller go on and commit; the next EvictUpTo builds
// it again by a scan and evicts the entry.
func TestEvictUpToErrorDropsIndex(t *testing.T) {
	r := newBudgetRun(t)
	if w := r.batch(0, 10, 0, -1); w.idx == nil {
		t.Fatal("no index")
	}
	st := statetest.MustLoad(t, r.p, r.id, r.version)
	if err := st.Delete([]byte("key-00009")); err != nil {
		t.Fatal(err)
	}
	failure := errors.New("injected read error")
	dbGet = func(*pebble.DB, []byte) ([]byte, io.Closer, error) { return nil, nil, failure }
	defer func() { dbGet = (*pebble.DB).Get }() // also if EvictUpTo panics
	_, err := st.(state.Expirer).EvictUpTo(256, statetest.TestExpiry)
	dbGet = (*pebble.DB).Get
	if !errors.Is(err, failure) {
		t.Fatalf("EvictUpTo: %v, want the injected error", err)
	}
	if w := st.(*store).w; w.idx != nil {
		t.Fatal("the index was kept after a failed EvictUpTo")
	}
	statetest.EvictChecked(t, st, nil, 256) // removes key-00000 again
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	r.version++
	if w := r.batch(10, 10, 0, 8); w.numKeys != 0 {
		t.Fatalf("%d keys left, want 0", w.numKeys)
	}
}

// TestExpiryFallbackBounded: an eviction without an index holds at most
// the budget's worth of expired entries: 60 of 230 bytes each (keys of
// 190) under 8 KiB take two scans, and the remove records are still in
// (expiry, key) order across them.
func TestExpiryFallbackBounded(t *testing.T) {
	r := newBudgetRun(t)
	st := statetest.MustLoad(t, r.p, r.id, r.version)
	for i := 99; i >= 0; i-- { // put in descending order: Range's key order is not the removal order
		k := fmt.Sprintf("key-%05d", i) + strings.Repeat(".", 190-9)
		at := 256 + (i*37)%100 // expiries in another order than the keys
		if err := st.Put([]byte(k), []byte{byte(at >> 8), byte(at)}); err != nil {
			t.Fatal(err)
		}
	}
	off := len(st.(*store).Delta)
	statetest.EvictChecked(t, st, nil, 256+59)
	s := st.(*store)
	if s.w.idx != nil || s.dueScans != 2 {
		t.Fatalf("index %v, %d scans; want none, 2 scans", s.w.idx != nil, s.dueScans)
	}
	var prev []byte
	n := 0
	for d := s.Delta; off < len(d); n++ {
		k, v, removed := recordAt(d, uint32(off))
		if !removed {
			t.Fatalf("record %d is a put of %q", n, k)
		}
		var i int
		fmt.Sscanf(string(k), "key-%05d", &i)
		at := []byte{byte((256 + (i*37)%100) >> 8), byte(256 + (i*37)%100)}
		cur := append(append([]byte{}, at...), k...) // (expiry, key), big-endian
		if prev != nil && string(cur) <= string(prev) {
			t.Fatalf("remove record %d (%q) out of (expiry, key) order", n, k)
		}
		prev = cur
		off += 8 + len(k) + len(v)
	}
	if n != 60 {
		t.Fatalf("%d remove records, want 60", n)
	}
}

// TestExpiryStaleCount: a Delete makes evictions verify items against the
// database only until its stale item is popped; after that they read
// nothing from Pebble again (the count of suspect entries used to stay up
// until the index was rebuilt).
func TestExpiryStaleCount(t *testing.T) {
	r := newBudgetRun(t)
	r.batch(0, 20, 0, -1)
	st := statetest.MustLoad(t, r.p, r.id, r.version)
	if err := st.Delete([]byte("key-00003")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	r.version++
	gets := 0
	dbGet = func(db *pebble.DB, k []byte) ([]byte, io.Closer, error) { gets++; return db.Get(k) }
	defer func() { dbGet = (*pebble.DB).Get }()
	// Pops 0-5: 0-3 are verified (3 is the stale one), 4 and 5 not.
	w := r.batch(20, 20, 0, 5)
	if w.idx == nil || w.idx.changed != 0 || gets != 4 {
		t.Fatalf("index %v, changed %d, %d lookups; want an index, 0, 4", w.idx != nil, w.idx.changed, gets)
	}
	gets = 0
	if w := r.batch(20, 20, 0, 15); w.numKeys != 20-1-16+1 || gets != 0 {
		t.Fatalf("%d keys, %d lookups; want %d, 0", w.numKeys, gets, 20-1-16+1)
	}
}

// TestDueSetHoldsLeast: whatever the sizes of the entries offered, a
// dueSet holds the least of them in (expiry, key) order, so that
// evictScanned removes in that order (a short key offered after a long one
// that did not fit must not be kept in its place).
func TestDueSetHoldsLeast(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		budget := int64(rapid.IntRange(dueEntryBytes, 4*dueEntryBytes).Draw(t, "budget"))
		keys := rapid.SliceOfNDistinct(rapid.StringN(0, 30, -1), 0, 20, func(k string) string { return k }).Draw(t, "keys")
		d := &dueSet{budget: budget}
		var offered []dueEntry
		for _, k := range keys {
			e := dueEntry{at: int64(rapid.IntRange(0, 3).Draw(t, "at")), key: []byte(k)}
			offered = append(offered, e)
			d.add(e.at, []byte(k), 0)
		}
		slices.SortFunc(offered, func(a, b dueEntry) int { return dueCompare(&a, &b) })
		held := slices.Clone(d.heap)
		slices.SortFunc(held, func(a, b dueEntry) int { return dueCompare(&a, &b) })
		if len(offered) > 0 && len(held) == 0 {
			t.Fatal("nothing held")
		}
		for i := range held {
			if dueCompare(&held[i], &offered[i]) != 0 {
				t.Fatalf("held %v, offered %v", held, offered)
			}
		}
		if d.full != (len(held) < len(offered)) {
			t.Fatalf("full %v, held %d of %d", d.full, len(held), len(offered))
		}
		if d.bytes > budget && len(held) > 1 {
			t.Fatalf("%d bytes held, budget %d", d.bytes, budget)
		}
	})
}

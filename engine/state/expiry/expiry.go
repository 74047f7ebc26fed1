// Package expiry is the index behind state.Expirer: the entries of one
// store ordered by (expiry, key), so that eviction under a watermark pops
// only what expires instead of scanning every key. Both state stores use
// it: the memory store's items name entries in its table's arena, the
// Pebble store's name copies of the keys in an arena of the index's own.
//
// The index may hold stale items (an entry deleted or overwritten since it
// was pushed); a store acts on an item only after checking that the key
// still holds what the item was made for, and rebuilds the index once it
// is mostly stale (MostlyStale).
package expiry

import (
	"bytes"
	"cmp"
	"math/bits"
	"slices"

	"github.com/dedupsim/dedupsim/internal/radix"
)

// Item names one entry: its expiry, and its key as arena[Off:Off+Klen].
// Vlen is the length of the entry's value when the item was made (the
// Pebble store uses it to keep its size figure without reading the value
// back; the memory store keeps there the top half of the key's table
// hash, which finds the entry's slot without hashing the key again). It
// fits in what was padding: an item is 24 bytes.
type Item struct {
	At   int64
	Off  uint64
	Klen uint32
	Vlen uint32
}

// ItemBytes is the heap an item takes in the index.
const ItemBytes = 24

// Key returns the item's key in arena.
func (it *Item) Key(arena []byte) []byte { return arena[it.Off : it.Off+uint64(it.Klen)] }

// MinStale: an index counts as mostly stale once it holds at least twice
// as many items as the store has keys plus this many, so that stale items
// left by Delete or overwrites cannot pile up.
const MinStale = 1024

// Index orders items by (expiry, key). Push appends to pend, unsorted;
// the next Min or Pop sorts pend once and adds it to the runs, queues
// already in that order: appended to the run it continues (event times
// mostly arrive in order, so a batch's items usually follow the last
// batch's), else as a run of its own. The next item is the least of the
// runs' heads. A store pushes a batch's items and pops at the batch's end,
// so each item costs a share of one sort of its batch and O(1) otherwise.
// (A binary heap for the items that break the order, as before, took
// most items in the engine benchmark, whose copies of later keys come
// early: its pops were half of eviction's time.) Expiry is the function
// the index was built with, which Put uses for the items it pushes.
type Index struct {
	Expiry func([]byte) (int64, bool)
	runs   []run
	pend   []Item
	sc     sortScratch
}

// maxRuns is the most runs an index keeps (each pop compares their
// heads): past it the two shortest are merged.
const maxRuns = 8

// run is a queue of items in ascending order: items[head:].
type run struct {
	items []Item
	head  int
}

func (r *run) len() int { return len(r.items) - r.head }

// Sorted returns an index over items, which it sorts in place and keeps.
func Sorted(arena []byte, items []Item, expiry func([]byte) (int64, bool)) *Index {
	x := &Index{Expiry: expiry}
	x.sortItems(arena, items)
	x.sc = sortScratch{} // sized for the whole store: not kept
	x.runs = []run{{items: items}}
	return x
}

// Len is the number of items, stale ones included.
func (x *Index) Len() int {
	n := len(x.pend)
	for i := range x.runs {
		n += x.runs[i].len()
	}
	return n
}

// MostlyStale reports whether the index should be rebuilt for a store of
// keys entries (see MinStale).
func (x *Index) MostlyStale(keys int64) bool { return int64(x.Len()) >= 2*keys+MinStale }

// Bytes is the heap the index's item slices take (their capacity).
func (x *Index) Bytes() int64 {
	n := cap(x.pend)
	for i := range x.runs {
		n += cap(x.runs[i].items)
	}
	return int64(n) * ItemBytes
}

// Before orders items by expiry, then by key. The key makes the order
// total, so entries of equal expiry are popped in one order whatever order
// they were pushed in, and the removals a store makes in pop order do not
// depend on how its index was built. Items equal in both are the same key
// (one of them stale), whose order does not matter.
func Before(arena []byte, a, b *Item) bool {
	if a.At != b.At {
		return a.At < b.At
	}
	return keyBefore(arena, a, b) // kept out of line, so that Before inlines
}

func keyBefore(arena []byte, a, b *Item) bool {
	return bytes.Compare(a.Key(arena), b.Key(arena)) < 0
}

// Push adds an item.
func (x *Index) Push(it Item) { x.pend = append(x.pend, it) }

// Each calls fn with every item, stale ones included, in no particular
// order; fn must not change the index.
func (x *Index) Each(fn func(it *Item)) {
	for i := range x.runs {
		r := &x.runs[i]
		for j := r.head; j < len(r.items); j++ {
			fn(&r.items[j])
		}
	}
	for i := range x.pend {
		fn(&x.pend[i])
	}
}

// settle sorts the items pushed since the last Min or Pop into the runs,
// and drops the runs drained since.
func (x *Index) settle(arena []byte) {
	if len(x.pend) == 0 {
		return
	}
	var spare []Item // a drained run's slice, for the next pend
	kept := x.runs[:0]
	for _, r := range x.runs {
		if r.len() == 0 {
			if cap(r.items) > cap(spare) {
				spare = r.items[:0]
			}
			continue
		}
		kept = append(kept, r)
	}
	x.runs = kept
	x.sortItems(arena, x.pend)
	first := &x.pend[0]
	best := -1 // the run whose last item is the greatest not after first
	for i := range x.runs {
		last := &x.runs[i].items[len(x.runs[i].items)-1]
		if !Before(arena, first, last) && (best < 0 || Before(arena, &x.runs[best].items[len(x.runs[best].items)-1], last)) {
			best = i
		}
	}
	if best < 0 {
		x.runs = append(x.runs, run{items: x.pend})
		x.pend = spare
	} else {
		r := &x.runs[best]
		if r.head >= len(r.items)/2 {
			r.items, r.head = r.items[:copy(r.items, r.items[r.head:])], 0
		}
		r.items = append(r.items, x.pend...)
		x.pend = x.pend[:0]
	}
	for len(x.runs) > maxRuns {
		x.mergeShortest(arena)
	}
}

// mergeShortest merges the two shortest runs into one.
func (x *Index) mergeShortest(arena []byte) {
	a, b := 0, 1
	if x.runs[b].len() < x.runs[a].len() {
		a, b = b, a
	}
	for i := 2; i < len(x.runs); i++ {
		switch n := x.runs[i].len(); {
		case n < x.runs[a].len():
			a, b = i, a
		case n < x.runs[b].len():
			b = i
		}
	}
	ra, rb := x.runs[a].items[x.runs[a].head:], x.runs[b].items[x.runs[b].head:]
	out := make([]Item, 0, len(ra)+len(rb))
	for len(ra) > 0 && len(rb) > 0 {
		if Before(arena, &rb[0], &ra[0]) {
			out, rb = append(out, rb[0]), rb[1:]
		} else {
			out, ra = append(out, ra[0]), ra[1:]
		}
	}
	out = append(append(out, ra...), rb...)
	x.runs[a] = run{items: out}
	x.runs = append(x.runs[:b], x.runs[b+1:]...)
}

// next returns the run whose head is the next item (-1: the index is
// empty). byAt: decide by expiry alone (see Min).
func (x *Index) next(arena []byte, byAt bool) int {
	x.settle(arena)
	best := -1
	var min *Item
	for i := range x.runs {
		r := &x.runs[i]
		if r.len() == 0 {
			continue
		}
		head := &r.items[r.head]
		if min == nil || (byAt && head.At < min.At) || (!byAt && Before(arena, head, min)) {
			best, min = i, head
		}
	}
	return best
}

// Min returns an item of the least expiry without taking it (to compare
// expiries with a limit: of equal expiries it may return any).
func (x *Index) Min(arena []byte) (Item, bool) {
	i := x.next(arena, true)
	if i < 0 {
		return Item{}, false
	}
	r := &x.runs[i]
	return r.items[r.head], true
}

// Pop takes the next item; the index must not be empty.
func (x *Index) Pop(arena []byte) Item {
	r := &x.runs[x.next(arena, false)]
	it := r.items[r.head]
	r.head++
	return it
}

// Retain keeps the items for which keep returns true, in their order;
// keep may move an item's key (change Off) to another arena holding the
// same key, such as a compacted one, with which the index is used after.
func (x *Index) Retain(keep func(it *Item) bool) {
	// Compacted in place, from the head: the popped items' memory stays in
	// the slice, so that Bytes still counts it (re-slicing past them would
	// leave it allocated but out of cap).
	fix := func(items []Item, head int) []Item {
		kept := items[:0]
		for i := head; i < len(items); i++ {
			if keep(&items[i]) {
				kept = append(kept, items[i])
			}
		}
		return kept
	}
	for i := range x.runs {
		r := &x.runs[i]
		r.items, r.head = fix(r.items, r.head), 0
	}
	x.pend = fix(x.pend, 0)
}

// Tighten moves the items into slices of their exact length (dropping
// drained runs and the popped items' memory), plus room for spare more in
// pend, where the next batch's items are pushed, and in the longest run,
// which they most likely continue: Bytes becomes (Len()+spare)*ItemBytes,
// plus spare*ItemBytes if a run is left. A store calls it when the
// slices' growth (append's 1.25-2x) takes Bytes past a budget that the
// items themselves fit.
func (x *Index) Tighten(spare int) {
	longest := -1
	kept := x.runs[:0]
	for _, r := range x.runs {
		if r.len() == 0 {
			continue
		}
		if longest < 0 || r.len() > kept[longest].len() {
			longest = len(kept)
		}
		kept = append(kept, r)
	}
	for i := len(kept); i < len(x.runs); i++ {
		x.runs[i] = run{} // no reference to a drained run's memory
	}
	x.runs = kept
	for i := range x.runs {
		r := &x.runs[i]
		n := r.len()
		if i == longest {
			n += max(spare, 0)
		}
		r.items, r.head = append(make([]Item, 0, n), r.items[r.head:]...), 0
	}
	x.pend = append(make([]Item, 0, len(x.pend)+max(spare, 0)), x.pend...)
}

// sortItems sorts items by Before's order: by expiry with a radix sort of
// packed (expiry, position) keys, then each run of equal expiries by key
// (comparisons read keys from the arena, scattered in memory: a
// comparison sort of a batch's items cost a tenth of a simulated run). A
// span of expiries too wide to pack falls back to a comparison sort.
// Items equal in both may come out in either order (see Before).
func (x *Index) sortItems(arena []byte, items []Item) {
	n := len(items)
	if n < 256 {
		sortItemsCmp(arena, items)
		return
	}
	lo, hi := items[0].At, items[0].At
	for i := range items {
		lo, hi = min(lo, items[i].At), max(hi, items[i].At)
	}
	pb := bits.Len(uint(n))
	span := uint64(hi) - uint64(lo)
	if bits.Len64(span)+pb > 64 {
		sortItemsCmp(arena, items)
		return
	}
	sc := &x.sc
	if cap(sc.keys) < n {
		sc.keys, sc.tmp = make([]uint64, n), make([]uint64, n)
	}
	keys, tmp := sc.keys[:n], sc.tmp[:n]
	var top uint64
	for i := range items {
		keys[i] = (uint64(items[i].At)-uint64(lo))<<pb | uint64(i)
		top |= keys[i]
	}
	keys, tmp = radix.Sort(keys, tmp, bits.Len64(top))
	sc.keys, sc.tmp = keys, tmp
	out := append(sc.out[:0], items...)
	for i, k := range keys {
		items[i] = out[k&(1<<pb-1)]
	}
	clear(out)
	sc.out = out[:0]
	for i := 0; i < n; {
		j := i + 1
		for j < n && items[j].At == items[i].At {
			j++
		}
		if j-i > 1 {
			sortItemsCmp(arena, items[i:j])
		}
		i = j
	}
	if n > keepScratch {
		// Bytes does not count the scratch (about 40 bytes an item), so a
		// big one is not kept past the sort that needed it: the memory a
		// store reports stays the memory it holds between batches.
		x.sc = sortScratch{}
	}
}

// keepScratch is the most items whose sort scratch an index keeps
// between sorts (about 2.6 MB).
const keepScratch = 1 << 16

// sortScratch is sortItems' scratch, kept with the index between sorts
// of at most keepScratch items.
type sortScratch struct {
	keys, tmp []uint64
	out       []Item
}

// sortItemsCmp sorts items by Before's order, comparing each pair once.
func sortItemsCmp(arena []byte, items []Item) {
	slices.SortFunc(items, func(a, b Item) int {
		if a.At != b.At {
			return cmp.Compare(a.At, b.At)
		}
		return bytes.Compare(a.Key(arena), b.Key(arena))
	})
}

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
	"slices"
)

// Item names one entry: its expiry, and its key as arena[Off:Off+Klen].
// Vlen is the length of the entry's value when the item was made (the
// Pebble store uses it to keep its size figure without reading the value
// back; the memory store leaves it 0). It fits in what was padding: an
// item is 24 bytes.
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

// Index orders items by (expiry, key). Event times mostly arrive in order,
// so most items go to run, a queue already in that order (push and pop in
// O(1)); an item that would break its order goes to h, a binary min-heap.
// The next item is the lesser of the two heads. Expiry is the function the
// index was built with, which Put uses for the items it pushes.
type Index struct {
	Expiry func([]byte) (int64, bool)
	run    []Item // run[head:] ascending
	head   int
	h      []Item
}

// Sorted returns an index over items, which it sorts in place and keeps.
func Sorted(arena []byte, items []Item, expiry func([]byte) (int64, bool)) *Index {
	sortItems(arena, items)
	return &Index{Expiry: expiry, run: items}
}

// Len is the number of items, stale ones included.
func (x *Index) Len() int { return len(x.run) - x.head + len(x.h) }

// MostlyStale reports whether the index should be rebuilt for a store of
// keys entries (see MinStale).
func (x *Index) MostlyStale(keys int64) bool { return int64(x.Len()) >= 2*keys+MinStale }

// Bytes is the heap the index's item slices take (their capacity).
func (x *Index) Bytes() int64 { return int64(cap(x.run)+cap(x.h)) * ItemBytes }

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
func (x *Index) Push(arena []byte, it Item) {
	if x.head == len(x.run) {
		x.run, x.head = x.run[:0], 0
	}
	if n := len(x.run); n == x.head || !Before(arena, &it, &x.run[n-1]) {
		if x.head > 0 && len(x.run) == cap(x.run) && x.head >= len(x.run)/2 {
			// Reuse the popped front rather than grow.
			x.run = x.run[:copy(x.run, x.run[x.head:])]
			x.head = 0
		}
		x.run = append(x.run, it)
		return
	}
	h := append(x.h, it)
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !Before(arena, &it, &h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = it
	x.h = h
}

// fromRun reports whether the next item is the head of run (else of h;
// false, false when the index is empty).
func (x *Index) fromRun(arena []byte) (fromRun, ok bool) {
	r, h := x.head < len(x.run), len(x.h) > 0
	switch {
	case r && h:
		return !Before(arena, &x.h[0], &x.run[x.head]), true
	case r:
		return true, true
	}
	return false, h
}

// Min returns the next item without taking it. It needs no arena: it is
// used only to compare expiries with a limit, and which head holds the
// lesser expiry is decided by expiry alone unless the two are equal.
func (x *Index) Min() (Item, bool) {
	r, h := x.head < len(x.run), len(x.h) > 0
	switch {
	case r && h:
		if x.h[0].At < x.run[x.head].At {
			return x.h[0], true
		}
		return x.run[x.head], true
	case r:
		return x.run[x.head], true
	case h:
		return x.h[0], true
	}
	return Item{}, false
}

// Pop takes the next item.
func (x *Index) Pop(arena []byte) Item {
	fromRun, _ := x.fromRun(arena)
	if fromRun {
		it := x.run[x.head]
		x.head++
		return it
	}
	h := x.h
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	x.h = h[:last]
	if last > 0 {
		x.down(arena, 0)
	}
	return top
}

func (x *Index) down(arena []byte, i int) {
	h := x.h
	n := len(h)
	it := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && Before(arena, &h[r], &h[c]) {
			c = r
		}
		if !Before(arena, &h[c], &it) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = it
}

// Retain keeps the items for which keep returns true, in their order;
// keep may move an item's key (change Off) to another arena holding the
// same key, such as a compacted one. Dropping items breaks the heap's
// order: call Heapify after Retain, with the arena the items point into.
func (x *Index) Retain(keep func(it *Item) bool) {
	fix := func(items []Item) []Item {
		kept := items[:0]
		for i := range items {
			if keep(&items[i]) {
				kept = append(kept, items[i])
			}
		}
		return kept
	}
	x.run, x.head = fix(x.run[x.head:]), 0
	x.h = fix(x.h)
}

// Heapify restores the heap's order after Retain.
func (x *Index) Heapify(arena []byte) {
	for i := len(x.h)/2 - 1; i >= 0; i-- {
		x.down(arena, i)
	}
}

func sortItems(arena []byte, items []Item) {
	slices.SortFunc(items, func(a, b Item) int {
		if Before(arena, &a, &b) {
			return -1
		}
		if Before(arena, &b, &a) {
			return 1
		}
		return 0
	})
}

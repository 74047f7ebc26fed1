package expiry

import (
	"cmp"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestIndexOrder: whatever order items are pushed in (mostly ascending with
// stragglers and jumps, as event times arrive, or at random), interleaved
// with pops, Retain and Tighten, Pop returns them in (expiry, key) order and Min
// has the least expiry, as a sorted reference says.
func TestIndexOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		keys, arena, offs := testKeys()
		item := func(at int64, k int) Item { return Item{At: at, Off: offs[k], Klen: uint32(len(keys[k]))} }
		type ref struct {
			at  int64
			key string
		}
		less := func(a, b ref) int { return cmp.Or(cmp.Compare(a.at, b.at), strings.Compare(a.key, b.key)) }
		var model []ref
		var initial []Item
		for range rapid.IntRange(0, 20).Draw(t, "initial") {
			at, k := rapid.Int64Range(0, 50).Draw(t, "at"), rapid.IntRange(0, len(keys)-1).Draw(t, "key")
			initial = append(initial, item(at, k))
			model = append(model, ref{at, keys[k]})
		}
		x := Sorted(arena, initial, nil)
		clock := int64(0)
		// pushes out of pops, in tenths: more pushes pile up runs (a
		// batch's items sorted at its first pop) until they are merged.
		pushes := rapid.IntRange(3, 9).Draw(t, "pushes")
		for range rapid.IntRange(0, 400).Draw(t, "ops") {
			op := rapid.IntRange(0, 10).Draw(t, "op")
			switch {
			case op < pushes: // push: mostly ascending
				clock += rapid.Int64Range(0, 3).Draw(t, "step")
				at := clock
				switch rapid.IntRange(0, 6).Draw(t, "kind") {
				case 0:
					at -= rapid.Int64Range(0, 40).Draw(t, "late")
				case 1:
					at += rapid.Int64Range(0, 40).Draw(t, "early")
				case 2: // before every run's last item: a run of its own
					at = rapid.Int64Range(0, 5).Draw(t, "rewind")
				}
				k := rapid.IntRange(0, len(keys)-1).Draw(t, "key")
				x.Push(item(at, k))
				model = append(model, ref{at, keys[k]})
			case op < 10: // pop
				if len(model) == 0 {
					if _, ok := x.Min(arena); ok || x.Len() != 0 {
						t.Fatalf("empty model, index of %d", x.Len())
					}
					continue
				}
				slices.SortFunc(model, less)
				if m, ok := x.Min(arena); !ok || m.At != model[0].at {
					t.Fatalf("Min = %+v, %v; want expiry %d", m, ok, model[0].at)
				}
				it := x.Pop(arena)
				if got := (ref{it.At, string(it.Key(arena))}); got != model[0] {
					t.Fatalf("Pop = %+v, want %+v", got, model[0])
				}
				model = model[1:]
			default: // drop the items of one key, as a compaction drops stale ones
				k := rapid.IntRange(0, len(keys)-1).Draw(t, "dropKey")
				x.Retain(func(it *Item) bool { return string(it.Key(arena)) != keys[k] })
				model = slices.DeleteFunc(model, func(r ref) bool { return r.key == keys[k] })
				if rapid.Bool().Draw(t, "tighten") { // as a store over its budget does
					spare := rapid.IntRange(0, 5).Draw(t, "spare")
					x.Tighten(spare)
					want := int64(len(model)+spare) * ItemBytes
					if len(x.runs) > 0 {
						want += int64(spare) * ItemBytes
					}
					if x.Bytes() != want {
						t.Fatalf("Bytes after Tighten(%d) = %d, want %d", spare, x.Bytes(), want)
					}
				}
			}
			if x.Len() != len(model) {
				t.Fatalf("Len = %d, want %d", x.Len(), len(model))
			}
		}
		slices.SortFunc(model, less)
		for _, want := range model {
			if it := x.Pop(arena); (ref{it.At, string(it.Key(arena))}) != want {
				t.Fatalf("draining: Pop = %d %q, want %+v", it.At, it.Key(arena), want)
			}
		}
		if x.Len() != 0 || x.Bytes() < 0 {
			t.Fatalf("Len %d after draining", x.Len())
		}
	})
}

// TestRetainBytes: Retain after pops keeps the items in the slices they
// were in, so Bytes (the heap the slices take) does not change (it used to
// re-slice past the popped items, whose memory stays allocated).
func TestRetainBytes(t *testing.T) {
	arena := []byte("abcdefghij")
	items := make([]Item, 10)
	for i := range items {
		items[i] = Item{At: int64(i), Off: uint64(i), Klen: 1}
	}
	x := Sorted(arena, items, nil)
	for range 4 {
		x.Pop(arena)
	}
	before := x.Bytes()
	x.Retain(func(it *Item) bool { return true })
	if got := x.Bytes(); got != before || got != 10*ItemBytes {
		t.Fatalf("Bytes after Retain = %d, before %d; want %d", got, before, 10*ItemBytes)
	}
	for i := 4; i < 10; i++ {
		if it := x.Pop(arena); it.At != int64(i) {
			t.Fatalf("Pop = %d, want %d", it.At, i)
		}
	}
}

// TestSortItemsRadix: the radix path of sortItems (256 items or more)
// orders by (expiry, key) as the comparison sort does, with ties on the
// expiry, negative expiries and a span too wide to pack (the fallback).
func TestSortItemsRadix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		keys, arena, offs := testKeys()
		n := rapid.IntRange(256, 3000).Draw(t, "n")
		lo := rapid.Int64Range(-1<<62, 1<<62).Draw(t, "lo")
		span := rapid.SampledFrom([]int64{1, 10, 1 << 20, 1 << 40, 1<<62 - 1}).Draw(t, "span")
		items := make([]Item, n)
		for i := range items {
			k := rapid.IntRange(0, len(keys)-1).Draw(t, "key")
			items[i] = Item{At: lo + rapid.Int64Range(0, span).Draw(t, "at"), Off: offs[k], Klen: uint32(len(keys[k]))}
		}
		want := slices.Clone(items)
		sortItemsCmp(arena, want)
		var x Index
		x.sortItems(arena, items)
		for i := range items {
			if items[i].At != want[i].At || string(items[i].Key(arena)) != string(want[i].Key(arena)) {
				t.Fatalf("item %d: (%d, %q), want (%d, %q)", i, items[i].At, items[i].Key(arena), want[i].At, want[i].Key(arena))
			}
		}
	})
}

// testKeys are the keys the property tests draw from, laid end to end in an
// arena, and each one's offset in it.
func testKeys() (keys []string, arena []byte, offs []uint64) {
	keys = []string{"", "a", "b", "bb", "c", "z\x00"}
	offs = make([]uint64, len(keys))
	for i, k := range keys {
		offs[i] = uint64(len(arena))
		arena = append(arena, k...)
	}
	return keys, arena, offs
}

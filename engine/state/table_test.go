package state

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestTableModel: on random puts, deletes, evictions, compactions (with a
// live expiry index) and growth, the table holds what a Go map holds, its
// byte count is the map's, its snapshot is the entries in (keyHash,
// key) order, and EvictUpTo removes exactly the due entries, in ascending
// (expiry, key) order, even when the index was translated by a compaction.
func TestTableModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := &memCopy{t: newTable(rapid.IntRange(0, 20).Draw(rt, "hint"))}
		s := &memStore{w: c}
		s.state = updating // a store outside any lifecycle, for the test
		model := map[string][]byte{}
		exp := func(v []byte) (int64, bool) {
			if len(v) == 0 {
				return 0, false
			}
			return int64(v[0]), true
		}
		key := rapid.StringOfN(rapid.RuneFrom([]rune("abcdefgh")), 0, 3, -1)
		for range rapid.IntRange(1, 300).Draw(rt, "ops") {
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0, 1, 2, 3:
				k := key.Draw(rt, "key")
				v := rapid.SliceOfN(rapid.Byte(), 0, 2).Draw(rt, "value")
				if rapid.Bool().Draw(rt, "ifAbsent") {
					if _, ok := model[k]; ok {
						continue
					}
					if i, free := c.t.find([]byte(k), keyHash([]byte(k))); i < 0 {
						e := c.t.appendEntry([]byte(k), v, keyHash([]byte(k)))
						c.t.insertAt(free, e)
						s.changed(tslot{}, e, []byte(k), v)
					} else {
						rt.Fatalf("find %q: present, model says absent", k)
					}
				} else {
					old, e := c.t.put([]byte(k), v, keyHash([]byte(k)))
					s.changed(old, e, []byte(k), v)
				}
				model[k] = slices.Clone(v)
			case 4:
				k := key.Draw(rt, "key")
				if i, _ := c.t.find([]byte(k), keyHash([]byte(k))); i >= 0 {
					s.remove(i)
				}
				delete(model, k)
			case 5, 6:
				limit := int64(rapid.IntRange(0, 255).Draw(rt, "limit"))
				var due []string
				for k, v := range model {
					if at, ok := exp(v); ok && at <= limit {
						due = append(due, k)
					}
				}
				slices.SortFunc(due, func(a, b string) int {
					return cmp.Or(cmp.Compare(model[a][0], model[b][0]), strings.Compare(a, b))
				})
				s.Delta = s.Delta[:0]
				n, err := s.EvictUpTo(limit, exp)
				if err != nil {
					rt.Fatal(err)
				}
				var want []byte
				for _, k := range due {
					want = AppendRemove(want, []byte(k))
					delete(model, k)
				}
				if int(n) != len(due) || !bytes.Equal(s.Delta, want) {
					rt.Fatalf("evicted %d, delta %q; want %d, %q", n, s.Delta, len(due), want)
				}
			case 7, 9:
				if c.t.garbage() > 0 {
					oldArena := c.t.arena
					oldOffs := c.t.compact()
					if c.idx != nil {
						translateIndex(c.idx, c.t, oldArena, oldOffs)
					}
					pads := 0 // an empty key with an empty value takes a byte
					if v, ok := model[""]; ok && len(v) == 0 {
						pads = 1
					}
					if c.t.garbage() != int64(pads) {
						rt.Fatalf("garbage %d after compact, want %d", c.t.garbage(), pads)
					}
				}
			case 8:
				c.t.resize(c.t.n + rapid.IntRange(0, 50).Draw(rt, "grow"))
			}
			checkTable(rt, c.t, model)
		}
	})
}

func checkTable(rt *rapid.T, tb *table, model map[string][]byte) {
	got := map[string][]byte{}
	var live int64
	for i := range tb.slots {
		if s := &tb.slots[i]; s.off != 0 {
			got[string(tb.key(s))] = slices.Clone(tb.value(s))
		}
	}
	for k, v := range model {
		live += int64(len(k) + len(v))
		if gv, ok := tb.get([]byte(k), keyHash([]byte(k))); !ok || !bytes.Equal(gv, v) {
			rt.Fatalf("get %q = %q, %v; want %q", k, gv, ok, v)
		}
	}
	if !maps.EqualFunc(got, model, bytes.Equal) || tb.n != len(model) || tb.live != live {
		rt.Fatalf("table %q (n %d, live %d), want %q (live %d)", got, tb.n, tb.live, model, live)
	}
	keys := slices.Collect(maps.Keys(model))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(keyHash([]byte(a)), keyHash([]byte(b))), strings.Compare(a, b))
	})
	var want []byte
	for _, k := range keys {
		want = AppendPut(want, []byte(k), model[k])
	}
	if w := AppendEnd(want); !bytes.Equal(tb.encode(), w) {
		rt.Fatalf("snapshot %q, want %q", tb.encode(), w)
	}
}

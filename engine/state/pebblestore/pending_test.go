package pebblestore

import (
	"bytes"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupsim/dedupsim/engine/state"
	"pgregory.net/rapid"
)

// TestIngestTableFormat: the working databases' format major version
// accepts the format of the ingested sstables (a Pebble upgrade that
// raised the minimum would otherwise fail every commit that ingests).
func TestIngestTableFormat(t *testing.T) {
	v := pebble.FormatNewest
	if ingestTableFormat < v.MinTableFormat() || ingestTableFormat > v.MaxTableFormat() {
		t.Fatalf("ingested tables in %s, format major version %s accepts %s to %s", ingestTableFormat, v, v.MinTableFormat(), v.MaxTableFormat())
	}
}

// TestPendingIndexModel: after any sequence of puts and removes appended
// as records, the index finds each key's latest record, misses keys never
// changed, and sorted lists every changed key once, in byte order, but for
// keys removed that the database never held. Keys
// are drawn short and from a small alphabet so that they share prefixes,
// are prefixes of each other and tie on their first eight bytes.
func TestPendingIndexModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		keyGen := rapid.SliceOfN(rapid.SampledFrom([]byte{0, 1, 'a', 0xff}), 0, 11)
		var recs []byte
		var idx pendingIndex
		type latest struct {
			value   []byte
			removed bool
		}
		model := map[string]latest{}
		// inDB: whether the "database" holds the key, drawn once per key.
		inDB := map[string]bool{}
		for i, n := 0, rapid.IntRange(0, 3000).Draw(t, "ops"); i < n; i++ {
			k := keyGen.Draw(t, "key")
			if _, ok := inDB[string(k)]; !ok {
				inDB[string(k)] = rapid.Bool().Draw(t, "inDB")
			}
			off := len(recs)
			if rapid.IntRange(0, 3).Draw(t, "op") == 0 {
				recs = state.AppendRemove(recs, k)
				model[string(k)] = latest{removed: true}
			} else {
				v := rapid.SliceOfN(rapid.Byte(), 0, 4).Draw(t, "value")
				recs = state.AppendPut(recs, k, v)
				model[string(k)] = latest{value: v}
			}
			if _, err := idx.set(recs, k, keyHash(k), off, inDB[string(k)]); err != nil {
				t.Fatal(err)
			}
		}
		if idx.n != len(model) {
			t.Fatalf("index holds %d keys, model %d", idx.n, len(model))
		}
		for k, want := range model {
			v, removed, ok := idx.lookup(recs, []byte(k), keyHash([]byte(k)))
			if !ok || removed != want.removed || !bytes.Equal(v, want.value) {
				t.Fatalf("lookup %q = %q removed=%v found=%v, want %q removed=%v", k, v, removed, ok, want.value, want.removed)
			}
		}
		if _, _, ok := idx.lookup(recs, []byte("never"), keyHash([]byte("never"))); ok {
			t.Fatal("found a key never changed")
		}
		var got [][]byte
		for _, off := range idx.sorted(recs) {
			k, _, _ := recordAt(recs, off)
			got = append(got, k)
		}
		want := make([][]byte, 0, len(model))
		for k, l := range model {
			if l.removed && !inDB[k] {
				continue // removed, never in the database: nothing to write
			}
			want = append(want, []byte(k))
		}
		slices.SortFunc(want, bytes.Compare)
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("sorted = %q, want %q", got, want)
		}
	})
}

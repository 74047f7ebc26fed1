package dedup

import (
	"slices"
	"testing"

	"github.com/dedupsim/dedupsim/engine/row"
	"pgregory.net/rapid"
)

// TestBatchDedupModel: batchDedup's open-addressing table against a map:
// the first row of each key is emitted, in input order, every later one is
// a duplicate. Keys are short and from a small alphabet (empty and nil
// keys included), so that they collide and share prefixes; batches are up
// to a few thousand rows, past the table's first sizes.
func TestBatchDedupModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		keyGen := rapid.SliceOfN(rapid.SampledFrom([]byte{0, 'a', 'b', 0xff}), 0, 4)
		n := rapid.IntRange(0, 3000).Draw(t, "rows")
		rows := make([]row.Row, n)
		for i := range rows {
			if k := keyGen.Draw(t, "key"); len(k) > 0 || rapid.Bool().Draw(t, "nonNil") {
				rows[i].Key = k
			}
			rows[i].Data = []byte{byte(i), byte(i >> 8)}
		}
		res := batchDedup(rows)
		seen := map[string]bool{}
		var want []row.Row
		for i, r := range rows {
			wantOutcome := Emitted
			if seen[string(r.Key)] {
				wantOutcome = Duplicate
			} else {
				seen[string(r.Key)] = true
				want = append(want, r)
			}
			if res.Outcomes[i] != wantOutcome {
				t.Fatalf("row %d (key %q): outcome %v, want %v", i, r.Key, res.Outcomes[i], wantOutcome)
			}
		}
		if !slices.EqualFunc(res.Output, want, func(a, b row.Row) bool { return string(a.Data) == string(b.Data) }) {
			t.Fatalf("output has %d rows, want %d, or another order", len(res.Output), len(want))
		}
	})
}

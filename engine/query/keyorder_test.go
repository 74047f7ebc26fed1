package query

import (
	"slices"
	"testing"
)

// TestStateKeyOrder: up to four names keep the call order; from five on,
// Scala 2.13's HashSet order. The six-name case is the order real Spark
// stored for dropDuplicates(["id","n","l","d","b","ts"])
// (docs/spark-semantics.md §13.1: struct<n,ts,id,b,l,d>).
func TestStateKeyOrder(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"b", "a"}, []string{"b", "a"}},
		{[]string{"d", "c", "b", "a"}, []string{"d", "c", "b", "a"}},
		{[]string{"id", "n", "l", "d", "b", "ts"}, []string{"n", "ts", "id", "b", "l", "d"}},
	} {
		if got := StateKeyOrder(c.in); !slices.Equal(got, c.want) {
			t.Errorf("StateKeyOrder(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestStateKeyOrderIsASetOrder: from five names on, the order does not
// depend on the call order (a reorder of five or more keys is no change
// for Spark's state), and no name is lost or repeated.
func TestStateKeyOrderIsASetOrder(t *testing.T) {
	in := []string{"event_id", "user", "ts", "amount", "currency", "region", "k7", "🙂"}
	want := StateKeyOrder(in)
	rev := slices.Clone(in)
	slices.Reverse(rev)
	if got := StateKeyOrder(rev); !slices.Equal(got, want) {
		t.Fatalf("order depends on call order: %v vs %v", got, want)
	}
	sorted, w := slices.Clone(in), slices.Clone(want)
	slices.Sort(sorted)
	slices.Sort(w)
	if !slices.Equal(sorted, w) {
		t.Fatalf("names changed: %v", want)
	}
}

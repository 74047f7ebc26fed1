package radix

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSort: Sort orders distinct keys as slices.Sort does, at
// every size around its cut-over to slices.Sort and with digits that skip
// passes (keys sharing their low bits).
func TestSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 255, 256, 257, 1000, 10_000} {
		for _, shape := range []struct {
			name        string
			timeBits, s int
		}{{"dense", 20, 0}, {"low bits equal", 20, 11}, {"wide", 39, 0}} {
			pb := 0
			for 1<<pb <= n {
				pb++
			}
			keys := make([]uint64, n)
			for i := range keys {
				keys[i] = (r.Uint64N(1<<shape.timeBits)<<shape.s)<<pb | uint64(i)
			}
			want := slices.Clone(keys)
			slices.Sort(want)
			var top uint64
			for _, k := range keys {
				top |= k
			}
			width := 0
			for top>>width != 0 {
				width++
			}
			got, _ := Sort(keys, make([]uint64, n), width)
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d %s: Sort differs from slices.Sort", n, shape.name)
			}
		}
	}
}

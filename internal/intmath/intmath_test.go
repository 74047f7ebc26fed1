package intmath

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

func TestFloorDiv(t *testing.T) {
	for _, tc := range []struct{ a, b, want int64 }{
		{7, 2, 3}, {-7, 2, -4}, {7, -2, -4}, {-7, -2, 3}, {6, 3, 2}, {-6, 3, -2}, {0, 5, 0},
		{-1, 1000, -1}, {-1000, 1000, -1}, {-1001, 1000, -2}, {999, 1000, 0},
		{math.MinInt64, 1000, -9_223_372_036_854_776}, {math.MaxInt64, 1000, 9_223_372_036_854_775},
	} {
		if got := FloorDiv(tc.a, tc.b); got != tc.want {
			t.Errorf("FloorDiv(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestFloorDivProperty: q*b <= a < (q+1)*b for b > 0 (the floor), checked
// where the products fit.
func TestFloorDivProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.Int64Range(-1<<40, 1<<40).Draw(t, "a")
		b := rapid.Int64Range(1, 1<<20).Draw(t, "b")
		q := FloorDiv(a, b)
		if q*b > a || (q+1)*b <= a {
			t.Fatalf("FloorDiv(%d, %d) = %d", a, b, q)
		}
		if FloorDiv(a, -b) != FloorDiv(-a, b) {
			t.Fatalf("sign: FloorDiv(%d, %d) = %d, FloorDiv(%d, %d) = %d", a, -b, FloorDiv(a, -b), -a, b, FloorDiv(-a, b))
		}
	})
}

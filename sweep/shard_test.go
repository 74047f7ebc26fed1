package sweep

import (
	"math"
	"strings"
	"testing"
)

func TestParseShard(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		in     string
		env    func(string) string
		i, n   int
		errHas string
	}{
		{in: "0/1", i: 0, n: 1},
		{in: "2/3", i: 2, n: 3},
		{in: "99999/100000", i: 99999, n: 100000},
		{in: "3/3", errHas: `--shard "3/3": want i/n with 0 <= i < n <= 100000`},
		{in: "0/100001", errHas: "want i/n"},
		{in: "-1/2", errHas: "want i/n"},
		{in: "1", errHas: "want i/n"},
		{in: "a/b", errHas: "want i/n"},
		{in: "auto", env: env("DEDUPSIM_SHARD_INDEX", "1", "DEDUPSIM_SHARD_COUNT", "4"), i: 1, n: 4},
		{in: "auto", env: env("JOB_COMPLETION_INDEX", " 3 ", "DEDUPSIM_SHARD_COUNT", "4"), i: 3, n: 4},
		{in: "auto", env: env(), errHas: "--shard auto: set DEDUPSIM_SHARD_INDEX and DEDUPSIM_SHARD_COUNT"},
		{in: "auto", env: env("DEDUPSIM_SHARD_INDEX", "1", "JOB_COMPLETION_INDEX", "2", "DEDUPSIM_SHARD_COUNT", "4"),
			errHas: "DEDUPSIM_SHARD_INDEX=1 and JOB_COMPLETION_INDEX=2 disagree"},
		{in: "auto", env: env("DEDUPSIM_SHARD_INDEX", "4", "DEDUPSIM_SHARD_COUNT", "4"), errHas: "shard index 4 is not below DEDUPSIM_SHARD_COUNT=4"},
		{in: "auto", env: env("DEDUPSIM_SHARD_COUNT", "4"), errHas: "DEDUPSIM_SHARD_COUNT=4 is set but neither"},
		{in: "auto", env: env("DEDUPSIM_SHARD_INDEX", "0"), errHas: "the shard index is set but DEDUPSIM_SHARD_COUNT"},
	} {
		getenv := tc.env
		if getenv == nil {
			getenv = env()
		}
		i, n, err := ParseShard(tc.in, getenv)
		switch {
		case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
			t.Errorf("%q: error %v, want one with %q", tc.in, err, tc.errHas)
		case tc.errHas == "" && (err != nil || i != tc.i || n != tc.n):
			t.Errorf("%q: %d/%d %v, want %d/%d", tc.in, i, n, err, tc.i, tc.n)
		}
	}
}

// TestSeedCursor: the shards of a sweep run every seed exactly once, each
// shard as many as shardSeeds says, up to the largest seed.
func TestSeedCursor(t *testing.T) {
	for _, tc := range []struct{ first, seeds uint64 }{
		{1, 1}, {1, 7}, {5, 10}, {0, 13}, {math.MaxUint64 - 9, 10}, {math.MaxUint64, 1},
	} {
		for n := 1; n <= 5; n++ {
			seen := map[uint64]int{}
			for i := range n {
				cur := newSeedCursor(tc.first, tc.seeds, i, n)
				var got uint64
				for {
					s, ok := cur.next()
					if !ok {
						break
					}
					if k := s - tc.first; k%uint64(n) != uint64(i) {
						t.Fatalf("%+v shard %d/%d: seed %d is another shard's", tc, i, n, s)
					}
					seen[s]++
					got++
				}
				if want := shardSeeds(tc.seeds, i, n); got != want {
					t.Errorf("%+v shard %d/%d: %d seeds, shardSeeds says %d", tc, i, n, got, want)
				}
			}
			if uint64(len(seen)) != tc.seeds {
				t.Errorf("%+v over %d shards: %d distinct seeds", tc, n, len(seen))
			}
			for s, c := range seen {
				if c != 1 || s-tc.first >= tc.seeds {
					t.Errorf("%+v over %d shards: seed %d run %d times", tc, n, s, c)
				}
			}
		}
	}
	if got := shardSeeds(math.MaxUint64, 0, 3); got != math.MaxUint64/3 {
		t.Errorf("shardSeeds(2^64-1, 0, 3) = %d", got)
	}
}

func TestCheckSeedRange(t *testing.T) {
	for _, tc := range []struct {
		first, seeds uint64
		errHas       string
	}{
		{1, 1, ""},
		{1, math.MaxUint64, ""},
		{math.MaxUint64, 1, ""},
		{1, 0, "sweep: --seeds N (N >= 1) is required"},
		{2, math.MaxUint64, "sweep: --first-seed 2 with --seeds 18446744073709551615 would pass the largest seed"},
	} {
		err := CheckSeedRange(tc.first, tc.seeds)
		if (err == nil) != (tc.errHas == "") || err != nil && !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("%d+%d: %v, want %q", tc.first, tc.seeds, err, tc.errHas)
		}
	}
}

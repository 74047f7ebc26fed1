package watermark

import "testing"

func stats(ms ...int64) Stats {
	var s Stats
	for _, m := range ms {
		s.Add(m*1000, false)
	}
	return s
}

func TestTrackerPolicies(t *testing.T) {
	const none = -1
	tests := []struct {
		name    string
		policy  Policy
		delays  []int64
		start   int64
		batches [][]Stats
		want    []int64 // global after each batch
	}{
		{"single source: max minus delay", Min, []int64{10_000}, 0,
			[][]Stats{{stats(11_000)}, {stats(25_000)}, {stats(10_000)}},
			[]int64{1_000, 15_000, 15_000}},
		{"never decreases, never below 0", Min, []int64{10_000}, 0,
			[][]Stats{{stats(5_000)}, {stats(30_000)}, {stats(12_000)}},
			[]int64{0, 20_000, 20_000}},
		{"min: a source with no data yet counts as 0", Min, []int64{1_000, 1_000}, 0,
			[][]Stats{{stats(50_000), {}}, {stats(60_000), stats(20_000)}, {stats(70_000), {}}},
			[]int64{0, 19_000, 19_000}},
		{"max: the fastest source wins", Max, []int64{1_000, 1_000}, 0,
			[][]Stats{{stats(50_000), {}}, {{}, stats(20_000)}},
			[]int64{49_000, 49_000}},
		{"sources without a watermark are ignored", Min, []int64{none, 5_000}, 0,
			[][]Stats{{stats(1), stats(9_000)}},
			[]int64{4_000}},
		{"restart: restored global, nodes forgotten (min holds until all pass it)", Min, []int64{0, 0}, 40_000,
			[][]Stats{{stats(50_000), {}}, {{}, stats(30_000)}, {{}, stats(45_000)}},
			[]int64{40_000, 40_000, 45_000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(tc.policy, tc.delays, tc.start)
			for i, b := range tc.batches {
				if got := tr.Update(b); got != tc.want[i] {
					t.Fatalf("after batch %d: watermark %d, want %d", i, got, tc.want[i])
				}
			}
		})
	}
}

func TestStatsFloorAndNull(t *testing.T) {
	var s Stats
	s.Add(-1, false) // -1 µs floors to -1 ms
	s.Add(2_999, false)
	s.Add(0, true) // null reads as 0
	if s.MinMs != -1 || s.MaxMs != 2 || s.Count != 3 {
		t.Fatalf("stats %+v", s)
	}
	if got := s.Avg(); got != 0 { // (−1+2+0)/3 = 0.33 → 0
		t.Fatalf("avg %d", got)
	}
	m := stats(1, 3).Merge(stats(8))
	if m.MinMs != 1 || m.MaxMs != 8 || m.Count != 3 || m.Avg() != 4 {
		t.Fatalf("merge %+v", m)
	}
	// Spark's running mean truncates differently from sum/count:
	// these values give 16624 in Spark, 16625 as sum/count.
	var sp Stats
	for _, ms := range []int64{4000, 22500, 28500, 18000, 16000, 22500, 18500, 3000} {
		sp.Add(ms*1000, false)
	}
	if got := sp.Avg(); got != 16624 {
		t.Fatalf("running mean avg %d, want Spark's 16624", got)
	}
	if _, err := ParsePolicy("median"); err == nil {
		t.Fatal("median accepted")
	}
}

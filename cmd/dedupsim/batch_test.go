package main

import (
	"runtime"
	"testing"

	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/scenarios/result"
)

// TestSummaryIsSmall: what a sweep keeps per seed is kilobytes, not the
// run (issue 10.16: 5.5 MB per seed). The checker's report alone keeps
// about 1 MB of the history alive through shared arrays, so the summary
// copies it.
func TestSummaryIsSmall(t *testing.T) {
	s, err := scenarios.Find("retry-gap-beyond-delay")
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const n = 8
	var keep []*result.Run
	before := heap()
	for seed := uint64(1); seed <= n; seed++ {
		r, err := scenarios.Run(s, seed, scenarios.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sum := summarize(r)
		if sum.History != nil || sum.Report.Verdict.Summary != r.Report.Verdict.Summary || len(sum.Report.Findings) != len(r.Report.Findings) {
			t.Fatalf("summary %+v", sum)
		}
		keep = append(keep, sum)
	}
	per := uint64(0)
	if after := heap(); after > before {
		per = (after - before) / n
	}
	runtime.KeepAlive(keep)
	if per > 64<<10 {
		t.Fatalf("a summary keeps %d KB alive, want at most 64 KB", per>>10)
	}
	t.Logf("%d KB per seed", per>>10)
}

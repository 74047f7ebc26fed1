package analyze

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// heapRun feeds a payments-like trace of about n events, generated on the
// fly (no file), and measures the live heap after a GC every 500,000 lines
// and before Finish. It returns the largest live heap above the baseline.
func heapRun(t *testing.T, n int) (r *Report, peak uint64, sys uint64, elapsed time.Duration) {
	t.Helper()
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	measure := func() {
		runtime.GC()
		runtime.ReadMemStats(&m)
		if m.HeapAlloc > base {
			peak = max(peak, m.HeapAlloc-base)
		}
		sys = max(sys, m.HeapSys)
	}
	start := time.Now()
	a, err := New(Options{Keys: []string{"id"}, Time: "ts", Margin: DefaultMargin})
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	err = Payments(n).Each(func(line []byte) error {
		lines++
		if lines%500_000 == 0 {
			measure()
		}
		return a.Line(line)
	})
	if err != nil {
		t.Fatal(err)
	}
	measure()
	r = a.Finish()
	elapsed = time.Since(start)
	runtime.KeepAlive(a)
	return r, peak, sys, elapsed
}

// heapBound is what the package doc promises: about 35-45 bytes per
// distinct key (24 of ring, 11-21 of table), plus a few MB of fixed cost
// (histograms, the copies map, buffers).
func heapBound(keys int64) uint64 { return 8<<20 + 48*uint64(keys) }

func checkHeap(t *testing.T, n int) {
	r, peak, sys, elapsed := heapRun(t, n)
	t.Logf("%d events, %d distinct keys: live heap %.1f MB (%.1f B/key), heap reserved %.1f MB, %v (%.0f ns/event)",
		r.Events, r.DistinctKeys, float64(peak)/1e6, float64(peak)/float64(r.DistinctKeys), float64(sys)/1e6,
		elapsed.Round(time.Millisecond), float64(elapsed.Nanoseconds())/float64(r.Events))
	if r.Events < int64(n)*99/100 || r.Events > int64(n)*101/100 {
		t.Fatalf("%d events, want about %d", r.Events, n)
	}
	if b := heapBound(r.DistinctKeys); peak > b {
		t.Fatalf("live heap %d B over the bound %d B", peak, b)
	}
}

// TestMemory1M: a million events stay within the per-key bound.
func TestMemory1M(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	checkHeap(t, 1_000_000)
}

// TestMemory10M: ten million events (opt in: DEDUPSIM_ANALYZE_10M=1; about
// half a minute on a busy 2-core machine).
func TestMemory10M(t *testing.T) {
	if os.Getenv("DEDUPSIM_ANALYZE_10M") == "" {
		t.Skip("set DEDUPSIM_ANALYZE_10M=1 to run 10 million events")
	}
	checkHeap(t, 10_000_000)
}

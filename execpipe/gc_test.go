package execpipe

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// The collector percent gives gcHeadroom of growth past the live heap,
// never less than Go's default nor more than 5x the live heap.
func TestGCPercentFor(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 400},
		{1 << 20, 400},            // 128 MiB of headroom would be 128x: capped at 400
		{gcHeadroom / 4, 400},     // exactly 4x
		{gcHeadroom / 2, 200},     // 64 MiB live: 2x
		{gcHeadroom * 3 / 4, 133}, // 96 MiB live
		{gcHeadroom, 100},         // Go's default from here on
		{10 << 30, 100},
	} {
		if got := gcPercentFor(tc.live); got != tc.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", tc.live>>20, got, tc.want)
		}
	}
}

// exec paces the collector after every collection, leaves it as it found
// it, and alone when the environment sets GOGC.
func TestGCPacer(t *testing.T) {
	// Whatever the environment of the tests: the pacer paces only when
	// neither is set.
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetGCPercent(150)
	defer debug.SetGCPercent(before)
	p := newGCPacer()
	if got := debug.SetGCPercent(gcPercentMax); got != gcPercentMax {
		t.Errorf("pacing: percent %d, want %d", got, gcPercentMax)
	}
	// A live heap past the headroom: the next collection's re-pacing
	// brings the percent down to Go's default.
	live := make([][]byte, 0, gcHeadroom>>20+1)
	for range cap(live) {
		live = append(live, make([]byte, 1<<20))
	}
	for range 1000 { // until the cleanup goroutine has run
		runtime.GC()
		runtime.Gosched()
		p.mu.Lock()
		got := p.percent
		p.mu.Unlock()
		if got == gcPercentMin {
			break
		}
		time.Sleep(time.Millisecond)
	}
	p.mu.Lock()
	if p.percent != gcPercentMin {
		t.Errorf("after collections with %d MiB live: percent %d, want %d", len(live), p.percent, gcPercentMin)
	}
	p.mu.Unlock()
	runtime.KeepAlive(live)
	// Two at once (runs in one process): the last one put back restores.
	p2 := newGCPacer()
	p.restore()
	if got := debug.SetGCPercent(gcPercentMin); got == 150 {
		t.Errorf("one of two pacers restored: percent back to 150 while the other paces")
	}
	p2.restore()
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("after restore: percent %d, want 150", got)
	}
	t.Setenv("GOGC", "150")
	p = newGCPacer()
	runtime.GC()
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("with GOGC set: percent %d, want 150 (left alone)", got)
	}
	p.restore()
}

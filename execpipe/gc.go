package execpipe

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// exec's collector pacing. A 500k-row run allocates about 500 MB (rows,
// keys, state tables, batch output) over a live heap of 50-80 MB: with
// Go's default (GOGC=100, a cycle each time the heap doubles) that is
// about 18 cycles, and while a cycle marks, every pointer the decoder,
// the engine and the encoder write pays a barrier, and each cycle stops
// all goroutines twice. exec lets the heap grow further past what is
// live, by a bounded amount: after every collection the collector's
// percent is set from the live heap it measured so that a cycle comes
// when the heap has grown by gcHeadroom, but never later than at 5x the
// live heap (GOGC=400) and never sooner than Go's default. A large state
// (live heap of gcHeadroom or more) is collected exactly as by default.
//
// The hard bound is 5x the live heap of the last collection, not
// gcHeadroom above Go's default: the new percent is set by a cleanup,
// which runs only once the collection has swept the sentinel, so the
// cycle after a collection may still run under the percent set from an
// earlier, smaller live heap (at most gcPercentMax). While the live heap
// changes little from one cycle to the next the goal is the live heap
// plus max(gcHeadroom, live heap), within gcHeadroom of the default's
// (docs/performance.md). GOGC or GOMEMLIMIT in the environment wins:
// exec then leaves the collector alone.

// gcHeadroom is how far past the live heap exec lets the heap grow before
// a cycle, when that is more than Go's default allows.
const gcHeadroom = 128 << 20

// gcPercent bounds: Go's default, and the most exec sets.
const (
	gcPercentMin = 100
	gcPercentMax = 400
)

// gcPercentFor is the collector percent for a live heap of live bytes:
// gcHeadroom of growth, within [gcPercentMin, gcPercentMax].
func gcPercentFor(live uint64) int {
	if live == 0 {
		return gcPercentMax
	}
	return int(min(max(gcHeadroom*100/live, gcPercentMin), gcPercentMax))
}

// gcPacer sets the collector percent from the live heap (gcPercentFor)
// after every collection, until restore, whatever the pass: the heap goal
// is never past 5x the live heap, and near the default's plus gcHeadroom
// while the live heap is steady.
type gcPacer struct {
	mu      sync.Mutex
	on      bool
	percent int // the value set last
	sample  []metrics.Sample
}

// gcPacers counts the pacers on (runs of exec in one process, as in a
// benchmark): the first saves the percent there was, the last puts it
// back.
var gcPacers struct {
	sync.Mutex
	on   int
	prev int
}

// newGCPacer starts pacing at gcPercentMax (nothing is live yet), unless
// the environment sets GOGC or GOMEMLIMIT.
func newGCPacer() *gcPacer {
	p := &gcPacer{}
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return p
	}
	p.on, p.percent = true, gcPercentMax
	gcPacers.Lock()
	if prev := debug.SetGCPercent(gcPercentMax); gcPacers.on == 0 {
		gcPacers.prev = prev
	}
	gcPacers.on++
	gcPacers.Unlock()
	p.sample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	p.arm()
	return p
}

// gcSentinel is garbage as soon as it is made: its cleanup runs after the
// next collection (a pointer field keeps it out of the tiny allocator,
// whose objects may never be cleaned up).
type gcSentinel struct{ _ *int }

// arm re-paces after the next collection, and arms again.
func (p *gcPacer) arm() {
	runtime.AddCleanup(&gcSentinel{}, func(p *gcPacer) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.on {
			p.repace()
			p.arm()
		}
	}, p)
}

// repace sets the percent from the live heap the last cycle measured.
func (p *gcPacer) repace() {
	metrics.Read(p.sample)
	if p.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if pct := gcPercentFor(p.sample[0].Value.Uint64()); pct != p.percent {
		p.percent = pct
		debug.SetGCPercent(pct)
	}
}

// restore stops pacing; the last pacer on puts back the percent there
// was before the first. A nil pacer does nothing.
func (p *gcPacer) restore() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on {
		p.on = false
		gcPacers.Lock()
		if gcPacers.on--; gcPacers.on == 0 {
			debug.SetGCPercent(gcPacers.prev)
		}
		gcPacers.Unlock()
	}
}

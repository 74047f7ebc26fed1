package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
)

// exec's collector pacing. A 500k-row run allocates about 500 MB (rows,
// keys, state tables, batch output) over a live heap of 50-80 MB: with
// Go's default (GOGC=100, a cycle each time the heap doubles) that is
// about 18 cycles, and while a cycle marks, every pointer the decoder,
// the engine and the encoder write pays a barrier, and each cycle stops
// all goroutines twice. exec lets the heap grow further past what is
// live, by a bounded amount: after each batch the collector's percent is
// set from the live heap so that a cycle comes when the heap has grown by
// gcHeadroom, but never later than at 5x the live heap (GOGC=400) and
// never sooner than Go's default. So the heap peaks at most gcHeadroom
// above the default's peak (docs/performance.md), and a large state is
// collected exactly as by default. GOGC or GOMEMLIMIT in the environment
// wins: exec then leaves the collector alone.

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
// until restore.
type gcPacer struct {
	on      bool
	percent int // the value set last
	prev    int // the value before newGCPacer
	sample  []metrics.Sample
}

// newGCPacer starts pacing at gcPercentMax (nothing is live yet), unless
// the environment sets GOGC or GOMEMLIMIT.
func newGCPacer() *gcPacer {
	p := &gcPacer{}
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return p
	}
	p.on, p.percent = true, gcPercentMax
	p.prev = debug.SetGCPercent(gcPercentMax)
	p.sample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	return p
}

// batch re-paces from the live heap the last cycle measured; call it
// after each batch. A nil pacer does nothing.
func (p *gcPacer) batch() {
	if p == nil || !p.on {
		return
	}
	metrics.Read(p.sample)
	if p.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if pct := gcPercentFor(p.sample[0].Value.Uint64()); pct != p.percent {
		p.percent = pct
		debug.SetGCPercent(pct)
	}
}

// restore puts back the percent there was before newGCPacer.
func (p *gcPacer) restore() {
	if p != nil && p.on {
		debug.SetGCPercent(p.prev)
		p.on = false
	}
}

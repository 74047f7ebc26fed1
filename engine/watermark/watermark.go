// Package watermark tracks the event-time watermark the way Spark's
// WatermarkTracker does (spark-semantics.md §6): one value per watermark
// node (per source), combined by a min or max policy into a global value
// that starts at 0, only ever increases, and is applied from the next batch.
package watermark

import (
	"fmt"

	"github.com/dedupsim/dedupsim/internal/intmath"
)

// Policy combines the per-source values into the global candidate.
type Policy string

const (
	Min Policy = "min" // Spark's default: the slowest input holds the watermark
	Max Policy = "max"
)

// ParsePolicy validates a policy name.
func ParsePolicy(s string) (Policy, error) {
	switch Policy(s) {
	case Min, Max:
		return Policy(s), nil
	}
	return "", fmt.Errorf("unknown watermark policy %q (want min or max)", s)
}

// Stats are the event-time statistics one watermark node accumulated in one
// batch (Spark's EventTimeStats), over every row that flowed through it,
// including rows later dropped as late or as duplicates.
type Stats struct {
	MaxMs, MinMs int64
	// AvgMs is Spark's running mean, updated per row and merged by
	// weight, so its rounding matches Spark's to the millisecond.
	AvgMs float64
	Count int64
}

// Add records one row's event time in microseconds. Spark stores
// intmath.FloorDiv(micros, 1000); a null event time is read as 0.
func (s *Stats) Add(micros int64, null bool) {
	ms := int64(0)
	if !null {
		ms = intmath.FloorDiv(micros, 1000)
	}
	if s.Count == 0 || ms > s.MaxMs {
		s.MaxMs = ms
	}
	if s.Count == 0 || ms < s.MinMs {
		s.MinMs = ms
	}
	s.Count++
	s.AvgMs += (float64(ms) - s.AvgMs) / float64(s.Count)
}

// Merge combines partial stats of one node, as Spark merges the
// accumulator across tasks (EventTimeStats.merge).
func (s Stats) Merge(o Stats) Stats {
	if s.Count == 0 {
		return o
	}
	if o.Count == 0 {
		return s
	}
	r := Stats{MaxMs: max(s.MaxMs, o.MaxMs), MinMs: min(s.MinMs, o.MinMs), Count: s.Count + o.Count, AvgMs: s.AvgMs}
	r.AvgMs += (o.AvgMs - s.AvgMs) * float64(o.Count) / float64(r.Count)
	return r
}

// Avg is the average truncated toward zero, as Spark formats avg.toLong.
func (s Stats) Avg() int64 { return int64(s.AvgMs) }

// Tracker holds the per-node values (in memory only: forgotten on restart,
// §6.5) and the global watermark (restored from the checkpoint).
type Tracker struct {
	policy   Policy
	delaysMs []int64 // per source; -1 = the source has no watermark node
	nodes    map[int]int64
	globalMs int64
}

// NewTracker creates a tracker for sources with the given delays (-1 for a
// source without withWatermark), starting from a restored global value.
func NewTracker(policy Policy, delaysMs []int64, globalMs int64) *Tracker {
	return &Tracker{policy: policy, delaysMs: delaysMs, nodes: map[int]int64{}, globalMs: globalMs}
}

// HasNodes reports whether the query has any watermark at all.
func (t *Tracker) HasNodes() bool {
	for _, d := range t.delaysMs {
		if d >= 0 {
			return true
		}
	}
	return false
}

// Current is the global watermark in milliseconds.
func (t *Tracker) Current() int64 { return t.globalMs }

// Peek returns what Update(stats) would return, changing nothing.
func (t *Tracker) Peek(stats []Stats) int64 {
	c := *t
	c.nodes = make(map[int]int64, len(t.nodes))
	for k, v := range t.nodes {
		c.nodes[k] = v
	}
	return c.Update(stats)
}

// Update applies one executed batch's per-source stats (index = source) and
// returns the new global watermark. It mirrors WatermarkTracker.updateWatermark:
// a node that saw rows proposes max - delay and keeps the larger of that and
// its old value; a node never seen counts as 0; the global value moves only
// when the policy's choice is strictly greater.
func (t *Tracker) Update(stats []Stats) int64 {
	var vals []int64
	for i, d := range t.delaysMs {
		if d < 0 {
			continue
		}
		if i < len(stats) && stats[i].Count > 0 {
			cand := stats[i].MaxMs - d
			if old, ok := t.nodes[i]; !ok || cand > old {
				t.nodes[i] = cand
			}
		} else if _, ok := t.nodes[i]; !ok {
			t.nodes[i] = 0
		}
		vals = append(vals, t.nodes[i])
	}
	if len(vals) == 0 {
		return t.globalMs
	}
	chosen := vals[0]
	for _, v := range vals[1:] {
		if (t.policy == Max && v > chosen) || (t.policy != Max && v < chosen) {
			chosen = v
		}
	}
	if chosen > t.globalMs {
		t.globalMs = chosen
	}
	return t.globalMs
}

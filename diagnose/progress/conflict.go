package progress

import "fmt"

// Conflict is two copies of one executed batch (same query id, run id and
// batch id) whose figures differ: Spark writes one progress per executed
// batch of a run, so the inputs contradict each other.
type Conflict struct {
	ID, RunID string
	BatchID   int64
	// Field is the first field that differs, with the two values.
	Field  string
	A, B   string // the values, A's at WhereA
	WhereA string // the two copies' FILE:LINE, in sorted order
	WhereB string
}

// MaxConflicts bounds the conflicts a Log lists (ConflictTotal counts all).
const MaxConflicts = 20

type batchKey struct {
	id, run string
	batch   int64
}

// figure is one compared field of a record: its name and value.
type figure struct {
	name string
	v    int64
}

// figures are what two copies of a batch must agree on: everything the
// findings read except the rates (4.1's JSON writes one decimal, the event
// log's bean dump the raw double) and the duration (3.5's JSON has only
// durationMs.triggerExecution, its bean dump batchDuration): those differ
// between two shapes of one record.
func figures(p *Progress, f func(figure) bool) {
	et := p.EventTime
	for _, x := range []figure{
		{"timestamp", p.TimestampMs}, {"numInputRows", p.NumInputRows}, {"sink.numOutputRows", p.SinkOutputRows},
		{"eventTime.min", flag(et.HasMin, et.MinMs)}, {"eventTime.max", flag(et.HasMax, et.MaxMs)},
		{"eventTime.avg", flag(et.HasAvg, et.AvgMs)}, {"eventTime.watermark", flag(et.HasWatermark, et.WatermarkMs)},
		{"stateOperators (count)", int64(len(p.StateOperators))}, {"sources (count)", int64(len(p.Sources))},
	} {
		if !f(x) {
			return
		}
	}
	for i, s := range p.StateOperators {
		at := fmt.Sprintf("stateOperators[%d].", i)
		for _, x := range []figure{
			{at + "numRowsTotal", s.NumRowsTotal}, {at + "numRowsUpdated", s.NumRowsUpdated}, {at + "numRowsRemoved", s.NumRowsRemoved},
			{at + "numRowsDroppedByWatermark", s.NumRowsDroppedByWatermark}, {at + "memoryUsedBytes", s.MemoryUsedBytes},
			{at + "numShufflePartitions", s.NumShufflePartitions}, {at + "customMetrics.numDroppedDuplicateRows", s.DroppedDuplicateRows},
		} {
			if !f(x) {
				return
			}
		}
	}
	for i, s := range p.Sources {
		if !f(figure{fmt.Sprintf("sources[%d].numInputRows", i), s.NumInputRows}) {
			return
		}
	}
}

// flag is v, or MinInt64 when absent (a key absent differs from any value).
func flag(has bool, v int64) int64 {
	if !has {
		return -1 << 63
	}
	return v
}

// differ is the first figure a and b disagree on, with both values; ok
// false when they agree. The operator names are compared first.
func differ(a, b *Progress) (name string, va, vb string, less, ok bool) {
	if len(a.StateOperators) == len(b.StateOperators) {
		for i := range a.StateOperators {
			if x, y := a.StateOperators[i].OperatorName, b.StateOperators[i].OperatorName; x != y {
				return fmt.Sprintf("stateOperators[%d].operatorName", i), x, y, x < y, true
			}
		}
	}
	var fa []figure
	figures(a, func(x figure) bool { fa = append(fa, x); return true })
	i := 0
	figures(b, func(y figure) bool {
		if i >= len(fa) || fa[i] != y {
			ok = true
			if i < len(fa) {
				name, va, vb, less = y.name, show(fa[i].v), show(y.v), fa[i].v < y.v
			}
			return false
		}
		i++
		return true
	})
	return name, va, vb, less, ok
}

func show(v int64) string {
	if v == -1<<63 {
		return "absent"
	}
	return fmt.Sprint(v)
}

// copyOf handles a second copy p of the executed batch kept at c.records[i]:
// identical, it counts as a duplicate; different, it is a Conflict, and
// the copy kept is the one whose first differing figure is smaller, so
// that what is judged depends on the contents, not on the order of the
// inputs.
func (c *collector) copyOf(i int, p Progress) {
	old := &c.records[i]
	name, va, vb, less, ok := differ(old, &p)
	if !ok {
		c.log.Duplicates++
		return
	}
	cf := Conflict{ID: p.ID, RunID: p.RunID, BatchID: p.BatchID, Field: name, A: va, B: vb, WhereA: old.Where, WhereB: p.Where}
	if cf.WhereB < cf.WhereA {
		cf.A, cf.B, cf.WhereA, cf.WhereB = cf.B, cf.A, cf.WhereB, cf.WhereA
	}
	c.log.ConflictTotal++
	if c.log.ConflictsPerQuery == nil {
		c.log.ConflictsPerQuery = map[string]int{}
	}
	c.log.ConflictsPerQuery[p.ID]++
	if len(c.log.Conflicts) < MaxConflicts {
		c.log.Conflicts = append(c.log.Conflicts, cf)
	}
	if !less {
		*old = p
	}
}

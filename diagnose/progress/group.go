package progress

import (
	"cmp"
	"slices"
	"strings"
)

// group sorts the records into queries and runs (A.3: within one id, order
// by run start, then batch id; file order means nothing). The records are
// sorted in place and each run's Records is a part of that one slice: no
// record is copied, so memory is the records read and little more.
func (c *collector) group() {
	c.seen, c.batches = nil, nil // not needed any more
	type runKey struct{ id, run string }
	type runInfo struct {
		start              int64
		started, hasFirst  bool
		firstBatch, firstT int64
		stopped            bool
		exception          string
		rank               int32
	}
	runs := map[runKey]*runInfo{}
	names := map[string]string{}
	get := func(id, run string) *runInfo {
		k := runKey{id, run}
		r := runs[k]
		if r == nil {
			r = &runInfo{}
			runs[k] = r
		}
		return r
	}
	for _, e := range c.events {
		r := get(e.ID, e.RunID)
		if e.Name != "" {
			names[e.ID] = e.Name
		}
		switch e.Kind {
		case Started:
			r.start, r.started = e.TimestampMs, true
		case Terminated:
			r.stopped, r.exception = true, e.Exception
		default:
			if !r.started && !r.hasFirst && r.start == 0 {
				r.start = e.TimestampMs
			}
		}
	}
	for i := range c.records {
		p := &c.records[i]
		if p.Name != "" {
			names[p.ID] = p.Name
		}
		r := get(p.ID, p.RunID)
		if !r.hasFirst || p.BatchID < r.firstBatch || (p.BatchID == r.firstBatch && p.TimestampMs < r.firstT) {
			r.hasFirst, r.firstBatch, r.firstT = true, p.BatchID, p.TimestampMs
		}
	}
	keys := make([]runKey, 0, len(runs))
	for k, r := range runs {
		if r.hasFirst && !r.started {
			r.start = r.firstT
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b runKey) int {
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		if c := cmp.Compare(runs[a].start, runs[b].start); c != 0 {
			return c
		}
		return strings.Compare(a.run, b.run)
	})
	for i, k := range keys {
		runs[k].rank = int32(i)
	}
	for i := range c.records {
		p := &c.records[i]
		p.rank = runs[runKey{p.ID, p.RunID}].rank
	}
	slices.SortFunc(c.records, func(a, b Progress) int {
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		if c := cmp.Compare(a.BatchID, b.BatchID); c != 0 {
			return c
		}
		if c := cmp.Compare(a.TimestampMs, b.TimestampMs); c != 0 {
			return c
		}
		return strings.Compare(a.Where, b.Where)
	})
	at := 0
	for _, k := range keys {
		r := runs[k]
		end := at
		for end < len(c.records) && c.records[end].rank == r.rank {
			end++
		}
		if n := len(c.log.Queries); n == 0 || c.log.Queries[n-1].ID != k.id {
			c.log.Queries = append(c.log.Queries, Query{ID: k.id, Name: names[k.id]})
		}
		q := &c.log.Queries[len(c.log.Queries)-1]
		q.Runs = append(q.Runs, Run{RunID: k.run, StartMs: r.start, Records: c.records[at:end:end], Stopped: r.stopped, Exception: r.exception})
		if p, ok := c.plans[k.run]; ok && q.Plan == nil {
			q.Plan = &p
		}
		at = end
	}
	c.records = nil
}

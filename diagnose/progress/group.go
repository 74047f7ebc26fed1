package progress

import (
	"sort"
)

// group sorts the records into queries and runs (A.3: within one id, order
// by run start, then batch id; file order means nothing).
func (c *collector) group() {
	c.log.sortConflicts()
	byID := map[string]*Query{}
	runs := map[[2]string]*Run{}
	var order []string
	query := func(id string) *Query {
		q := byID[id]
		if q == nil {
			q = &Query{ID: id}
			byID[id] = q
			order = append(order, id)
		}
		return q
	}
	run := func(id, runID string, ts int64) *Run {
		k := [2]string{id, runID}
		r := runs[k]
		if r == nil {
			r = &Run{RunID: runID, StartMs: ts}
			runs[k] = r
		}
		return r
	}
	started := map[[2]string]bool{}
	for _, e := range c.events {
		if e.Kind == Started {
			started[[2]string{e.ID, e.RunID}] = true
		}
		q := query(e.ID)
		if e.Name != "" {
			q.Name = e.Name
		}
		r := run(e.ID, e.RunID, e.TimestampMs)
		switch e.Kind {
		case Started:
			r.StartMs = e.TimestampMs
		case Terminated:
			r.Stopped, r.Exception = true, e.Exception
		}
	}
	for _, p := range c.records {
		q := query(p.ID)
		if p.Name != "" {
			q.Name = p.Name
		}
		r := run(p.ID, p.RunID, p.TimestampMs)
		r.Records = append(r.Records, p)
	}
	for k, r := range runs {
		sort.SliceStable(r.Records, func(i, j int) bool {
			a, b := r.Records[i], r.Records[j]
			if a.BatchID != b.BatchID {
				return a.BatchID < b.BatchID
			}
			return a.TimestampMs < b.TimestampMs
		})
		if len(r.Records) > 0 && !started[k] {
			r.StartMs = r.Records[0].TimestampMs
		}
		q := byID[k[0]]
		q.Runs = append(q.Runs, *r)
	}
	sort.Strings(order)
	for _, id := range order {
		q := byID[id]
		sort.Slice(q.Runs, func(i, j int) bool {
			if q.Runs[i].StartMs != q.Runs[j].StartMs {
				return q.Runs[i].StartMs < q.Runs[j].StartMs
			}
			return q.Runs[i].RunID < q.Runs[j].RunID
		})
		c.log.Queries = append(c.log.Queries, *q)
	}
}

package check

import (
	"fmt"

	"github.com/dedupsim/dedupsim/sim/history"
)

// Table is what reached the sink, per logical event: the first thing every
// report says, apart from the API's promise (Verdict.ExactlyOnce) and from a
// scenario's expectations. A data engineer reads it as "is my table right".
//
// For a sink with a final table (table, merge, append) "the table" is that
// final table. For a sink that keeps none (foreachBatch) it is what the sink
// received: every row of every delivery, a replayed delivery counted again
// (Source says which).
type Table struct {
	// Source is "table" (the sink's final table) or "deliveries" (no table:
	// every row the sink was handed, replays included).
	Source   string `json:"source"`
	SinkKind string `json:"sinkKind"`
	// Events is the number of logical events the producers sent; Rows the
	// rows of the table (or delivered).
	Events int `json:"events"`
	Rows   int `json:"rows"`
	// Once, MoreThanOnce and Never split Events by how many rows of the
	// table hold them.
	Once         int `json:"once"`
	MoreThanOnce int `json:"moreThanOnce"`
	// ExtraRows are the rows beyond the first of the events held more than
	// once (the rows a downstream count over-counts by).
	ExtraRows int `json:"extraRows"`
	Never     int `json:"never"`
	// Never = NeverLate + NeverFiltered + NeverLost: never emitted with a
	// copy dropped by the late filter; never emitted with a copy removed by
	// drop_future_events (and none late); every other absent event (never
	// read although later offsets were, dropped as a duplicate of nothing,
	// not consumed by the end of the run, or emitted and missing from the
	// table).
	NeverLate     int `json:"neverLate"`
	NeverFiltered int `json:"neverFiltered"`
	NeverLost     int `json:"neverLost"`
}

// Clean reports whether the table holds every event at most once and misses
// none other than those dropped as late or filtered by drop_future_events:
// the table a data engineer wants, whatever the API promises. It is what
// --strict tests (exit 1 when it is false).
func (t Table) Clean() bool { return t.MoreThanOnce == 0 && t.NeverLost == 0 }

// Exact reports whether every event is in the table exactly once (nothing
// dropped as late or filtered either).
func (t Table) Exact() bool { return t.Once == t.Events }

// Percent is n as a percentage of the events (0 when there are none).
func (t Table) Percent(n int) float64 {
	if t.Events == 0 {
		return 0
	}
	return 100 * float64(n) / float64(t.Events)
}

// Line is the table outcome in one line of plain text.
func (t Table) Line() string {
	s := fmt.Sprintf("%d of %d events once, %d more than once", t.Once, t.Events, t.MoreThanOnce)
	if t.ExtraRows > 0 {
		s += fmt.Sprintf(" (%d extra rows)", t.ExtraRows)
	}
	s += fmt.Sprintf(", %d never", t.Never)
	if t.Never > 0 {
		s += fmt.Sprintf(" (%d dropped as late, %d filtered, %d lost)", t.NeverLate, t.NeverFiltered, t.NeverLost)
	}
	return s
}

// tableOutcome counts, per event, the rows that reached the sink.
func (c *checker) tableOutcome() Table {
	h := c.h
	t := Table{Source: "table", SinkKind: h.SinkKind, Events: c.nEvents}
	rows := make([]int32, c.nEvents) // per event
	add := func(ci int) {
		if ci >= 0 && ci < c.nCopies {
			rows[c.evOf[ci]]++
			t.Rows++
		}
	}
	if h.HasTable {
		for _, c32 := range h.Table {
			ci := int(c32)
			add(ci)
		}
	} else {
		t.Source = "deliveries"
		for _, w := range h.Writes {
			for _, c32 := range w.Rows {
				ci := int(c32)
				add(ci)
			}
		}
	}
	for e := range c.nEvents {
		switch n := int(rows[e]); {
		case n == 1:
			t.Once++
		case n > 1:
			t.MoreThanOnce++
			t.ExtraRows += n - 1
		default:
			t.Never++
			switch {
			case len(c.emits.of(e)) > 0:
				t.NeverLost++ // emitted, and the sink lost it
			case c.anyOutcome(e, history.Late):
				t.NeverLate++
			case c.anyOutcome(e, history.Filtered):
				t.NeverFiltered++
			default:
				t.NeverLost++
			}
		}
	}
	return t
}

// anyOutcome: some authoritative read of a copy of ev had outcome o.
func (c *checker) anyOutcome(e int, o history.Outcome) bool {
	for _, ci := range c.copiesOf.of(e) {
		for _, r := range c.reads.of(ci) {
			if r.outcome == o {
				return true
			}
		}
	}
	return false
}

// Name is what the headline calls the table: "table", or "sink deliveries"
// for a sink that keeps none.
func (t Table) Name() string {
	if t.Source == "deliveries" {
		return "sink deliveries"
	}
	return "table"
}

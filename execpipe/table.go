package execpipe

import (
	"fmt"
	"io"
	"strings"

	"github.com/dedupsim/dedupsim/engine/trace"
)

// tableWriter prints a run as a per-batch table for people, one line per
// batch execution as soon as it is over (the JSON Lines form stays the
// interface for programs). Columns have fixed widths, those of their
// headings and of a timestamp, so that nothing has to be held back to
// align them; a wider value pushes its line to the right.
type tableWriter struct {
	w      io.Writer
	header bool
}

var tableColumns = []struct {
	name  string
	width int
}{
	{"batch", 5}, {"input", 5}, {"emitted", 7}, {"dup dropped", 11}, {"late dropped", 12},
	{"state rows", 10}, {"removed", 7}, {"watermark", 24}, {"note", 0},
}

func (t *tableWriter) line(cells []string) error {
	var b strings.Builder
	for i, c := range cells {
		if i == len(cells)-1 {
			b.WriteString(c)
			break
		}
		b.WriteString(c)
		b.WriteString(strings.Repeat(" ", max(tableColumns[i].width-len(c), 0)+2))
	}
	_, err := io.WriteString(t.w, strings.TrimRight(b.String(), " ")+"\n")
	return err
}

// Record prints one batch execution.
func (t *tableWriter) Record(r *trace.Record) error {
	if !t.header {
		t.header = true
		names := make([]string, len(tableColumns))
		for i, c := range tableColumns {
			names[i] = c.name
		}
		if err := t.line(names); err != nil {
			return err
		}
	}
	p := r.Progress
	dups, late, total, removed := "-", "-", "-", "-"
	if len(p.StateOperators) > 0 {
		op := p.StateOperators[0]
		dups = fmt.Sprint(op.CustomMetrics["numDroppedDuplicateRows"])
		late = fmt.Sprint(op.NumRowsDroppedByWatermark)
		total = fmt.Sprint(op.NumRowsTotal)
		removed = fmt.Sprint(op.NumRowsRemoved)
	}
	wm := "-"
	if v, ok := p.EventTime["watermark"]; ok {
		wm = v
	}
	var note []string
	if p.NumInputRows == 0 {
		note = append(note, "no-data batch")
	}
	if r.Replay {
		note = append(note, "replay")
	}
	if r.Crashed != "" {
		note = append(note, "crashed "+r.Crashed)
	}
	return t.line([]string{fmt.Sprint(r.BatchID), fmt.Sprint(p.NumInputRows), fmt.Sprint(len(r.Rows)), dups, late, total, removed, wm, strings.Join(note, ", ")})
}

// End prints the table sink's content, when the query has one.
func (t *tableWriter) End(res *trace.Result) error {
	if !res.HasTable {
		return nil
	}
	if _, err := fmt.Fprintf(t.w, "table: %d rows\n", len(res.Table)); err != nil {
		return err
	}
	for _, r := range res.Table {
		if _, err := fmt.Fprintf(t.w, "  %s\n", r); err != nil {
			return err
		}
	}
	return nil
}

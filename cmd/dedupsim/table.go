package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dedupsim/dedupsim/engine/trace"
)

// writeTable prints a run as a per-batch table for people; the JSON Lines
// form stays the interface for programs.
func writeTable(w io.Writer, res *trace.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "batch\tinput\temitted\tdup dropped\tlate dropped\tstate rows\tremoved\twatermark\tnote\t")
	for _, r := range res.Records {
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
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.BatchID, p.NumInputRows, len(r.Rows), dups, late, total, removed, wm, strings.Join(note, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.HasTable {
		fmt.Fprintf(w, "table: %d rows\n", len(res.Table))
		for _, t := range res.Table {
			fmt.Fprintf(w, "  %s\n", t)
		}
	}
	return nil
}

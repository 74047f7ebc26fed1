package reports

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dedupsim/dedupsim/scenarios/result"
)

// PrintRun prints one run the way a data engineer reads it: the status of
// its expectations, then what reached the table, the API contract, the
// expectations and the margin (HeadlineLines), the checks that did
// not run, what a live run did, the unmet expectations and, for a failure,
// the command that replays it.
func PrintRun(w io.Writer, r *result.Run) {
	status, why, _ := strings.Cut(Status(r), ": ")
	if !strings.Contains(why, ";") {
		why = ""
	} else {
		_, why, _ = strings.Cut(why, "; ")
		why = " (" + why + ")"
	}
	fmt.Fprintf(w, "%s %s seed=%d%s\n", status, r.Scenario, r.Seed, why)
	for _, l := range HeadlineLines(r) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if notes := SkippedChecks(r); len(notes) > 0 {
		fmt.Fprintf(w, "  checks not run (%d):\n", len(notes))
		for _, n := range notes {
			fmt.Fprintf(w, "    - %s\n", n)
		}
	}
	if r.History != nil && r.History.Live != nil {
		fmt.Fprintf(w, "  %s\n", LiveLine(r.History.Live))
	}
	for _, e := range r.Expect {
		if !e.OK {
			fmt.Fprintf(w, "  expected %s %s, got %s\n", e.Finding, e.Want, e.GotText())
		}
	}
	if !r.Passed {
		fmt.Fprintf(w, "  replay: %s\n", r.Replay)
	}
}

// PrintTable prints one line per run, table first: how many events reached
// it once, more than once and never (late, filtered, lost), then the API
// contract, the expectations and the figures a reader looks at next.
func PrintTable(w io.Writer, runs []*result.Run) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tevents\tin table once\tmore than once\tnever: late\tfiltered\tlost\tAPI contract\texpectations\tstate peak\tfindings\t")
	for _, r := range runs {
		tb := r.Report.Table
		contract := "kept"
		if !r.Report.Verdict.ExactlyOnce {
			contract = "BROKEN"
		}
		res := "met"
		if !r.Passed {
			res = "NOT MET"
		}
		var got []string
		for _, f := range r.Report.Findings {
			got = append(got, string(f.Kind))
		}
		if len(got) == 0 {
			got = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%s\t\n", r.Scenario, tb.Events, tb.Once, tb.MoreThanOnce,
			tb.NeverLate, tb.NeverFiltered, tb.NeverLost, contract, res, r.Report.Counts.StateRowsMax, strings.Join(got, " + "))
	}
	tw.Flush()
}

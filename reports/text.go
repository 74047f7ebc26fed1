package reports

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// PrintCheck prints a checked history as dedupsim check does: the
// headline, the checks not run, the findings with their examples.
func PrintCheck(w io.Writer, r *result.Run) {
	fmt.Fprintln(w, Headline(r))
	if notes := SkippedChecks(r); len(notes) > 0 {
		fmt.Fprintf(w, "Checks not run (%d):\n", len(notes))
		for _, n := range notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	fmt.Fprintln(w, r.Report.Verdict.Summary)
	for _, fd := range r.Report.Findings {
		fmt.Fprintf(w, "  %s (%s, %d): %s\n", fd.Kind, fd.Severity, fd.Count, fd.Message)
		for _, ex := range fd.Examples {
			fmt.Fprintf(w, "    %s\n", ExampleText(ex))
		}
	}
}

// NotAHistory recognises the files a run writes beside its history (the
// usual mistake is passing report.json) and says which file to pass; ""
// when path is none of them.
func NotAHistory(path string) string {
	const pass = "pass history.json (or history.json.gz) from the same folder"
	switch base := filepath.Base(path); base {
	case "report.json", "report.html", "summary.md", "junit.xml", "index.html":
		return fmt.Sprintf("this is %s, a report, not a history: %s", base, pass)
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	head = bytes.TrimSpace(head[:n])
	switch {
	case bytes.HasPrefix(head, []byte("{")) && (bytes.Contains(head, []byte(`"headline"`)) || bytes.Contains(head, []byte(`"scenario"`))):
		return "this is a report (report.json), not a history: " + pass
	case bytes.HasPrefix(head, []byte("<")):
		return "this is an HTML or XML file, not a history: " + pass
	}
	return ""
}

package reports

import (
	"encoding/xml"
	"fmt"
	"strings"
)

// Check is one stated expectation and whether a run met it: exec --check
// writes one per line of its expectations file (docs/expectations.md), as
// junit.xml and summary.md beside those run and sweep write.
type Check struct {
	// Name says what is expected ("unique [id]", "batch 3"); Where locates
	// it ("expected.jsonl:3").
	Name, Where string
	// Diffs are the differences found (none: met).
	Diffs []string
}

// ChecksJUnit renders junit.xml for checks: one test case per check, in
// the suite named suite (the dedupsim version as a property, as run's).
func ChecksJUnit(suite, version string, checks []Check) ([]byte, error) {
	s := junitSuite{Name: suite, Tests: len(checks), Time: "0.000"}
	if version != "" {
		s.Properties = &junitProperties{[]junitProperty{{Name: "dedupsim.version", Value: version}}}
	}
	for _, c := range checks {
		jc := junitCase{Name: c.Where + " " + c.Name, Classname: suite, Time: "0.000"}
		if len(c.Diffs) > 0 {
			s.Failures++
			jc.Failure = &junitFailure{Message: c.Diffs[0], Text: strings.Join(c.Diffs, "\n")}
		}
		s.Cases = append(s.Cases, jc)
	}
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// ChecksMarkdown renders summary.md for checks: a verdict line, then one
// table row per check. title names what was checked; about is a line of
// context (the files), rendered as code.
func ChecksMarkdown(title, about string, checks []Check) string {
	failed := 0
	for _, c := range checks {
		if len(c.Diffs) > 0 {
			failed++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", mdText(title))
	if failed == 0 {
		fmt.Fprintf(&b, "**PASS**: %d of %d expectations met.", len(checks), len(checks))
	} else {
		fmt.Fprintf(&b, "**FAIL**: %d of %d expectations not met.", failed, len(checks))
	}
	if about != "" {
		b.WriteString(" " + mdCode(about))
	}
	b.WriteString("\n\n| line | expectation | result |\n| --- | --- | --- |\n")
	for _, c := range checks {
		res := "met"
		if len(c.Diffs) > 0 {
			res = "**not met**: " + mdText(strings.Join(c.Diffs, "; "))
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", mdText(c.Where), mdText(c.Name), res)
	}
	return b.String()
}

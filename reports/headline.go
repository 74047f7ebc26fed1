package reports

import (
	"fmt"
	"math"
	"strings"

	"github.com/dedupsim/dedupsim/internal/duration"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sim/check"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Tone is how a headline line is coloured. A line about a table that holds
// duplicates or lost events is never Good, whatever the API promised and
// whatever the scenario expected.
type Tone string

// Tones.
const (
	Good    Tone = "good"    // green: every event in the table exactly once
	Caution Tone = "caution" // amber: events dropped on purpose (late, filtered)
	Bad     Tone = "bad"     // red: duplicates or lost events, a broken contract, unmet expectations
	Neutral Tone = "neutral" // grey: a statement of fact beside a table that is not right
)

// Line is one line of the headline: a label ("Table", "API contract",
// "Expectations", "Margin") and a sentence.
type Line struct {
	Label string `json:"label"`
	Text  string `json:"text"`
	Tone  Tone   `json:"tone"`
}

// String is the line as the console prints it: "Label: text".
func (l Line) String() string { return l.Label + ": " + l.Text }

// HeadlineLines is what every report leads with, in order: what reached
// the sink (the table), the API contract (kept or broken), the
// expectations (met or not; absent for a history checked without a
// scenario), and for a watermarked query the margin.
func HeadlineLines(r *result.Run) []Line {
	rep := &r.Report
	tb := rep.Table
	lines := []Line{tableLine(tb)}
	clean := tb.Clean()

	c := Line{Label: "API contract", Tone: Bad}
	if rep.Verdict.ExactlyOnce {
		c.Text = "kept (" + rep.Verdict.Contract + ")"
		c.Tone = Neutral
		if tb.Exact() {
			c.Tone = Good
		}
		if !clean {
			c.Text += "; it does not promise one row per event in your table"
		}
	} else {
		var bad []string
		for _, f := range rep.Findings {
			if f.Severity == check.Violation {
				bad = append(bad, fmt.Sprintf("%s (%d)", f.Kind, f.Count))
			}
		}
		c.Text = "BROKEN: " + strings.Join(bad, ", ") + " (" + rep.Verdict.Contract + ")"
	}
	lines = append(lines, c)

	if r.Expect != nil || r.Scenario != "" {
		e := Line{Label: "Expectations"}
		met := 0
		for _, x := range r.Expect {
			if x.OK {
				met++
			}
		}
		switch {
		case !r.Passed:
			e.Tone = Bad
			e.Text = fmt.Sprintf("NOT MET (%d of %d met)", met, len(r.Expect))
		case len(r.Expect) == 0:
			e.Tone = Neutral
			e.Text = "none stated"
		default:
			e.Tone = Good
			e.Text = fmt.Sprintf("met (%d of %d)", met, len(r.Expect))
		}
		if r.Passed && !tb.Exact() {
			e.Tone = Neutral
			e.Text += ": the run behaved as the scenario says, the table above included"
		}
		lines = append(lines, e)
	}
	if m := rep.Margin; m != nil {
		lines = append(lines, Line{Label: "Margin", Text: marginText(m), Tone: marginTone(m)})
	}
	return lines
}

// Headline is HeadlineLines as plain text, one "Label: text" line each
// (no trailing newline), for the console.
func Headline(r *result.Run) string {
	var s []string
	for _, l := range HeadlineLines(r) {
		s = append(s, l.String())
	}
	return strings.Join(s, "\n")
}

// SkippedChecks are the checks the checker did not run, and why (a run
// shorter than its warm-up, no watermark, ...): the console and every report
// list them under the headline.
func SkippedChecks(r *result.Run) []string { return r.Report.Notes }

var printer = message.NewPrinter(language.English)

// num renders a count with thousands separators: 12,119.
func num(n int) string { return printer.Sprintf("%d", n) }

// pct renders a share of the events: 0%, <0.01%, 0.84%, >99.99%, 100%.
func pct(tb check.Table, n int) string {
	p := tb.Percent(n)
	switch {
	case n == 0 || tb.Events == 0:
		return "0%"
	case n == tb.Events:
		return "100%"
	case p < 0.01:
		return "<0.01%"
	case p > 99.99:
		return ">99.99%"
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", p), "0"), ".") + "%"
}

// tableLine says what reached the sink: a plain sentence first, then the
// split of every event.
func tableLine(tb check.Table) Line {
	l := Line{Label: "Table", Tone: Good}
	it := "the table"
	if tb.Source == "deliveries" {
		l.Label, it = "Sink deliveries", "the deliveries"
	}
	var say []string
	if tb.MoreThanOnce > 0 {
		twice := "more than once"
		if tb.ExtraRows == tb.MoreThanOnce {
			twice = "twice"
		}
		say = append(say, fmt.Sprintf("%s in %s %s", areEvents(tb.MoreThanOnce), it, twice))
	}
	if tb.NeverLost > 0 {
		say = append(say, fmt.Sprintf("%s lost (never reached %s, not dropped as late or filtered)", areEvents(tb.NeverLost), it))
	}
	if d := tb.NeverLate + tb.NeverFiltered; d > 0 {
		say = append(say, fmt.Sprintf("%s events never reached %s because they were dropped on purpose (late or filtered)", num(d), it))
	}
	switch {
	case !tb.Clean():
		l.Tone = Bad
	case !tb.Exact():
		l.Tone = Caution
	default:
		say = append(say, "every event is in "+it+" exactly once")
	}
	if tb.Events == 0 {
		say = []string{"no events were sent"}
	}
	s := strings.Join(say, "; ")
	s = strings.ToUpper(s[:1]) + s[1:] + "."
	s += fmt.Sprintf(" Of %s events: %s once (%s), %s more than once (%s", num(tb.Events), num(tb.Once), pct(tb, tb.Once), num(tb.MoreThanOnce), pct(tb, tb.MoreThanOnce))
	if tb.ExtraRows > 0 {
		s += fmt.Sprintf(", %s extra %s", num(tb.ExtraRows), map[bool]string{true: "row", false: "rows"}[tb.ExtraRows == 1])
	}
	s += fmt.Sprintf("), %s never (%s", num(tb.Never), pct(tb, tb.Never))
	if tb.Never > 0 {
		s += fmt.Sprintf(": %s dropped as late, %s filtered, %s lost", num(tb.NeverLate), num(tb.NeverFiltered), num(tb.NeverLost))
	}
	s += fmt.Sprintf("). %s rows", num(tb.Rows))
	if tb.Source == "deliveries" {
		s += fmt.Sprintf(" delivered. The %s sink keeps no table: this counts what it received, every row of every delivery, replays included", tb.SinkKind)
	} else {
		s += " in the final table"
	}
	l.Text = s + "."
	return l
}

// areEvents is "1 event is" or "N events are".
func areEvents(n int) string {
	if n == 1 {
		return "1 event is"
	}
	return num(n) + " events are"
}

// marginText says how close the run came to letting a copy through, in
// sentences.
func marginText(m *check.Margin) string {
	var s []string
	switch {
	case m.API == "dropDuplicatesWithinWatermark":
		s = append(s, fmt.Sprintf("Delay %s: a key stays in state until the watermark reaches its first event time + delay, i.e. until the stream is %s (2 x delay) past it", check.Dur(m.DelayMs), check.Dur(m.RetentionMs)))
	case m.RetentionMs >= 0:
		s = append(s, fmt.Sprintf("Delay %s: a key (id, event time) stays in state until the stream is %s (the delay) past its event time", check.Dur(m.DelayMs), check.Dur(m.RetentionMs)))
	default:
		s = append(s, fmt.Sprintf("Delay %s: state is never evicted (the event time is not in the key), so every copy is caught whatever the delay; the delay only decides what is late", check.Dur(m.DelayMs)))
	}
	if m.LaterCopies == 0 {
		s = append(s, "No event had a copy after its first emission")
		return strings.Join(s, ". ") + "."
	}
	later := "later copies"
	if m.LaterCopies == 1 {
		later = "later copy"
	}
	s = append(s, fmt.Sprintf("Of %s %s (read after their event's first emitted copy) %s caught by state, %s as late, %s escaped into the output",
		num(m.LaterCopies), later, num(m.CaughtByState), num(m.CaughtAsLate), num(m.Escaped)))
	if g := m.LargestCaught; g != nil {
		s = append(s, fmt.Sprintf("Largest gap still caught: %s in event time (appended %s apart; event %s, copies %d and %d)", gapDur(g.GapMs), check.Dur(abs64(g.AppendGapMs)), g.Event, g.FirstCopy, g.Copy))
	}
	if g := m.SmallestEscaped; g != nil {
		e := fmt.Sprintf("The escaped copies came %s", gapDur(g.GapMs))
		if l := m.LargestEscaped; l != nil && l.GapMs != g.GapMs {
			e += " to " + gapDur(l.GapMs)
		}
		s = append(s, e+" after their first copy in event time")
	}
	switch {
	case m.Escaped > 0 && m.NeededDelayMs < 0:
		s = append(s, "No delay would have caught them: they carry another event time, so with the event time in the key they are other keys (dropDuplicatesWithinWatermark on the id would catch them)")
	case m.Escaped > 0:
		s = append(s, fmt.Sprintf("Any delay of %s or more would have caught every copy of this run", check.Dur(m.NeededDelayMs)))
	case m.KeptDelayMs < 0:
		s = append(s, "Every copy was caught, but a larger delay would let some through (they were caught only as late)")
	default:
		if m.KeptDelayMs == 0 {
			s = append(s, "Any delay at all would still have caught every copy")
		} else if head, ok := m.HeadroomMs(); ok && head >= 0 {
			s = append(s, fmt.Sprintf("Any delay of %s or more would still have caught every copy: %s of headroom", check.Dur(m.KeptDelayMs), check.Dur(head)))
		} else {
			s = append(s, fmt.Sprintf("Every copy was caught, some only as late: any delay of %s or more catches them all by state", check.Dur(m.KeptDelayMs)))
		}
	}
	if m.GuaranteeDelayMs > 0 {
		s = append(s, fmt.Sprintf("Spark's documented guarantee (copies less than the delay apart in event time) covers these copies from a delay of %s", check.Dur(m.GuaranteeDelayMs)))
	}
	return strings.Join(s, ". ") + ". (Delays from a replay of this run's arrivals with every watermark shifted by the change of delay; the delay also decides which events come too late.)"
}

func marginTone(m *check.Margin) Tone {
	if m.Escaped > 0 {
		return Bad
	}
	return Neutral
}

// gapDur renders an event-time gap in ms (fractional) in human units.
func gapDur(ms float64) string { return duration.Words(math.Abs(ms)) }

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

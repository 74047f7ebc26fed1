// Package reports turns a checked run into what a person reads: an HTML page
// with inline SVG charts (internal/svgchart: no network, no scripts), a
// machine-readable JSON report with the Spark-shaped progress records, a
// Markdown summary, and JUnit XML for CI systems. Rendering is deterministic: the same run gives
// the same bytes.
package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/dedupsim/dedupsim/internal/atomicfile"
	"github.com/dedupsim/dedupsim/internal/svgchart"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/dedupsim/dedupsim/sim/history"
)

// jsonReport is report.json: everything a program needs, in a stable shape.
type jsonReport struct {
	// Headline is what the report leads with: the table, the API
	// contract, the expectations, the margin (see HeadlineLines).
	Headline    []Line               `json:"headline"`
	Scenario    string               `json:"scenario"`
	Description string               `json:"description,omitempty"`
	Seed        uint64               `json:"seed"`
	Passed      bool                 `json:"passed"`
	Replay      string               `json:"replay"`
	Expect      []result.Expectation `json:"expect"`
	Check       check.Report         `json:"check"`
	Batches     []Point              `json:"batches"`
	Crashes     int                  `json:"crashes"`
	Live        *history.Live        `json:"live,omitempty"`    // a run against Kafka
	Progress    []json.RawMessage    `json:"progress"`          // Spark's StreamingQueryProgress, one per authoritative batch
	Version     string               `json:"version,omitempty"` // the dedupsim that made the run (Run.Version)
}

// JSON renders report.json.
func JSON(r *result.Run) ([]byte, error) { return jsonWith(r, Points(r.History)) }

// jsonWith is JSON with the run's Points already computed (WriteRun
// computes them once for both reports: a pass over every batch's rows).
func jsonWith(r *result.Run, pts []Point) ([]byte, error) {
	jr := jsonReport{Headline: HeadlineLines(r), Scenario: r.Scenario, Description: r.Description, Seed: r.Seed, Passed: r.Passed, Replay: r.Replay,
		Expect: r.Expect, Check: r.Report, Batches: pts, Progress: []json.RawMessage{}, Version: r.Version}
	if jr.Expect == nil {
		jr.Expect = []result.Expectation{}
	}
	if h := r.History; h != nil {
		jr.Crashes = len(h.Crashes)
		jr.Live = h.Live
		last := map[int64]json.RawMessage{}
		for _, b := range h.Batches {
			if b.Progress != nil {
				last[b.BatchID] = b.Progress
			}
		}
		for _, p := range jr.Batches {
			if pr, ok := last[p.BatchID]; ok {
				jr.Progress = append(jr.Progress, pr)
			}
		}
	}
	b, err := json.MarshalIndent(jr, "", "  ")
	return append(b, '\n'), err
}

// Charts builds the report's charts from a run.
func Charts(r *result.Run) []svgchart.Chart {
	c, _ := chartsAndNotes(r, Points(r.History))
	return c
}

// chartsAndNotes builds the charts, and says why a chart is left out (no
// watermark chart for a query without a watermark). Times are since the
// run's start, in seconds, minutes or hours as the run's length asks.
func chartsAndNotes(r *result.Run, pts []Point) ([]svgchart.Chart, []string) {
	var span float64
	for _, p := range pts {
		span = math.Max(span, p.AtSec)
	}
	xu := unitFor(span)
	var xs, state, late, dupPass, dupDrop, replayed []float64
	var wmX, wmY, etX, etY []float64
	var etMax float64
	for _, p := range pts {
		xs = append(xs, p.AtSec/xu.sec)
		state = append(state, float64(p.StateRows))
		late = append(late, float64(p.Late))
		dupPass = append(dupPass, float64(p.DuplicatesPass))
		dupDrop = append(dupDrop, float64(p.DuplicatesDrop))
		replayed = append(replayed, float64(p.SinkReplayed))
		if p.MaxEventTimeSec != nil {
			etMax = math.Max(etMax, math.Abs(*p.MaxEventTimeSec))
		}
		if p.WatermarkSec != nil {
			etMax = math.Max(etMax, math.Abs(*p.WatermarkSec))
		}
	}
	yu := unitFor(etMax)
	for _, p := range pts {
		if p.MaxEventTimeSec != nil {
			etX, etY = append(etX, p.AtSec/xu.sec), append(etY, *p.MaxEventTimeSec/yu.sec)
		}
		if p.WatermarkSec != nil {
			wmX, wmY = append(wmX, p.AtSec/xu.sec), append(wmY, *p.WatermarkSec/yu.sec)
		}
	}
	var markers []svgchart.Marker
	if h := r.History; h != nil {
		t0 := origin(h)
		for _, c := range h.Crashes {
			markers = append(markers, svgchart.Marker{X: float64(c.AtMs-t0) / 1000 / xu.sec, Label: fmt.Sprintf("crash %s (batch %d)", c.Point, c.BatchID), Legend: "driver crash", Color: "#c0392b"})
		}
		if h.HealAtMs > 0 {
			markers = append(markers, svgchart.Marker{X: float64(h.HealAtMs-t0) / 1000 / xu.sec, Label: "faults healed", Legend: "faults healed", Color: "#27ae60"})
		}
	}
	xl := "processing time since the run's start (" + xu.name + ")"
	stateChart := svgchart.Chart{Title: "State rows per batch (numRowsTotal)", XLabel: xl, YLabel: "rows",
		Series: []svgchart.Series{{Name: "numRowsTotal", Color: "#2c6fbb", X: xs, Y: state}}, Markers: markers}
	if b := r.Report.Counts.StateBound; b > 0 {
		stateChart.HLines = []svgchart.HLine{{Y: b, Label: fmt.Sprintf("predicted bound %.0f", b), Color: "#e67e22"}}
	}
	charts := []svgchart.Chart{stateChart}
	var notes []string
	if r.History != nil && hasWatermark(r.History) && len(wmX) > 0 {
		charts = append(charts, svgchart.Chart{Title: "Watermark against the largest event time seen", XLabel: xl, YLabel: "event time since the run's start (" + yu.name + ")",
			Series: []svgchart.Series{{Name: "max event time", Color: "#8e44ad", X: etX, Y: etY}, {Name: "watermark (used from the next batch)", Color: "#2c6fbb", X: wmX, Y: wmY}}, Markers: markers})
	} else if r.History != nil {
		why := "the query has no watermark: no event-time column, so nothing is dropped as late and state is never evicted"
		if hasWatermark(r.History) {
			why = "the watermark never moved from its initial 0"
		}
		notes = append(notes, "No watermark chart: "+why+".")
	}
	charts = append(charts, svgchart.Chart{Title: "Rows dropped and duplicates passed per batch", XLabel: xl, YLabel: "rows",
		Series: []svgchart.Series{{Name: "late dropped", Color: "#e67e22", X: xs, Y: late, Bars: true},
			{Name: "duplicates dropped", Color: "#95a5a6", X: xs, Y: dupDrop},
			{Name: "duplicates passed", Color: "#c0392b", X: xs, Y: dupPass, Bars: true},
			{Name: "replayed into the sink", Color: "#6c3483", X: xs, Y: replayed, Bars: true}}, Markers: markers})
	return charts, notes
}

// timeUnit is an axis unit: seconds, minutes, hours or days.
type timeUnit struct {
	name string
	sec  float64
}

// unitFor picks the unit for a span in seconds: seconds up to 10 minutes,
// minutes up to 10 hours, hours up to 10 days, days beyond.
func unitFor(spanSec float64) timeUnit {
	switch {
	case spanSec <= 600:
		return timeUnit{"s", 1}
	case spanSec <= 36_000:
		return timeUnit{"min", 60}
	case spanSec <= 864_000:
		return timeUnit{"h", 3600}
	}
	return timeUnit{"days", 86_400}
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"svg":      func(c svgchart.Chart) template.HTML { return template.HTML(c.SVG()) },
	"liveLine": LiveLine,
	"expName":  expName,
	"dur":      check.Dur,
	"gap":      gapDur,
	"status":   Status,
	"ints": func(xs any) string {
		switch v := xs.(type) {
		case []int:
			return intList(v)
		case []int64:
			return intList(v)
		}
		return fmt.Sprint(xs)
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>dedupsim: {{.Run.Scenario}} seed {{.Run.Seed}}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:900px;margin:24px auto;color:#222}
.pass{color:#1e7d34}.fail{color:#b3261e}
.badge{font-size:16px;padding:2px 8px;border-radius:4px;color:#fff;vertical-align:middle}
.badge.good{background:#1e7d34}.badge.bad{background:#b3261e}.badge.neutral{background:#5f6368}
.headline{margin:12px 0 16px}.headline p{margin:6px 0;padding:8px 12px;border-left:6px solid #999;background:#f7f7f7;font-size:15px}
.headline .good{border-color:#1e7d34;background:#eaf5ec}.headline .caution{border-color:#d68a00;background:#fdf3e1}
.headline .bad{border-color:#b3261e;background:#fbe9e7}.headline .neutral{border-color:#5f6368;background:#f1f3f4}
.headline .table{font-size:18px}
.skipped{border:2px solid #d68a00;background:#fdf3e1;padding:6px 12px;margin:12px 0}.skipped h2{font-size:16px;margin:4px 0}
table{border-collapse:collapse;margin:8px 0;max-width:100%}td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;font-size:14px;overflow-wrap:break-word}
table.timeline{width:100%}table.timeline td,table.timeline th{font-size:12px;padding:2px 6px}small{color:#666}
code,pre{background:#f5f5f5;padding:2px 4px}.violation{color:#b3261e;font-weight:bold}.counted{color:#8a6d00}.warning{color:#a15c00}
svg{display:block;margin:12px 0;border:1px solid #eee}
</style></head><body>
<h1>{{.Run.Scenario}} <span class="badge {{.Badge}}">{{status .Run}}</span></h1>
<div class="headline">
{{range $i, $l := .Headline}}<p class="{{$l.Tone}}{{if eq $i 0}} table{{end}}"><b>{{$l.Label}}:</b> {{$l.Text}}</p>
{{end}}</div>
{{with .Run.Report.Notes}}<div class="skipped"><h2>Checks not run ({{len .}})</h2><ul>{{range .}}<li>{{.}}</li>{{end}}</ul></div>{{end}}
{{if .Run.Description}}<p>{{.Run.Description}}</p>{{end}}
<p>Seed {{.Run.Seed}}. Replay: <code>{{.Run.Replay}}</code></p>
{{with .Run.History}}{{with .Live}}<p>{{liveLine .}}</p>{{end}}{{end}}
<p>Times below are given as seconds since the run's start (the first append, {{.Start}}; the charts' axis) and as ISO-8601 (UTC).</p>
<h2>In one line</h2>
<p>{{.Run.Report.Verdict.Summary}}</p>
<h2>Expectations</h2>
{{if .Run.Expect}}<table><tr><th>finding</th><th>expected</th><th>got</th><th></th></tr>
{{range .Run.Expect}}<tr><td>{{expName .Finding}}</td><td>{{.Want}}</td><td>{{.GotText}}</td><td class="{{if .OK}}pass{{else}}fail{{end}}">{{if .OK}}met{{else}}NOT MET{{end}}</td></tr>
{{end}}</table>{{else}}<p>None stated.</p>{{end}}
{{with .Run.Report.Margin}}<h2>Margin</h2>
<table>
<tr><td>API, delay</td><td>{{.API}}, {{dur .DelayMs}}</td></tr>
<tr><td>retention (event time a key stays in state)</td><td>{{if lt .RetentionMs 0}}forever (never evicted){{else}}{{dur .RetentionMs}}{{end}}</td></tr>
<tr><td>later copies: caught by state / as late / escaped</td><td>{{.LaterCopies}}: {{.CaughtByState}} / {{.CaughtAsLate}} / {{.Escaped}}</td></tr>
{{with .LargestCaught}}<tr><td>largest gap still caught</td><td>{{gap .GapMs}} in event time, appended {{dur .AppendGapMs}} apart (event {{.Event}}: copy {{.FirstCopy}} in batch {{.FirstBatch}}, copy {{.Copy}} in batch {{.Batch}})</td></tr>{{end}}
{{with .SmallestEscaped}}<tr><td>closest escaped copy</td><td>{{gap .GapMs}} in event time, appended {{dur .AppendGapMs}} apart (event {{.Event}}: copy {{.FirstCopy}} in batch {{.FirstBatch}}, copy {{.Copy}} in batch {{.Batch}})</td></tr>{{end}}
{{with .LargestEscaped}}<tr><td>farthest escaped copy</td><td>{{gap .GapMs}} in event time, appended {{dur .AppendGapMs}} apart (event {{.Event}}: copy {{.FirstCopy}} in batch {{.FirstBatch}}, copy {{.Copy}} in batch {{.Batch}})</td></tr>{{end}}
<tr><td>smallest delay from which every copy this run caught is still caught</td><td>{{if eq .CaughtByState 0}}{{if eq .CaughtAsLate 0}}no copy was caught{{else}}{{dur .KeptDelayMs}}{{end}}{{else if lt .KeptDelayMs 0}}none{{else if eq .KeptDelayMs 0}}any delay{{else}}{{dur .KeptDelayMs}}{{end}}</td></tr>
<tr><td>smallest delay from which every copy is caught, escaped ones included</td><td>{{if lt .NeededDelayMs 0}}none: the escaped copies are other keys{{else if eq .NeededDelayMs 0}}any delay{{else}}{{dur .NeededDelayMs}}{{end}}</td></tr>
{{if .GuaranteeDelayMs}}<tr><td>delay Spark's documented guarantee needs (largest gap + 1ms)</td><td>{{dur .GuaranteeDelayMs}}</td></tr>{{end}}
</table>{{end}}
<h2>Findings</h2>
{{if not .Run.Report.Findings}}<p>None.</p>{{end}}
{{range .Findings}}<h3><span class="{{.Severity}}">{{.Kind}}</span> ({{.Severity}}, {{.Count}})</h3><p>{{.Message}}</p>
{{if .Examples}}<table><tr><th>event</th><th>copies</th><th>batches</th><th>detail</th></tr>
{{range .Examples}}<tr><td>{{.Event}}</td><td>{{ints .Copies}}</td><td>{{ints .Batches}}</td><td>{{.Detail}}{{if .Spread}}<br><b>{{.Spread}}</b>{{end}}</td></tr>
{{if .Steps}}<tr><td colspan="4"><table class="timeline"><tr><th>copy</th><th>event time</th><th>appended</th><th>read by batch</th><th>batch ran at</th><th>outcome</th><th>late watermark</th><th>watermark</th><th>rows in table</th></tr>
{{range .Steps}}<tr><td>{{.Copy}}{{if .Fault}}<br><small>{{.Fault}}</small>{{end}}</td><td>{{.EventTime.Rel}}<br><small>{{.EventTime.ISO}}</small></td><td>{{.Appended.Rel}}<br><small>{{.Appended.ISO}}</small></td><td>{{.Batch}}</td><td>{{.BatchAt.Rel}}<br><small>{{.BatchAt.ISO}}</small></td><td>{{.Outcome}}</td><td>{{.LateWatermark.Rel}}<br><small>{{.LateWatermark.ISO}}</small></td><td>{{.Watermark.Rel}}<br><small>{{.Watermark.ISO}}</small></td><td>{{.InTable}}</td></tr>
{{end}}</table></td></tr>{{end}}{{end}}</table>{{end}}
{{end}}
<h2>Charts</h2>
{{range .Charts}}{{svg .}}{{end}}
{{range .ChartNotes}}<p>{{.}}</p>{{end}}
<h2>Counts</h2>
<table>
<tr><td>copies appended</td><td>{{.Run.Report.Counts.Copies}}</td></tr>
<tr><td>logical events</td><td>{{.Run.Report.Counts.Events}}</td></tr>
<tr><td>emitted / duplicates dropped / late dropped</td><td>{{.Run.Report.Counts.Emitted}} / {{.Run.Report.Counts.DuplicatesDropped}} / {{.Run.Report.Counts.LateDropped}}</td></tr>
<tr><td>rows in the table / events in it</td><td>{{.Run.Report.Table.Rows}} / {{.InTable}}</td></tr>
<tr><td>batches (executions)</td><td>{{.Run.Report.Counts.Batches}} ({{.Run.Report.Counts.Executions}})</td></tr>
<tr><td>state rows max / last</td><td>{{.Run.Report.Counts.StateRowsMax}} / {{.Run.Report.Counts.StateRowsLast}}</td></tr>
</table>
{{if .Run.Version}}<p><small>dedupsim {{.Run.Version}}</small></p>{{end}}
</body></html>
`))

// LiveLine is one sentence on what a run against Kafka did.
func LiveLine(l *history.Live) string {
	s := fmt.Sprintf("Against Kafka (%s), the engine ", l.Cluster)
	if l.Engine == "process" {
		s += fmt.Sprintf("as a child process: %d processes, %d killed with SIGKILL at crash points, %d at random moments, %d exited with an error",
			l.EngineProcesses, l.KilledAtPoints, l.KilledAtRandom, l.FailedExits)
	} else {
		s += fmt.Sprintf("in process: %d crashes", l.KilledAtPoints)
	}
	if l.BrokerRestarts > 0 {
		s += fmt.Sprintf("; the broker killed and restarted %d times", l.BrokerRestarts)
	}
	if l.DroppedAcks > 0 {
		s += fmt.Sprintf("; %d duplicate appends made by dropped produce acks", l.DroppedAcks)
	}
	if l.TriggerMs > 0 {
		s += fmt.Sprintf("; one trigger took %gms of real time", l.TriggerMs)
	}
	if l.Dir != "" {
		s += "; engine files in " + l.Dir
	}
	return s + "."
}

// Status is a run's status in one line: PASS or FAIL on its expectations,
// and, beside a PASS, a broken API contract said in the same line (the
// scenario expected it: a badge alone would read as all is well).
func Status(r *result.Run) string {
	switch {
	case !r.Passed:
		return "FAIL: expectations not met"
	case !r.Report.Verdict.ExactlyOnce:
		return "PASS: expectations met; the API contract is broken, as the scenario expects"
	}
	return "PASS: expectations met"
}

// intList writes indices as "3, 17" ("none" for none), not as Go's [3 17].
func intList[T int | int64](xs []T) string {
	if len(xs) == 0 {
		return "none"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// ExampleText is one example of a finding in one line: the event, its
// copies and batches (left out when none), and the detail.
func ExampleText(ex check.Example) string {
	s := "event " + ex.Event
	if len(ex.Copies) > 0 {
		s += " copies " + intList(ex.Copies)
	}
	if len(ex.Batches) > 0 {
		s += " batches " + intList(ex.Batches)
	}
	return s + ": " + ex.Detail
}

// HTML renders report.html: self-contained, no scripts, no network.
func HTML(r *result.Run) ([]byte, error) { return htmlWith(r, Points(r.History)) }

// htmlWith is HTML with the run's Points already computed.
func htmlWith(r *result.Run, pts []Point) ([]byte, error) {
	var b bytes.Buffer
	charts, notes := chartsAndNotes(r, pts)
	tb := r.Report.Table
	err := page.Execute(&b, struct {
		Run        *result.Run
		Badge      Tone
		Headline   []Line
		Start      string
		Findings   []findingView
		Charts     []svgchart.Chart
		ChartNotes []string
		InTable    int
	}{r, badge(r), HeadlineLines(r), isoMs(r.Report.Counts.StartMs), findingViews(r), charts, notes, tb.Once + tb.MoreThanOnce})
	return b.Bytes(), err
}

// Markdown renders summary.md over one or more runs: one table line per
// run (expectations, table, API contract, findings), then the headline of
// every failing run (of the only run, when there is one) with its skipped
// checks, unmet expectations and replay command. Text from scenarios is
// escaped: it can hold neither Markdown nor HTML.
func Markdown(runs []*result.Run) string {
	var b strings.Builder
	pass := 0
	for _, r := range runs {
		if r.Passed {
			pass++
		}
	}
	fmt.Fprintf(&b, "# dedupsim: %d of %d runs met their expectations\n\n", pass, len(runs))
	b.WriteString("| scenario | seed | expectations | table | API contract | findings |\n|---|---|---|---|---|---|\n")
	for _, r := range runs {
		res := "met"
		if !r.Passed {
			res = "**NOT MET**"
		}
		contract := "kept"
		if !r.Report.Verdict.ExactlyOnce {
			contract = "**BROKEN**"
		}
		var fs []string
		for _, f := range r.Report.Findings {
			fs = append(fs, fmt.Sprintf("%s (%d)", f.Kind, f.Count))
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", mdText(r.Scenario), r.Seed, res, tableCell(r.Report.Table), contract, mdText(strings.Join(fs, ", ")))
	}
	for _, r := range runs {
		if r.History != nil && r.History.Live != nil {
			fmt.Fprintf(&b, "\n%s: %s\n", mdText(r.Scenario), mdText(LiveLine(r.History.Live)))
		}
	}
	for _, r := range runs {
		if r.Passed && len(runs) > 1 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s (seed %d)\n\n", mdText(r.Scenario), r.Seed)
		if d := firstLine(r.Description); d != "" {
			fmt.Fprintf(&b, "%s\n\n", mdText(d))
		}
		for _, l := range HeadlineLines(r) {
			fmt.Fprintf(&b, "- **%s:** %s\n", mdText(l.Label), mdText(l.Text))
		}
		if notes := SkippedChecks(r); len(notes) > 0 {
			fmt.Fprintf(&b, "\nChecks not run (%d):\n\n", len(notes))
			for _, n := range notes {
				fmt.Fprintf(&b, "- %s\n", mdText(n))
			}
		}
		fmt.Fprintf(&b, "\nReplay: %s\n", mdCode(r.Replay))
		var unmet []string
		for _, e := range r.Expect {
			if !e.OK {
				unmet = append(unmet, fmt.Sprintf("- expected %s %s, got %s\n", mdCode(e.Finding), mdText(e.Want), mdText(e.GotText())))
			}
		}
		if len(unmet) > 0 {
			b.WriteString("\n" + strings.Join(unmet, ""))
		}
	}
	if len(runs) > 0 && runs[0].Version != "" {
		fmt.Fprintf(&b, "\n_dedupsim %s_\n", mdText(runs[0].Version))
	}
	return b.String()
}

// tableCell is the table outcome in a few words, for summary.md.
func tableCell(tb check.Table) string {
	if tb.Exact() {
		return "every event once"
	}
	var s []string
	if tb.MoreThanOnce > 0 {
		s = append(s, fmt.Sprintf("**%s more than once** (%s)", num(tb.MoreThanOnce), pct(tb, tb.MoreThanOnce)))
	}
	if tb.NeverLost > 0 {
		s = append(s, fmt.Sprintf("**%s lost** (%s)", num(tb.NeverLost), pct(tb, tb.NeverLost)))
	}
	if tb.NeverLate > 0 {
		s = append(s, fmt.Sprintf("%s dropped as late (%s)", num(tb.NeverLate), pct(tb, tb.NeverLate)))
	}
	if tb.NeverFiltered > 0 {
		s = append(s, fmt.Sprintf("%s filtered (%s)", num(tb.NeverFiltered), pct(tb, tb.NeverFiltered)))
	}
	return strings.Join(s, ", ") + fmt.Sprintf(" of %s events", num(tb.Events))
}

// mdText escapes text for Markdown, in a paragraph or a table cell: every
// ASCII punctuation character that Markdown or HTML-in-Markdown could read
// as markup (emphasis, code, links, tags, entities, tables, headings) is
// backslash-escaped (CommonMark renders it literally: "\<b>" is "<b>",
// not a tag; "\&amp;" is "&amp;", not "&"), and line breaks become spaces.
func mdText(s string) string {
	var b strings.Builder
	// At the start of a line, "-" or "=" makes a list item or a heading
	// underline, and "12." a numbered list item.
	lead := 0
	if s != "" && (s[0] == '-' || s[0] == '=') {
		b.WriteByte('\\')
	}
	for lead < len(s) && s[lead] >= '0' && s[lead] <= '9' {
		lead++
	}
	for i, r := range s {
		switch {
		case r == '\n' || r == '\r':
			b.WriteByte(' ')
		case strings.ContainsRune("\\`*_{}[]<>#+!|~&", r) || (r == '.' && i == lead && lead > 0):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdCode renders s as an inline code span (literal: no Markdown, no HTML),
// fenced with more backticks than s holds in a row.
func mdCode(s string) string {
	s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	run, longest := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

// junitProperties carry the dedupsim version (Run.Version).
type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Time       string           `xml:"time,attr"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Cases      []junitCase      `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnit renders junit.xml: one test case per scenario and seed, with its
// wall time (Run.Elapsed, in seconds), the headline in system-out, and for
// a failure the unmet expectations and the replay command in the message
// and the headline in the body.
func JUnit(runs []*result.Run) ([]byte, error) {
	s := junitSuite{Name: "dedupsim", Tests: len(runs)}
	var total float64
	if len(runs) > 0 && runs[0].Version != "" {
		s.Properties = &junitProperties{[]junitProperty{{Name: "dedupsim.version", Value: runs[0].Version}}}
	}
	for _, r := range runs {
		total += r.Elapsed.Seconds()
		c := junitCase{Name: fmt.Sprintf("%s/seed=%d", r.Scenario, r.Seed), Classname: "dedupsim." + r.Scenario,
			Time: fmt.Sprintf("%.3f", r.Elapsed.Seconds()), SystemOut: Headline(r) + "\nreplay: " + r.Replay}
		if !r.Passed {
			s.Failures++
			var lines []string
			for _, e := range r.Expect {
				if !e.OK {
					lines = append(lines, fmt.Sprintf("expected %s %s, got %s", e.Finding, e.Want, e.GotText()))
				}
			}
			body := Headline(r)
			if len(lines) > 0 {
				body += "\n" + strings.Join(lines, "\n")
			}
			c.Failure = &junitFailure{Message: strings.Join(append(lines, "replay: "+r.Replay), "; "), Text: body + "\nreplay: " + r.Replay}
		}
		s.Cases = append(s.Cases, c)
	}
	s.Time = fmt.Sprintf("%.3f", total)
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// IndexEntry is one run in a sweep's index.html.
type IndexEntry struct {
	Run *result.Run
	// Dir is the run's report folder relative to the index.
	Dir string
}

var index = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>dedupsim sweep</title>
<style>body{font-family:system-ui,sans-serif;max-width:900px;margin:24px auto}table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:4px 8px}.pass{color:#1e7d34}.fail{color:#b3261e}</style>
</head><body><h1>dedupsim: {{.Passed}} of {{.Total}} runs met their expectations</h1>
<table><tr><th>scenario</th><th>seed</th><th>result</th><th>verdict</th></tr>
{{range .Entries}}<tr><td><a href="{{.Dir}}/report.html">{{.Run.Scenario}}</a></td><td>{{.Run.Seed}}</td><td class="{{if .Run.Passed}}pass{{else}}fail{{end}}">{{if .Run.Passed}}PASS{{else}}FAIL{{end}}</td><td>{{.Run.Report.Verdict.Summary}}</td></tr>
{{end}}</table>{{if .Version}}<p><small>dedupsim {{.Version}}</small></p>{{end}}</body></html>
`))

// WriteIndex writes index.html over a sweep's runs.
func WriteIndex(path string, entries []IndexEntry) error {
	passed := 0
	for _, e := range entries {
		if e.Run.Passed {
			passed++
		}
	}
	version := ""
	if len(entries) > 0 {
		version = entries[0].Run.Version
	}
	var b bytes.Buffer
	if err := index.Execute(&b, struct {
		Passed, Total int
		Version       string
		Entries       []IndexEntry
	}{passed, len(entries), version, entries}); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b.Bytes())
}

// WriteJUnit writes junit.xml.
func WriteJUnit(path string, runs []*result.Run) error {
	b, err := JUnit(runs)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b)
}

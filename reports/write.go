package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html/template"
	"strings"

	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/dedupsim/dedupsim/sim/history"
)

// jsonReport is report.json: everything a program needs, in a stable shape.
type jsonReport struct {
	Scenario    string            `json:"scenario"`
	Description string            `json:"description,omitempty"`
	Seed        uint64            `json:"seed"`
	Passed      bool              `json:"passed"`
	Replay      string            `json:"replay"`
	Expect      []Expectation     `json:"expect"`
	Check       check.Report      `json:"check"`
	Batches     []Point           `json:"batches"`
	Crashes     int               `json:"crashes"`
	Live        *history.Live     `json:"live,omitempty"`    // a run against Kafka
	Progress    []json.RawMessage `json:"progress"`          // Spark's StreamingQueryProgress, one per authoritative batch
	Version     string            `json:"version,omitempty"` // the dedupsim that made the run (Run.Version)
}

// JSON renders report.json.
func JSON(r *Run) ([]byte, error) {
	jr := jsonReport{Scenario: r.Scenario, Description: r.Description, Seed: r.Seed, Passed: r.Passed, Replay: r.Replay,
		Expect: r.Expect, Check: r.Report, Batches: Points(r.History), Progress: []json.RawMessage{}, Version: r.Version}
	if jr.Expect == nil {
		jr.Expect = []Expectation{}
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
func Charts(r *Run) []Chart {
	pts := Points(r.History)
	var xs, state, wm, maxET, late, dupPass, dupDrop, replayed []float64
	for _, p := range pts {
		xs = append(xs, p.AtSec)
		state = append(state, float64(p.StateRows))
		wm = append(wm, p.WatermarkSec)
		maxET = append(maxET, p.MaxEventTimeSec)
		late = append(late, float64(p.Late))
		dupPass = append(dupPass, float64(p.DuplicatesPass))
		dupDrop = append(dupDrop, float64(p.DuplicatesDrop))
		replayed = append(replayed, float64(p.SinkReplayed))
	}
	var markers []Marker
	if h := r.History; h != nil {
		t0, _ := origin(h)
		for _, c := range h.Crashes {
			markers = append(markers, Marker{X: float64(c.AtMs-t0) / 1000, Label: fmt.Sprintf("crash %s (batch %d)", c.Point, c.BatchID), Color: "#c0392b"})
		}
		if h.HealAtMs > 0 {
			markers = append(markers, Marker{X: float64(h.HealAtMs-t0) / 1000, Label: "faults healed", Color: "#27ae60"})
		}
	}
	stateChart := Chart{Title: "State rows per batch (numRowsTotal)", XLabel: "processing time (s)", YLabel: "rows",
		Series: []Series{{Name: "numRowsTotal", Color: "#2c6fbb", X: xs, Y: state}}, Markers: markers}
	if b := r.Report.Counts.StateBound; b > 0 {
		stateChart.HLines = []HLine{{Y: b, Label: fmt.Sprintf("predicted bound %.0f", b), Color: "#e67e22"}}
	}
	return []Chart{
		stateChart,
		{Title: "Watermark against the largest event time seen", XLabel: "processing time (s)", YLabel: "event time (s from first event)",
			Series: []Series{{Name: "max event time", Color: "#8e44ad", X: xs, Y: maxET}, {Name: "watermark", Color: "#2c6fbb", X: xs, Y: wm}}, Markers: markers},
		{Title: "Rows dropped and duplicates passed per batch", XLabel: "processing time (s)", YLabel: "rows",
			Series: []Series{{Name: "late dropped", Color: "#e67e22", X: xs, Y: late, Bars: true},
				{Name: "duplicates dropped", Color: "#95a5a6", X: xs, Y: dupDrop},
				{Name: "duplicates passed", Color: "#c0392b", X: xs, Y: dupPass, Bars: true},
				{Name: "replayed into the sink", Color: "#6c3483", X: xs, Y: replayed, Bars: true}}, Markers: markers},
	}
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"svg":      func(c Chart) template.HTML { return template.HTML(c.SVG()) },
	"liveLine": LiveLine,
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>dedupsim: {{.Run.Scenario}} seed {{.Run.Seed}}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:900px;margin:24px auto;color:#222}
.pass{color:#1e7d34}.fail{color:#b3261e}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;font-size:14px}
code,pre{background:#f5f5f5;padding:2px 4px}.violation{color:#b3261e;font-weight:bold}.counted{color:#8a6d00}.warning{color:#a15c00}
svg{display:block;margin:12px 0;border:1px solid #eee}
</style></head><body>
<h1>{{.Run.Scenario}} <span class="{{if .Run.Passed}}pass{{else}}fail{{end}}">{{if .Run.Passed}}PASS{{else}}FAIL{{end}}</span></h1>
{{if .Run.Description}}<p>{{.Run.Description}}</p>{{end}}
<p>Seed {{.Run.Seed}}. Replay: <code>{{.Run.Replay}}</code></p>
{{with .Run.History}}{{with .Live}}<p>{{liveLine .}}</p>{{end}}{{end}}
<h2>Verdict</h2>
<p class="{{if .Run.Report.Verdict.ExactlyOnce}}pass{{else}}fail{{end}}">{{.Run.Report.Verdict.Summary}}</p>
<h2>Expectations</h2>
<table><tr><th>finding</th><th>expected</th><th>got</th><th></th></tr>
{{range .Run.Expect}}<tr><td>{{.Finding}}</td><td>{{.Want}}</td><td>{{.Got}}</td><td class="{{if .OK}}pass{{else}}fail{{end}}">{{if .OK}}met{{else}}NOT MET{{end}}</td></tr>
{{end}}</table>
<h2>Findings</h2>
{{if not .Run.Report.Findings}}<p>None.</p>{{end}}
{{range .Run.Report.Findings}}<h3><span class="{{.Severity}}">{{.Kind}}</span> ({{.Severity}}, {{.Count}})</h3><p>{{.Message}}</p>
{{if .Examples}}<table><tr><th>event</th><th>copies</th><th>batches</th><th>detail</th></tr>
{{range .Examples}}<tr><td>{{.Event}}</td><td>{{.Copies}}</td><td>{{.Batches}}</td><td>{{.Detail}}</td></tr>{{end}}</table>{{end}}
{{end}}
<h2>Charts</h2>
{{range .Charts}}{{svg .}}{{end}}
<h2>Counts</h2>
<table>
<tr><td>copies appended</td><td>{{.Run.Report.Counts.Copies}}</td></tr>
<tr><td>logical events</td><td>{{.Run.Report.Counts.Events}}</td></tr>
<tr><td>emitted / duplicates dropped / late dropped</td><td>{{.Run.Report.Counts.Emitted}} / {{.Run.Report.Counts.DuplicatesDropped}} / {{.Run.Report.Counts.LateDropped}}</td></tr>
<tr><td>batches (executions)</td><td>{{.Run.Report.Counts.Batches}} ({{.Run.Report.Counts.Executions}})</td></tr>
<tr><td>state rows max / last</td><td>{{.Run.Report.Counts.StateRowsMax}} / {{.Run.Report.Counts.StateRowsLast}}</td></tr>
</table>
{{range .Run.Report.Notes}}<p><em>{{.}}</em></p>{{end}}
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

// HTML renders report.html: self-contained, no scripts, no network.
func HTML(r *Run) ([]byte, error) {
	var b bytes.Buffer
	err := page.Execute(&b, struct {
		Run    *Run
		Charts []Chart
	}{r, Charts(r)})
	return b.Bytes(), err
}

// Markdown renders summary.md over one or more runs.
func Markdown(runs []*Run) string {
	var b strings.Builder
	pass := 0
	for _, r := range runs {
		if r.Passed {
			pass++
		}
	}
	fmt.Fprintf(&b, "# dedupsim: %d of %d runs met their expectations\n\n", pass, len(runs))
	b.WriteString("| scenario | seed | result | verdict | findings |\n|---|---|---|---|---|\n")
	for _, r := range runs {
		res := "PASS"
		if !r.Passed {
			res = "**FAIL**"
		}
		var fs []string
		for _, f := range r.Report.Findings {
			fs = append(fs, fmt.Sprintf("%s (%d)", f.Kind, f.Count))
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", r.Scenario, r.Seed, res, mdEscape(r.Report.Verdict.Summary), strings.Join(fs, ", "))
	}
	for _, r := range runs {
		if r.History != nil && r.History.Live != nil {
			fmt.Fprintf(&b, "\n%s: %s\n", r.Scenario, LiveLine(r.History.Live))
		}
	}
	for _, r := range runs {
		if r.Passed {
			continue
		}
		fmt.Fprintf(&b, "\n## %s (seed %d)\n\nReplay: `%s`\n\n", r.Scenario, r.Seed, r.Replay)
		for _, e := range r.Expect {
			if !e.OK {
				fmt.Fprintf(&b, "- expected `%s` %s, got %d\n", e.Finding, e.Want, e.Got)
			}
		}
	}
	if len(runs) > 0 && runs[0].Version != "" {
		fmt.Fprintf(&b, "\n_dedupsim %s_\n", mdEscape(runs[0].Version))
	}
	return b.String()
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

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
	Properties *junitProperties `xml:"properties,omitempty"`
	Cases      []junitCase      `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnit renders junit.xml: one test case per scenario and seed.
func JUnit(runs []*Run) ([]byte, error) {
	s := junitSuite{Name: "dedupsim", Tests: len(runs)}
	if len(runs) > 0 && runs[0].Version != "" {
		s.Properties = &junitProperties{[]junitProperty{{Name: "dedupsim.version", Value: runs[0].Version}}}
	}
	for _, r := range runs {
		c := junitCase{Name: fmt.Sprintf("%s/seed=%d", r.Scenario, r.Seed), Classname: "dedupsim." + r.Scenario,
			SystemOut: r.Report.Verdict.Summary + "\nreplay: " + r.Replay}
		if !r.Passed {
			s.Failures++
			var lines []string
			for _, e := range r.Expect {
				if !e.OK {
					lines = append(lines, fmt.Sprintf("expected %s %s, got %d", e.Finding, e.Want, e.Got))
				}
			}
			c.Failure = &junitFailure{Message: strings.Join(lines, "; "), Text: "replay: " + r.Replay}
		}
		s.Cases = append(s.Cases, c)
	}
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// IndexEntry is one run in a sweep's index.html.
type IndexEntry struct {
	Run *Run
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
	return writeFile(path, b.Bytes())
}

// WriteJUnit writes junit.xml.
func WriteJUnit(path string, runs []*Run) error {
	b, err := JUnit(runs)
	if err != nil {
		return err
	}
	return writeFile(path, b)
}

package diagnose

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/dedupsim/dedupsim/diagnose/progress"
	"github.com/dedupsim/dedupsim/internal/atomicfile"
	"github.com/dedupsim/dedupsim/internal/duration"
	"github.com/dedupsim/dedupsim/internal/svgchart"
)

// WriteText prints the console summary: the inputs, then per query its
// shape and its findings (problems first, each with evidence and the fix),
// then the verdict line.
func (r Report) WriteText(w io.Writer) {
	var shapes []string
	for _, f := range r.Files {
		s := fmt.Sprintf("%s (%s", filepath.Base(f.Path), f.Shape)
		if f.Codec != "" {
			s += ", " + f.Codec
		}
		if f.InProgress {
			s += ", in progress"
		}
		if f.CutShort {
			s += ", cut short where the application was writing it"
		}
		s += fmt.Sprintf(", %d records)", f.Records)
		shapes = append(shapes, s)
	}
	r.writeApplications(w)
	fmt.Fprintf(w, "inputs: %s\n", strings.Join(shapes, ", "))
	if r.BadTotal > 0 || r.Duplicates > 0 || r.Conflicts > 0 {
		fmt.Fprintf(w, "bad lines: %d; records seen in two inputs: %d; conflicting copies: %d\n", r.BadTotal, r.Duplicates, r.Conflicts)
	}
	for _, q := range r.Queries {
		fmt.Fprintf(w, "\nquery %s (id %s): %d run(s), %d batches, %s rows in\n", nameOf(q), q.ID, q.Runs, q.Batches, num(q.Rows))
		fmt.Fprintf(w, "  %s\n", q.Facts.describe())
		if t := q.Facts.stateBytesText(); t != "" {
			fmt.Fprintf(w, "  %s\n", t)
		}
		for _, sev := range []Severity{Problem, Risk, Info} {
			for _, f := range q.Finding {
				if f.Severity != sev {
					continue
				}
				tag := map[Severity]string{Problem: "PROBLEM", Risk: "RISK", Info: "info"}[sev]
				fmt.Fprintf(w, "  %-7s %s: %s\n", tag, f.Kind, f.Message)
				for _, e := range f.Evidence {
					fmt.Fprintf(w, "            %s\n", e)
				}
				switch sev {
				case Problem:
					fmt.Fprintf(w, "            fix: %s\n", f.Advice)
				case Risk:
					fmt.Fprintf(w, "            look: %s\n", f.Advice)
				}
			}
		}
	}
	fmt.Fprintf(w, "\nverdict: %s\n", r.Verdict)
}

func nameOf(q QueryReport) string {
	if q.Name != "" {
		return q.Name
	}
	return "(unnamed)"
}

func (f Facts) describe() string {
	ops := strings.Join(f.Operators, ", ")
	if ops == "" {
		ops = "no stateful operator"
	}
	s := ops
	if f.Provider != "" {
		s += " on the " + f.Provider + " state store"
	}
	if f.Partitions > 0 {
		s += fmt.Sprintf(", %d state partitions", f.Partitions)
	}
	switch {
	case !f.HasWatermark:
		s += ", no watermark"
	case f.DelayEstimate && f.DelayMs > 0:
		s += fmt.Sprintf(", watermark delay about %s (estimated)", durText(f.DelayMs))
	case f.DelayMs > 0:
		s += fmt.Sprintf(", watermark delay %s", durText(f.DelayMs))
	default:
		s += ", watermark (delay unknown: it never moved)"
	}
	if f.RealTime {
		s += fmt.Sprintf(", real-time mode (batches of about %s)", durText(f.RealTimeBatchMs))
	}
	s += fmt.Sprintf("; %.1f rows/s in, %.2f%% duplicates", f.InputRate, 100*f.DuplicateRate)
	return s
}

// stateBytesText is the measured bytes per key, and what it counts on the
// store ("" when no batch has state rows).
func (f Facts) stateBytesText() string {
	sb := f.StateBytes
	if sb == nil {
		return ""
	}
	var what string
	switch sb.Memory {
	case progress.MemoryHeap:
		what = "JVM heap: the HDFS-backed store's versions in memory (size --from-progress sizes executors with it)"
	case progress.MemoryNative:
		what = "not heap: RocksDB's native memory (block cache, memtables), bounded per store instance by its confs, not per key"
	default:
		what = "store unknown (no custom metric names it): heap on the HDFS-backed store, native memory on RocksDB"
	}
	return fmt.Sprintf("state bytes per key: %s B (memoryUsedBytes / numRowsTotal of operator 0 over its %d largest of %d batches; at batch %d %s B / %s keys); %s",
		trim1(sb.BytesPerKey), sb.Plateau, sb.Batches, sb.LastBatchID, num(sb.LastMemoryUsedBytes), num(sb.LastNumRowsTotal), what)
}

// trim1 is v with one decimal, without a trailing ".0"; from 1,000 up a
// whole number with thousands separators.
func trim1(v float64) string {
	if v >= 1000 {
		return num(int64(math.Round(v)))
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
}

// JSON is report.json.
func (r Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
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

// problemKinds are the kinds junit.xml has a test case for, per query, so
// that a nightly job can alert on each by name.
var problemKinds = []Kind{ConflictingCopies, CheckpointMismatch, QueryFailed, TableDuplicate, NoWatermark, StateUnbounded, StateOverBound, WatermarkStalled, WatermarkJump,
	WatermarkRegressed, LateDropped, BatchDurationGrowing, TooFewPartitions}

// JUnit is junit.xml: one test case per query and problem kind, failed
// when the finding is there.
func (r Report) JUnit() ([]byte, error) {
	s := junitSuite{Name: "dedupsim diagnose"}
	for _, q := range r.Queries {
		for _, k := range problemKinds {
			c := junitCase{Name: string(k), Classname: "dedupsim.diagnose." + nameOf(q)}
			for _, f := range q.Finding {
				if f.Kind == k && f.Severity == Problem {
					c.Failure = &junitFailure{Message: f.Message,
						Text: strings.Join(append(append([]string{f.Message}, f.Evidence...), "fix: "+f.Advice), "\n")}
					s.Failures++
					break
				}
			}
			s.Cases = append(s.Cases, c)
			s.Tests++
		}
	}
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(append([]byte(xml.Header), b...), '\n'), nil
}

// HTML is report.html: per query the findings and the charts of the real
// query (numRowsTotal, memoryUsedBytes, watermark vs max event time, late
// drops, batch duration). Self-contained: inline SVG, no scripts.
func (r Report) HTML() []byte {
	var b strings.Builder
	e := html.EscapeString
	b.WriteString("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>dedupsim diagnose</title>\n<style>" +
		"body{font:14px system-ui,sans-serif;margin:2em;max-width:820px}.problem{color:#b00020}.risk{color:#a15c00}.info{color:#555}" +
		"li{margin:.4em 0}small{color:#555}</style></head><body>\n")
	verdict := "healthy"
	switch {
	case r.Problems > 0:
		verdict = plural(r.Problems, "problem")
	case r.Risks > 0:
		verdict = "no problem in the metrics; " + plural(r.Risks, "risk") + " they cannot show"
	}
	fmt.Fprintf(&b, "<h1>dedupsim diagnose: %s</h1>\n<p>%s</p>\n", e(verdict), e(r.Summary))
	b.WriteString("<p><small>inputs: ")
	for i, f := range r.Files {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s%s, %d records, %d bad)", e(filepath.Base(f.Path)), e(string(f.Shape)), e(codecText(f.Codec)), f.Records, f.Bad)
	}
	b.WriteString("</small></p>\n")
	for _, q := range r.Queries {
		fmt.Fprintf(&b, "<h2>%s</h2>\n<p><small>id %s, %d run(s), %d batches; %s</small></p>\n", e(nameOf(q)), e(q.ID), q.Runs, q.Batches, e(q.Facts.describe()))
		if t := q.Facts.stateBytesText(); t != "" {
			fmt.Fprintf(&b, "<p><small>%s</small></p>\n", e(t))
		}
		b.WriteString("<ul>\n")
		for _, f := range q.Finding {
			fmt.Fprintf(&b, "<li class=\"%s\"><b>%s</b> %s: %s<br><small>%s", f.Severity, e(string(f.Severity)), e(string(f.Kind)), e(f.Message), e(strings.Join(f.Evidence, "; ")))
			switch f.Severity {
			case Problem:
				fmt.Fprintf(&b, "<br>fix: %s", e(f.Advice))
			case Risk:
				fmt.Fprintf(&b, "<br>look: %s", e(f.Advice))
			}
			b.WriteString("</small></li>\n")
		}
		b.WriteString("</ul>\n")
		if n := chartNote(q); n != "" {
			fmt.Fprintf(&b, "<p><small>%s</small></p>\n", e(n))
		}
		for _, c := range charts(q) {
			b.WriteString(c.SVG())
			b.WriteString("\n")
		}
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

func codecText(c string) string {
	if c == "" {
		return ""
	}
	return ", " + c
}

// charts are the real query's time charts (x: seconds since its first
// batch; each run's start marked).
func charts(q QueryReport) []svgchart.Chart {
	if len(q.Points) == 0 {
		return nil
	}
	t0 := q.Points[0].AtMs
	x := func(p Point) float64 { return float64(p.AtMs-t0) / 1000 }
	var markers []svgchart.Marker
	for i, p := range q.Points {
		if i > 0 && p.Run != q.Points[i-1].Run {
			markers = append(markers, svgchart.Marker{X: x(p), Label: "restart", Legend: "restart (new runId)", Color: "#888"})
		}
	}
	line := func(name, color string, f func(Point) (float64, bool)) svgchart.Series {
		s := svgchart.Series{Name: name, Color: color}
		for _, p := range q.Points {
			if y, ok := f(p); ok {
				s.X, s.Y = append(s.X, x(p)), append(s.Y, y)
			}
		}
		return s
	}
	mk := func(title, y string, ss ...svgchart.Series) svgchart.Chart {
		return svgchart.Chart{Title: title, XLabel: "seconds since the first batch", YLabel: y, Series: ss, Markers: markers}
	}
	// Event time is drawn from the earliest value plotted (an event-time
	// origin, not the trigger clock: the two can be minutes apart).
	e0 := int64(math.MaxInt64)
	for _, p := range q.Points {
		if p.HasWatermark && p.WatermarkMs > 0 {
			e0 = min(e0, p.WatermarkMs)
		}
		if p.HasMaxEvent {
			e0 = min(e0, p.MaxEventMs)
		}
	}
	if e0 == math.MaxInt64 {
		e0 = t0
	}
	wm := func(p Point) (float64, bool) {
		return float64(p.WatermarkMs-e0) / 1000, p.HasWatermark && p.WatermarkMs > 0
	}
	ev := func(p Point) (float64, bool) { return float64(p.MaxEventMs-e0) / 1000, p.HasMaxEvent }
	late := line("numRowsDroppedByWatermark", "#b00020", func(p Point) (float64, bool) { return float64(p.Dropped), true })
	late.Bars = true
	out := []svgchart.Chart{
		mk("State rows (numRowsTotal, operator 0)", "keys", line("numRowsTotal", "#1f77b4", func(p Point) (float64, bool) { return float64(p.RowsTotal), true })),
		mk("State memory (memoryUsedBytes, operator 0)", "bytes", line("memoryUsedBytes", "#9467bd", func(p Point) (float64, bool) { return float64(p.MemoryBytes), true })),
	}
	// A query without a watermark has neither a watermark nor late rows:
	// no empty chart for them (chartNote says so).
	if q.Facts.HasWatermark {
		out = append(out, mk("Watermark vs max event time (event-time seconds after "+iso(e0)+")", "event time, s", line("eventTime.watermark", "#2ca02c", wm), line("eventTime.max", "#ff7f0e", ev)),
			mk("Late rows dropped per batch", "rows", late))
	}
	return append(out, mk("Batch duration", "ms", line("batchDuration", "#8c564b", func(p Point) (float64, bool) { return float64(p.DurationMs), p.DurationMs >= 0 })))
}

// chartNote says why a query's report has no watermark chart ("" when it
// has one).
func chartNote(q QueryReport) string {
	if q.Facts.HasWatermark || len(q.Points) == 0 {
		return ""
	}
	return "No watermark or late-rows chart: the query has no watermark (no record has eventTime.watermark), so nothing is late and nothing is evicted."
}

// Write writes report.html, report.json and junit.xml into dir (created if
// needed; never through a link: internal/atomicfile).
func (r Report) Write(dir string) error {
	root, err := atomicfile.OpenDir(dir)
	if err != nil {
		return err
	}
	root.Close()
	j, err := r.JSON()
	if err != nil {
		return err
	}
	x, err := r.JUnit()
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"report.json": j, "junit.xml": x, "report.html": r.HTML()} {
		if err := atomicfile.WriteFile(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	return nil
}

func durText(ms int64) string { return duration.Words(float64(ms)) }

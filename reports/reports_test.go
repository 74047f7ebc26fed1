package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/dedupsim/dedupsim/sim/history"
)

// sample is a tiny run: event a emitted, a's retry dropped as a duplicate,
// b emitted twice across a crash (a replay duplicate in an append sink).
func sample() *result.Run {
	h := &history.History{Version: history.Version, Seed: 7, API: "dropDuplicatesWithinWatermark", Keys: []string{"id"},
		DelayMs: 10_000, Partitions: 2, SinkKind: "append", HealAtMs: 3_000, EndMs: 4_000, ArrivalRatePerSec: 1,
		Copies: []history.Copy{
			{Event: "a", EventTimeUs: 1_000_000, AppendedAtMs: 1_000},
			{Event: "a", CopyNo: 1, Offset: 1, EventTimeUs: 1_000_000, AppendedAtMs: 1_500, Fault: history.MustFault("producer-retry")},
			{Event: "b", Offset: 2, EventTimeUs: 2_000_000, AppendedAtMs: 2_000},
		},
		Batches: []history.Batch{
			{BatchID: 0, AtMs: 1_000, Input: []int32{0}, Outcomes: history.Outcomes{history.Emitted}, NumRowsTotal: 1, MaxEventTimeMs: 1_000, Progress: json.RawMessage(`{"batchId":0}`)},
			{BatchID: 1, AtMs: 2_000, Input: []int32{1, 2}, Outcomes: history.Outcomes{history.Duplicate, history.Emitted}, NumRowsTotal: 2, MaxEventTimeMs: 2_000, Crashed: "after-sink-write", Progress: json.RawMessage(`{"batchId":1,"try":1}`)},
			{BatchID: 1, AtMs: 2_500, Replay: true, Input: []int32{1, 2}, Outcomes: history.Outcomes{history.Duplicate, history.Emitted}, NumRowsTotal: 2, MaxEventTimeMs: 2_000, Progress: json.RawMessage(`{"batchId":1,"try":2}`)},
		},
		Crashes: []history.Crash{{AtMs: 2_000, Point: "after-sink-write", BatchID: 1}},
		Writes: []history.SinkWrite{{BatchID: 0, AtMs: 1_000, Rows: []int32{0}, Kept: 1}, {BatchID: 1, AtMs: 2_000, Rows: []int32{2}, Kept: 1},
			{BatchID: 1, AtMs: 2_500, Rows: []int32{2}, Kept: 1}},
		Table: []int32{0, 2, 2}, HasTable: true,
	}
	rep := check.Check(h, check.DefaultOptions())
	return &result.Run{Scenario: "sample", Seed: 7, Passed: false, Replay: "dedupsim replay --seed 7 sample.yaml", History: h, Report: rep,
		Expect: []result.Expectation{{Finding: "exactly-once", Want: "present", Got: 0, OK: false}}}
}

func TestPointsUseTheLastExecution(t *testing.T) {
	pts := Points(sample().History)
	if len(pts) != 2 {
		t.Fatalf("points %+v", pts)
	}
	if pts[1].BatchID != 1 || pts[1].AtSec != 1.5 || pts[1].DuplicatesDrop != 1 || pts[1].Emitted != 1 || pts[1].StateRows != 2 {
		t.Fatalf("batch 1 point %+v (want the replay's figures)", pts[1])
	}
}

func TestReportsAreSelfContainedAndDeterministic(t *testing.T) {
	r := sample()
	dir := t.TempDir()
	if err := WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	for _, want := range []string{"<svg", "State rows per batch", "crash after-sink-write (batch 1)", "FAIL", "dedupsim replay --seed 7"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// No network: the only URL is the SVG namespace.
	if n := strings.Count(string(page), "http"); n != strings.Count(string(page), "http://www.w3.org/2000/svg") {
		t.Errorf("report.html refers to the network")
	}
	if bytes.Contains(page, []byte("<script")) {
		t.Error("report.html has a script")
	}
	var jr map[string]any
	raw, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(raw, &jr); err != nil {
		t.Fatal(err)
	}
	prog := jr["progress"].([]any)
	if len(prog) != 2 || prog[1].(map[string]any)["try"].(float64) != 2 {
		t.Fatalf("progress records %v: want one per batch, the replay's", prog)
	}
	again, _ := JSON(r)
	if !bytes.Equal(raw, again) {
		t.Fatal("report.json differs between two renders")
	}
	html2, _ := HTML(r)
	if !bytes.Equal(page, html2) {
		t.Fatal("report.html differs between two renders")
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if !bytes.Contains(md, []byte("0 of 1 runs")) || !bytes.Contains(md, []byte("expected `exactly-once` present, got false")) {
		t.Fatalf("summary.md:\n%s", md)
	}
}

func TestJUnit(t *testing.T) {
	ok := sample()
	ok.Passed, ok.Seed, ok.Expect = true, 8, nil
	b, err := JUnit([]*result.Run{sample(), ok})
	if err != nil {
		t.Fatal(err)
	}
	var s junitSuites
	if err := xml.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Suites) != 1 || s.Suites[0].Tests != 2 || s.Suites[0].Failures != 1 || s.Suites[0].Cases[0].Failure == nil || s.Suites[0].Cases[1].Failure != nil {
		t.Fatalf("junit %+v", s)
	}
	if !strings.Contains(s.Suites[0].Cases[0].Name, "seed=7") {
		t.Fatalf("case name %q", s.Suites[0].Cases[0].Name)
	}
}

func TestIndex(t *testing.T) {
	p := filepath.Join(t.TempDir(), "index.html")
	if err := WriteIndex(p, []IndexEntry{{Run: sample(), Dir: "sample-7"}}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if !bytes.Contains(b, []byte(`href="sample-7/report.html"`)) || !bytes.Contains(b, []byte("0 of 1")) {
		t.Fatalf("index:\n%s", b)
	}
}

// TestLiveRunIsSaid: a run against Kafka says so in every report, with its
// kills; a simulated run says nothing of the kind.
func TestLiveRunIsSaid(t *testing.T) {
	r := sample()
	dir := t.TempDir()
	if err := WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if bytes.Contains(page, []byte("Against Kafka")) {
		t.Fatal("a simulated run's report says it ran against Kafka")
	}
	r.History.Live = &history.Live{Cluster: "local", Engine: "process", TriggerMs: 100, EngineProcesses: 19,
		KilledAtPoints: 11, KilledAtRandom: 7, BrokerRestarts: 1, DroppedAcks: 3, Dir: "out/x/live"}
	if err := WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	want := "Against Kafka (local), the engine as a child process: 19 processes, 11 killed with SIGKILL at crash points, 7 at random moments, 0 exited with an error; the broker killed and restarted 1 times; 3 duplicate appends made by dropped produce acks; one trigger took 100ms of real time; engine files in out/x/live."
	for _, f := range []string{"report.html", "summary.md"} {
		data, _ := os.ReadFile(filepath.Join(dir, f))
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks the live line %q", f, want)
		}
	}
	var jr struct {
		Live *history.Live `json:"live"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(data, &jr); err != nil || jr.Live == nil || jr.Live.KilledAtRandom != 7 {
		t.Errorf("report.json live = %+v, %v", jr.Live, err)
	}
}

// TestMarkdownEscapesScenarioText: names and descriptions reach summary.md
// as text, never as Markdown or HTML; the replay command is a code span
// whatever backticks it holds.
func TestMarkdownEscapesScenarioText(t *testing.T) {
	r := sample()
	r.Scenario = `x<img src=x onerror=alert(1)>|**b**`
	r.Description = "1. <script>alert(1)</script> [link](javascript:x) &amp; `code`\nsecond line"
	r.Replay = "dedupsim replay --seed 7 'a`b``c'"
	md := Markdown([]*result.Run{r})
	for _, bad := range []string{"<img", "<script", "](javascript", "&amp;", "|**b**"} {
		for i := strings.Index(md, bad); i >= 0; i = indexFrom(md, bad, i+1) {
			if i == 0 || md[i-1] != '\\' {
				t.Errorf("summary.md holds %q unescaped:\n%s", bad, md)
				break
			}
		}
	}
	if !strings.Contains(md, "1\\. \\<script\\>") || !strings.Contains(md, "x\\<img src=x onerror=alert(1)\\>\\|\\*\\*b\\*\\*") {
		t.Errorf("summary.md:\n%s", md)
	}
	if !strings.Contains(md, "Replay: ```dedupsim replay --seed 7 'a`b``c'```") {
		t.Errorf("replay code span:\n%s", md)
	}
	if strings.Contains(md, "second line") {
		t.Errorf("only the description's first line belongs in summary.md:\n%s", md)
	}
}

func indexFrom(s, sub string, from int) int {
	if from >= len(s) {
		return -1
	}
	i := strings.Index(s[from:], sub)
	if i < 0 {
		return -1
	}
	return from + i
}

// TestJUnitFailureNamesTheReplay: a failure's message and body carry the
// unmet expectations and the replay command, the body and system-out the
// headline; every case and the suite have a time.
func TestJUnitFailureNamesTheReplay(t *testing.T) {
	r := sample()
	r.Elapsed = 2*time.Second + 250*time.Millisecond
	b, err := JUnit([]*result.Run{r})
	if err != nil {
		t.Fatal(err)
	}
	var s junitSuites
	if err := xml.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	c := s.Suites[0].Cases[0]
	if c.Time != "2.250" || s.Suites[0].Time != "2.250" || c.Failure == nil {
		t.Fatalf("junit %+v", s)
	}
	for _, w := range []string{"expected exactly-once present, got false", "replay: dedupsim replay --seed 7 sample.yaml"} {
		if !strings.Contains(c.Failure.Message, w) || !strings.Contains(c.Failure.Text, w) {
			t.Errorf("failure %+v lacks %q", c.Failure, w)
		}
	}
	if !strings.HasPrefix(c.Failure.Text, "Table: 1 event is in the table twice.") || !strings.HasPrefix(c.SystemOut, "Table: ") || !strings.Contains(c.SystemOut, "API contract: BROKEN: sink-replay-duplicate (1)") {
		t.Errorf("headline missing: %+v", c)
	}
}

// TestChartsWithoutAWatermark: a query with no watermark gets no
// watermark chart (its axis ran to -1.5 G, the epoch seen from 2026) and a
// note saying why; the event-time series start where they are known.
func TestChartsWithoutAWatermark(t *testing.T) {
	r := sample()
	r.History.DelayMs = -1
	charts, notes := chartsAndNotes(r, Points(r.History))
	for _, c := range charts {
		if strings.Contains(c.Title, "Watermark") {
			t.Fatalf("a watermark chart for a query without a watermark")
		}
		if svg := c.SVG(); strings.Contains(svg, "G<") {
			t.Fatalf("giga ticks in %s", c.Title)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "no watermark") {
		t.Fatalf("notes %v", notes)
	}
	for _, p := range Points(r.History) {
		if p.WatermarkSec != nil {
			t.Fatalf("a watermark point for a query without a watermark: %+v", p)
		}
	}
	page, _ := HTML(r)
	if !bytes.Contains(page, []byte("No watermark chart: the query has no watermark")) {
		t.Fatal("report.html does not say why the watermark chart is missing")
	}
}

// TestChartUnitsAndLegends: a long run's axis is in minutes or hours;
// every series, marker kind and reference line is in the legend.
func TestChartUnitsAndLegends(t *testing.T) {
	for _, tc := range []struct {
		sec  float64
		want string
	}{{30, "s"}, {600, "s"}, {3600, "min"}, {7 * 3600, "min"}, {24 * 3600, "h"}, {365 * 86400, "days"}} {
		if got := unitFor(tc.sec).name; got != tc.want {
			t.Errorf("unitFor(%g) = %s, want %s", tc.sec, got, tc.want)
		}
	}
	r := sample()
	r.History.Copies[2].AppendedAtMs = 2 * 3600 * 1000
	r.History.Batches[2].AtMs = 2 * 3600 * 1000
	r.History.Crashes = append(r.History.Crashes, history.Crash{AtMs: 3_000, Point: "random", BatchID: 1})
	charts := Charts(r)
	if !strings.Contains(charts[0].XLabel, "(min)") {
		t.Errorf("x label %q for a two-hour run", charts[0].XLabel)
	}
	svg := charts[0].SVG()
	for _, w := range []string{"numRowsTotal", "driver crash (2) (dashed line)", "faults healed (dashed line)"} {
		if !strings.Contains(svg, w) {
			t.Errorf("legend lacks %q", w)
		}
	}
}

// TestSkippedChecksAreProminent: the checks not run are listed under the
// headline, not in italics at the bottom.
func TestSkippedChecksAreProminent(t *testing.T) {
	r := sample()
	if len(SkippedChecks(r)) == 0 {
		t.Fatal("the sample has no skipped check")
	}
	page, _ := HTML(r)
	i, j := bytes.Index(page, []byte("Checks not run")), bytes.Index(page, []byte("<h2>Findings</h2>"))
	if i < 0 || i > j || !bytes.Contains(page, []byte(html.EscapeString(SkippedChecks(r)[0]))) {
		t.Fatalf("skipped checks not under the headline")
	}
	if md := Markdown([]*result.Run{r}); !strings.Contains(md, "Checks not run") {
		t.Fatalf("summary.md:\n%s", md)
	}
}

// TestEventSetCollisions: events whose hashes collide are still told
// apart (the ids are compared), with every hash the same and with the
// process's own.
func TestEventSetCollisions(t *testing.T) {
	h := &history.History{Copies: []history.Copy{{Event: "a"}, {Event: "b"}, {Event: "a"}, {Event: "c"}, {Event: "b"}, {Event: "c"}}}
	want := []bool{true, true, false, true, false, false}
	for name, s := range map[string]*eventSet{"colliding": {h: h, hash: func(string) uint64 { return 42 }, byHash: map[uint64]int{}}, "maphash": newEventSet(h)} {
		for c, w := range want {
			if got := s.add(c); got != w {
				t.Fatalf("%s: add(copy %d, event %s) = %v, want %v", name, c, h.Copies[c].Event, got, w)
			}
		}
	}
}

// TestEventSetSimulatorNames: the simulator's names (kept in bitsets) and
// others (kept by hash) in one set: each event added once, whichever part
// holds it, numbers past the bitsets' limit and names that only look alike
// ("e0-01" is not "e0-1") told apart.
func TestEventSetSimulatorNames(t *testing.T) {
	names := []string{"e0-1", "e0-01", "e1-1", "e0-1", "x", "e0-67108864", "e0-01", "d0-1", "e0-67108864", "e1-1", "e0-0", "e0-4000", "x", "e0-0", "e0-4000", "d0-1"}
	want := []bool{true, true, true, false, true, true, false, true, false, false, true, true, false, false, false, false}
	h := &history.History{}
	for _, n := range names {
		h.Copies = append(h.Copies, history.Copy{Event: n})
	}
	s := newEventSet(h)
	for c, w := range want {
		if got := s.add(c); got != w {
			t.Fatalf("add(copy %d, event %s) = %v, want %v", c, names[c], got, w)
		}
	}
}

package reports_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/scenarios/result"
)

func runCatalogue(t *testing.T, name string, seed uint64) *result.Run {
	t.Helper()
	s, err := scenarios.Find(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := scenarios.Run(s, seed, scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestHeadlineSaysWhatReachedTheTable: a run that keeps the API's promise
// and meets its expectations while its table holds duplicates leads with
// the duplicates, in red, and says both other things plainly, in grey; a
// run whose table misses most events says so, dropped as late, in amber;
// a clean run is green.
func TestHeadlineSaysWhatReachedTheTable(t *testing.T) {
	r := runCatalogue(t, "restamped-retries-event-time-key", 1)
	tb := r.Report.Table
	if tb.MoreThanOnce == 0 || !r.Passed || !r.Report.Verdict.ExactlyOnce {
		t.Fatalf("the scenario changed: %+v", tb)
	}
	lines := reports.HeadlineLines(r)
	if len(lines) != 4 || lines[0].Label != "Table" || lines[1].Label != "API contract" || lines[2].Label != "Expectations" || lines[3].Label != "Margin" {
		t.Fatalf("headline %+v", lines)
	}
	want := fmt.Sprintf("%d events are in the table twice.", tb.MoreThanOnce)
	if !strings.HasPrefix(lines[0].Text, want) || lines[0].Tone != reports.Bad {
		t.Errorf("table line %+v, want it to start %q in red", lines[0], want)
	}
	if !strings.HasPrefix(lines[1].Text, "kept") || lines[1].Tone == reports.Good || !strings.Contains(lines[1].Text, "does not promise one row per event") {
		t.Errorf("contract line %+v", lines[1])
	}
	if !strings.HasPrefix(lines[2].Text, "met (5 of 5)") || lines[2].Tone == reports.Good {
		t.Errorf("expectations line %+v", lines[2])
	}
	if !strings.Contains(lines[3].Text, "No delay would have caught them") {
		t.Errorf("margin line %+v", lines[3])
	}
	for _, l := range lines {
		if l.Tone == reports.Good {
			t.Errorf("%s is coloured good beside a table with duplicates", l.Label)
		}
	}
	if h := reports.Headline(r); !strings.HasPrefix(h, "Table: "+want) || strings.Count(h, "\n") != 3 {
		t.Errorf("console headline:\n%s", h)
	}
	page, err := reports.HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`<p class="bad table"><b>Table:</b> ` + want, `class="badge neutral"`, "API contract kept (exactly_once)", "<h2>Margin</h2>"} {
		if !bytes.Contains(page, []byte(w)) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	if bytes.Contains(page, []byte("exactly-once: yes")) {
		t.Error("report.html still says exactly-once: yes")
	}
	j, _ := reports.JSON(r)
	var jr struct {
		Headline []reports.Line `json:"headline"`
		Check    struct {
			Table struct {
				MoreThanOnce int `json:"moreThanOnce"`
			} `json:"table"`
			Verdict struct {
				ExactlyOnce bool `json:"exactlyOnce"`
			} `json:"verdict"`
		} `json:"check"`
	}
	if err := json.Unmarshal(j, &jr); err != nil || len(jr.Headline) != 4 || jr.Check.Table.MoreThanOnce != tb.MoreThanOnce || !jr.Check.Verdict.ExactlyOnce {
		t.Errorf("report.json: %v %+v", err, jr)
	}
	md := reports.Markdown([]*result.Run{r})
	if !strings.Contains(md, "- **Table:** "+want) || !strings.Contains(md, "**"+fmt.Sprint(tb.MoreThanOnce)+" more than once**") {
		t.Errorf("summary.md:\n%s", md)
	}

	r = runCatalogue(t, "future-clock-drags-watermark", 1)
	lines = reports.HeadlineLines(r)
	if tb := r.Report.Table; !strings.Contains(lines[0].Text, "never reached the table because they were dropped on purpose") ||
		!strings.Contains(lines[0].Text, fmt.Sprintf("%s dropped as late", thousands(tb.NeverLate))) || lines[0].Tone != reports.Caution {
		t.Errorf("future clock: %+v", lines[0])
	}

	r = runCatalogue(t, "restamped-retries-within-watermark", 1)
	for _, l := range reports.HeadlineLines(r)[:3] {
		if l.Tone != reports.Good {
			t.Errorf("clean run: %+v", l)
		}
	}
	if l := reports.HeadlineLines(r)[3]; !strings.Contains(l.Text, "of headroom") || !strings.Contains(l.Text, "Largest gap still caught") {
		t.Errorf("clean run margin: %+v", l)
	}
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestReportJSONLeavesElapsedOut: the wall time reaches junit.xml only, so
// report.json stays byte-identical for a seed.
func TestReportJSONLeavesElapsedOut(t *testing.T) {
	r := runCatalogue(t, "replay-append-sink", 1)
	a, _ := reports.JSON(r)
	r.Elapsed = 1500 * time.Millisecond
	b, _ := reports.JSON(r)
	if !bytes.Equal(a, b) {
		t.Fatal("report.json depends on Elapsed")
	}
	j, err := reports.JUnit([]*result.Run{r})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(j, []byte(`time="1.500"`)) {
		t.Fatalf("junit.xml has no time:\n%s", j)
	}
}

// TestHeadlineColoursInChromium renders the report of a run whose table
// holds duplicates while its expectations are met in headless Chromium:
// the headline at the top of the page shows red and no green at all.
func TestHeadlineColoursInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is missing under CI=true")
		}
		t.Skip("chromium not installed (apt-get install chromium)")
	}
	r := runCatalogue(t, "restamped-retries-event-time-key", 1)
	dir := t.TempDir()
	page, err := reports.HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.html"), page, 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=900,400",
		"--screenshot="+shot, "file://"+filepath.Join(dir, "report.html"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	red, green := 0, 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if r > g+60 && r > bl+60 {
				red++
			}
			if g > r+40 && g > bl+20 {
				green++
			}
		}
	}
	if red < 500 || green > 0 {
		t.Fatalf("headline: %d red and %d green pixels; want red and no green", red, green)
	}
}

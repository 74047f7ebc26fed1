package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/analyze"
)

// TestAnalyze: `dedupsim analyze` on a payments-like trace with seed 000's
// ratios (0.4% of ids twice, 99.99% of copies within 40 minutes, a tail of
// hours) recommends a delay between 40 and 60 minutes, with a progress bar
// on stderr; bad lines fail with file:line: column (exit 2) unless
// --skip-bad.
func TestAnalyze(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()

	small := write(t, dir, "small.jsonl", `{"id":"a","ts":100}
{"id":"b","ts":"1970-01-01T00:01:40Z"}
{"id":"a","ts":160}
`)
	out, errOut, code := run(bin, "analyze", small)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"duplicate rate 33.33%", "recommended delay      1m 15s", `.withWatermark("ts", "1 minute 15 seconds")`,
		"dropDuplicatesWithinWatermark([id])", "p99.99"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if errOut != "" {
		t.Errorf("progress on a small file: %q", errOut)
	}

	// stdin, a composite key and JSON.
	cmd := exec.Command(bin, "analyze", "--json", "--key", "id, acct", "--percentile", "50", "--margin", "0", "-")
	cmd.Stdin = strings.NewReader("{\"id\":1,\"acct\":2,\"ts\":1}\n{\"id\":1,\"acct\":3,\"ts\":2}\n{\"id\":1,\"acct\":2,\"ts\":31}\n")
	var so bytes.Buffer
	cmd.Stdout = &so
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	var rep analyze.Report
	if err := json.Unmarshal(so.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.File != "-" || rep.DistinctKeys != 2 || rep.Recommendation == nil || rep.Recommendation.DelayMs != 30000 {
		t.Fatalf("stdin: %s", so.String())
	}

	bad := write(t, dir, "bad.jsonl", "{\"id\":\"a\",\"ts\":1}\n{\"id\":\"a\",\"ts\":\"soon\"}\n{\"ts\":3}\n")
	_, errOut, code = run(bin, "analyze", bad)
	if code != 2 || !strings.HasPrefix(errOut, "dedupsim: "+bad+":2: ts: ") {
		t.Fatalf("bad line: exit %d, %q", code, errOut)
	}
	out, errOut, code = run(bin, "analyze", "--skip-bad", bad)
	if code != 0 || !strings.Contains(out, "2 skipped") || !strings.Contains(out, bad+":3: id: missing") {
		t.Fatalf("--skip-bad: exit %d, %s%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"analyze", filepath.Join(dir, "absent.jsonl")},
		{"analyze", "--percentile", "0", small},
		{"analyze", "--margin", "-0.5", small},
		{"analyze", "--future-tolerance", "soon", small},
		{"analyze", "--key", ",", small},
		{"analyze"},
	} {
		if _, errOut, code := run(bin, args...); code != 2 {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}

	if testing.Short() {
		t.Skip("short: no 3-million-event trace")
	}
	path := filepath.Join(dir, "payments.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := analyze.Payments(3_000_000).Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, errOut, code = run(bin, "analyze", "--json", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	t.Logf("3 million events analysed in %v", time.Since(start).Round(time.Millisecond))
	rep = analyze.Report{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	rec := rep.Recommendation
	if rec == nil {
		t.Fatalf("no recommendation: %s", out)
	}
	if rec.DelayMs < (40*time.Minute).Milliseconds() || rec.DelayMs > time.Hour.Milliseconds() {
		t.Errorf("recommended delay %s, want 40 to 60 minutes", rec.Delay)
	}
	if rep.KeysWithCopiesRate < 0.0037 || rep.KeysWithCopiesRate > 0.0043 || rep.EventTimeGapMs.P9999 > 40*60e3 ||
		rep.EventTimeGapMs.Max < 2*3600e3 || rec.KeysNotCovered < 1 || len(rec.State) != 2 {
		t.Errorf("figures:\n%s", out)
	}
	if !strings.Contains(errOut, "analyze "+path) {
		t.Errorf("no progress bar on stderr: %q", errOut)
	}
}

// TestAnalyzeReplay: analyze replays the state curve at the recommended
// delay for a file (a second pass), at --delay for stdin, and says to give
// --delay when stdin has none; bad --delay and --trigger exit 2.
func TestAnalyzeReplay(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	// a and b at 100 s, a's copy at 160 s, c at 400 s: at a 1m 15s delay
	// (the recommendation) the watermark passes a's and b's first copies
	// by the end, not c's.
	small := write(t, dir, "small.jsonl", "{\"id\":\"a\",\"ts\":100}\n{\"id\":\"b\",\"ts\":100}\n{\"id\":\"a\",\"ts\":160}\n{\"id\":\"c\",\"ts\":400}\n")
	out, errOut, code := run(bin, "analyze", "--json", small)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep analyze.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	w := rep.State["dropDuplicatesWithinWatermark"]
	d := rep.State["dropDuplicates"]
	if rep.Replay == nil || rep.Replay.DelayMs != 75_000 || w == nil || d == nil {
		t.Fatalf("no replay at the recommended delay: %s", out)
	}
	// Batches (1m trigger of event time): [a@100 b@100] -> 2 keys; the
	// trigger at 120 s is empty (no-data batch: watermark 25 s evicts
	// nothing); [a@160] -> WithinWatermark 2, dropDuplicates 3; [c@400]
	// evicts with watermark 85 s: a and b (expiry 175 s) stay; the
	// trailing no-data batch (watermark 325 s) evicts all but c.
	if w.PeakKeys != 3 || w.EndKeys != 1 || d.PeakKeys != 4 || d.EndKeys != 1 {
		t.Errorf("state curve: within %+v, dropDuplicates %+v", w, d)
	}
	if rep.Replay.DelayBasis != "the recommended delay" {
		t.Errorf("delay basis %q", rep.Replay.DelayBasis)
	}

	cmd := exec.Command(bin, "analyze", "--quiet", "-")
	cmd.Stdin = strings.NewReader("{\"id\":\"a\",\"ts\":100}\n{\"id\":\"a\",\"ts\":160}\n")
	so, err := cmd.Output()
	if err != nil || !strings.Contains(string(so), "give --delay 1m 15s") {
		t.Errorf("stdin without --delay: %v %s", err, so)
	}
	cmd = exec.Command(bin, "analyze", "--quiet", "--delay", "1m", "--trigger", "10s", "-")
	cmd.Stdin = strings.NewReader("{\"id\":\"a\",\"ts\":100}\n{\"id\":\"a\",\"ts\":160}\n")
	if so, err = cmd.Output(); err != nil || !strings.Contains(string(so), "state replayed from the trace at delay 1m (--delay), one batch per 10s trigger") {
		t.Errorf("stdin with --delay: %v %s", err, so)
	}
	for _, args := range [][]string{
		{"analyze", "--delay", "-1m", small},
		{"analyze", "--delay", "soon", small},
		{"analyze", "--delay", "400d", small},
		{"analyze", "--trigger", "0s", small},
		{"analyze", "--trigger", "2d", small},
	} {
		if _, errOut, code := run(bin, args...); code != 2 || !strings.Contains(errOut, args[1]) {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}

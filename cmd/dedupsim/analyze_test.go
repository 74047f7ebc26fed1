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

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
	for _, want := range []string{"duplicate rate 33.33%", "recommended delay      1 minute 15 seconds", `.withWatermark("ts", "1 minute 15 seconds")`,
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
	if so, err = cmd.Output(); err != nil || !strings.Contains(string(so), "state replayed from the trace at delay 1 minute (--delay), one batch every 10 seconds of") {
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

// TestSizeStores is issue 26's size: bytes per key from Spark's layout per
// store (seed 000's payments: 50,000 keys/s, a 2 h delay,
// dropDuplicatesWithinWatermark, a 36-byte payment_id, 200 partitions),
// an on-disk figure never checked against the heap (--measure on Pebble,
// today's bug), a real progress log, --skew and --json.
func TestSizeStores(t *testing.T) {
	bin := binary(t)
	pay := []string{"size", "--rate", "50000", "--delay", "2h", "--partitions", "200", "--schema", "payment_id STRING(36)", "--executors", "20", "--executor-memory", "16g"}
	out, errOut, code := run(bin, append(pay, "--store", "hdfs")...)
	if code != 0 {
		t.Fatalf("hdfs: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"bytes per key      305.5 B, Spark's layout on the HDFS-backed store: key UnsafeRow 56 B",
		"memoryUsedBytes / numRowsTotal will show about 265 B", "total state        219.98 GB",
		"fits               no: 10.24 GiB of state per executor is 256.1%", "it fits with 67 executors"} {
		if !strings.Contains(out, want) {
			t.Errorf("hdfs: output lacks %q:\n%s", want, out)
		}
	}
	out, errOut, code = run(bin, append(pay, "--store", "rocksdb")...)
	if code != 0 {
		t.Fatalf("rocksdb: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"bytes per key      46.7 B, Spark's layout on RocksDB", "local disk         1.57 GiB per executor",
		"heap               not checked", "native memory      up to 1.33 GiB per executor unbounded: 10 state store instances", "maxMemoryUsageMB (500 MiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("rocksdb: output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "fits ") || strings.Contains(out, "heap budget") {
		t.Errorf("rocksdb: an on-disk figure was checked against the heap:\n%s", out)
	}

	// --measure on Pebble measures disk bytes: no heap check with them.
	out, errOut, code = run(bin, "size", "--rate", "20000", "--delay", "1h", "--partitions", "64", "--executors", "10", "--executor-memory", "8g", "--measure", "--store", "pebble")
	if code != 0 || !strings.Contains(out, "measured on dedupsim's Pebble store") || strings.Contains(out, "heap budget") || !strings.Contains(out, "heap               not checked") {
		t.Errorf("--measure pebble: exit %d: %s\n%s", code, errOut, out)
	}

	// A real Spark 4.1.1 progress log: its bytes per key, rate, partitions.
	prog := filepath.Join("..", "..", "diagnose", "testdata", "spark", "healthy-hdfs", "progress.json")
	out, errOut, code = run(bin, "size", "--from-progress", prog, "--delay", "10s", "--json")
	if code != 0 {
		t.Fatalf("--from-progress: exit %d: %s", code, errOut)
	}
	var got struct {
		RatePerSec  float64
		Partitions  int
		BytesPerKey struct {
			Value        float64
			Kind, Source string
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Partitions != 2 || got.RatePerSec != 2.29 || got.BytesPerKey.Kind != "heap" || got.BytesPerKey.Value < 300 || got.BytesPerKey.Value > 330 ||
		!strings.Contains(got.BytesPerKey.Source, "memoryUsedBytes / numRowsTotal") {
		t.Errorf("--from-progress: %+v\n%s", got, out)
	}
	if _, errOut, code := run(bin, "size", "--from-progress", prog, "--delay", "10s", "--store", "rocksdb"); code != 2 || !strings.Contains(errOut, "is of the hdfs store") {
		t.Errorf("--from-progress with another store: exit %d %s", code, errOut)
	}

	// --skew: the busiest executor holds the hot partition and 6 others at
	// the mean: (6 + 4) x 2.25 million keys.
	out, _, code = run(bin, "size", "--rate", "20000", "--delay", "1h", "--partitions", "64", "--executors", "10", "--executor-memory", "8g", "--skew", "4")
	if code != 0 || !strings.Contains(out, "the busiest partition 4 x the mean (--skew), 9,000,000 (9 million) keys): 22,500,000 (22.5 million) keys") {
		t.Errorf("--skew: exit %d:\n%s", code, out)
	}
}

// TestSizeFromCheckpoint: --from-checkpoint reads the skew and the
// partitions from a Spark 4.1.1 checkpoint's state (inspect's counts: 118
// and 122 keys), read only.
func TestSizeFromCheckpoint(t *testing.T) {
	bin := binary(t)
	ck := filepath.Join("..", "..", "diagnose", "testdata", "spark", "unbounded-hdfs", "checkpoint")
	out, errOut, code := run(bin, "size", "--rate", "1000", "--delay", "10s", "--from-checkpoint", ck, "--executors", "1", "--executor-memory", "1g")
	if code != 0 || !strings.Contains(out, "2 partitions, busiest 122 keys (partition 1), mean 120: skew 1.02") ||
		!strings.Contains(out, "per partition      10,000 keys, 1 MB (2 partitions)") || !strings.Contains(out, "the busiest partition 1.02 x the mean") {
		t.Errorf("exit %d: %s\n%s", code, errOut, out)
	}
	for _, args := range [][]string{
		{"size", "--rate", "1", "--delay", "1s", "--from-checkpoint", filepath.Join(t.TempDir(), "absent")},
		{"size", "--rate", "1", "--delay", "1s", "--from-checkpoint", ck, "--skew", "2"},
	} {
		if _, errOut, code := run(bin, args...); code != 2 || !strings.Contains(errOut, "size: ") {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
}

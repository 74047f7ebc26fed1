package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fixtures = "../../diagnose/testdata/spark"

// goodProgress is one valid StreamingQueryProgress line.
const goodProgress = `{"id":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0","runId":"11111111-2222-3333-4444-555555555555","timestamp":"2026-12-01T08:45:12.123Z","batchId":3,"numInputRows":5,"durationMs":{"addBatch":10},"stateOperators":[],"sources":[{"numInputRows":5}]}`

// TestDiagnoseInspectBadInput is the bad-input corpus of diagnose and
// inspect: unreadable inputs and flags out of range exit 2 with one line.
func TestDiagnoseInspectBadInput(t *testing.T) {
	d := func(args ...string) []string { return append([]string{"diagnose"}, args...) }
	in := func(args ...string) []string { return append([]string{"inspect"}, args...) }
	log := map[string]string{"p.jsonl": goodProgress + "\n"}
	bad := map[string]string{"p.jsonl": "{\"id\": oops\nnot json\n"}
	ckpt := map[string]string{"c/metadata": `{"id":"q"}`, "c/offsets/0": "v9\n{}"}
	cases := []badCase{
		{name: "diagnose no log", args: d(), code: 2, want: []string{"requires at least 1 arg(s)"}},
		{name: "diagnose missing log", args: d("$DIR/absent.jsonl"), code: 2, want: []string{"diagnose: $DIR/absent.jsonl", "no such file"}},
		{name: "diagnose empty folder", files: map[string]string{"sub/.hidden": "x"}, args: d("$DIR/sub"), code: 2, want: []string{"a folder with no event log in it"}},
		{name: "diagnose app without a folder", files: log, args: d("--app", "local-1", "$DIR/p.jsonl"), code: 2, want: []string{"--app picks one application of a spark.eventLog.dir folder"}},
		{name: "diagnose app unknown", files: log, args: d("--app", "local-1", "$DIR"), code: 2, want: []string{"--app local-1: no such application; the applications: p.jsonl"}},
		{name: "diagnose checkpoint not one", files: log, args: d("--checkpoint", "$DIR", "$DIR/p.jsonl"), code: 2, want: []string{"diagnose: --checkpoint: ", "not a Spark streaming checkpoint"}},
		{name: "diagnose only bad lines", files: bad, args: d("$DIR/p.jsonl"), code: 2, want: []string{"no StreamingQueryProgress record", "2 bad lines", "$DIR/p.jsonl:1"}},
		{name: "diagnose empty", files: map[string]string{"e.log": ""}, args: d("$DIR/e.log"), code: 2, want: []string{"no StreamingQueryProgress record"}},
		{name: "diagnose corrupt zstd", files: map[string]string{"a.zstd": "\x28\xb5\x2f\xfd\x01\x02\x03garbage"}, args: d("$DIR/a.zstd"), code: 2, want: []string{"diagnose: $DIR/a.zstd"}},
		{name: "diagnose corrupt lz4", files: map[string]string{"a.lz4": "LZ4Block\x25\x05\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00abcde"}, args: d("$DIR/a.lz4"), code: 2, want: []string{"corrupt stream: LZ4Block at byte 0"}},
		{name: "diagnose lzf", files: map[string]string{"a.lzf": "ZV\x00\x01x"}, args: d("$DIR/a.lzf"), code: 2, want: []string{"lzf codec is not supported"}},
		{name: "diagnose rolling gap", files: map[string]string{"eventlog_v2_x/events_2_x": goodProgress + "\n"}, args: d("$DIR/eventlog_v2_x"), code: 2, want: []string{"event log part 1 is missing"}},
		{name: "diagnose budget", files: log, args: d("--memory-budget", "lots", "$DIR/p.jsonl"), code: 2, want: []string{`--memory-budget "lots": want a size such as 512m`}},
		{name: "diagnose budget 0", files: log, args: d("--memory-budget", "0", "$DIR/p.jsonl"), code: 2, want: []string{"--memory-budget"}},
		{name: "diagnose tolerance", files: log, args: d("--future-tolerance", "0s", "$DIR/p.jsonl"), code: 2, want: []string{"--future-tolerance \"0s\": want a duration in [1s, 365d]"}},
		{name: "diagnose tolerance days", files: log, args: d("--future-tolerance", "400d", "$DIR/p.jsonl"), code: 2, want: []string{"[1s, 365d]"}},
		{name: "diagnose query missing", files: log, args: d("--query", "$DIR/q.yaml", "$DIR/p.jsonl"), code: 2, want: []string{"q.yaml"}},
		{name: "diagnose emit into folder", files: log, args: d("--emit-scenario", "$DIR", "$DIR/p.jsonl"), code: 2, want: []string{"--emit-scenario $DIR: not a regular file"}},
		{name: "diagnose flag typo", files: log, args: d("--memory-budgte", "1g", "$DIR/p.jsonl"), code: 2, want: []string{"unknown flag: --memory-budgte", "--memory-budget"}},
		{name: "inspect no arg", args: in(), code: 2, want: []string{"accepts 1 arg(s), received 0"}},
		{name: "inspect missing", args: in("$DIR/none"), code: 2, want: []string{"inspect: $DIR/none"}},
		{name: "inspect not a checkpoint", files: log, args: in("$DIR"), code: 2, want: []string{"not a Spark streaming checkpoint"}},
		{name: "inspect bad offsets", files: ckpt, args: in("$DIR/c"), code: 2, want: []string{"offsets/0: line 1: want v1"}},
		{name: "inspect bad metadata", files: map[string]string{"c/metadata": "[]"}, args: in("$DIR/c"), code: 2, want: []string{"metadata: want {\"id\""}},
	}
	n := badInputCorpus(t, cases)
	t.Logf("%d diagnose/inspect bad-input cases", n)
}

// The console of two real fixtures, the exit statuses, and the report files.
func TestDiagnoseFixtures(t *testing.T) {
	bin := binary(t)
	out, errOut, code := run(bin, "diagnose", fixtures+"/unbounded-hdfs/progress.jsonl", "--memory-budget", "1g")
	if code != 1 || !strings.Contains(out, "PROBLEM no-watermark") || !strings.Contains(out, "PROBLEM state-unbounded") ||
		!strings.Contains(out, "budget of 1.0 GiB is reached in") || !strings.Contains(errOut, "2 problems: unbounded_hdfs: no-watermark, state-unbounded") {
		t.Errorf("unbounded: exit %d\n%s\n%s", code, out, errOut)
	}
	dir := t.TempDir()
	ev, _ := filepath.Glob(fixtures + "/healthy-hdfs/eventlog/*")
	out, errOut, code = run(bin, "diagnose", ev[0], fixtures+"/healthy-rocksdb/driver.log", fixtures+"/healthy-hdfs/progress.json", "--out", dir, "--emit-scenario", filepath.Join(dir, "s.yaml"))
	if code != 0 || !strings.Contains(out, "verdict: healthy") || errOut != "" {
		t.Errorf("healthy: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, f := range []string{"report.html", "report.json", "junit.xml", "s.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	for _, w := range []string{"<svg", "numRowsTotal", "eventTime.watermark", "Batch duration"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	out, _, code = run(bin, "diagnose", "--json", fixtures+"/future-jump-rocksdb/progress.json")
	var rep struct {
		Problems int `json:"problems"`
	}
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || rep.Problems < 2 {
		t.Errorf("--json: exit %d, %d problems", code, rep.Problems)
	}
	out, _, code = run(bin, "inspect", "--json", fixtures+"/restamped-hdfs/checkpoint")
	var ins struct {
		Operators []struct {
			Keys                 int64 `json:"keys"`
			KeysWithSeveralTimes int   `json:"keysWithSeveralEventTimes"`
		} `json:"operators"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &ins) != nil || len(ins.Operators) != 1 || ins.Operators[0].KeysWithSeveralTimes == 0 {
		t.Errorf("inspect --json: exit %d %s", code, out)
	}
}

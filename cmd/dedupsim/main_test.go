package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden CLI outputs")

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds dedupsim once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dedupsim-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "dedupsim")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func run(bin string, args ...string) (stdout, stderr string, code int) {
	cmd := exec.Command(bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	return o.String(), e.String(), code
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExecWorkedExample pins the exact bytes `dedupsim exec` prints for
// exec-format.md's worked example (and is the same for every run).
func TestExecWorkedExample(t *testing.T) {
	bin := binary(t)
	ex := "../../examples/worked-example/"
	out, errOut, code := run(bin, "exec", "--query", ex+"query.yaml", "--input", ex+"steps.jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden := "testdata/worked-example.out.jsonl"
	if *update {
		os.WriteFile(golden, []byte(out), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Fatalf("output differs from %s (run with -update and read the diff):\n%s", golden, out)
	}
	again, _, _ := run(bin, "exec", "--query", ex+"query.yaml", "--input", ex+"steps.jsonl")
	if again != out {
		t.Fatal("two runs of the same input differ")
	}
}

// TestExecBadInput: every bad query or steps file exits 2 with one line on
// standard error naming the file, the line and the field.
func TestExecBadInput(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	good := "dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 1 second}\n"
	goodSteps := `{"rows": [{"id":"a","ts":1}]}` + "\n"
	tests := []struct {
		name, query, steps string
		want               []string // substrings of the one error line
	}{
		{"unknown field", good + "shuffle_partition: 3\n", goodSteps, []string{"query.yaml:3", "shuffle_partition", "shuffle_partitions"}},
		{"misspelt api", "dedup: {api: dropDuplicate, keys: [id]}\n", goodSteps, []string{"query.yaml:1", "dedup.api"}},
		{"negative delay", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: -5 seconds}\n", goodSteps, []string{"query.yaml:2", "should not be negative"}},
		{"within watermark without watermark", "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\n", goodSteps, []string{"query.yaml", "without watermark"}},
		{"wrong type", good + "shuffle_partitions: four\n", goodSteps, []string{"query.yaml:3", "shuffle_partitions"}},
		{"empty query", "", goodSteps, []string{"query.yaml"}},
		{"steps not json", good, "{\"rows\": [\n", []string{"steps.jsonl:1"}},
		// A key column that no row has (Spark cannot resolve it; one that
		// only some rows have is null in the others).
		{"missing key column", good, `{"rows": [{"ts":1}]}` + "\n", []string{"steps.jsonl", "UNRESOLVED_COLUMN", `"id"`}},
		{"bad event time", good, `{"rows": [{"id":"a","ts":"yesterday"}]}` + "\n", []string{"steps.jsonl:1", "ts"}},
		{"unknown crash point", good, goodSteps + `{"crash": "before-commit"}` + "\n", []string{"steps.jsonl:2", "before-commit"}},
		{"unknown step field", good, `{"rowz": []}` + "\n", []string{"steps.jsonl:1", "rowz"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := write(t, dir, "query.yaml", tc.query)
			s := write(t, dir, "steps.jsonl", tc.steps)
			_, errOut, code := run(bin, "exec", "--query", q, "--input", s)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr: %s", code, errOut)
			}
			if n := strings.Count(strings.TrimRight(errOut, "\n"), "\n"); n != 0 {
				t.Fatalf("want one line on stderr, got:\n%s", errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
}

// TestExecCheckpointResumeAndIncompatible: a second exec on the same
// checkpoint resumes; a key change is refused with Spark's error class and
// exit 2.
func TestExecCheckpointResumeAndIncompatible(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ckpt")
	q := write(t, dir, "q.yaml", "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: table, app_id: t1}\n")
	s1 := write(t, dir, "s1.jsonl", `{"rows": [{"id":"a"},{"id":"b"}]}`+"\n")
	out, errOut, code := run(bin, "exec", "--query", q, "--input", s1, "--checkpoint", ckpt)
	if code != 0 || !strings.Contains(out, `"batchId":0`) {
		t.Fatalf("first run: exit %d\n%s%s", code, out, errOut)
	}
	s2 := write(t, dir, "s2.jsonl", `{"rows": [{"id":"a"},{"id":"b"}]}`+"\n"+`{"rows": [{"id":"a"},{"id":"c"}]}`+"\n")
	out, errOut, code = run(bin, "exec", "--query", q, "--input", s2, "--checkpoint", ckpt)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"batchId":1`) || !strings.Contains(lines[0], `"rows":[{"id":"c"}]`) {
		t.Fatalf("resume should run only batch 1 emitting c:\n%s", out)
	}
	q2 := write(t, dir, "q2.yaml", "dedup: {api: dropDuplicates, keys: [id, other]}\n")
	s3 := write(t, dir, "s3.jsonl", `{"rows": [{"id":"a","other":1}]}`+"\n")
	_, errOut, code = run(bin, "exec", "--query", q2, "--input", s3, "--checkpoint", ckpt)
	if code != 2 || !strings.Contains(errOut, "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE") || !strings.Contains(errOut, "q2.yaml") {
		t.Fatalf("key change: exit %d, stderr %q", code, errOut)
	}
}

// TestSize: seed 000's worked example prints 720 million keys, 72 GB and
// 360 MB per partition with the formula and the store advice.
func TestSize(t *testing.T) {
	bin := binary(t)
	out, errOut, code := run(bin, "size", "--rate", "50000", "--delay", "2h", "--api", "dropDuplicatesWithinWatermark",
		"--partitions", "200", "--bytes-per-key", "100", "--memory", "64GB")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Each figure carries its derivation (the one "formula:" line that
	// repeated them all is gone).
	for _, want := range []string{"720 million", "72 GB", "360 MB", "= 50,000 keys/s x 4 hours", "2 x delay", "pebble"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, _, code := run(bin, "size", "--rate", "5", "--delay", "soon"); code != 2 {
		t.Fatalf("bad delay: exit %d", code)
	}
}

// TestRunReplayCheck: run a catalogue scenario, replay it byte for byte,
// and re-check the saved history.
func TestRunReplayCheck(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	// A passing run keeps its history only when asked (--keep-history);
	// replay always keeps it. Histories are gzip-compressed.
	out, errOut, code := run(bin, "run", "--keep-history", "--seed", "3", "--out", dir+"/a", "replay-append-sink")
	if code != 0 || !strings.Contains(out, "PASS replay-append-sink seed=3") {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	if _, _, code := run(bin, "replay", "--seed", "3", "--out", dir+"/b", "replay-append-sink"); code != 0 {
		t.Fatalf("replay exit %d", code)
	}
	for _, f := range []string{"report.json", "history.json.gz", "report.html"} {
		a, _ := os.ReadFile(filepath.Join(dir, "a", "replay-append-sink-3", f))
		b, _ := os.ReadFile(filepath.Join(dir, "b", "replay-append-sink-3", f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Fatalf("%s differs between run and replay", f)
		}
	}
	// check is given the history uncompressed here, so that this test does
	// not depend on check reading gzip.
	plain := gunzipTo(t, filepath.Join(dir, "a", "replay-append-sink-3", "history.json.gz"), filepath.Join(dir, "history.json"))
	out, _, code = run(bin, "check", plain)
	if code != 1 || !strings.Contains(out, "sink-replay-duplicate") {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	if _, _, code := run(bin, "check", filepath.Join(dir, "a", "replay-append-sink-3", "report.html")); code != 2 {
		t.Fatalf("check on a non-history: exit %d, want 2", code)
	}
	if _, errOut, code := run(bin, "run", "no-such-scenario"); code != 2 || !strings.Contains(errOut, "no-such-scenario") {
		t.Fatalf("unknown scenario: exit %d %s", code, errOut)
	}
	junit, err := os.ReadFile(filepath.Join(dir, "a", "junit.xml"))
	if err != nil || !strings.Contains(string(junit), `name="replay-append-sink/seed=3"`) {
		t.Fatalf("junit: %v\n%s", err, junit)
	}
}

// TestRunKafkaKfake: run --kafka kfake runs a scenario against an
// in-process Kafka, the engine as a child process, and checks it like a
// simulated run; bad --kafka settings and a scenario it cannot run are bad
// input (exit 2); a provider that cannot start says why (exit 1).
func TestRunKafkaKfake(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	out, errOut, code := run(bin, "run", "--kafka", "kfake", "--live-trigger", "100ms", "--keep-history", "--out", dir, "replay-append-sink")
	if code != 0 || !strings.Contains(out, "PASS replay-append-sink seed=1") || !strings.Contains(out, "sink-replay-duplicate") ||
		!strings.Contains(out, "Against Kafka (kfake), the engine as a child process") {
		t.Fatalf("run --kafka kfake: exit %d\n%s%s", code, out, errOut)
	}
	for _, f := range []string{"history.json.gz", "live/checkpoint/metadata", "live/records-000.jsonl", "live/engine-000.log"} {
		if _, err := os.Stat(filepath.Join(dir, "replay-append-sink-1", f)); err != nil {
			t.Error(err)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--kafka", "remote", "replay-append-sink"}, 2, "kfake, local, external or testcontainers"},
		{[]string{"--kafka", "external", "replay-append-sink"}, 2, "--bootstrap"},
		{[]string{"--kafka", "kfake", "--engine-mode", "thread", "replay-append-sink"}, 2, "process or inproc"},
		{[]string{"--kafka", "kfake", "--table-sink", "delta", "replay-append-sink"}, 2, "pebble or kafka"},
		{[]string{"--kafka", "kfake", "shape-change-fresh-checkpoint-merge"}, 2, "query-shape-change"},
		{[]string{"--kafka", "external", "--bootstrap", "127.0.0.1:1", "replay-append-sink"}, 1, "does not answer"},
	} {
		_, errOut, code := run(bin, append([]string{"run", "--out", dir}, tc.args...)...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("run %v: exit %d, want %d with %q:\n%s", tc.args, code, tc.code, tc.want, errOut)
		}
	}
	if os.Getenv("DOCKER_HOST") == "" {
		if _, err := os.Stat("/var/run/docker.sock"); err != nil {
			_, errOut, code := run(bin, "run", "--out", dir, "--kafka", "testcontainers", "replay-append-sink")
			if code != 1 || !strings.Contains(errOut, "no Docker engine") || !strings.Contains(errOut, "--kafka local") {
				t.Errorf("--kafka testcontainers without Docker: exit %d:\n%s", code, errOut)
			}
		}
	}
}

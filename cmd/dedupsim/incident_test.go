package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/shrink"
)

// TestShrinkCLI: shrink writes the pair, the regression test, the scenario
// and the story; the pair fails its regression test today (exit 1, with
// junit.xml and summary.md under --report) and passes once the query is
// fixed; replay --shrink writes the same bytes; bad input exits 2.
func TestShrinkCLI(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "min")
	stdout, stderr, code := run(bin, "shrink", "restamped-retries-event-time-key", "--seed", "1", "--out", out)
	if code != 0 {
		t.Fatalf("shrink: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, w := range []string{"the key holds the event time (ts)", "to 2 rows in 1 line", "exec pair: dedupsim exec --query " + filepath.Join(out, "query.yaml")} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout)
		}
	}
	files := map[string][]byte{}
	for _, f := range shrink.Files {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = b
	}
	q, st, ex := filepath.Join(out, "query.yaml"), filepath.Join(out, "steps.jsonl"), filepath.Join(out, "expected.jsonl")
	rep := filepath.Join(dir, "report")
	step := filepath.Join(dir, "step.md")
	_, stderr, code = runEnv([]string{"GITHUB_STEP_SUMMARY=" + step}, bin, "exec", "--query", q, "--input", st, "--check", ex, "--report", rep, "--out", os.DevNull)
	if code != 1 || !strings.Contains(stderr, `unique [id] (`+ex+`:3): 1 value(s) more than once in the table: "e0-77" (2 rows)`) {
		t.Fatalf("the regression test today: exit %d\n%s", code, stderr)
	}
	ju, _ := os.ReadFile(filepath.Join(rep, "junit.xml"))
	md, _ := os.ReadFile(filepath.Join(rep, "summary.md"))
	sum, _ := os.ReadFile(step)
	if !strings.Contains(string(ju), `tests="1" failures="1"`) || !strings.Contains(string(md), "**FAIL**: 1 of 1 expectations not met") || string(sum) != string(md)+"\n" {
		t.Errorf("report:\n%s\n%s\nstep summary:\n%s", ju, md, sum)
	}
	// The fix: dropDuplicatesWithinWatermark on the id.
	fixed := strings.Replace(string(files["query.yaml"]), "dedup: {api: dropDuplicates, keys: [id, ts]}", "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}", 1)
	fq := write(t, dir, "fixed.yaml", fixed)
	_, stderr, code = run(bin, "exec", "--query", fq, "--input", st, "--check", ex, "--report", rep, "--out", os.DevNull)
	md, _ = os.ReadFile(filepath.Join(rep, "summary.md"))
	if code != 0 || !strings.Contains(string(md), "**PASS**: 1 of 1 expectations met") {
		t.Errorf("after the fix: exit %d\n%s\n%s", code, stderr, md)
	}
	// replay --shrink: the same files.
	again := filepath.Join(dir, "again")
	stdout, stderr, code = run(bin, "replay", "--seed", "1", "--out", filepath.Join(dir, "r"), "--shrink", again, "restamped-retries-event-time-key")
	if code != 0 {
		t.Fatalf("replay --shrink: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, f := range shrink.Files {
		b, _ := os.ReadFile(filepath.Join(again, f))
		if string(b) != string(files[f]) {
			t.Errorf("replay --shrink %s differs from shrink's:\n%s\n%s", f, b, files[f])
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"shrink", "restamped-retries-event-time-key", "--out", out}, "--seed is required"},
		{[]string{"shrink", "restamped-retries-event-time-key", "--seed", "1"}, "--out is required"},
		{[]string{"shrink", "restamped-retries-event-time-key", "--seed", "1", "--out", out, "--budget", "0"}, "--budget 0: want 1 to 1000000 runs"},
		{[]string{"shrink", "restamped-retries-event-time-key", "--seed", "1", "--out", out, "--finding", "late-dropped"}, `--finding "late-dropped": want one of table-duplicate, sink-replay-duplicate`},
		{[]string{"shrink", "replay-table-stable-app-id", "--seed", "1", "--out", out}, "nothing to shrink: seed 1 of replay-table-stable-app-id has no table-duplicate"},
		{[]string{"shrink", "restamped-retries-event-time-key", "--seed", "1", "--out", q}, "not a folder"},
		{[]string{"exec", "--query", q, "--input", st, "--report", rep}, "--report writes the result of --check"},
	} {
		_, stderr, code := run(bin, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want 2 and %q on one line", tc.args, code, stderr, tc.want)
		}
	}
}

// TestIncidentRecipe runs the README's incident recipe, its four lines as
// written, on a spark.eventLog.dir of Spark 4.1.1's event logs and the
// re-stamped-retries query's checkpoint: diagnose finds the table
// duplicate and fits a scenario, run reproduces it, shrink writes the
// smallest pair, and its regression test fails until the query is fixed.
func TestIncidentRecipe(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(b), "<!-- incident-recipe:")
	if !ok {
		t.Fatal("README.md has no incident recipe")
	}
	_, block, _ = strings.Cut(block, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	lines := strings.Split(strings.TrimSpace(block), "\n")
	if len(lines) != 4 {
		t.Fatalf("the recipe has %d commands, want 4:\n%s", len(lines), block)
	}
	bin := binary(t)
	fix, _ := filepath.Abs(fixtures)
	work := t.TempDir()
	sub := strings.NewReplacer("bin/dedupsim ", "", "/var/log/spark-events", eventLogDir(t, fix), "/checkpoints/payments", fix+"/restamped-hdfs/checkpoint")
	want := []int{1, 0, 0, 1}
	for i, l := range lines {
		args := strings.Fields(sub.Replace(l))
		c := exec.Command(bin, args...)
		c.Dir = work
		out, err := c.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != want[i] {
			t.Fatalf("%s: exit %d, want %d\n%s", l, code, want[i], out)
		}
		switch i {
		case 0:
			if !strings.Contains(string(out), "PROBLEM table-duplicate") || !strings.Contains(string(out), "for example: r") {
				t.Errorf("diagnose:\n%s", out)
			}
		case 2:
			if !strings.Contains(string(out), "to 2 rows in 1 line") {
				t.Errorf("shrink:\n%s", out)
			}
		case 3:
			if !strings.Contains(string(out), `unique [id]`) {
				t.Errorf("the regression test:\n%s", out)
			}
		}
	}
	// The fix, then the same check passes.
	q := filepath.Join(work, "incident", "query.yaml")
	qb, _ := os.ReadFile(q)
	fixed := strings.Replace(string(qb), "dedup: {api: dropDuplicates, keys: [id, ts]}", "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}", 1)
	if fixed == string(qb) {
		t.Fatalf("query.yaml:\n%s", qb)
	}
	os.WriteFile(q, []byte(fixed), 0o644)
	args := strings.Fields(sub.Replace(lines[3]))
	c := exec.Command(bin, args...)
	c.Dir = work
	if out, err := c.CombinedOutput(); err != nil {
		t.Errorf("after the fix: %v\n%s", err, out)
	}
}

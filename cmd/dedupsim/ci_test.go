package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/sweep"
)

// Tests of dedupsim in a user's CI (issue 11.6) and of what it writes
// (issue 10.11, 10.12, 10.16). Histories are gzip-compressed; until check
// reads gzip itself, these tests gunzip a history before checking it.

// gunzipTo decompresses src into dst and returns dst.
func gunzipTo(t *testing.T, src, dst string) string {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// runEnv is run with extra environment variables.
func runEnv(env []string, bin string, args ...string) (stdout, stderr string, code int) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
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

// readTree maps every file below dir (slash paths) to its content.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// scenarioText is the catalogue's replay-append-sink under another name,
// with other expectations and, when short, a 5+5 s run.
func scenarioText(t *testing.T, name, expect string, short bool) string {
	t.Helper()
	raw, err := os.ReadFile("../../scenarios/catalogue/replay-append-sink.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(raw), "name: replay-append-sink\n", "name: "+name+"\n", 1)
	if short {
		s = strings.Replace(strings.Replace(s, "fault_phase: 2m\n", "fault_phase: 5s\n", 1), "heal_phase: 1m\n", "heal_phase: 5s\n", 1)
	}
	if expect != "" {
		s = s[:strings.Index(s, "expect:\n")] + expect
	}
	return s
}

var (
	junitTime   = regexp.MustCompile(` time="[^"]*"`)
	elapsedJSON = regexp.MustCompile(`"elapsedMs": [-0-9.e+]+`)
)

// TestSweepSameBytesForEveryJ: a sweep of 2 scenarios x 3 seeds writes the
// same bytes with -j 1 and -j 2: every report folder (report.json,
// report.html, summary.md, history.json.gz), index.html and summary.md;
// junit.xml and shard.json differ only in the runs' wall times. report.json
// carries the dedupsim version line, the same for every run of one binary.
// Every run's wall time is set (shard.json's elapsedMs, junit.xml's time).
func TestSweepSameBytesForEveryJ(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	trees := map[string]map[string][]byte{}
	for _, j := range []string{"1", "2"} {
		out := filepath.Join(dir, "j"+j)
		stdout, errOut, code := run(bin, "sweep", "replay-append-sink", "restamped-retries-within-watermark", "--seeds", "3",
			"--keep-history", "-q", "-j", j, "--out", out)
		if code != 0 {
			t.Fatalf("-j %s: exit %d\n%s%s", j, code, stdout, errOut)
		}
		for _, s := range []string{"replay-append-sink", "restamped-retries-within-watermark"} {
			if !strings.Contains(stdout, s+": 3 of 3 seeds met their expectations") {
				t.Fatalf("-j %s: stdout lacks %s's line:\n%s", j, s, stdout)
			}
		}
		trees[j] = readTree(t, out)
	}
	a, b := trees["1"], trees["2"]
	if len(a) != 2*3*4+4 {
		t.Errorf("%d files, want 6 runs x 4 and index.html, summary.md, junit.xml, shard.json", len(a))
	}
	for name, x := range a {
		y, ok := b[name]
		switch {
		case !ok:
			t.Errorf("%s: written with -j 1 only", name)
		case name == "junit.xml":
			x, y = junitTime.ReplaceAll(x, nil), junitTime.ReplaceAll(y, nil)
		case name == "shard.json":
			x, y = elapsedJSON.ReplaceAll(x, nil), elapsedJSON.ReplaceAll(y, nil)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between -j 1 and -j 2", name)
		}
	}
	version, _, _ := run(bin, "--version")
	version = strings.TrimPrefix(strings.TrimSpace(version), "dedupsim ")
	var rep struct{ Version string }
	if err := json.Unmarshal(a["replay-append-sink-2/report.json"], &rep); err != nil || rep.Version == "" || rep.Version != version {
		t.Errorf("report.json version %q, want the binary's %q (%v)", rep.Version, version, err)
	}
	var m sweep.Manifest
	if err := json.Unmarshal(a["shard.json"], &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Runs) != 6 || m.Runs[0].Scenario != "replay-append-sink" || m.Runs[0].Seed != 1 || m.Runs[5].Seed != 3 {
		t.Fatalf("shard.json runs not in job order: %+v", m.Runs)
	}
	for _, r := range m.Runs {
		if r.ElapsedMs <= 0 {
			t.Errorf("%s: elapsedMs %v: Run.Elapsed not set", r.Dir, r.ElapsedMs)
		}
	}
	if !bytes.Contains(a["junit.xml"], []byte(`name="restamped-retries-within-watermark/seed=3"`)) {
		t.Errorf("junit.xml lacks a run:\n%s", a["junit.xml"])
	}
}

// TestRunFolder: run DIR runs every scenario file below DIR and writes
// junit.xml and index.html over them.
func TestRunFolder(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	suite := filepath.Join(dir, "suite")
	for _, p := range []string{"suite/a.yaml", "suite/nested/b.yml"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		write(t, dir, p, scenarioText(t, "copy-"+name, "", false))
	}
	out := filepath.Join(dir, "out")
	stdout, errOut, code := run(bin, "run", "-q", "--out", out, suite, "../../scenarios/incidents")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, errOut)
	}
	junit, _ := os.ReadFile(filepath.Join(out, "junit.xml"))
	for _, name := range []string{"copy-a/seed=1", "copy-b/seed=1", "inc-2026-03-02-future-clock/seed=1"} {
		if !bytes.Contains(junit, []byte(`name="`+name+`"`)) {
			t.Errorf("junit.xml lacks %s", name)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "index.html")); err != nil {
		t.Error(err)
	}
	if !strings.Contains(stdout, "copy-a") || !strings.Contains(stdout, "inc-2026-03-02-future-clock") {
		t.Errorf("the table lacks a scenario:\n%s", stdout)
	}
}

// TestProgressOffTerminal: with standard error not a terminal (a CI log)
// progress is plain lines, never a carriage return; --quiet prints none.
func TestProgressOffTerminal(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		verb  []string
		total string
	}{{[]string{"sweep", "--seeds", "3"}, "3"}, {[]string{"run"}, "1"}} {
		verb := tc.verb
		args := append(verb, "--progress-interval", "1ms", "-j", "1", "--out", filepath.Join(dir, verb[0]), "replay-append-sink")
		_, errOut, code := run(bin, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if strings.Contains(errOut, "\r") {
			t.Errorf("%s wrote a carriage return to a non-terminal stderr: %q", verb[0], errOut)
		}
		last := "dedupsim " + verb[0] + ": " + tc.total + " of " + tc.total + " runs done, 0 failed"
		if !strings.Contains(errOut, last) {
			t.Errorf("%s: stderr lacks %q:\n%s", verb[0], last, errOut)
		}
		for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
			if !strings.HasPrefix(line, "dedupsim "+verb[0]+": ") {
				t.Errorf("%s: a stderr line that is not progress: %q", verb[0], line)
			}
		}
		_, errOut, _ = run(bin, append(args, "--quiet")...)
		if errOut != "" {
			t.Errorf("%s --quiet wrote to stderr: %q", verb[0], errOut)
		}
	}
}

// TestHistoryOnlyForFailingRuns: a run that misses its expectations keeps
// history.json.gz, a passing one keeps none unless --keep-history, and a
// history an earlier run left in the folder goes. The replay command of a
// failure is shell-quoted.
func TestHistoryOnlyForFailingRuns(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	odd := "it's $(touch PWNED).yaml"
	failing := write(t, dir, odd, scenarioText(t, "flaky", "expect:\n  exactly_once: true\n", false))
	out := filepath.Join(dir, "out")
	stdout, errOut, code := run(bin, "sweep", "-q", "--seeds", "2", "--out", out, failing, "replay-append-sink")
	if code != 1 || !strings.Contains(errOut, "2 of 4 runs did not meet their expectations: flaky (seed 1), flaky (seed 2)") {
		t.Fatalf("exit %d\n%s%s", code, stdout, errOut)
	}
	if want := "replay: dedupsim replay --seed 1 '" + dir + `/it'"'"'s $(touch PWNED).yaml'`; !strings.Contains(stdout, want) {
		t.Errorf("stdout lacks the quoted replay command %q:\n%s", want, stdout)
	}
	exists := func(p string) bool { _, err := os.Lstat(filepath.Join(out, p)); return err == nil }
	for p, want := range map[string]bool{
		"flaky-1/history.json.gz": true, "flaky-2/history.json.gz": true,
		"replay-append-sink-1/history.json.gz": false, "replay-append-sink-2/history.json.gz": false,
		"flaky-1/history.json": false,
	} {
		if exists(p) != want {
			t.Errorf("%s exists: %v, want %v", p, !want, want)
		}
	}
	// The history is the run's: check finds the catalogue's violation in it.
	plain := gunzipTo(t, filepath.Join(out, "flaky-1", "history.json.gz"), filepath.Join(dir, "flaky-1.json"))
	if stdout, _, code := run(bin, "check", plain); code != 1 || !strings.Contains(stdout, "sink-replay-duplicate") {
		t.Errorf("check of the kept history: exit %d\n%s", code, stdout)
	}
	// The same scenario, now expected to fail as it does: its old
	// histories go (and an uncompressed one from an older version too).
	write(t, dir, odd, scenarioText(t, "flaky", "expect:\n  exactly_once: false\n", false))
	write(t, out, "flaky-1/history.json", "{}")
	if stdout, errOut, code := run(bin, "sweep", "-q", "--seeds", "2", "--out", out, failing); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, errOut)
	}
	for _, p := range []string{"flaky-1/history.json.gz", "flaky-2/history.json.gz", "flaky-1/history.json"} {
		if exists(p) {
			t.Errorf("%s left over from an earlier run", p)
		}
	}
	if _, _, code := run(bin, "sweep", "-q", "--seeds", "2", "--keep-history", "--out", out, failing); code != 0 || !exists("flaky-2/history.json.gz") {
		t.Errorf("--keep-history: exit %d, history kept: %v", code, exists("flaky-2/history.json.gz"))
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Fatal("a command in the file name ran")
	}
}

// TestStepSummary: with GITHUB_STEP_SUMMARY set, run, sweep and replay
// append summary.md to it after what it held.
func TestStepSummary(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	step := write(t, dir, "step.md", "# earlier step\n")
	env := []string{"GITHUB_STEP_SUMMARY=" + step}
	want := "# earlier step\n"
	for _, args := range [][]string{
		{"run", "-q", "--out", filepath.Join(dir, "run"), "replay-append-sink"},
		{"sweep", "-q", "--seeds", "2", "--out", filepath.Join(dir, "sweep"), "replay-append-sink"},
		{"replay", "--seed", "2", "--out", filepath.Join(dir, "replay"), "replay-append-sink"},
	} {
		if _, errOut, code := runEnv(env, bin, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		md, err := os.ReadFile(filepath.Join(args[len(args)-2], "summary.md"))
		if err != nil {
			t.Fatal(err)
		}
		want += string(md) + "\n"
	}
	got, _ := os.ReadFile(step)
	if string(got) != want {
		t.Fatalf("step summary:\n%s\nwant:\n%s", got, want)
	}
	if _, _, code := runEnv(nil, bin, "run", "-q", "--out", filepath.Join(dir, "again"), "replay-append-sink"); code != 0 {
		t.Fatal(code)
	}
	if again, _ := os.ReadFile(step); !bytes.Equal(again, got) {
		t.Fatal("appended without GITHUB_STEP_SUMMARY")
	}
}

// TestMergeShards: three shards merge into the index.html, junit.xml and
// summary.md of one unsharded sweep; a missing shard, missing seeds and
// faults that never fired in any shard fail (exit 1); shards of different
// sweeps, a shard given twice and merging into a shard's folder are bad
// input (exit 2).
func TestMergeShards(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	sc := write(t, dir, "short.yaml", scenarioText(t, "short", "", false))
	sweepTo := func(out string, extra ...string) {
		t.Helper()
		args := append([]string{"sweep", "-q", "--seeds", "5", "--out", filepath.Join(dir, out), sc}, extra...)
		if stdout, errOut, code := run(bin, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, stdout, errOut)
		}
	}
	sweepTo("whole")
	for i := range 3 {
		sweepTo("s"+strconv.Itoa(i), "--shard", strconv.Itoa(i)+"/3")
	}
	step := write(t, dir, "step.md", "")
	merged := filepath.Join(dir, "merged")
	shards := []string{filepath.Join(dir, "s2"), filepath.Join(dir, "s0"), filepath.Join(dir, "s1")}
	stdout, errOut, code := runEnv([]string{"GITHUB_STEP_SUMMARY=" + step}, bin, append([]string{"merge", "--out", merged}, shards...)...)
	if code != 0 || !strings.Contains(stdout, "merged 3 of 3 shards: 5 of 5 runs met their expectations") {
		t.Fatalf("merge: exit %d\n%s%s", code, stdout, errOut)
	}
	whole := readTree(t, filepath.Join(dir, "whole"))
	for _, f := range []string{"summary.md", "junit.xml"} {
		got, _ := os.ReadFile(filepath.Join(merged, f))
		want := whole[f]
		if f == "junit.xml" {
			got, want = junitTime.ReplaceAll(got, nil), junitTime.ReplaceAll(want, nil)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("merged %s differs from the unsharded sweep's:\n%s\nwant:\n%s", f, got, want)
		}
	}
	if md, _ := os.ReadFile(step); !bytes.Equal(md, append(whole["summary.md"], '\n')) {
		t.Errorf("step summary:\n%s", md)
	}
	index, _ := os.ReadFile(filepath.Join(merged, "index.html"))
	links := regexp.MustCompile(`href="([^"]+)"`).FindAllSubmatch(index, -1)
	if len(links) != 5 {
		t.Fatalf("index.html has %d links, want 5:\n%s", len(links), index)
	}
	for _, l := range links {
		if _, err := os.Stat(filepath.Join(merged, filepath.FromSlash(string(l[1])))); err != nil {
			t.Errorf("index.html link %s: %v", l[1], err)
		}
	}

	fails := func(code int, want string, args ...string) {
		t.Helper()
		_, errOut, got := run(bin, append([]string{"merge", "--out", merged}, args...)...)
		if got != code || !strings.Contains(errOut, want) {
			t.Errorf("merge %v: exit %d, want %d with %q:\n%s", args, got, code, want, errOut)
		}
	}
	fails(1, "shards missing: 1/3", shards[0], shards[1])
	fails(2, "shard 0/3 given twice", shards[0], shards[1], shards[2], shards[1])
	_, _, code = run(bin, "merge", "--out", shards[0], shards[0], shards[1], shards[2])
	if code != 2 {
		t.Errorf("merging into a shard's folder: exit %d, want 2", code)
	}
	sweepTo("other", "--shard", "1/3", "--first-seed", "2")
	fails(2, "are not shards of one sweep: seeds 1+5 and 2+5", shards[0], shards[1], filepath.Join(dir, "other"))
	// A report folder gone (an artifact cut short), and a run gone from
	// the manifest.
	if err := os.RemoveAll(filepath.Join(dir, "s1", "short-2")); err != nil {
		t.Fatal(err)
	}
	fails(1, "the report folder short-2 is missing", shards...)
	sweepTo("s1", "--shard", "1/3")
	raw, _ := os.ReadFile(filepath.Join(dir, "s0", "shard.json"))
	var m sweep.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m.Runs = m.Runs[1:] // seed 1 of 1, 4
	cut, _ := json.Marshal(m)
	write(t, dir, "s0/shard.json", string(cut))
	fails(1, "short: 1 of 2 seeds missing, the first 1", shards...)
	if err := os.Remove(filepath.Join(dir, "s0", "shard.json")); err != nil {
		t.Fatal(err)
	}
	fails(1, "has no shard.json", shards...)

	// Coverage is judged over every shard: a fault that fires in no seed
	// passes each shard (swarm runs do not require it per seed) but fails
	// the merge, as it fails an unsharded sweep.
	rare := write(t, dir, "rare.yaml", strings.Replace(scenarioText(t, "rare", "expect:\n  findings:\n    lost: absent\n", true), "rate: 0.1}", "rate: 0.005}", 1))
	var rareShards []string
	for i := range 2 {
		out := filepath.Join(dir, "rare"+strconv.Itoa(i))
		stdout, errOut, code := run(bin, "sweep", "-q", "--swarm", "--seeds", "4", "--shard", strconv.Itoa(i)+"/2", "--out", out, rare)
		if code != 0 || !strings.Contains(stdout, "faults that never fired in this shard: crash-after-sink-write (merge judges coverage over every shard)") {
			t.Fatalf("rare shard %d: exit %d\n%s%s", i, code, stdout, errOut)
		}
		rareShards = append(rareShards, out)
	}
	fails(1, "rare: faults never fired in any seed of any shard: crash-after-sink-write", rareShards...)
	if _, errOut, code := run(bin, "sweep", "-q", "--swarm", "--seeds", "4", "--out", filepath.Join(dir, "rare-whole"), rare); code != 1 ||
		!strings.Contains(errOut, "faults never fired in this sweep: rare: crash-after-sink-write") {
		t.Errorf("unsharded rare sweep: exit %d: %s", code, errOut)
	}
}

// TestShardAuto: --shard auto takes the shard from the environment of a
// GitHub Actions matrix (DEDUPSIM_SHARD_INDEX, DEDUPSIM_SHARD_COUNT) or a
// Kubernetes Indexed Job (JOB_COMPLETION_INDEX with DEDUPSIM_SHARD_COUNT),
// and refuses what does not add up.
func TestShardAuto(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	clean := []string{"DEDUPSIM_SHARD_INDEX=", "DEDUPSIM_SHARD_COUNT=", "JOB_COMPLETION_INDEX="}
	for i, tc := range []struct {
		env       []string
		shard, of int
	}{
		{[]string{"DEDUPSIM_SHARD_INDEX=1", "DEDUPSIM_SHARD_COUNT=3"}, 1, 3},
		{[]string{"JOB_COMPLETION_INDEX=2", "DEDUPSIM_SHARD_COUNT=3"}, 2, 3},
		{[]string{"JOB_COMPLETION_INDEX=0", "DEDUPSIM_SHARD_INDEX=0", "DEDUPSIM_SHARD_COUNT=1"}, 0, 1},
	} {
		out := filepath.Join(dir, strconv.Itoa(i))
		_, errOut, code := runEnv(append(clean, tc.env...), bin, "sweep", "-q", "--seeds", "3", "--shard", "auto", "--out", out, "replay-append-sink")
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.env, code, errOut)
		}
		raw, _ := os.ReadFile(filepath.Join(out, "shard.json"))
		var m sweep.Manifest
		if err := json.Unmarshal(raw, &m); err != nil || m.Shard != tc.shard || m.Shards != tc.of {
			t.Errorf("%v: shard %d/%d (%v), want %d/%d", tc.env, m.Shard, m.Shards, err, tc.shard, tc.of)
		}
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "--shard auto: set DEDUPSIM_SHARD_INDEX and DEDUPSIM_SHARD_COUNT"},
		{[]string{"DEDUPSIM_SHARD_INDEX=1"}, "DEDUPSIM_SHARD_COUNT (the number of shards"},
		{[]string{"JOB_COMPLETION_INDEX=1"}, "DEDUPSIM_SHARD_COUNT (the number of shards"},
		{[]string{"DEDUPSIM_SHARD_COUNT=3"}, "DEDUPSIM_SHARD_COUNT=3 is set but neither DEDUPSIM_SHARD_INDEX nor JOB_COMPLETION_INDEX"},
		{[]string{"DEDUPSIM_SHARD_INDEX=3", "DEDUPSIM_SHARD_COUNT=3"}, "shard index 3 is not below DEDUPSIM_SHARD_COUNT=3"},
		{[]string{"DEDUPSIM_SHARD_INDEX=1", "JOB_COMPLETION_INDEX=2", "DEDUPSIM_SHARD_COUNT=3"}, "DEDUPSIM_SHARD_INDEX=1 and JOB_COMPLETION_INDEX=2 disagree"},
		{[]string{"DEDUPSIM_SHARD_INDEX=one", "DEDUPSIM_SHARD_COUNT=3"}, `DEDUPSIM_SHARD_INDEX="one": want a whole number in [0, 99999]`},
		{[]string{"DEDUPSIM_SHARD_INDEX=0", "DEDUPSIM_SHARD_COUNT=0"}, `DEDUPSIM_SHARD_COUNT="0": want a whole number in [1, 100000]`},
		{[]string{"DEDUPSIM_SHARD_INDEX=-1", "DEDUPSIM_SHARD_COUNT=2"}, `DEDUPSIM_SHARD_INDEX="-1"`},
		{[]string{"DEDUPSIM_SHARD_INDEX=0", "DEDUPSIM_SHARD_COUNT=4"}, "4 shards of 3 seeds"},
	} {
		_, errOut, code := runEnv(append(clean, tc.env...), bin, "sweep", "--seeds", "3", "--shard", "auto", "--out", dir, "replay-append-sink")
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", tc.env, code, tc.want, errOut)
		}
	}
}

// TestSeedsStream: --seeds 2^64-1 starts at once in bounded memory (the
// seed list is never built), and the largest seed runs.
func TestSeedsStream(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "sweep", "-q", "-j", "1", "--seeds", "18446744073709551615", "--out", dir, "replay-append-sink")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Wait for the second seed's report (a liveness check with a generous
	// deadline, not a timing assertion).
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(dir, "replay-append-sink-2", "report.json")); err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the sweep ended: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no report after 3 minutes")
		}
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if err == nil {
		if m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status); m != nil {
			if kb, _ := strconv.Atoi(string(m[1])); kb > 1<<20 {
				t.Errorf("peak RSS %d MB after two seeds", kb>>10)
			}
		}
	}
	cmd.Process.Kill()
	<-exited
	out := filepath.Join(t.TempDir(), "last")
	if _, errOut, code := run(bin, "sweep", "-q", "--first-seed", "18446744073709551615", "--seeds", "1", "--out", out, "replay-append-sink"); code != 0 {
		t.Fatalf("the largest seed: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(out, "replay-append-sink-18446744073709551615", "report.json")); err != nil {
		t.Fatal(err)
	}
}

// TestOutputNeverThroughLinks: a link planted at OUT/summary.md or at a
// run folder is refused (exit 2) and its target left alone (issue 10.12).
func TestOutputNeverThroughLinks(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	victim := write(t, dir, "victim", "precious")
	victimDir := filepath.Join(dir, "victim-dir")
	if err := os.Mkdir(victimDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		link, target string
		args         []string
	}{
		{"summary.md", victim, []string{"run", "-q"}},
		{"junit.xml", victim, []string{"sweep", "-q", "--seeds", "1"}},
		{"replay-append-sink-1", victimDir, []string{"sweep", "-q", "--seeds", "1"}},
		{"replay-append-sink-1", victimDir, []string{"run", "-q", "--kafka", "kfake"}}, // live runs clear live/ in the run folder
		{"replay-append-sink-1", victimDir, []string{"replay", "--seed", "1"}},
	} {
		out := filepath.Join(t.TempDir(), "out")
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(tc.target, filepath.Join(out, tc.link)); err != nil {
			t.Fatal(err)
		}
		write(t, victimDir, "live", "keep me")
		_, errOut, code := run(bin, append(tc.args, "--out", out, "replay-append-sink")...)
		if code != 2 || !strings.Contains(errOut, tc.link+" is a symbolic link") {
			t.Errorf("%v with %s linked: exit %d: %s", tc.args, tc.link, code, errOut)
		}
		if b, _ := os.ReadFile(victim); string(b) != "precious" {
			t.Fatalf("%v: the link's target was written", tc.args)
		}
		if entries, _ := os.ReadDir(victimDir); len(entries) != 1 {
			t.Fatalf("%v: the linked folder holds %d entries", tc.args, len(entries))
		}
	}
}

// TestReportModes: report files are 0644 and folders 0755 less the umask.
func TestReportModes(t *testing.T) {
	bin := binary(t)
	for _, tc := range []struct {
		umask     int
		file, dir fs.FileMode
	}{{0o022, 0o644, 0o755}, {0o027, 0o640, 0o750}} {
		out := filepath.Join(t.TempDir(), "out")
		old := syscall.Umask(tc.umask)
		_, errOut, code := run(bin, "sweep", "-q", "--seeds", "1", "--keep-history", "--out", out, "replay-append-sink")
		syscall.Umask(old)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var seen []string
		filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, _ := d.Info()
			want := tc.file
			if d.IsDir() {
				want = tc.dir
			}
			if fi.Mode().Perm() != want {
				t.Errorf("umask %03o: %s is %v, want %v", tc.umask, p, fi.Mode().Perm(), want)
			}
			seen = append(seen, d.Name())
			return nil
		})
		sort.Strings(seen)
		if len(seen) != 10 {
			t.Errorf("files %q", seen)
		}
	}
}

// TestVersion: version and --version print the module version (and the
// commit when the build recorded one); every report carries that line.
func TestVersion(t *testing.T) {
	bin := binary(t)
	out, errOut, code := run(bin, "version")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "dedupsim ") || !strings.HasPrefix(lines[1], "module   github.com/dedupsim/dedupsim ") ||
		!strings.HasPrefix(lines[2], "commit   ") || !strings.HasPrefix(lines[3], "go       go1.") || !strings.HasPrefix(lines[4], "pin      ") {
		t.Fatalf("version:\n%s", out)
	}
	if m := regexp.MustCompile(`^commit   ([0-9a-f]+)`).FindStringSubmatch(lines[2]); m != nil && len(m[1]) != 40 {
		t.Errorf("commit %q: want the full revision", m[1])
	}
	flag, _, code := run(bin, "--version")
	if code != 0 || strings.TrimSpace(flag) != lines[0] {
		t.Errorf("--version %q, want %q", flag, lines[0])
	}
	dir := t.TempDir()
	if _, errOut, code := run(bin, "replay", "--seed", "1", "--out", dir, "replay-append-sink"); code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errOut)
	}
	v := strings.TrimPrefix(lines[0], "dedupsim ")
	for f, want := range map[string]string{
		"replay-append-sink-1/report.json": `"version": "` + v + `"`,
		"replay-append-sink-1/report.html": "dedupsim " + v,
		"summary.md":                       "_dedupsim " + v + "_",
		"junit.xml":                        `value="` + v + `"`,
	} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q", f, want)
		}
	}
}

// TestProgressBarOnTerminal: on a terminal (util-linux script gives the
// run one) progress is a bar redrawn in place.
func TestProgressBarOnTerminal(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil || runtime.GOOS != "linux" {
		t.Skip("needs util-linux script for a terminal")
	}
	bin := binary(t)
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(script, "-qec", bin+" sweep replay-append-sink --seeds 3 -j 1 --out "+out, "/dev/null")
	b, err := cmd.CombinedOutput()
	if err != nil && !bytes.Contains(b, []byte("dedupsim")) {
		t.Skipf("script could not give a terminal: %v %q", err, b)
	}
	if err != nil {
		t.Fatalf("%v: %q", err, b)
	}
	if !bytes.Contains(b, []byte("\r")) || !bytes.Contains(b, []byte("(2/3)")) || bytes.Contains(b, []byte("runs done")) {
		t.Fatalf("no bar on a terminal: %q", b)
	}
}

// TestRunStatesPredictedMemory: before it starts, run (and sweep) states
// the largest run's predicted peak memory against the budget a run may
// use, the -j share included, as a progress line (none with --quiet).
func TestRunStatesPredictedMemory(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	for _, verb := range [][]string{{"run", "-j", "2"}, {"sweep", "--seeds", "2", "-j", "2"}} {
		args := append(verb, "--memory-budget", "4g", "--out", filepath.Join(dir, verb[0]), "replay-append-sink", "delay-zero-drops-ties")
		_, errOut, code := run(bin, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		first, _, _ := strings.Cut(errOut, "\n")
		want := "dedupsim " + verb[0] + ": predicted peak memory "
		if !strings.HasPrefix(first, want) || !strings.Contains(first, "for the largest run (") || !strings.Contains(first, "copies at about ") ||
			!strings.Contains(first, "budget 2 GiB a run (--memory-budget 4g, shared by -j 2 runs at once)") {
			t.Errorf("%s: the first stderr line %q does not state the prediction against the budget", verb[0], first)
		}
	}
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scenarioBase is a valid scenario of four lines; the cases append to it,
// so their first line is line 5.
const scenarioBase = `query:
  dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}
  watermark: {column: ts, delay: 10 seconds}
  sink: {kind: table}
`

// badScenario is a case of `dedupsim run $DIR/s.yaml` whose error must
// read "$DIR/s.yaml:LINE: FIELD: ..." (no line when line is 0, no field
// when field is "") and hold want.
func badScenario(name, text string, line int, field, want string) badCase {
	loc := "$DIR/s.yaml"
	if line > 0 {
		loc += fmt.Sprintf(":%d", line)
	}
	loc += ": "
	if field != "" {
		loc += field + ": "
	}
	return badCase{name: name, files: map[string]string{"s.yaml": scenarioBase + text},
		args: []string{"run", "--out", "$DIR/out", "$DIR/s.yaml"}, code: 2, want: []string{loc, want}}
}

// TestBadScenarioCorpus: bad scenario files through the CLI, one per
// refused field of the format and per structural problem, each exit 2 with
// one line naming file, line and field (issue 10 items 5, 11, 14, 15, 20;
// issue 11 item 9).
func TestBadScenarioCorpus(t *testing.T) {
	cases := []badCase{
		// The file.
		badScenario("second document", "---\nname: other\n", 5, "", "second YAML document"),
		badScenario("invalid utf-8", "name: caf\xe9\n", 5, "", "invalid UTF-8"),
		badScenario("too big", "description: "+strings.Repeat("x", 1<<20)+"\n", 0, "", "at most 1 MiB"),
		badScenario("yaml syntax", "fault_phase: 1m\n  heal_phase: 2m\n", 6, "", "invalid YAML"),
		badScenario("tag int", "max_copies: !!int 5\n", 5, "max_copies", "YAML tags such as !!int are not supported"),
		badScenario("tag str", "sources:\n  - name: default\n    rate: {per_sec: !!str 5}\n", 7, "sources[0].rate.per_sec", "YAML tags"),
		badScenario("tag float", "check:\n  state_margin: !!float 1\n", 6, "check.state_margin", "YAML tags"),
		badScenario("tag on a knob", "faults:\n  crash-random: {rate: !!float 0.1}\n", 6, "faults.crash-random.rate", "YAML tags"),
		badScenario("tag in the query", "shape_change_query:\n  dedup: {api: dropDuplicates, keys: !!seq [id]}\n", 6, "shape_change_query.dedup.keys", "YAML tags"),
		badScenario("anchor", "fault_phase: &p 1m\nheal_phase: *p\n", 5, "fault_phase", "anchors (&p) are not supported"),
		badScenario("field twice", "downtime: 1s\ndowntime: 2s\n", 6, "downtime", "given twice (first at line 5)"),
		badScenario("misspelt field", "fault_phse: 1m\n", 5, "", "field fault_phse not found: did you mean fault_phase?"),
		badScenario("misspelt nested field", "sources:\n  - name: default\n    send_dealy: {kind: fixed}\n", 7, "", "did you mean send_delay?"),
		// Top level.
		badScenario("name traversal", "name: ../../../x\n", 5, "name", "[A-Za-z0-9._-], not starting with '.' or '-'"),
		badScenario("name slash", "name: a/b\n", 5, "name", "it names the report folder"),
		badScenario("name newline", "name: \"a\\nb\"\n", 5, "name", "[A-Za-z0-9._-]"),
		badScenario("name html", "name: \"<b>x</b>\"\n", 5, "name", "[A-Za-z0-9._-]"),
		badScenario("name dot", "name: ..\n", 5, "name", "not starting with '.'"),
		badScenario("start", "start: yesterday\n", 5, "start", "RFC 3339 time in [1970-01-01T00:00:00Z, 9000-01-01T00:00:00Z]"),
		badScenario("trigger 1ns", "trigger_interval: 1ns\n", 5, "trigger_interval", "not a whole number of milliseconds"),
		badScenario("trigger zero", "trigger_interval: 0s\n", 5, "trigger_interval", "which means the default 1s; want [1ms, 24h]"),
		badScenario("trigger bare", "trigger_interval: 100\n", 5, "trigger_interval", "has no unit"),
		badScenario("trigger long", "trigger_interval: 25h\n", 5, "trigger_interval", "1d1h: want [1ms, 24h]"),
		badScenario("fault phase long", "fault_phase: 367d\n", 5, "fault_phase", "want [1ms, 366d]"),
		badScenario("heal below trigger", "trigger_interval: 10s\nheal_phase: 5s\n", 6, "heal_phase", "shorter than trigger_interval 10s"),
		badScenario("downtime zero", "downtime: 0s\n", 5, "downtime", "default 10s; want [1ms, 24h]"),
		badScenario("downtime negative", "downtime: -5s\n", 5, "downtime", "negative"),
		badScenario("max copies", "max_copies: 0\n", 5, "max_copies", "want [1, 2147483647]"),
		badScenario("max copies float", "max_copies: 1.5\n", 5, "max_copies", "want a whole number"),
		badScenario("swarm yes", "swarm: yes\n", 5, "swarm", `want true or false, got "yes"`),
		badScenario("omit progress number", "omit_progress: 1\n", 5, "omit_progress", "want true or false"),
		// sources[].
		badScenario("source twice", "sources:\n  - name: default\n    rate: {per_sec: 10}\n  - name: default\n    rate: {per_sec: 20}\n", 8, "sources[1].name", "described twice"),
		badScenario("source unknown", "sources:\n  - name: defualt\n", 6, "sources[0].name", "did you mean default?"),
		badScenario("topic", "sources:\n  - name: default\n    topic: \"a/b\"\n", 7, "sources[0].topic", "1 to 249 letters, digits"),
		badScenario("partitions", "sources:\n  - name: default\n    partitions: 2000\n", 7, "sources[0].partitions", "want [1, 1024]"),
		badScenario("partitioner", "sources:\n  - name: default\n    partitioner: hash\n", 7, "sources[0].partitioner", "want key or round_robin"),
		badScenario("profile", "sources:\n  - name: default\n    rate: {profile: burst}\n", 7, "sources[0].rate.profile", "did you mean bursts?"),
		badScenario("per sec NaN", "sources:\n  - name: default\n    rate: {per_sec: .NaN}\n", 7, "sources[0].rate.per_sec", "want a finite number"),
		badScenario("per sec negative", "sources:\n  - name: default\n    rate: {per_sec: -3}\n", 7, "sources[0].rate.per_sec", "want (0, 10000000] events per second"),
		badScenario("per sec zero", "sources:\n  - name: default\n    rate: {per_sec: 0}\n", 7, "sources[0].rate.per_sec", "the default 100"),
		badScenario("per sec quoted", "sources:\n  - name: default\n    rate: {per_sec: \"50\"}\n", 7, "sources[0].rate.per_sec", "want a number"),
		badScenario("amplitude", "sources:\n  - name: default\n    rate: {profile: diurnal, amplitude: 2}\n", 7, "sources[0].rate.amplitude", "want (0, 1]"),
		badScenario("amplitude ignored", "sources:\n  - name: default\n    rate: {amplitude: 0.2}\n", 7, "sources[0].rate.amplitude", "applies to rate.profile diurnal only"),
		badScenario("diurnal period 1ns", "sources:\n  - name: default\n    rate: {profile: diurnal, period: 1ns}\n", 7, "sources[0].rate.period", "whole number of milliseconds"),
		badScenario("burst factor", "sources:\n  - name: default\n    rate: {profile: bursts, burst_factor: 5000}\n", 7, "sources[0].rate.burst_factor", "want [1, 1000]"),
		badScenario("burst length", "sources:\n  - name: default\n    rate: {profile: bursts, burst_length: 0s}\n", 7, "sources[0].rate.burst_length", "want [1ms, 366d]"),
		badScenario("keys kind", "sources:\n  - name: default\n    keys: {kind: random}\n", 7, "sources[0].keys.kind", "want fresh or bounded"),
		badScenario("keys size", "sources:\n  - name: default\n    keys: {kind: bounded, size: -1}\n", 7, "sources[0].keys.size", "want [1, 100000000] ids"),
		badScenario("keys size ignored", "sources:\n  - name: default\n    keys: {size: 10}\n", 7, "sources[0].keys.size", "applies to keys.kind bounded only"),
		badScenario("producers", "sources:\n  - name: default\n    producers: 0\n", 7, "sources[0].producers", "want [1, 1000000]"),
		badScenario("send delay kind missing", "sources:\n  - name: default\n    send_delay: {mean: 2s}\n", 7, "sources[0].send_delay.kind", "required when send_delay is given"),
		badScenario("send delay sigma", "sources:\n  - name: default\n    send_delay: {kind: lognormal, mean: 1s, sigma: 6}\n", 7, "sources[0].send_delay.sigma", "want (0, 5]"),
		badScenario("send delay max", "sources:\n  - name: default\n    send_delay: {kind: uniform, mean: 5s, max: 1s}\n", 7, "sources[0].send_delay.max", "below mean"),
		badScenario("timestamp format", "sources:\n  - name: default\n    timestamp_format: iso\n", 7, "sources[0].timestamp_format", "want seconds or rfc3339"),
		badScenario("timestamp precision", "sources:\n  - name: default\n    timestamp_precision: 90m\n", 7, "sources[0].timestamp_precision", "want 0s (none) or [1ms, 1h]"),
		// faults.
		badScenario("fault unknown", "faults:\n  crash-randon: {}\n", 6, "faults.crash-randon", "unknown fault: did you mean crash-random?"),
		badScenario("knob unknown", "faults:\n  crash-random: {rat: 0.1}\n", 6, "faults.crash-random.rat", "unknown knob: did you mean rate?"),
		badScenario("knob range", "faults:\n  crash-random: {rate: 0.9}\n", 6, "faults.crash-random.rate", "0.9: want a number in [0.005, 0.3]"),
		badScenario("knob duration", "faults:\n  future-timestamp: {ahead_ms: 400d}\n", 6, "faults.future-timestamp.ahead_ms", "400d: want [1m, 366d]"),
		badScenario("knob Inf", "faults:\n  clock-skew: {drift_ppm_max: .inf}\n", 6, "faults.clock-skew.drift_ppm_max", "want a number in [0, 5000]"),
		badScenario("knob choice", "faults:\n  query-shape-change: {starting_offsets: earlist}\n", 6, "faults.query-shape-change.starting_offsets", "did you mean earliest?"),
		badScenario("fault value", "faults:\n  crash-random: 0.1\n", 6, "faults.crash-random", "want a mapping of knob to value"),
		badScenario("fault requires", "faults:\n  lost-unsynced-write: {}\n", 5, "faults", "requires crash-random"),
		badScenario("fault two sources", "faults:\n  lagging-input: {}\n", 6, "faults.lagging-input", "at least two sources"),
		// columns[].
		badScenario("column type", "columns:\n  - {name: amount, type: float}\n", 6, "columns[0].type", "want string, long, double or boolean"),
		badScenario("column bytes", "columns:\n  - {name: note, bytes: 70000}\n", 6, "columns[0].bytes", "want [1, 65536]"),
		badScenario("column name", "columns:\n  - {name: 1st}\n", 6, "columns[0].name", "a letter or '_'"),
		badScenario("column collides", "columns:\n  - {name: id}\n", 6, "columns[0].name", "the id column"),
		// check.
		badScenario("state margin NaN", "check:\n  state_margin: .nan\n", 6, "check.state_margin", "want a finite number"),
		badScenario("state margin negative", "check:\n  state_margin: -0.5\n", 6, "check.state_margin", "want (0, 1000000]"),
		badScenario("state margin huge", "check:\n  state_margin: 2e6\n", 6, "check.state_margin", "want (0, 1000000]"),
		badScenario("growth fraction zero", "check:\n  growth_fraction: 0\n", 6, "check.growth_fraction", "the default 0.2"),
		badScenario("max examples", "check:\n  max_examples: -1\n", 6, "check.max_examples", "want [1, 1000]"),
		badScenario("stall span 1ns", "check:\n  stall_span: 1ns\n", 6, "check.stall_span", "whole number of milliseconds"),
		// expect.
		badScenario("exactly once yes", "expect:\n  exactly_once: yes\n", 6, "expect.exactly_once", "want true or false"),
		badScenario("finding unknown", "expect:\n  findings:\n    late-droped: absent\n", 7, "expect.findings.late-droped", "did you mean late-dropped?"),
		badScenario("finding bound", "expect:\n  findings:\n    lost: \"about 3\"\n", 7, "expect.findings.lost", "want present, absent or a bound"),
		badScenario("unquoted >=", "expect:\n  findings:\n    lost: >= 10\n", 7, "", `quote it, lost: ">= 10"`),
		badScenario("unquoted >", "expect:\n  findings:\n    lost: > 0\n", 7, "", `quote it, lost: "> 0"`),
		badScenario("unquoted >0", "expect:\n  findings:\n    lost: >0\n", 7, "", `quote it, lost: "> 0"`),
		badScenario("unquoted >3", "expect:\n  findings:\n    lost: >3\n", 7, "expect.findings.lost", "YAML reads >3 as a block scalar"),
		badScenario("faults fired", "expect:\n  faults_fired: [crash_random]\n", 6, "expect.faults_fired[0]", "did you mean crash-random?"),
		// Memory (issue 10 item 15): refused up front, with the numbers.
		{name: "memory budget", files: map[string]string{"s.yaml": scenarioBase + "fault_phase: 10m\nheal_phase: 10m\nsources:\n  - name: default\n    rate: {per_sec: 2000}\n"},
			args: []string{"run", "--memory-budget", "64m", "--out", "$DIR/out", "$DIR/s.yaml"}, code: 2,
			want: []string{"$DIR/s.yaml: the run would need about", "above the memory budget of 64 MiB (--memory-budget 64m)", "2.4 M copies predicted (2000 events/s x 20m x copy factor 1.00)", "per copy"}},
		{name: "memory budget sweep", files: map[string]string{"s.yaml": scenarioBase + "sources:\n  - name: default\n    rate: {per_sec: 2000}\n"},
			args: []string{"sweep", "--seeds", "2", "-j", "1", "--memory-budget", "100m", "--out", "$DIR/out", "$DIR/s.yaml"}, code: 2, want: []string{"above the memory budget of 100 MiB"}},
		// The -j seeds of one scenario share the budget, as -j scenarios do.
		{name: "memory budget sweep -j 2", files: map[string]string{"s.yaml": scenarioBase + "sources:\n  - name: default\n    rate: {per_sec: 2000}\n"},
			args: []string{"sweep", "--seeds", "2", "-j", "2", "--memory-budget", "100m", "--out", "$DIR/out", "$DIR/s.yaml"}, code: 2, want: []string{"above the memory budget of 50 MiB (--memory-budget 100m, shared by -j 2 runs at once)"}},
		{name: "memory budget replay", files: map[string]string{"s.yaml": scenarioBase + "sources:\n  - name: default\n    rate: {per_sec: 2000}\n"},
			args: []string{"replay", "--seed", "1", "--memory-budget", "100m", "--out", "$DIR/out", "$DIR/s.yaml"}, code: 2, want: []string{"above the memory budget of 100 MiB"}},
		{name: "memory budget swarm bound", files: map[string]string{"s.yaml": scenarioBase + "fault_phase: 1m\nheal_phase: 10s\nsources:\n  - name: default\n    rate: {per_sec: 1000}\n"},
			args: []string{"run", "--swarm", "--memory-budget", "100m", "--out", "$DIR/out", "$DIR/s.yaml"}, code: 2, want: []string{"copy factor 4.", "above the memory budget"}},
		{name: "memory budget flag", args: []string{"run", "--memory-budget", "lots", "--out", "$DIR/out", "replay-append-sink"}, code: 2, want: []string{`--memory-budget "lots": want a size such as 512m, 4g or 1.5t`}},
		{name: "memory budget NaN", args: []string{"run", "--memory-budget", "NaN", "--out", "$DIR/out", "replay-append-sink"}, code: 2, want: []string{"--memory-budget"}},
		{name: "memory budget overflow", args: []string{"run", "--memory-budget", "99999999999999t", "--out", "$DIR/out", "replay-append-sink"}, code: 2, want: []string{"want a size in [1, 1024p]"}},
		// Loading.
		{name: "misspelt catalogue name", args: []string{"run", "--out", "$DIR/out", "replay-apend-sink"}, code: 2, want: []string{`did you mean "replay-append-sink"?`}},
		{name: "folder", files: map[string]string{"d/x.txt": ""}, args: []string{"replay", "--seed", "1", "--out", "$DIR/out", "$DIR/d"}, code: 2, want: []string{"$DIR/d is a folder"}},
		// Not bad: the smallest rates run (issue 10 item 14).
		{name: "tiny rate runs", files: map[string]string{"s.yaml": scenarioBase + "fault_phase: 10s\nheal_phase: 10s\nsources:\n  - name: default\n    rate: {per_sec: 1e-14}\n"},
			args: []string{"run", "--out", "$DIR/out", "$DIR/s.yaml"}, code: 0},
		{name: "denormal rate runs", files: map[string]string{"s.yaml": scenarioBase + "fault_phase: 10s\nheal_phase: 10s\nsources:\n  - name: default\n    rate: {profile: bursts, per_sec: 5e-324}\n"},
			args: []string{"run", "--out", "$DIR/out", "$DIR/s.yaml"}, code: 0},
	}
	n := badInputCorpus(t, cases)
	t.Logf("scenario corpus: %d cases", n)
}

// TestScenarioNameStaysInOut: a refused name writes nothing, inside --out
// or outside it.
func TestScenarioNameStaysInOut(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	deep := filepath.Join(dir, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	s := write(t, dir, "s.yaml", scenarioBase+"name: ../../../escaped\nfault_phase: 5s\nheal_phase: 5s\n")
	if _, errOut, code := run(bin, "run", "--out", filepath.Join(deep, "out"), s); code != 2 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var written []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && p != s {
			written = append(written, p)
		}
		return nil
	})
	if len(written) > 0 {
		t.Fatalf("a refused scenario wrote %v", written)
	}
}

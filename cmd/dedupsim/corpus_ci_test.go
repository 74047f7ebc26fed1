package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sweep"
)

// The bad-input corpora of run, sweep, replay and merge: flags and
// arguments (scenario-file contents have their own corpus). Each case
// states the exit status and fragments of the one-line error.

// A scenario file whose name would climb out of --out, nest, or break a
// line (issue 10.11); the loader refuses such names too, so the fragment
// is the name itself, which both messages carry.
func unsafeNameFiles() map[string]map[string]string {
	body := func(name string) string {
		return "name: " + name + "\nquery:\n  dedup: {api: dropDuplicates, keys: [id]}\n  watermark: {column: ts, delay: 10 seconds}\n"
	}
	return map[string]map[string]string{
		"climbs":  {"s.yaml": body(`"../../escape"`)},
		"nests":   {"s.yaml": body(`"a/b"`)},
		"newline": {"s.yaml": body(`"two\nlines"`)},
		"hidden":  {"s.yaml": body(`".hidden"`)},
	}
}

func scenarioCases(verb string, pre ...string) []badCase {
	args := func(a ...string) []string { return append(append([]string{verb}, pre...), a...) }
	cases := []badCase{
		{name: "misspelt scenario", args: args("replay-apend-sink"), code: 2, want: []string{"replay-apend-sink", `did you mean "replay-append-sink"?`}},
		{name: "unknown scenario", args: args("no-such-scenario"), code: 2, want: []string{"no-such-scenario: no such file or folder, and no catalogue scenario", "dedupsim list"}},
		{name: "missing file", args: args("$DIR/missing.yaml"), code: 2, want: []string{"$DIR/missing.yaml: no such file or folder"}},
		{name: "empty argument", args: args(""), code: 2, want: []string{"an empty scenario argument"}},
		{name: "live-only scenario", args: args("--out", "$DIR/out", "../../scenarios/live/broker-restart.yaml"), code: 2, want: []string{"broker-restart", "needs a real broker"}},
		{name: "out is a file", files: map[string]string{"f": ""}, args: args("--out", "$DIR/f", "replay-append-sink"), code: 2, want: []string{"--out $DIR/f: not a folder"}},
		{name: "out empty", args: args("--out", "", "replay-append-sink"), code: 2, want: []string{`--out ""`}},
	}
	for what, files := range unsafeNameFiles() {
		want := map[string]string{"climbs": "escape", "nests": "a/b", "newline": "two", "hidden": ".hidden"}[what]
		cases = append(cases, badCase{name: "scenario name " + what, files: files, args: args("--out", "$DIR/out", "$DIR/s.yaml"), code: 2, want: []string{want, "name"}})
	}
	if verb != "replay" {
		cases = append(cases,
			badCase{name: "empty folder", files: map[string]string{"empty/README.md": "none"}, args: args("$DIR/empty"), code: 2, want: []string{"$DIR/empty: no scenario files (*.yaml, *.yml)"}},
			badCase{name: "two scenarios of one name", files: map[string]string{"a/x.yaml": scenarioBody, "b/x.yaml": scenarioBody},
				args: args("$DIR/a", "$DIR/b"), code: 2, want: []string{`scenario name "x" is also the name of $DIR/a/x.yaml`}},
			badCase{name: "scenario given twice", args: args("replay-append-sink", "replay-append-sink"), code: 2, want: []string{"replay-append-sink: given twice"}},
			badCase{name: "jobs zero", args: args("-j", "0", "replay-append-sink"), code: 2, want: []string{"-j 0: want a number of parallel runs in [1, 1024]"}},
			badCase{name: "jobs too many", args: args("-j", "5000", "replay-append-sink"), code: 2, want: []string{"-j 5000", "[1, 1024]"}},
			badCase{name: "jobs not a number", args: args("-j", "two", "replay-append-sink"), code: 2, want: []string{`"two"`, "want a whole number"}},
			badCase{name: "keep-history not a bool", args: args("--keep-history=often", "replay-append-sink"), code: 2, want: []string{`"often"`, "want true or false"}},
			badCase{name: "progress interval zero", args: args("--progress-interval", "0s", "replay-append-sink"), code: 2, want: []string{"--progress-interval 0s: want a duration in [1ms, 1h]"}},
			badCase{name: "progress interval not a duration", args: args("--progress-interval", "soon", "replay-append-sink"), code: 2, want: []string{`"soon"`, "want a duration such as"}},
			badCase{name: "misspelt keep-history", args: args("--keep-histories", "replay-append-sink"), code: 2, want: []string{"unknown flag: --keep-histories (did you mean --keep-history?)"}},
		)
	}
	return cases
}

const scenarioBody = "query:\n  dedup: {api: dropDuplicates, keys: [id]}\n  watermark: {column: ts, delay: 10 seconds}\n"

func TestRunBadInput(t *testing.T) {
	k := func(a ...string) []string { return append([]string{"run", "--out", "$DIR/out"}, a...) }
	cases := append(scenarioCases("run"),
		badCase{name: "engine mode without kafka", args: k("--engine-mode", "inproc", "replay-append-sink"), code: 2, want: []string{"--engine-mode is a setting of runs against Kafka: it needs --kafka"}},
		badCase{name: "table-sink without kafka", args: k("--table-sink", "kafka", "replay-append-sink"), code: 2, want: []string{"--table-sink", "needs --kafka"}},
		badCase{name: "live-trigger without kafka", args: k("--live-trigger", "1s", "replay-append-sink"), code: 2, want: []string{"--live-trigger", "needs --kafka"}},
		badCase{name: "verbose without kafka", args: k("-v", "replay-append-sink"), code: 2, want: []string{"--verbose", "needs --kafka"}},
		badCase{name: "bootstrap without external", args: k("--bootstrap", "127.0.0.1:9092", "replay-append-sink"), code: 2, want: []string{"--bootstrap is for --kafka external only"}},
		badCase{name: "bootstrap with kfake", args: k("--kafka", "kfake", "--bootstrap", "127.0.0.1:9092", "replay-append-sink"), code: 2, want: []string{"--bootstrap is for --kafka external only"}},
		badCase{name: "unknown kafka", args: k("--kafka", "remote", "replay-append-sink"), code: 2, want: []string{`--kafka "remote": want kfake, local, external or testcontainers`}},
		badCase{name: "empty kafka", args: k("--kafka", "", "replay-append-sink"), code: 2, want: []string{`--kafka ""`}},
		badCase{name: "external without bootstrap", args: k("--kafka", "external", "replay-append-sink"), code: 2, want: []string{"--bootstrap HOST:PORT"}},
		badCase{name: "kafka with swarm", args: k("--kafka", "kfake", "--swarm", "replay-append-sink"), code: 2, want: []string{"--kafka does not support --swarm"}},
		badCase{name: "kafka with jobs", args: k("--kafka", "kfake", "-j", "2", "replay-append-sink"), code: 2, want: []string{"-j 2: runs against Kafka go one at a time"}},
		badCase{name: "unknown engine mode", args: k("--kafka", "kfake", "--engine-mode", "thread", "replay-append-sink"), code: 2, want: []string{`--engine-mode "thread": want process or inproc`}},
		badCase{name: "unknown table sink", args: k("--kafka", "kfake", "--table-sink", "delta", "replay-append-sink"), code: 2, want: []string{`--table-sink "delta": want pebble or kafka`}},
		badCase{name: "brokers two", args: k("--kafka", "local", "--brokers", "2", "replay-append-sink"), code: 2, want: []string{"--brokers 2: want 1 or 3"}},
		badCase{name: "brokers zero", args: k("--kafka", "testcontainers", "--brokers", "0", "replay-append-sink"), code: 2, want: []string{"--brokers 0: want 1 or 3"}},
		badCase{name: "brokers with kfake", args: k("--kafka", "kfake", "--brokers", "3", "replay-append-sink"), code: 2, want: []string{"--brokers is for --kafka local or testcontainers only"}},
		badCase{name: "brokers without kafka", args: k("--brokers", "3", "replay-append-sink"), code: 2, want: []string{"--brokers is for --kafka local or testcontainers only"}},
		badCase{name: "leader-kill on kfake", args: k("--kafka", "kfake", "../../scenarios/live/leader-kill.yaml"), code: 2, want: []string{"leader-kill on this cluster", "--brokers 3"}},
		badCase{name: "live trigger zero", args: k("--kafka", "kfake", "--live-trigger", "0s", "replay-append-sink"), code: 2, want: []string{"--live-trigger 0s: want a positive duration"}},
		badCase{name: "live trigger negative", args: k("--kafka", "kfake", "--live-trigger", "-1s", "replay-append-sink"), code: 2, want: []string{"--live-trigger -1s"}},
		badCase{name: "seed negative", args: k("--seed", "-1", "replay-append-sink"), code: 2, want: []string{`"-1"`, "--seed", "want a whole number in [0, 18446744073709551615]"}},
		badCase{name: "seed fraction", args: k("--seed", "1.5", "replay-append-sink"), code: 2, want: []string{`"1.5"`, "whole number"}},
		badCase{name: "seed past 2^64-1", args: k("--seed", "18446744073709551616", "replay-append-sink"), code: 2, want: []string{"18446744073709551616", "[0, 18446744073709551615]"}},
		badCase{name: "misspelt seed flag", args: k("--sede", "3", "replay-append-sink"), code: 2, want: []string{"unknown flag: --sede (did you mean --seed?)"}},
		badCase{name: "seeds is sweep's", args: k("--seeds", "3", "replay-append-sink"), code: 2, want: []string{"unknown flag: --seeds (did you mean --seed?)"}},
		badCase{name: "unknown shorthand", args: k("-x", "replay-append-sink"), code: 2, want: []string{"unknown shorthand flag: 'x'"}},
		badCase{name: "swarm not a bool", args: k("--swarm=maybe", "replay-append-sink"), code: 2, want: []string{`"maybe"`, "want true or false"}},
	)
	t.Logf("run: %d bad inputs", badInputCorpus(t, cases))
}

func TestSweepBadInput(t *testing.T) {
	s := func(a ...string) []string { return append([]string{"sweep", "--out", "$DIR/out"}, a...) }
	cases := append(scenarioCases("sweep", "--seeds", "2"),
		badCase{name: "no seeds", args: s("replay-append-sink"), code: 2, want: []string{"--seeds N (N >= 1) is required"}},
		badCase{name: "zero seeds", args: s("--seeds", "0", "replay-append-sink"), code: 2, want: []string{"--seeds N (N >= 1) is required"}},
		badCase{name: "negative seeds", args: s("--seeds", "-5", "replay-append-sink"), code: 2, want: []string{`"-5"`, "whole number"}},
		badCase{name: "seeds in exponent form", args: s("--seeds", "1e3", "replay-append-sink"), code: 2, want: []string{`"1e3"`, "whole number"}},
		badCase{name: "seeds past 2^64-1", args: s("--seeds", "18446744073709551616", "replay-append-sink"), code: 2, want: []string{"18446744073709551616"}},
		badCase{name: "last seed overflows", args: s("--first-seed", "18446744073709551615", "--seeds", "2", "replay-append-sink"), code: 2,
			want: []string{"--first-seed 18446744073709551615 with --seeds 2 would pass the largest seed, 18446744073709551615"}},
		badCase{name: "all seeds from a late first", args: s("--first-seed", "2", "--seeds", "18446744073709551615", "replay-append-sink"), code: 2, want: []string{"would pass the largest seed"}},
		badCase{name: "shard index at n", args: s("--seeds", "8", "--shard", "4/4", "replay-append-sink"), code: 2, want: []string{`--shard "4/4": want i/n with 0 <= i < n`}},
		badCase{name: "shard of zero", args: s("--seeds", "8", "--shard", "0/0", "replay-append-sink"), code: 2, want: []string{`--shard "0/0"`}},
		badCase{name: "shard negative", args: s("--seeds", "8", "--shard", "-1/2", "replay-append-sink"), code: 2, want: []string{`--shard "-1/2"`}},
		badCase{name: "shard words", args: s("--seeds", "8", "--shard", "a/b", "replay-append-sink"), code: 2, want: []string{`--shard "a/b"`}},
		badCase{name: "shard without n", args: s("--seeds", "8", "--shard", "1", "replay-append-sink"), code: 2, want: []string{`--shard "1"`}},
		badCase{name: "shard count too large", args: s("--seeds", "8", "--shard", "1/200000", "replay-append-sink"), code: 2, want: []string{"n <= 100000"}},
		badCase{name: "shard 1-based", args: s("--seeds", "8", "--shard", "1/1", "replay-append-sink"), code: 2, want: []string{`--shard "1/1"`, "0-based"}},
		badCase{name: "more shards than seeds", args: s("--seeds", "2", "--shard", "3/4", "replay-append-sink"), code: 2, want: []string{"4 shards of 2 seeds", "at most 2 shards"}},
		badCase{name: "no scenario", args: s("--seeds", "2"), code: 2, want: []string{"requires at least 1 arg"}},
		badCase{name: "misspelt seeds flag", args: s("--seed", "2", "replay-append-sink"), code: 2, want: []string{"unknown flag: --seed (did you mean --seeds?)"}},
		badCase{name: "prefix of first-seed", args: s("--seeds", "2", "--first", "3", "replay-append-sink"), code: 2, want: []string{"unknown flag: --first (did you mean --first-seed?)"}},
		badCase{name: "first seed negative", args: s("--seeds", "2", "--first-seed", "-1", "replay-append-sink"), code: 2, want: []string{`"-1"`, "--first-seed"}},
		badCase{name: "kafka is run's", args: s("--seeds", "2", "--kafka", "kfake", "replay-append-sink"), code: 2, want: []string{"unknown flag: --kafka"}},
	)
	t.Logf("sweep: %d bad inputs", badInputCorpus(t, cases))
}

func TestReplayBadInput(t *testing.T) {
	r := func(a ...string) []string { return append([]string{"replay", "--out", "$DIR/out"}, a...) }
	cases := append(scenarioCases("replay", "--seed", "1"),
		badCase{name: "no seed", args: r("replay-append-sink"), code: 2, want: []string{"replay: --seed is required"}},
		badCase{name: "no scenario", args: r("--seed", "1"), code: 2, want: []string{"accepts 1 arg(s), received 0"}},
		badCase{name: "two scenarios", args: r("--seed", "1", "replay-append-sink", "replay-table-stable-app-id"), code: 2, want: []string{"accepts 1 arg(s), received 2"}},
		badCase{name: "a folder", files: map[string]string{"suite/x.yaml": scenarioBody}, args: r("--seed", "1", "$DIR/suite"), code: 2,
			want: []string{"$DIR/suite is a folder: replay runs one scenario"}},
		badCase{name: "seed not a number", args: r("--seed", "x", "replay-append-sink"), code: 2, want: []string{`"x"`, "whole number"}},
		badCase{name: "seed negative", args: r("--seed", "-3", "replay-append-sink"), code: 2, want: []string{`"-3"`, "[0, 18446744073709551615]"}},
		badCase{name: "misspelt seed flag", args: r("--sed", "1", "replay-append-sink"), code: 2, want: []string{"unknown flag: --sed (did you mean --seed?)"}},
		badCase{name: "jobs is sweep's", args: r("--seed", "1", "-j", "2", "replay-append-sink"), code: 2, want: []string{"unknown shorthand flag: 'j'"}},
		badCase{name: "swarm not a bool", args: r("--seed", "1", "--swarm=yes please", "replay-append-sink"), code: 2, want: []string{"want true or false"}},
		badCase{name: "export empty", args: r("--seed", "1", "--export", "", "replay-append-sink"), code: 2, want: []string{`replay: --export "": want a folder`}},
		badCase{name: "export a file", files: map[string]string{"f": "x"}, args: r("--seed", "1", "--export", "$DIR/f", "replay-append-sink"), code: 2,
			want: []string{"replay: --export $DIR/f: not a folder"}},
		badCase{name: "export without a folder", args: r("--seed", "1", "replay-append-sink", "--export"), code: 2, want: []string{"flag needs an argument: --export"}},
	)
	t.Logf("replay: %d bad inputs", badInputCorpus(t, cases))
}

// manifestText is a valid shard.json for a sweep of scenario x over seeds
// 1..2 in one shard, changed by mod.
func manifestText(t *testing.T, mod func(*sweep.Manifest)) string {
	t.Helper()
	m := sweep.Manifest{Format: sweep.ManifestFormat, Dedupsim: "test", Shard: 0, Shards: 1, FirstSeed: 1, Seeds: 2,
		Scenarios: []sweep.ManifestScenario{{Name: "x", File: "x.yaml", Expected: 2, Faults: []string{}, Coverage: map[string]int{}}}}
	for _, seed := range []uint64{1, 2} {
		m.Runs = append(m.Runs, sweep.ManifestRun{Dir: "x-" + string(rune('0'+seed)), ElapsedMs: 3, Run: result.Run{Scenario: "x", Seed: seed, Passed: true, Replay: "dedupsim replay --seed 1 x.yaml"}})
	}
	if mod != nil {
		mod(&m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMergeBadInput(t *testing.T) {
	shard := func(text string) map[string]string {
		return map[string]string{"a/shard.json": text, "a/x-1/report.json": "{}", "a/x-2/report.json": "{}"}
	}
	m := func(mod func(*sweep.Manifest)) map[string]string { return shard(manifestText(t, mod)) }
	g := []string{"merge", "--out", "$DIR/merged", "$DIR/a"}
	two := func(a, b string) map[string]string {
		f := shard(a)
		f["b/shard.json"] = b
		return f
	}
	half := func(i int) func(*sweep.Manifest) {
		return func(m *sweep.Manifest) {
			m.Shard, m.Shards = i, 2
			m.Scenarios[0].Expected = 1
			m.Runs = m.Runs[i : i+1]
		}
	}
	cases := []badCase{
		{name: "no folder", args: []string{"merge"}, code: 2, want: []string{"requires at least 1 arg"}},
		{name: "missing folder", args: []string{"merge", "$DIR/nope"}, code: 2, want: []string{"merge: $DIR/nope: no such folder"}},
		{name: "a file", files: map[string]string{"f": ""}, args: []string{"merge", "$DIR/f"}, code: 2, want: []string{"$DIR/f: not a folder"}},
		{name: "no shard.json", files: map[string]string{"a/index.html": ""}, args: g, code: 1, want: []string{"$DIR/a has no shard.json"}},
		{name: "not JSON", files: shard("{"), args: g, code: 2, want: []string{"$DIR/a/shard.json: not a shard manifest"}},
		{name: "trailing data", files: shard(manifestText(t, nil) + " {}"), args: g, code: 2, want: []string{"trailing data"}},
		{name: "unknown field", files: shard(strings.Replace(manifestText(t, nil), `"format"`, `"extra":1,"format"`, 1)), args: g, code: 2, want: []string{`unknown field "extra"`}},
		{name: "other format", files: m(func(m *sweep.Manifest) { m.Format = "dedupsim-shard/9" }), args: g, code: 2, want: []string{"format: \"dedupsim-shard/9\": want \"dedupsim-shard/1\""}},
		{name: "shard at n", files: m(func(m *sweep.Manifest) { m.Shard = 1 }), args: g, code: 2, want: []string{"shard: 1: want a shard index in [0, 0]"}},
		{name: "zero shards", files: m(func(m *sweep.Manifest) { m.Shards = 0 }), args: g, code: 2, want: []string{"shards: 0: want a number of shards in [1, 100000]"}},
		{name: "zero seeds", files: m(func(m *sweep.Manifest) { m.Seeds = 0 }), args: g, code: 2, want: []string{"seeds: firstSeed 1 and seeds 0"}},
		{name: "seeds overflow", files: m(func(m *sweep.Manifest) { m.FirstSeed = 1<<63 + 1; m.Seeds = 1 << 63 }), args: g, code: 2, want: []string{"the last at most 2^64-1"}},
		{name: "more shards than seeds", files: m(func(m *sweep.Manifest) { m.Shards = 3 }), args: g, code: 2, want: []string{"shards: 3 shards of 2 seeds"}},
		{name: "no scenarios", files: m(func(m *sweep.Manifest) { m.Scenarios = nil }), args: g, code: 2, want: []string{"scenarios: none"}},
		{name: "scenario twice", files: m(func(m *sweep.Manifest) { m.Scenarios = append(m.Scenarios, m.Scenarios[0]) }), args: g, code: 2, want: []string{`scenarios[1].name: "x" given twice`}},
		{name: "unsafe scenario name", files: m(func(m *sweep.Manifest) { m.Scenarios[0].Name = "../x" }), args: g, code: 2, want: []string{"scenarios[0].name", "not a safe folder name"}},
		{name: "wrong expected count", files: m(func(m *sweep.Manifest) { m.Scenarios[0].Expected = 3 }), args: g, code: 2, want: []string{"scenarios[0].expected: 3: shard 0/1 of 2 seeds owes 2"}},
		{name: "negative coverage", files: m(func(m *sweep.Manifest) { m.Scenarios[0].Coverage["f"] = -1 }), args: g, code: 2, want: []string{"scenarios[0].coverage.f: -1"}},
		{name: "run of another scenario", files: m(func(m *sweep.Manifest) { m.Runs[0].Scenario = "y" }), args: g, code: 2, want: []string{`runs[0].scenario: "y" is not a scenario of the sweep`}},
		{name: "seed outside the sweep", files: m(func(m *sweep.Manifest) { m.Runs[1].Seed = 3 }), args: g, code: 2, want: []string{"runs[1].seed: 3 is not a seed of shard 0/1"}},
		{name: "seed of another shard", files: m(func(m *sweep.Manifest) { half(0)(m); m.Runs[0].Seed = 2 }), args: g, code: 2, want: []string{"runs[0].seed: 2 is not a seed of shard 0/2"}},
		{name: "run twice", files: m(func(m *sweep.Manifest) { m.Runs[1] = m.Runs[0] }), args: g, code: 2, want: []string{"runs[1]: x seed 1 given twice"}},
		{name: "run folder elsewhere", files: m(func(m *sweep.Manifest) { m.Runs[0].Dir = "../../etc" }), args: g, code: 2, want: []string{`runs[0].dir: "../../etc": want "x-1"`}},
		{name: "negative elapsed", files: m(func(m *sweep.Manifest) { m.Runs[0].ElapsedMs = -1 }), args: g, code: 2, want: []string{"runs[0].elapsedMs: -1"}},
		{name: "different versions", files: two(manifestText(t, half(0)), manifestText(t, func(m *sweep.Manifest) { half(1)(m); m.Dedupsim = "other" })),
			args: append(g, "$DIR/b"), code: 2, want: []string{"not shards of one sweep: dedupsim versions \"test\" and \"other\""}},
		{name: "different scenarios", files: two(manifestText(t, half(0)), manifestText(t, func(m *sweep.Manifest) { half(1)(m); m.Scenarios[0].File = "elsewhere/x.yaml" })),
			args: append(g, "$DIR/b"), code: 2, want: []string{"other scenarios"}},
		{name: "different shard counts", files: two(manifestText(t, half(0)), manifestText(t, nil)), args: append(g, "$DIR/b"), code: 2, want: []string{"2 and 1 shards"}},
		{name: "swarm in one", files: two(manifestText(t, half(0)), manifestText(t, func(m *sweep.Manifest) { half(1)(m); m.Swarm = true })),
			args: append(g, "$DIR/b"), code: 2, want: []string{"swarm mode on in one"}},
		{name: "shard twice", files: two(manifestText(t, nil), manifestText(t, nil)), args: append(g, "$DIR/b"), code: 2, want: []string{"shard 0/1 given twice: $DIR/a and $DIR/b"}},
		{name: "out is a shard", files: m(nil), args: []string{"merge", "--out", "$DIR/a", "$DIR/a"}, code: 2, want: []string{"--out $DIR/a is the shard folder $DIR/a"}},
		{name: "out is a file", files: map[string]string{"f": ""}, args: []string{"merge", "--out", "$DIR/f", "$DIR"}, code: 2, want: []string{"--out $DIR/f: not a folder"}},
		{name: "out empty", args: []string{"merge", "--out", "", "$DIR"}, code: 2, want: []string{`--out ""`}},
		{name: "misspelt out flag", args: []string{"merge", "--ot", "x", "$DIR"}, code: 2, want: []string{"unknown flag: --ot (did you mean --out?)"}},
		{name: "a shard missing", files: m(half(0)), args: g, code: 1, want: []string{"shards missing: 1/2"}},
		{name: "a seed missing", files: m(func(m *sweep.Manifest) { m.Runs = m.Runs[1:] }), args: g, code: 1, want: []string{"x: 1 of 2 seeds missing, the first 1"}},
		{name: "stopped early", files: m(func(m *sweep.Manifest) { m.Stopped = "sim: seed 2 at 5ms: boom" }), args: g, code: 1, want: []string{"stopped before its last seed: sim: seed 2 at 5ms: boom"}},
		{name: "failed run", files: m(func(m *sweep.Manifest) {
			m.Runs[1].Passed = false
			m.Runs[1].Expect = []result.Expectation{{Finding: "exactly-once", Want: "true", Got: 0, OK: false}}
		}), args: g, code: 1, want: []string{"1 of 2 runs did not meet their expectations: x (seed 2)"}},
	}
	t.Logf("merge: %d bad inputs", badInputCorpus(t, cases))
}

package main

import (
	"strings"
	"testing"
)

// conformCorpus is the bad-input corpus of conform and of exec --engine:
// every flag out of its domain is refused (exit 2, one line) before pyspark
// is installed or Spark started, so none of these cases needs Java.
func conformCorpus() []badCase {
	c := func(name string, args []string, want ...string) badCase {
		return badCase{name: "conform/" + name, args: append([]string{"conform"}, args...), code: 2, want: want}
	}
	cases := []badCase{
		c("version not a version", []string{"--spark-version", "latest"}, "--spark-version", `"latest" is not a version MAJOR.MINOR.PATCH`),
		c("version too old", []string{"--spark-version", "3.4.1"}, "--spark-version", "pyspark 3.4.1 is not supported", "3.5.0 or later"),
		c("version 2.x", []string{"--spark-version", "2.4.8"}, "pyspark 2.4.8 is not supported"),
		c("version with a suffix", []string{"--spark-version", "4.1.1rc1"}, "not a version MAJOR.MINOR.PATCH"),
		c("version empty", []string{"--spark-version", ""}, "not a version"),
		c("traces negative", []string{"--traces", "-1"}, "--traces -1", "[0, 100000]"),
		c("traces too many", []string{"--traces", "100001"}, "--traces 100001", "[0, 100000]"),
		c("traces not a number", []string{"--traces", "many"}, "--traces", "want a whole number"),
		c("seed negative", []string{"--seed", "-3"}, "--seed", "want a whole number in [0, 18446744073709551615]"),
		c("workers zero", []string{"--workers", "0"}, "--workers 0", "[1, 16]"),
		c("workers too many", []string{"--workers", "17"}, "--workers 17", "[1, 16]"),
		c("golden missing", []string{"--golden", "$DIR/nope"}, "--golden $DIR/nope: not a folder"),
		c("python missing", []string{"--python", "$DIR/nope/bin/python"}, "--python $DIR/nope/bin/python: not a file"),
		c("python is a folder", []string{"--python", "$DIR"}, "not a file"),
		c("misspelt flag", []string{"--trace", "5"}, "unknown flag: --trace", "--traces"),
		c("argument", []string{"extra"}, "unknown command \"extra\""),
		// Issue 25: nothing to compare is refused, not "agree 0, disagree 0".
		c("traces 0 without golden", []string{"--traces", "0"}, "--traces 0 without --golden: nothing to compare"),
		{name: "conform/traces 0 with an empty golden", files: map[string]string{"g/README.md": "no golden files"}, args: []string{"conform", "--traces", "0", "--golden", "$DIR/g"}, code: 2,
			want: []string{"--golden $DIR/g: no golden case (*.txt with an exec) in this folder"}},
		{name: "conform/golden without an exec", files: map[string]string{"g/a.txt": "# only a comment\n"}, args: []string{"conform", "--golden", "$DIR/g"}, code: 2,
			want: []string{"--golden $DIR/g: no golden case"}},
		{name: "conform/golden malformed", files: map[string]string{"g/a.txt": "exec\nno end\n"}, args: []string{"conform", "--traces", "0", "--golden", "$DIR/g"}, code: 2,
			want: []string{"--golden $DIR/g: a.txt:1: exec without ----"}},
		{name: "conform/out is a file", files: map[string]string{"f": "x"}, args: []string{"conform", "--out", "$DIR/f"}, code: 2,
			want: []string{"--out $DIR/f: not a folder"}},
	}
	e := func(name string, files map[string]string, args []string, want ...string) badCase {
		if files == nil {
			files = map[string]string{"q.yaml": cq, "s.jsonl": cs}
		}
		return badCase{name: "exec-engine/" + name, files: files,
			args: append([]string{"exec", "--query", "$DIR/q.yaml", "--input", "$DIR/s.jsonl"}, args...), code: 2, want: want}
	}
	cases = append(cases,
		e("unknown engine", nil, []string{"--engine", "flink"}, `--engine "flink" (want dedupsim or spark)`),
		e("misspelt engine", nil, []string{"--engine", "sprak"}, `--engine "sprak"`, `"spark"`),
		e("table format", nil, []string{"--engine", "spark", "--format", "table"}, "--engine spark writes jsonl only"),
		e("bad query before Spark", map[string]string{"q.yaml": "dedup: {api: dropDuplicate}\n", "s.jsonl": cs},
			[]string{"--engine", "spark"}, "q.yaml:1", "unknown api"),
		e("bad steps before Spark", map[string]string{"q.yaml": cq, "s.jsonl": `{"rows": [{"id":"a","ts":1}` + "\n"},
			[]string{"--engine", "spark"}, "s.jsonl:1"),
		e("missing query", map[string]string{"s.jsonl": cs}, []string{"--engine", "spark"}, "q.yaml"),
		e("real-time mode on Spark", map[string]string{"q.yaml": "spark_version: 4.3.0\ndedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: kafka}\ntrigger: {real_time: 5 seconds}\n", "s.jsonl": cs},
			[]string{"--engine", "spark"}, "real-time mode (trigger: {real_time: ...}) is not run on Spark by exec"),
		e("kafka sink on Spark", map[string]string{"q.yaml": "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: kafka}\n", "s.jsonl": cs},
			[]string{"--engine", "spark"}, "sink kind kafka is not run on Spark by exec"),
	)
	return cases
}

// TestConformBadInputCorpus runs the conform / exec --engine corpus (go
// test -run ConformBadInputCorpus -v logs its size).
func TestConformBadInputCorpus(t *testing.T) {
	n := badInputCorpus(t, conformCorpus())
	t.Logf("conform and exec --engine bad-input corpus: %d cases", n)
}

// TestConformHelp: the verb is listed and its help names the flags the
// issue promises.
func TestConformHelp(t *testing.T) {
	bin := binary(t)
	out, errOut, code := run(bin, "conform", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"--spark-version", "--traces", "--seed", "--out", "agree/disagree"} {
		if !strings.Contains(out, w) {
			t.Errorf("conform --help lacks %q:\n%s", w, out)
		}
	}
	out, _, _ = run(bin, "exec", "--help")
	if !strings.Contains(out, "--engine") || !strings.Contains(out, "DEDUPSIM_SPARK_PYTHON") {
		t.Errorf("exec --help does not explain --engine spark:\n%s", out)
	}
}

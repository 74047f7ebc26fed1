package execpipe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/query"
)

// An overlapped run (the run beside the pass, on the schema of the first
// rows) answers exactly as the pass then the run: the same output, error
// and warnings, and --out untouched when the file is refused. Each case
// also pins what became of the speculative run, so that a change which
// stops the overlap from ever being kept (or from being dropped when it
// must) fails here.
func TestOverlapSameAnswer(t *testing.T) {
	const dedupQuery = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 2\n"
	rows := func(rs ...string) string { return `{"rows": [` + strings.Join(rs, ",") + "]}\n" }
	for _, tc := range []struct {
		name, query, steps string
		want               overlapOutcome
		code               int // exit status; 0: success
	}{
		{"first rows give the schema", dedupQuery,
			rows(`{"id":"a","ts":1,"amount":3}`, `{"id":"a","ts":2,"amount":4}`) +
				rows(`{"id":"b","ts":30,"amount":5}`) + rows(`{"id":"a","ts":3,"amount":6}`),
			runKept, 0},
		{"a later row widens a column", dedupQuery,
			rows(`{"id":"a","ts":1,"amount":3}`) + rows(`{"id":"b","ts":30,"amount":5.5}`) + rows(`{"id":"a","ts":31,"amount":6}`),
			runAgain, 0},
		{"a later row adds a column", dedupQuery,
			rows(`{"id":"a","ts":1}`) + rows(`{"id":"b","ts":30,"note":"x"}`) + rows(`{"id":"b","ts":31}`),
			runAgain, 0},
		{"a later key changes type", dedupQuery,
			rows(`{"id":1,"ts":1}`) + rows(`{"id":"b","ts":30}`) + rows(`{"id":1,"ts":31}`),
			runAgain, 0},
		{"rows only after a restart", dedupQuery,
			`{"restart": true}` + "\n" + rows(`{"id":"a","ts":1}`, `{"id":"a","ts":2}`) + rows(`{"id":"c","ts":40}`),
			runKept, 0},
		{"no rows in the first lines", dedupQuery,
			strings.Repeat(`{"restart": true}`+"\n", sniffLines+1) + rows(`{"id":"a","ts":1}`),
			runWaited, 0},
		{"a bad line late", dedupQuery,
			rows(`{"id":"a","ts":1}`) + rows(`{"id":"b","ts":30}`) + `{"rows": [}` + "\n",
			passRefused, 2},
		{"a bad first line", dedupQuery, `{"rows": [}` + "\n" + rows(`{"id":"a","ts":1}`), passRefused, 2},
		{"an event time that is not a time, late", dedupQuery,
			rows(`{"id":"a","ts":1}`) + rows(`{"id":"b","ts":{"x":1}}`),
			passRefused, 2},
		{"a key column in no row", "dedup: {api: dropDuplicates, keys: [user]}\nshuffle_partitions: 2\n",
			rows(`{"id":"a","ts":1}`) + rows(`{"id":"b","ts":2}`),
			passRefused, 2},
		{"a declared schema", "schema: \"id STRING, ts TIMESTAMP\"\n" + dedupQuery,
			rows(`{"id":"a","ts":"2024-01-01T00:00:01Z"}`) + rows(`{"id":"a","ts":"2024-01-01T00:00:02Z"}`, `{"id":"b","ts":"2024-01-01T00:00:40Z"}`),
			runKept, 0},
		{"a declared schema, a bad line late", "schema: \"id STRING, ts TIMESTAMP\"\n" + dedupQuery,
			rows(`{"id":"a","ts":"2024-01-01T00:00:01Z"}`) + rows(`{"id":"b","ts":"yesterday"}`),
			passRefused, 2},
		{"a crash and its restart", dedupQuery,
			rows(`{"id":"a","ts":1}`) + `{"crash": "after-offsets-write"}` + "\n" + rows(`{"id":"b","ts":30}`) + rows(`{"id":"c","ts":31}`),
			runKept, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			qPath, sPath := filepath.Join(dir, "query.yaml"), filepath.Join(dir, "steps.jsonl")
			if err := os.WriteFile(qPath, []byte(tc.query), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(sPath, []byte(tc.steps), 0o644); err != nil {
				t.Fatal(err)
			}
			type answer struct {
				out, err string
				warns    []string
			}
			run := func(overlap bool) (answer, overlapOutcome) {
				out := filepath.Join(dir, "out.jsonl")
				if err := os.WriteFile(out, []byte("before\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				var a answer
				defer func(p func(string)) { printWarning = p }(printWarning)
				printWarning = func(s string) { a.warns = append(a.warns, s) }
				o := Options{QueryPath: qPath, InputPath: sPath, OutPath: out}
				q, err := query.ParseFile(qPath)
				if err != nil {
					t.Fatal(err)
				}
				if !canOverlap(o, q) {
					t.Fatalf("canOverlap refused %+v", o)
				}
				got := overlapOutcome(-1)
				if overlap {
					got, err = overlapRun(o, q)
				} else {
					err = runChecked(o, q, true)
				}
				if err != nil {
					a.err = err.Error()
				}
				b, _ := os.ReadFile(out)
				a.out = string(b)
				if left, _ := filepath.Glob(filepath.Join(dir, ".out.jsonl.*")); len(left) > 0 {
					t.Fatalf("temp files left: %v", left)
				}
				return a, got
			}
			want, _ := run(false)
			got, outcome := run(true)
			if outcome != tc.want {
				t.Errorf("outcome %d, want %d", outcome, tc.want)
			}
			if got.err != want.err || got.out != want.out || strings.Join(got.warns, "\n") != strings.Join(want.warns, "\n") {
				t.Fatalf("overlapped:\n%+v\nthe pass then the run:\n%+v", got, want)
			}
			if (want.err != "") != (tc.code != 0) {
				t.Fatalf("error %q, want exit %d", want.err, tc.code)
			}
			if tc.code != 0 && want.out != "before\n" {
				t.Fatalf("--out changed by a refused run: %q", want.out)
			}
		})
	}
}

// The overlap is only taken where nothing the run writes outlives it
// unless kept.
func TestCanOverlap(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "steps.jsonl")
	if err := os.WriteFile(in, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	q := &query.Query{ShufflePartitions: 4}
	base := Options{InputPath: in, OutPath: out}
	if passWorkers() < 2 {
		t.Skip("one core: the overlap is never taken")
	}
	if !canOverlap(base, q) {
		t.Fatal("refused the plain case")
	}
	for name, o := range map[string]Options{
		"--checkpoint":    {InputPath: in, OutPath: out, CheckpointDir: dir},
		"--check":         {InputPath: in, OutPath: out, CheckPath: in},
		"--record":        {InputPath: in, OutPath: out, RecordPath: in},
		"--report":        {InputPath: in, OutPath: out, ReportDir: dir},
		"standard output": {InputPath: in},
		"a device":        {InputPath: in, OutPath: os.DevNull},
		"a pipe input":    {InputPath: os.DevNull, OutPath: out},
	} {
		if canOverlap(o, q) {
			t.Errorf("%s: overlap taken", name)
		}
	}
	if canOverlap(base, &query.Query{ShufflePartitions: maxMemoryScratchPartitions + 1}) {
		t.Error("a checkpoint on the disk: overlap taken")
	}
}

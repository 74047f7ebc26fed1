package execpipe

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/query"
	"pgregory.net/rapid"
)

// A speculative run (no pass first, the run on the schema of the first
// rows, inferring every row's as it goes) answers exactly as the pass then
// the run: the same output, error and warnings, and --out untouched when
// the file is refused. Each case also pins what became of the speculative
// run, so that a change which stops it from ever being kept (or from
// being dropped when it must) fails here.
func TestSpeculativeSameAnswer(t *testing.T) {
	const dedupQuery = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 2\n"
	rows := func(rs ...string) string { return `{"rows": [` + strings.Join(rs, ",") + "]}\n" }
	// pad fills the lines a speculative run sniffs its schema from, so
	// that what comes after it is read by the run alone.
	pad := strings.Repeat(rows(`{"id":"p","ts":0}`), sniffLines)
	for _, tc := range []struct {
		name, query, steps string
		want               speculation
		code               int // exit status; 0: success
	}{
		{"first rows give the schema", dedupQuery,
			rows(`{"id":"a","ts":1,"amount":3}`, `{"id":"a","ts":2,"amount":4}`) +
				rows(`{"id":"b","ts":30,"amount":5}`) + rows(`{"id":"a","ts":3,"amount":6}`),
			runKept, 0},
		{"a column widened within the sniffed lines", dedupQuery,
			rows(`{"id":"a","ts":1,"amount":3}`) + rows(`{"id":"b","ts":30,"amount":5.5}`) + rows(`{"id":"a","ts":31,"amount":6}`),
			runKept, 0},
		{"a later row widens a column the run does not read", dedupQuery,
			pad + rows(`{"id":"a","ts":1,"amount":3}`) + rows(`{"id":"b","ts":30,"amount":5.5}`) + rows(`{"id":"a","ts":31,"amount":6}`),
			runKept, 0},
		{"a later row adds a column the run does not read", dedupQuery,
			pad + rows(`{"id":"a","ts":1}`) + rows(`{"id":"b","ts":30,"note":"x"}`) + rows(`{"id":"b","ts":31}`),
			runKept, 0},
		{"a later row widens the event time", dedupQuery,
			pad + rows(`{"id":"a","ts":1}`) + rows(`{"id":"b","ts":30.5}`) + rows(`{"id":"a","ts":31}`),
			schemaDiffered, 0},
		{"a later row widens a key", "dedup: {api: dropDuplicates, keys: [n]}\nshuffle_partitions: 2\n",
			strings.Repeat(rows(`{"n":1}`), sniffLines) + rows(`{"n":2}`, `{"n":2.0}`, `{"n":2.5}`) + rows(`{"n":2}`),
			schemaDiffered, 0},
		{"a merge sink, a column added late", "dedup: {api: dropDuplicates, keys: [id]}\nshuffle_partitions: 2\nsink: {kind: merge, keys: [id]}\n",
			strings.Repeat(rows(`{"id":"a"}`), sniffLines) + rows(`{"id":"b","note":"x"}`),
			runKept, 0},
		{"a later key changes type", dedupQuery,
			strings.Repeat(rows(`{"id":1,"ts":0}`), sniffLines) + rows(`{"id":"b","ts":30}`) + rows(`{"id":1,"ts":31}`),
			schemaDiffered, 0},
		{"rows only after a restart", dedupQuery,
			`{"restart": true}` + "\n" + rows(`{"id":"a","ts":1}`, `{"id":"a","ts":2}`) + rows(`{"id":"c","ts":40}`),
			runKept, 0},
		{"no rows in the first lines", dedupQuery,
			strings.Repeat(`{"restart": true}`+"\n", sniffLines+1) + rows(`{"id":"a","ts":1}`),
			noSniff, 0},
		{"a bad line within the sniffed lines", dedupQuery,
			rows(`{"id":"a","ts":1}`) + rows(`{"id":"b","ts":30}`) + `{"rows": [}` + "\n",
			noSniff, 2},
		{"a bad line late", dedupQuery,
			pad + rows(`{"id":"a","ts":1}`) + rows(`{"id":"b","ts":30}`) + `{"rows": [}` + "\n",
			runFailed, 2},
		{"a bad first line", dedupQuery, `{"rows": [}` + "\n" + rows(`{"id":"a","ts":1}`), noSniff, 2},
		{"an event time that is not a time, late", dedupQuery,
			rows(`{"id":"a","ts":1}`) + rows(`{"id":"b","ts":{"x":1}}`),
			runFailed, 2},
		{"a bad value late under the first rows' schema", dedupQuery,
			rows(`{"id":"a","ts":1}`) + rows(`{"id":"b","ts":30}`) + rows(`{"id":"c","ts":"not a time"}`),
			runFailed, 2},
		{"a key column in no row", "dedup: {api: dropDuplicates, keys: [user]}\nshuffle_partitions: 2\n",
			rows(`{"id":"a","ts":1}`) + rows(`{"id":"b","ts":2}`),
			noSniff, 2},
		{"a key column only in later rows", "dedup: {api: dropDuplicates, keys: [user]}\nshuffle_partitions: 2\n",
			strings.Repeat(rows(`{"id":"a"}`), sniffLines) + rows(`{"id":"b","user":"u"}`),
			noSniff, 0},
		{"an all-columns key", "dedup: {api: dropDuplicates, keys: []}\nshuffle_partitions: 2\n",
			rows(`{"id":"a","n":1}`, `{"id":"a","n":1}`) + rows(`{"id":"a","n":2}`),
			runKept, 0},
		{"an all-columns key, a row with other columns", "dedup: {api: dropDuplicates, keys: []}\nshuffle_partitions: 2\n",
			rows(`{"id":"a","n":1}`) + rows(`{"id":"a","m":2}`),
			runKept, 0},
		{"an all-columns key, a row with other columns late", "dedup: {api: dropDuplicates, keys: []}\nshuffle_partitions: 2\n",
			strings.Repeat(rows(`{"id":"a","n":1}`), sniffLines) + rows(`{"id":"a","m":2}`),
			schemaDiffered, 0},
		{"names that differ only in case", dedupQuery,
			rows(`{"id":"a","ts":1,"x":1}`) + rows(`{"id":"b","ts":30,"X":2}`),
			noSniff, 2},
		{"names that differ only in case, late", dedupQuery,
			strings.Repeat(rows(`{"id":"a","ts":1,"x":1}`), sniffLines) + rows(`{"id":"b","ts":30,"X":2}`),
			runFailed, 2},
		{"a declared schema", "schema: \"id STRING, ts TIMESTAMP\"\n" + dedupQuery,
			rows(`{"id":"a","ts":"2024-01-01T00:00:01Z"}`) + rows(`{"id":"a","ts":"2024-01-01T00:00:02Z"}`, `{"id":"b","ts":"2024-01-01T00:00:40Z"}`),
			runKept, 0},
		{"a declared schema, a bad line late", "schema: \"id STRING, ts TIMESTAMP\"\n" + dedupQuery,
			rows(`{"id":"a","ts":"2024-01-01T00:00:01Z"}`) + rows(`{"id":"b","ts":"yesterday"}`),
			runFailed, 2},
		{"a crash that never fires: its warning", dedupQuery,
			rows(`{"id":"a","ts":1}`) + rows(`{"id":"b","ts":30}`) + `{"crash": "after-commit"}` + "\n",
			runKept, 0},
		{"a crash that never fires, a column widened later", dedupQuery,
			strings.Repeat(rows(`{"id":"b","ts":30,"n":2}`), sniffLines) + rows(`{"id":"c","ts":31,"n":2.5}`) + rows(`{"id":"d","ts":32,"n":3}`) + `{"crash": "after-commit"}` + "\n",
			runKept, 0},
		{"a crash that never fires, the event time widened later", dedupQuery,
			strings.Repeat(rows(`{"id":"b","ts":30}`), sniffLines) + rows(`{"id":"c","ts":31.5}`) + `{"crash": "after-commit"}` + "\n",
			schemaDiffered, 0},
		{"a column null in the sniffed lines, a number later, a string last", dedupQuery,
			strings.Repeat(rows(`{"id":"a","ts":1,"x":null}`), sniffLines) + rows(`{"id":"b","ts":30,"x":7}`) + rows(`{"id":"c","ts":31,"x":"seven"}`),
			runKept, 0},
		{"a column null in the sniffed lines, a number later", dedupQuery,
			strings.Repeat(rows(`{"id":"a","ts":1,"x":null}`), sniffLines) + rows(`{"id":"b","ts":30,"x":7}`),
			runKept, 0},
		{"a key null in the sniffed lines, a number later", "dedup: {api: dropDuplicates, keys: [x]}\nshuffle_partitions: 2\n",
			strings.Repeat(rows(`{"id":"a","x":null}`), sniffLines) + rows(`{"id":"b","x":7}`),
			schemaDiffered, 0},
		{"two sources", "sources:\n  - {name: web, watermark: {column: ts, delay: 10 seconds}}\n  - {name: app, watermark: {column: ts, delay: 10 seconds}}\ndedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nshuffle_partitions: 2\n",
			`{"sources": {"web": [{"id":"a","ts":1}], "app": [{"id":"a","ts":2}]}}` + "\n" + `{"sources": {"app": [{"id":"b","ts":30}]}}` + "\n",
			runKept, 0},
		{"the Pebble store", dedupQuery + "state_store: pebble\n",
			rows(`{"id":"a","ts":1}`, `{"id":"a","ts":2}`) + rows(`{"id":"b","ts":30}`) + rows(`{"id":"a","ts":31}`),
			runKept, 0},
		{"the Pebble store, a bad line late", dedupQuery + "state_store: pebble\n",
			pad + rows(`{"id":"a","ts":1}`) + rows(`{"id":"b","ts":30}`) + `{"rows": [}` + "\n",
			runFailed, 2},
		{"a table sink", dedupQuery + "sink: {kind: table}\n",
			rows(`{"id":"a","ts":1}`, `{"id":"a","ts":2}`) + rows(`{"id":"b","ts":30}`),
			runKept, 0},
		{"a crash and its restart", dedupQuery,
			rows(`{"id":"a","ts":1}`) + `{"crash": "after-offsets-write"}` + "\n" + rows(`{"id":"b","ts":30}`) + rows(`{"id":"c","ts":31}`),
			runKept, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
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
			run := func(speculative bool) (answer, speculation) {
				out := filepath.Join(dir, "out.jsonl")
				if err := os.WriteFile(out, []byte("before\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				var a answer
				defer func(p func(string)) { printWarning = p }(printWarning)
				printWarning = func(s string) { a.warns = append(a.warns, s) }
				o := Options{QueryPath: qPath, InputPath: sPath, OutPath: out}
				data := []byte(tc.query)
				q, err := query.Parse(qPath, data)
				if err != nil {
					t.Fatal(err)
				}
				if !canSpeculate(o, q) {
					t.Fatalf("canSpeculate refused %+v", o)
				}
				got := speculation(-1)
				if speculative {
					got, err = runSpeculative(o, q, data)
				} else {
					err = runChecked(o, q)
				}
				if err != nil {
					a.err = err.Error()
				}
				b, _ := os.ReadFile(out)
				a.out = string(b)
				if left, _ := filepath.Glob(filepath.Join(dir, ".out.jsonl.*")); len(left) > 0 {
					t.Fatalf("temp files left: %v", left)
				}
				if left, _ := os.ReadDir(tmp); len(left) > 0 {
					t.Fatalf("left in the temp directory: %v", left)
				}
				return a, got
			}
			want, _ := run(false)
			got, outcome := run(true)
			if outcome != tc.want {
				t.Errorf("outcome %d, want %d", outcome, tc.want)
			}
			if got.err != want.err || got.out != want.out || strings.Join(got.warns, "\n") != strings.Join(want.warns, "\n") {
				t.Fatalf("speculative:\n%+v\nthe pass then the run:\n%+v", got, want)
			}
			if (want.err != "") != (tc.code != 0) {
				t.Fatalf("error %q, want exit %d", want.err, tc.code)
			}
			if tc.code != 0 && want.out != "before\n" {
				t.Fatalf("--out changed by a refused run: %q", want.out)
			}
			if strings.HasPrefix(tc.name, "a crash that never fires") && len(want.warns) == 0 {
				t.Fatal("no warning: the case no longer shows that a kept run's warnings are printed, and a dropped one's are not")
			}
		})
	}
}

// A run goes without the pass first only where nothing it writes
// outlives it unless kept.
func TestCanSpeculate(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "steps.jsonl")
	if err := os.WriteFile(in, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	q := &query.Query{ShufflePartitions: 4}
	base := Options{InputPath: in, OutPath: out}
	if !canSpeculate(base, q) {
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
		if canSpeculate(o, q) {
			t.Errorf("%s: speculation taken", name)
		}
	}
	if canSpeculate(base, &query.Query{ShufflePartitions: maxMemoryScratchPartitions + 1}) {
		t.Error("a checkpoint on the disk: speculation taken")
	}
}

// Over random steps files (columns whose types change from row to row,
// bad values and bad lines anywhere, steps without rows) a speculative run
// answers exactly as the pass then the run, whatever became of it.
func TestSpeculativeSameAnswerProperty(t *testing.T) {
	dir := t.TempDir()
	qPath, sPath := filepath.Join(dir, "query.yaml"), filepath.Join(dir, "steps.jsonl")
	out := filepath.Join(dir, "out.jsonl")
	queries := []string{
		"dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 2\n",
		"dedup: {api: dropDuplicates, keys: [id, n]}\nshuffle_partitions: 3\n",
		"dedup: {api: dropDuplicates, keys: []}\nshuffle_partitions: 1\n",
		"schema: \"id STRING, ts TIMESTAMP, n BIGINT\"\ndedup: {api: dropDuplicates, keys: [id, ts]}\nwatermark: {column: ts, delay: 5 seconds}\nshuffle_partitions: 2\n",
		"dedup: {api: dropDuplicates, keys: [x]}\nshuffle_partitions: 2\nsink: {kind: merge, keys: [id]}\n",
		"dedup: {api: batchDropDuplicates, keys: [n]}\nshuffle_partitions: 2\nsink: {kind: table}\n",
	}
	values := map[string][]string{
		"id": {`"a"`, `"b"`, `"c"`, `1`, `2.5`, `true`, `null`, `{"x":1}`, `""`},
		"ts": {`1`, `12`, `30`, `31.5`, `"2024-01-01T00:00:10Z"`, `"soon"`, `null`, `[1]`},
		"n":  {`1`, `2`, `3.5`, `"x"`, `null`, `12345678901234567890123`},
		"x":  {`null`, `null`, `7`, `"seven"`, `{"a":1}`},
	}
	names := []string{"id", "ts", "n", "x"}
	outcomes := map[speculation]int{}
	defer func(n int) { sniffLines = n }(sniffLines)
	rapid.Check(t, func(rt *rapid.T) {
		qText := rapid.SampledFrom(queries).Draw(rt, "query")
		// Sniffing fewer lines than the file has: the run reads the rest
		// alone, and its schema may drift from the sniffed one.
		sniffLines = rapid.IntRange(1, 3).Draw(rt, "sniffLines")
		var b strings.Builder
		for range rapid.IntRange(1, 6).Draw(rt, "lines") {
			switch rapid.IntRange(0, 9).Draw(rt, "kind") {
			case 0:
				b.WriteString(`{"restart": true}` + "\n")
			case 1:
				b.WriteString(`{"rows": [` + "\n")
			case 2:
				b.WriteString(`{"rows": []}` + "\n")
			case 3:
				b.WriteString(`{"crash": "` + rapid.SampledFrom([]string{"after-offsets-write", "after-state-commit", "after-sink-write", "after-commit"}).Draw(rt, "crash") + `"}` + "\n")
			default:
				var rs []string
				for range rapid.IntRange(1, 4).Draw(rt, "rows") {
					var fs []string
					for _, n := range names {
						if rapid.IntRange(0, 5).Draw(rt, "absent") == 0 {
							continue
						}
						fs = append(fs, `"`+n+`":`+rapid.SampledFrom(values[n]).Draw(rt, n))
					}
					rs = append(rs, "{"+strings.Join(fs, ",")+"}")
				}
				b.WriteString(`{"rows": [` + strings.Join(rs, ", ") + "]}\n")
			}
		}
		if err := os.WriteFile(qPath, []byte(qText), 0o644); err != nil {
			rt.Fatal(err)
		}
		if err := os.WriteFile(sPath, []byte(b.String()), 0o644); err != nil {
			rt.Fatal(err)
		}
		answer := func(speculative bool) string {
			if err := os.WriteFile(out, []byte("before\n"), 0o644); err != nil {
				rt.Fatal(err)
			}
			var warns []string
			defer func(p func(string)) { printWarning = p }(printWarning)
			printWarning = func(s string) { warns = append(warns, s) }
			o := Options{QueryPath: qPath, InputPath: sPath, OutPath: out}
			q, err := query.Parse(qPath, []byte(qText))
			if err != nil {
				rt.Fatal(err)
			}
			if speculative {
				var s speculation
				s, err = runSpeculative(o, q, []byte(qText))
				outcomes[s]++
			} else {
				err = runChecked(o, q)
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			got, _ := os.ReadFile(out)
			return fmt.Sprintf("error %q\nwarnings %q\n%s", msg, warns, got)
		}
		if want, got := answer(false), answer(true); got != want {
			rt.Fatalf("steps:\n%s\nspeculative: %s\nthe pass then the run: %s", b.String(), got, want)
		}
	})
	// Which paths the files took (TestSpeculativeSameAnswer pins each
	// path on a file of its own; here the mix depends on rapid's seed).
	t.Logf("outcomes (kept, schema differed, run failed, no sniff): %d %d %d %d",
		outcomes[runKept], outcomes[schemaDiffered], outcomes[runFailed], outcomes[noSniff])
}

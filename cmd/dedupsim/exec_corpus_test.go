package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The exec verb's bad-input corpus (issue 10): every query field out of
// range, every steps-line defect, every flag, UTF-8, the size caps, and
// checkpoints a run must refuse. Each case states its exit status and
// fragments of the one-line error.

const (
	cq  = "dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 1 second}\n"
	cs  = `{"rows": [{"id":"a","ts":1}]}` + "\n"
	cid = "6b1c2a56-8f2e-4c1e-9d2b-0a1b2c3d4e5f"
)

// execQ is a case with a query and a steps file.
func execQ(name, query, steps string, want ...string) badCase {
	return badCase{name: name, files: map[string]string{"q.yaml": query, "s.jsonl": steps},
		args: []string{"exec", "--query", "$DIR/q.yaml", "--input", "$DIR/s.jsonl"}, code: 2, want: want}
}

// badQuery is a query defect reported at its line.
func badQuery(name, query string, want ...string) badCase {
	return execQ("query/"+name, query, cs, append([]string{"q.yaml"}, want...)...)
}

// badSteps is a steps defect reported at its line.
func badSteps(name, query, steps string, want ...string) badCase {
	return execQ("steps/"+name, query, steps, append([]string{"s.jsonl"}, want...)...)
}

// offsets0 is a valid offsets/0 with the given metadata and source lines.
func offsets0(meta string, sources ...string) string {
	return "v1\n" + meta + "\n" + strings.Join(sources, "\n")
}

const goodMeta = `{"batchWatermarkMs":0,"batchTimestampMs":1000,"conf":{"spark.sql.shuffle.partitions":"4"}}`

// badCkpt runs exec on a checkpoint made of files (relative to ck/).
func badCkpt(name string, files map[string]string, steps string, want ...string) badCase {
	all := map[string]string{"q.yaml": cq, "s.jsonl": steps}
	for n, c := range files {
		all["ck/"+n] = c
	}
	return badCase{name: "checkpoint/" + name, files: all,
		args: []string{"exec", "--query", "$DIR/q.yaml", "--input", "$DIR/s.jsonl", "--checkpoint", "$DIR/ck"}, code: 2, want: want}
}

// ckpt0 is a checkpoint whose batch 0 covered n rows, committed, with
// files replaced or added by over (an empty content deletes the file).
func ckpt0(over map[string]string) map[string]string {
	f := map[string]string{
		"metadata":  `{"id":"` + cid + `"}` + "\n",
		"offsets/0": offsets0(goodMeta, "1"),
		"commits/0": "v1\n" + `{"nextBatchWatermarkMs":0}`,
	}
	for n, c := range over {
		if c == "" {
			delete(f, n)
		} else {
			f[n] = c
		}
	}
	return f
}

func execCorpus() []badCase {
	var cases []badCase
	add := func(c ...badCase) { cases = append(cases, c...) }

	// Flags.
	add(
		badCase{name: "flag/no query", args: []string{"exec", "--input", "x"}, code: 2, want: []string{"--query and --input are required"}},
		badCase{name: "flag/no input", args: []string{"exec", "--query", "x"}, code: 2, want: []string{"--query and --input are required"}},
		badCase{name: "flag/no flags", args: []string{"exec"}, code: 2, want: []string{"required"}},
		badCase{name: "flag/unknown flag", args: []string{"exec", "--qurey", "x"}, code: 2, want: []string{"unknown flag"}},
		badCase{name: "flag/positional argument", args: []string{"exec", "extra"}, code: 2, want: []string{"unknown command"}},
		badCase{name: "flag/seed negative", args: []string{"exec", "--seed", "-1"}, code: 2, want: []string{"--seed"}},
		badCase{name: "flag/seed not a number", args: []string{"exec", "--seed", "one"}, code: 2, want: []string{"--seed"}},
		badCase{name: "flag/seed overflow", args: []string{"exec", "--seed", "18446744073709551616"}, code: 2, want: []string{"--seed"}},
		badCase{name: "flag/format unknown", files: map[string]string{"q.yaml": cq, "s.jsonl": cs},
			args: []string{"exec", "--query", "$DIR/q.yaml", "--input", "$DIR/s.jsonl", "--format", "csv"}, code: 2, want: []string{`--format "csv"`, "jsonl or table"}},
		badCase{name: "flag/query missing", files: map[string]string{"s.jsonl": cs},
			args: []string{"exec", "--query", "$DIR/none.yaml", "--input", "$DIR/s.jsonl"}, code: 2, want: []string{"none.yaml"}},
		badCase{name: "flag/query is a folder", files: map[string]string{"s.jsonl": cs, "d/x": ""},
			args: []string{"exec", "--query", "$DIR/d", "--input", "$DIR/s.jsonl"}, code: 2, want: []string{"read query"}},
		badCase{name: "flag/input missing", files: map[string]string{"q.yaml": cq},
			args: []string{"exec", "--query", "$DIR/q.yaml", "--input", "$DIR/none.jsonl"}, code: 2, want: []string{"none.jsonl"}},
		badCase{name: "flag/input is a folder", files: map[string]string{"q.yaml": cq, "d/x": ""},
			args: []string{"exec", "--query", "$DIR/q.yaml", "--input", "$DIR/d"}, code: 2, want: []string{"$DIR/d", "is a directory"}},
		badCase{name: "flag/out is a folder", files: map[string]string{"q.yaml": cq, "s.jsonl": cs, "d/x": ""},
			args: []string{"exec", "--query", "$DIR/q.yaml", "--input", "$DIR/s.jsonl", "--out", "$DIR/d"}, code: 2, want: []string{"--out", "is a directory"}},
		badCase{name: "flag/out in a missing folder", files: map[string]string{"q.yaml": cq, "s.jsonl": cs},
			args: []string{"exec", "--query", "$DIR/q.yaml", "--input", "$DIR/s.jsonl", "--out", "$DIR/no/such/out.jsonl"}, code: 2, want: []string{"does not exist"}},
		badCase{name: "flag/checkpoint is a file", files: map[string]string{"q.yaml": cq, "s.jsonl": cs, "ck": "x"},
			args: []string{"exec", "--query", "$DIR/q.yaml", "--input", "$DIR/s.jsonl", "--checkpoint", "$DIR/ck"}, code: 2, want: []string{"--checkpoint", "not a folder"}},
	)

	// Query fields, each out of its domain.
	add(
		badQuery("empty", "", "empty document"),
		badQuery("null document", "~\n", "empty document"),
		badQuery("a list", "- dedup\n", "want a mapping"),
		badQuery("syntax error", "dedup: {api: dropDuplicates\n", "invalid YAML"),
		badQuery("tab indentation", "dedup:\n\tapi: dropDuplicates\n", "q.yaml:2"),
		badQuery("unknown field", cq+"shuffle_partition: 3\n", "q.yaml:3", `did you mean "shuffle_partitions"`),
		badQuery("misplaced keys", "dedup: {api: dropDuplicates}\nkeys: [id]\n", "dedup.keys"),
		badQuery("no dedup", "watermark: {column: ts, delay: 1s}\n", `missing required field "dedup"`),
		badQuery("no api", "dedup: {keys: [id]}\n", `missing required field "api"`),
		badQuery("api misspelt", "dedup: {api: dropDuplicate}\n", "q.yaml:1", "dedup.api"),
		badQuery("api wrong case", "dedup: {api: DropDuplicates}\n", "dedup.api"),
		badQuery("api a number", "dedup: {api: 3}\n", "dedup.api"),
		badQuery("api a list", "dedup: {api: [dropDuplicates]}\n", "dedup.api", "want a string"),
		badQuery("api null", "dedup: {api: null}\n", "dedup.api"),
		badQuery("keys a string", "dedup: {api: dropDuplicates, keys: id}\n", "dedup.keys", "want a list"),
		badQuery("keys twice", "dedup: {api: dropDuplicates, keys: [id, id]}\n", "listed twice"),
		badQuery("key empty", "dedup: {api: dropDuplicates, keys: ['']}\n", "dedup.keys[0]", "must not be empty"),
		badQuery("key a mapping", "dedup: {api: dropDuplicates, keys: [{a: 1}]}\n", "dedup.keys[0]"),
		badQuery("1025 keys", "dedup: {api: dropDuplicates, keys: ["+strings.Repeat("k,", 1024)+"k]}\n", "1025 columns: at most 1024"),
		badQuery("200000 keys", "dedup: {api: dropDuplicates, keys: ["+strings.Repeat("k,", 200_000)+"k]}\n", "at most 1024"),
		badQuery("key name too long", "dedup: {api: dropDuplicates, keys: ["+strings.Repeat("k", 1025)+"]}\n", "column name of 1025 bytes"),
		badQuery("field twice", "dedup: {api: dropDuplicates}\ndedup: {api: dropDuplicates}\n", "given twice"),
		badQuery("within watermark without watermark", "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\n", "without watermark"),
		badQuery("watermark no column", "dedup: {api: dropDuplicates}\nwatermark: {delay: 1s}\n", `missing required field "column"`),
		badQuery("watermark no delay", "dedup: {api: dropDuplicates}\nwatermark: {column: ts}\n", `missing required field "delay"`),
		badQuery("watermark empty column", "dedup: {api: dropDuplicates}\nwatermark: {column: '', delay: 1s}\n", "must not be empty"),
		badQuery("delay negative", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: -5 seconds}\n", "q.yaml:2", "should not be negative"),
		badQuery("delay garbage", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: soon}\n", "watermark.delay"),
		badQuery("delay a list", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: [1]}\n", "watermark.delay"),
		badQuery("delay overflow", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: 1000000000000 days}\n", "watermark.delay"),
		badQuery("delay go overflow", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: 9999999999h}\n", "watermark.delay"),
		badQuery("shuffle partitions 0", cq+"shuffle_partitions: 0\n", "q.yaml:3", "must be from 1 to 65536"),
		badQuery("shuffle partitions negative", cq+"shuffle_partitions: -4\n", "must be from 1 to 65536"),
		badQuery("shuffle partitions too many", cq+"shuffle_partitions: 65537\n", "must be from 1 to 65536"),
		badQuery("shuffle partitions overflow", cq+"shuffle_partitions: 99999999999999999999\n", "shuffle_partitions"),
		badQuery("shuffle partitions a word", cq+"shuffle_partitions: four\n", "want an integer"),
		badQuery("shuffle partitions a fraction", cq+"shuffle_partitions: 1.5\n", "want an integer"),
		badQuery("shuffle partitions a string", cq+"shuffle_partitions: '4'\n", "want an integer"),
		badQuery("state store unknown", cq+"state_store: rocksdb\n", "state_store", "memory or pebble"),
		badQuery("watermark policy unknown", cq+"watermark_policy: avg\n", "watermark_policy"),
		badQuery("no data batches a word", cq+"no_data_batches: yes please\n", "want true or false"),
		badQuery("name a mapping", cq+"name: {a: 1}\n", "name"),
		badQuery("sink not a mapping", cq+"sink: table\n", "sink"),
		badQuery("sink kind unknown", cq+"sink: {kind: delta}\n", "sink.kind"),
		badQuery("app id empty", cq+"sink: {kind: table, app_id: ''}\n", "sink.app_id", "must not be empty"),
		badQuery("app id on append", cq+"sink: {kind: append, app_id: x}\n", "only for sink kind table"),
		badQuery("generate app id on merge", cq+"sink: {kind: merge, generate_app_id: true}\n", "only for sink kind table"),
		badQuery("generate app id with app id", cq+"sink: {kind: table, app_id: x, generate_app_id: true}\n", "cannot be combined"),
		badQuery("lookback on table", cq+"sink: {kind: table, lookback: 1 day}\n", "only for sink kind merge"),
		badQuery("lookback negative", cq+"sink: {kind: merge, lookback: -1 day}\n", "should not be negative"),
		badQuery("lookback garbage", cq+"sink: {kind: merge, lookback: a week}\n", "sink.lookback"),
		badQuery("lookback without watermark", "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: merge, lookback: 1 day}\n", "needs a watermark"),
		badQuery("sink keys on table", cq+"sink: {kind: table, keys: [id]}\n", "only for sink kind merge"),
		badQuery("sink keys 2000", cq+"sink: {kind: merge, keys: ["+strings.Repeat("k,", 1999)+"k]}\n", "at most 1024"),
		badQuery("sources empty", "dedup: {api: dropDuplicates}\nsources: []\n", "at least one source"),
		badQuery("sources twice the name", "dedup: {api: dropDuplicates}\nsources: [{name: a}, {name: a}]\n", "used twice"),
		badQuery("source without name", "dedup: {api: dropDuplicates}\nsources: [{watermark: {column: ts, delay: 1s}}]\n", `missing required field "name"`),
		badQuery("sources and watermark", cq+"sources: [{name: a}]\n", "cannot be combined with the top-level watermark"),
		badQuery("sources two event-time columns", "dedup: {api: dropDuplicates}\nsources:\n  - {name: a, watermark: {column: ts, delay: 1s}}\n  - {name: b, watermark: {column: et, delay: 1s}}\n", "More than one event time columns"),
		badQuery("first source without watermark", "dedup: {api: dropDuplicates}\nsources:\n  - {name: a}\n  - {name: b, watermark: {column: ts, delay: 1s}}\n", "sources[0]", "has no watermark"),
		badQuery("257 sources", "dedup: {api: dropDuplicates}\nsources: ["+func() string {
			var b []string
			for i := range 257 {
				b = append(b, fmt.Sprintf("{name: s%d}", i))
			}
			return strings.Join(b, ", ")
		}()+"]\n", "257 sources: at most 256"),
		badQuery("drop future events without watermark", "dedup: {api: dropDuplicates, keys: [id]}\ndrop_future_events: 1 hour\n", "needs a watermark"),
		badQuery("drop future events negative", cq+"drop_future_events: -1 hour\n", "drop_future_events"),
		badQuery("merge key", "base: &b {api: dropDuplicates}\ndedup:\n  <<: *b\n", "q.yaml"),
		badQuery("yaml merge in dedup", "dedup:\n  <<: {api: dropDuplicates}\n", "merge keys"),
		badQuery("unknown anchor", "dedup: *nope\n", "unknown anchor"),
		badQuery("tag int on api", "dedup: {api: !!int dropDuplicates, keys: [id]}\n", "q.yaml:1", "YAML tag !!int is not supported"),
		badQuery("tag str on partitions", cq+"shuffle_partitions: !!str 4\n", "q.yaml:3", "YAML tag !!str"),
		badQuery("tag float on delay", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: !!float 1}\n", "YAML tag !!float"),
		badQuery("tag bool", cq+"no_data_batches: !!bool true\n", "YAML tag !!bool"),
		badQuery("tag custom", "dedup: !query {api: dropDuplicates}\n", "YAML tag !query"),
		badQuery("tag binary key", "dedup: {api: dropDuplicates, keys: [!!binary aWQ=]}\n", "YAML tag !!binary"),
		badQuery("tag on a field name", "!!str dedup: {api: dropDuplicates}\n", "YAML tag !!str"),
		badQuery("tag null", cq+"name: !!null\n", "YAML tag !!null"),
		badQuery("second document", cq+"---\n", "more than one YAML document"),
		badQuery("second document with a query", cq+"---\n"+cq, "more than one YAML document"),
		badQuery("second document a comment", cq+"---\n# nothing\n", "more than one YAML document"),
		badQuery("invalid UTF-8", "dedup: {api: dropDuplicates, keys: [\xff]}\n", "q.yaml"),
		badQuery("control character", "dedup: {api: dropDuplicates, keys: [\x01]}\n", "q.yaml"),
		badQuery("larger than 1 MiB", "# "+strings.Repeat("x", 1<<20)+"\n"+cq, "larger than 1048576 bytes"),
	)
	add(badCase{name: "query/dev zero", files: map[string]string{"s.jsonl": cs},
		args: []string{"exec", "--query", "/dev/zero", "--input", "$DIR/s.jsonl"}, code: 2, want: []string{"/dev/zero", "larger than"}})

	// Steps lines, each defect.
	multi := "dedup: {api: dropDuplicates, keys: [id]}\nsources:\n  - {name: web, watermark: {column: ts, delay: 1s}}\n  - {name: app, watermark: {column: ts, delay: 1s}}\n"
	all := "dedup: {api: dropDuplicates}\n"
	merge := cq + "sink: {kind: merge, keys: [id, region]}\n"
	add(
		badSteps("not json", cq, "{\"rows\": [\n", "s.jsonl:1", "invalid JSON"),
		badSteps("second line not json", cq, cs+"{rows}\n", "s.jsonl:2"),
		badSteps("an array", cq, "[1]\n", "s.jsonl:1", "want a JSON object"),
		badSteps("a string", cq, `"rows"`+"\n", "s.jsonl:1"),
		badSteps("unknown field", cq, `{"rowz": []}`+"\n", "s.jsonl:1", "rowz"),
		badSteps("empty step", cq, "{}\n", "empty step"),
		badSteps("two kinds", cq, `{"rows": [], "restart": true}`+"\n", "on one line"),
		badSteps("field twice", cq, `{"rows": [], "rows": []}`+"\n", "given twice"),
		badSteps("data after the object", cq, `{"restart": true} {"restart": true}`+"\n", "s.jsonl:1"),
		badSteps("rows null", cq, `{"rows": null}`+"\n", "want an array of row objects, got null"),
		badSteps("rows an object", cq, `{"rows": {"id":"a"}}`+"\n", "want an array"),
		badSteps("row a number", cq, `{"rows": [1]}`+"\n", "rows[0]", "want a JSON object"),
		badSteps("row a list", cq, `{"rows": [[{"id":"a","ts":1}]]}`+"\n", "rows[0]"),
		// A key or event-time column that no row has: Spark cannot resolve it
		// (a column that only some rows have is null in the others).
		badSteps("missing key column", cq, `{"rows": [{"ts":1}]}`+"\n", "UNRESOLVED_COLUMN", `column "id" is in no row`),
		badSteps("missing event time", cq, `{"rows": [{"id":"a"}]}`+"\n", "UNRESOLVED_COLUMN", `column "ts" is in no row`),
		badSteps("key column twice", cq, `{"rows": [{"id":"a","id":"b","ts":1}]}`+"\n", `column "id" appears twice`),
		badSteps("event time a word", cq, `{"rows": [{"id":"a","ts":"yesterday"}]}`+"\n", `event-time column "ts"`),
		badSteps("event time a boolean", cq, `{"rows": [{"id":"a","ts":true}]}`+"\n", `event-time column "ts"`),
		badSteps("event time an object", cq, `{"rows": [{"id":"a","ts":{"s":1}}]}`+"\n", `event-time column "ts"`),
		badSteps("event time NaN", cq, `{"rows": [{"id":"a","ts":"NaN"}]}`+"\n", `event-time column "ts"`),
		badSteps("event time year 10000", cq, `{"rows": [{"id":"a","ts":253402300800}]}`+"\n", `event-time column "ts"`),
		badSteps("event time before year 0", cq, `{"rows": [{"id":"a","ts":-62167219201}]}`+"\n", `event-time column "ts"`),
		badSteps("event time 1e400", cq, `{"rows": [{"id":"a","ts":1e400}]}`+"\n", `event-time column "ts"`),
		badSteps("event time no offset", cq, `{"rows": [{"id":"a","ts":"2024-01-01T00:00:00"}]}`+"\n", `event-time column "ts"`),
		badSteps("event time month 13", cq, `{"rows": [{"id":"a","ts":"2024-13-01T00:00:00Z"}]}`+"\n", `event-time column "ts"`),
		badSteps("event time Feb 30", cq, `{"rows": [{"id":"a","ts":"2024-02-30T00:00:00Z"}]}`+"\n", `event-time column "ts"`),
		badSteps("second row bad", cq, `{"rows": [{"id":"a","ts":1},{"id":"b","ts":"soon"}]}`+"\n", "rows[1]"),
		badSteps("crash unknown point", cq, cs+`{"crash": "before-commit"}`+"\n", "s.jsonl:2", "before-commit"),
		badSteps("crash a number", cq, `{"crash": 3}`+"\n", "want a crash point string"),
		badSteps("crash batch negative", cq, `{"crash": "after-commit", "batch": -1}`+"\n", "batch", "a whole number >= 0"),
		badSteps("crash batch a fraction", cq, `{"crash": "after-commit", "batch": 1.5}`+"\n", "batch"),
		badSteps("crash batch overflow", cq, `{"crash": "after-commit", "batch": 9223372036854775808}`+"\n", "batch"),
		badSteps("batch on rows", cq, `{"rows": [], "batch": 1}`+"\n", "only a crash step takes a batch id"),
		badSteps("batch twice", cq, `{"crash": "after-commit", "batch": 1, "batch": 2}`+"\n", "s.jsonl:1"),
		badSteps("once on restart", cq, `{"restart": true, "once": true}`+"\n", "only a rows or sources step takes once"),
		badSteps("once false", cq, `{"rows": [], "once": false}`+"\n", "once", "want true"),
		badSteps("tick false", cq, `{"tick": false}`+"\n", "tick", "want true"),
		badSteps("restart false", cq, `{"restart": false}`+"\n", "restart", "want true"),
		badSteps("restart a string", cq, `{"restart": "yes"}`+"\n", "restart"),
		badSteps("rows on a multi-source query", multi, `{"rows": [{"id":"a","ts":1}]}`+"\n", "name them with"),
		badSteps("unknown source", multi, `{"sources": {"tv": []}}`+"\n", `unknown source "tv"`),
		badSteps("sources a list", multi, `{"sources": []}`+"\n", "sources"),
		badSteps("source rows null", multi, `{"sources": {"web": null}}`+"\n", "sources.web"),
		badSteps("source twice", multi, `{"sources": {"web": [], "web": []}}`+"\n", "given twice"),
		badSteps("source row bad", multi, `{"sources": {"app": [{"id":"a","ts":"soon"}]}}`+"\n", "sources.app[0]"),
		// With every column as the key, rows with different fields are no
		// longer refused: they are read under one schema, an absent field
		// null, as Spark reads them (engine/testdata/typed.txt); a field given
		// twice still is.
		badSteps("all columns field twice", all, `{"rows": [{"a":1,"a":2}]}`+"\n", "appears twice"),
		badSteps("merge row without a sink.keys column", merge, `{"rows": [{"id":"a","ts":1,"region":"eu"}]}`+"\n"+`{"rows": [{"id":"b","ts":2}]}`+"\n", "s.jsonl:2", "rows[0]", "sink.keys", `missing key column "region"`),
		badSteps("merge row sink.keys column twice", merge, `{"rows": [{"id":"a","ts":1,"region":"eu","region":"us"}]}`+"\n", "sink.keys", "appears twice"),
		// UTF-8 and Unicode.
		badSteps("invalid UTF-8 in a key", cq, `{"rows": [{"id":"a`+"\xff"+`","ts":1}]}`+"\n", "s.jsonl:1", "invalid UTF-8"),
		badSteps("invalid UTF-8 in another column", cq, `{"rows": [{"id":"a","ts":1,"note":"`+"\xfe"+`"}]}`+"\n", "invalid UTF-8"),
		badSteps("invalid UTF-8 in a field name", cq, `{"rows": [{"id":"a","ts":1,"n`+"\x80"+`":1}]}`+"\n", "invalid UTF-8"),
		badSteps("invalid UTF-8 outside the rows", cq, `{"rows": [], "`+"\xc3"+`": 1}`+"\n", "invalid UTF-8"),
		badSteps("truncated UTF-8 sequence", cq, `{"rows": [{"id":"`+"\xe2\x82"+`","ts":1}]}`+"\n", "invalid UTF-8"),
		badSteps("UTF-8 encoded surrogate", cq, `{"rows": [{"id":"`+"\xed\xa0\x80"+`","ts":1}]}`+"\n", "invalid UTF-8"),
		badSteps("overlong UTF-8", cq, `{"rows": [{"id":"`+"\xc0\xaf"+`","ts":1}]}`+"\n", "invalid UTF-8"),
		badSteps("lone high surrogate", cq, `{"rows": [{"id":"a\ud800","ts":1}]}`+"\n", "rows[0]", "lone high surrogate"),
		badSteps("lone low surrogate", cq, `{"rows": [{"id":"a\udfff","ts":1}]}`+"\n", "rows[0]", "lone low surrogate"),
		badSteps("reversed surrogate pair", cq, `{"rows": [{"id":"\ude00\ud83d","ts":1}]}`+"\n", "surrogate"),
		badSteps("high surrogate then a letter", cq, `{"rows": [{"id":"\ud83dA","ts":1}]}`+"\n", "lone high surrogate"),
		badSteps("surrogate in another column", cq, `{"rows": [{"id":"a","ts":1,"x":["\udbff"]}]}`+"\n", "surrogate"),
		badSteps("NUL byte", cq, "{\"rows\": [{\"id\":\"a\x00\",\"ts\":1}]}\n", "s.jsonl:1"),
		badSteps("bad escape", cq, `{"rows": [{"id":"a\q","ts":1}]}`+"\n", "s.jsonl:1"),
		badSteps("short unicode escape", cq, `{"rows": [{"id":"a\u12","ts":1}]}`+"\n", "s.jsonl:1"),
		// Typed rows (schema: declared or inferred).
		badQuery("schema not a string or list", cq+"schema: 3\n", "q.yaml:3", "schema", "DDL string"),
		badQuery("schema unknown type", cq+"schema: \"id STRNG, ts TIMESTAMP\"\n", "q.yaml:3", "unknown type", "did you mean STRING?"),
		badQuery("schema type not modelled", cq+"schema: \"id FLOAT, ts TIMESTAMP\"\n", "q.yaml:3", "not modelled"),
		badQuery("schema without a key column", cq+"schema: \"idd STRING, ts TIMESTAMP\"\n", "q.yaml:3", `Cannot resolve column name "id" among (idd, ts)`, `did you mean "idd"?`),
		badQuery("schema duplicate column", cq+"schema: [\"id STRING\", {ID: STRING}, {ts: TIMESTAMP}]\n", "q.yaml:3", "schema[1]", "differ only in case"),
		badSteps("timestamp string not modelled", cq+"schema: \"id STRING, ts TIMESTAMP\"\n", `{"rows": [{"id":"a","ts":"2024-01-02"}]}`+"\n",
			"s.jsonl:1", "rows[0]", `event-time column "ts"`, "RFC 3339"),
		badSteps("key column in no row", cq, `{"rows": [{"idx":"a","ts":1}]}`+"\n", "UNRESOLVED_COLUMN", `"id"`),
		badSteps("names differ only in case", cq, `{"rows": [{"id":"a","ts":1},{"ID":"b","ts":2}]}`+"\n", "s.jsonl:1", "rows[1]", "differ only in case"),
	)
	add(badCase{name: "steps/line longer than 256 MiB", files: map[string]string{"q.yaml": cq},
		args: []string{"exec", "--query", "$DIR/q.yaml", "--input", "/dev/zero"}, code: 2, want: []string{"/dev/zero:1", "line longer than 268435456 bytes"}})

	// Checkpoints a run must refuse: one line, exit 2, the file named.
	maxMs := "253402300799999"
	add(
		badCkpt("steps shorter than the checkpoint", ckpt0(nil), "", "s.jsonl", `planned source "default" up to row 1`, "offsets/0", "holds only 0 rows"),
		badCkpt("offset beyond the steps", ckpt0(map[string]string{"offsets/0": offsets0(goodMeta, "7")}), cs+cs, "up to row 7", "holds only 2 rows"),
		badCkpt("watermark 2^63-1", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":9223372036854775807,"batchTimestampMs":1000,"conf":{}}`, "1")}), cs,
			"checkpoint error: $DIR/ck/offsets/0", "batchWatermarkMs 9223372036854775807 is outside"),
		badCkpt("watermark beyond year 9999", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":253402300800000,"batchTimestampMs":1000,"conf":{}}`, "1")}), cs,
			"checkpoint error: $DIR/ck/offsets/0", "9999-12-31"),
		badCkpt("watermark negative", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":-1,"batchTimestampMs":1000,"conf":{}}`, "1")}), cs, "offsets/0", "batchWatermarkMs -1"),
		badCkpt("watermark a fraction", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":1.5,"batchTimestampMs":1000,"conf":{}}`, "1")}), cs, "offsets/0", "want a whole number"),
		badCkpt("watermark a string", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":"0","batchTimestampMs":1000,"conf":{}}`, "1")}), cs, "offsets/0", "want a whole number"),
		badCkpt("watermark missing", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchTimestampMs":1000,"conf":{}}`, "1")}), cs, "offsets/0", `missing field "batchWatermarkMs"`),
		badCkpt("watermark twice", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":0,"batchWatermarkMs":5,"batchTimestampMs":1000,"conf":{}}`, "1")}), cs, "offsets/0", "given twice"),
		badCkpt("timestamp 2^63-1", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":0,"batchTimestampMs":9223372036854775807,"conf":{}}`, "1")}), cs, "offsets/0", "batchTimestampMs"),
		badCkpt("unknown metadata field", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{},"x":1}`, "1")}), cs, "offsets/0", `unknown field "x"`),
		badCkpt("partitions 0 pinned", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{"spark.sql.shuffle.partitions":"0"}}`, "1")}), cs, "offsets/0", "spark.sql.shuffle.partitions"),
		badCkpt("partitions a word pinned", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{"spark.sql.shuffle.partitions":"four"}}`, "1")}), cs, "offsets/0", "not a partition count"),
		badCkpt("policy unknown pinned", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{"spark.sql.streaming.multipleWatermarkPolicy":"avg"}}`, "1")}), cs, "offsets/0", "not a watermark policy"),
		badCkpt("provider unknown pinned", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{"spark.sql.streaming.stateStore.providerClass":"x.Y"}}`, "1")}), cs, "offsets/0", "not a state store provider"),
		badCkpt("conf value a number", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{"spark.sql.shuffle.partitions":4}}`, "1")}), cs, "offsets/0", "want a string"),
		badCkpt("offsets header v2", ckpt0(map[string]string{"offsets/0": "v2\n" + goodMeta + "\n1"}), cs, "offsets/0", "not an offset log entry"),
		badCkpt("offsets garbage", ckpt0(map[string]string{"offsets/0": "garbage"}), cs, "offsets/0"),
		badCkpt("offsets not UTF-8", ckpt0(map[string]string{"offsets/0": "v1\n\xff"}), cs, "offsets/0", "not UTF-8"),
		badCkpt("source offset negative", ckpt0(map[string]string{"offsets/0": offsets0(goodMeta, "-1")}), cs, "offsets/0", "not a row count"),
		badCkpt("source offset a fraction", ckpt0(map[string]string{"offsets/0": offsets0(goodMeta, "1.5")}), cs, "offsets/0", "not a row count"),
		badCkpt("source offset leading zero", ckpt0(map[string]string{"offsets/0": offsets0(goodMeta, "01")}), cs, "offsets/0"),
		badCkpt("source offset not JSON", ckpt0(map[string]string{"offsets/0": offsets0(goodMeta, "{")}), cs, "offsets/0", "source offset is not JSON"),
		badCkpt("commit watermark 2^63-1", ckpt0(map[string]string{"commits/0": "v1\n{\"nextBatchWatermarkMs\":9223372036854775807}"}), cs, "checkpoint error: $DIR/ck/commits/0", "nextBatchWatermarkMs 9223372036854775807 is outside"),
		badCkpt("commit watermark beyond year 9999", ckpt0(map[string]string{"commits/0": "v1\n{\"nextBatchWatermarkMs\":" + maxMs + "1}"}), cs, "commits/0", "is outside"),
		badCkpt("commit watermark behind the batch", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":5000,"batchTimestampMs":6000,"conf":{}}`, "1")}), cs, "commits/0", "never goes back"),
		badCkpt("commit garbage", ckpt0(map[string]string{"commits/0": "garbage"}), cs, "commits/0", "not a commit log entry"),
		badCkpt("commit unknown field", ckpt0(map[string]string{"commits/0": "v1\n{\"nextBatchWatermarkMs\":0,\"x\":1}"}), cs, "commits/0", `unknown field "x"`),
		badCkpt("commit extra line", ckpt0(map[string]string{"commits/0": "v1\n{\"nextBatchWatermarkMs\":0}\nmore"}), cs, "commits/0"),
		badCkpt("commit without offsets", ckpt0(map[string]string{"commits/1": "v1\n{\"nextBatchWatermarkMs\":0}"}), cs, "commits/1", "a commit without offsets/1"),
		badCkpt("batch file name with a leading zero", ckpt0(map[string]string{"offsets/01": offsets0(goodMeta, "1")}), cs, "offsets/01", "not a batch id"),
		badCkpt("batch file name negative", ckpt0(map[string]string{"commits/-1": "v1\n{}"}), cs, "commits/-1", "not a batch id"),
		badCkpt("missing previous offsets", ckpt0(map[string]string{"offsets/0": "", "commits/0": "", "offsets/1": offsets0(goodMeta, "1")}), cs, "offsets/0", "missing: batch 0 doesn't exist"),
		badCkpt("watermark goes back", ckpt0(map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":5000,"batchTimestampMs":6000,"conf":{}}`, "1"), "commits/0": "v1\n{\"nextBatchWatermarkMs\":5000}", "offsets/1": offsets0(goodMeta, "1")}), cs+cs, "offsets/1", "never goes back"),
		badCkpt("metadata garbage", ckpt0(map[string]string{"metadata": "garbage"}), cs, "checkpoint error: $DIR/ck/metadata"),
		badCkpt("metadata id not a uuid", ckpt0(map[string]string{"metadata": `{"id":"../../etc"}`}), cs, "metadata", "not a query id"),
		badCkpt("metadata unknown field", ckpt0(map[string]string{"metadata": `{"id":"` + cid + `","x":1}`}), cs, "metadata", `unknown field "x"`),
		badCkpt("metadata id twice", ckpt0(map[string]string{"metadata": `{"id":"` + cid + `","id":"` + cid + `"}`}), cs, "metadata", "given twice"),
		badCkpt("metadata larger than 1 MiB", ckpt0(map[string]string{"metadata": strings.Repeat(" ", 1<<20+1)}), cs, "metadata", "not a checkpoint file"),
		badCkpt("schema garbage", ckpt0(map[string]string{"state/0/0/_metadata/schema": "garbage"}), cs, "state/0/0/_metadata/schema", "not a state schema file"),
		badCkpt("schema unknown type", ckpt0(map[string]string{"state/0/0/_metadata/schema": "v2\n{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"blob\",\"nullable\":true}]}\n{\"type\":\"struct\",\"fields\":[{\"name\":\"__dummy__\",\"type\":\"null\",\"nullable\":true}]}\n"}), cs, "schema", `type "blob"`),
		badCkpt("operator metadata garbage", ckpt0(map[string]string{"state/0/_metadata/metadata": "v1\nnope"}), cs, "state/0/_metadata/metadata"),
		badCkpt("operator metadata wrong id", ckpt0(map[string]string{"state/0/_metadata/metadata": `v1` + "\n" + `{"operatorInfo":{"operatorId":3,"operatorName":"dedupe"},"stateStoreInfo":[{"storeName":"default","numColsPrefixKey":0,"numPartitions":4}]}`}), cs, "state/0/_metadata/metadata", "operatorId 3"),
		badCkpt("operator metadata 0 partitions", ckpt0(map[string]string{"state/0/_metadata/metadata": `v1` + "\n" + `{"operatorInfo":{"operatorId":0,"operatorName":"dedupe"},"stateStoreInfo":[{"storeName":"default","numColsPrefixKey":0,"numPartitions":0}]}`}), cs, "numPartitions"),
		badCkpt("operator folder with a leading zero", ckpt0(map[string]string{"state/00/_metadata/metadata": "v1\n{}"}), cs, "state/00", "not an operator id"),
		badCkpt("state delta missing", ckpt0(nil), cs+`{"rows": [{"id":"b","ts":2}]}`+"\n", "checkpoint error: $DIR/ck/state/0/", "1.delta: missing"),
		badCkpt("state delta garbage", ckpt0(map[string]string{"state/0/0/1.delta": "garbage", "state/0/1/1.delta": "x", "state/0/2/1.delta": "x", "state/0/3/1.delta": "x"}),
			cs+`{"rows": [{"id":"b","ts":2}]}`+"\n", "checkpoint error: $DIR/ck/state/0/", "1.delta"),
	)
	// A refused query (bad input in the query file, with Spark's class).
	add(badCase{name: "checkpoint/key change refused", files: map[string]string{
		"q.yaml": "dedup: {api: dropDuplicates, keys: [id, other]}\n", "s.jsonl": `{"rows": [{"id":"a","other":1}]}` + "\n",
		"ck/metadata":                   `{"id":"` + cid + `"}`,
		"ck/offsets/0":                  offsets0(goodMeta, "1"),
		"ck/commits/0":                  "v1\n{\"nextBatchWatermarkMs\":0}",
		"ck/state/0/0/_metadata/schema": "v2\n{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"string\",\"nullable\":true}]}\n{\"type\":\"struct\",\"fields\":[{\"name\":\"__dummy__\",\"type\":\"null\",\"nullable\":true}]}\n",
	}, args: []string{"exec", "--query", "$DIR/q.yaml", "--input", "$DIR/s.jsonl", "--checkpoint", "$DIR/ck"}, code: 2, want: []string{"q.yaml", "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"}})
	return cases
}

// TestExecBadInputCorpus runs the exec corpus. Its size is logged for the
// issue notes (go test -run ExecBadInputCorpus -v).
func TestExecBadInputCorpus(t *testing.T) {
	n := badInputCorpus(t, execCorpus())
	t.Logf("exec bad-input corpus: %d cases", n)
}

// TestExecOutUntouchedOnBadInput: a refused input leaves --out as it was
// (issue 10 item 8), and --out is never written through a symlink.
func TestExecOutUntouchedOnBadInput(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	q := write(t, dir, "q.yaml", cq)
	good := write(t, dir, "good.jsonl", cs)
	// The last row's event time is not a time (a row without one is read
	// with a null event time, as Spark reads an absent field).
	bad := write(t, dir, "bad.jsonl", cs+strings.Repeat(cs, 100)+`{"rows": [{"id":"x","ts":"soon"}]}`+"\n")
	out := write(t, dir, "out.jsonl", "previous content\n")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"bad steps on the last line", []string{"--query", q, "--input", bad}},
		{"bad query", []string{"--query", write(t, dir, "bad.yaml", "dedup: {api: nope}\n"), "--input", good}},
		{"bad format", []string{"--query", q, "--input", good, "--format", "xml"}},
	} {
		_, errOut, code := run(bin, append(append([]string{"exec"}, tc.args...), "--out", out)...)
		if code != 2 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, errOut)
		}
		if b, _ := os.ReadFile(out); string(b) != "previous content\n" {
			t.Fatalf("%s: --out changed to %q", tc.name, b)
		}
	}
	// A good run replaces it, and leaves no temp file.
	if _, errOut, code := run(bin, "exec", "--query", q, "--input", good, "--out", out); code != 0 {
		t.Fatalf("good run: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), `"batchId":0`) {
		t.Fatalf("--out after a good run: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Fatalf("temp file left: %s", e.Name())
		}
	}
	// A symlink at --out is refused and its target untouched.
	target := write(t, dir, "target.txt", "keep me\n")
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(bin, "exec", "--query", q, "--input", good, "--out", link)
	if code != 2 || !strings.Contains(errOut, "symbolic link") {
		t.Fatalf("symlink --out: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Fatalf("symlink target changed to %q", b)
	}
	// A device is written as it is.
	if _, errOut, code := run(bin, "exec", "--query", q, "--input", good, "--out", "/dev/null"); code != 0 {
		t.Fatalf("--out /dev/null: exit %d: %s", code, errOut)
	}
}

// TestExecUnicodeKeysStayDistinct: the five rows (lone
// surrogates, U+FFFD, invalid bytes) were one key; now the invalid ones
// are refused and distinct valid strings stay distinct.
func TestExecUnicodeKeysStayDistinct(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	q := write(t, dir, "q.yaml", "dedup: {api: dropDuplicates, keys: [id]}\n")
	s := write(t, dir, "s.jsonl", `{"rows": [{"id":"a"},{"id":"a`+"\xef\xbf\xbd"+`"},{"id":"a\ufffd"},{"id":"a\ud83d\ude00"},{"id":"a\u0000"}]}`+"\n")
	out, errOut, code := run(bin, "exec", "--query", q, "--input", s)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Four distinct strings (the escaped and the literal U+FFFD are one).
	if !strings.Contains(out, `"numInputRows":5`) || !strings.Contains(out, `"numDroppedDuplicateRows":1`) {
		t.Fatalf("want 5 rows in, 1 duplicate dropped:\n%s", out)
	}
}

package main

import (
	"strings"
	"testing"
)

// The engine verb's bad-input corpus (issue 10 items 20, 21): every
// numeric and duration flag out of range, the required flags, the query,
// and checkpoints the engine must refuse before it contacts Kafka. No
// broker is needed: every case ends before the first Kafka call (the one
// run-failure case points at a closed port).

// engineArgs are the flags of a run that would be fine but for extra.
func engineArgs(extra ...string) []string {
	return append([]string{"engine", "--query", "$DIR/q.yaml", "--checkpoint", "$DIR/ck", "--bootstrap", "127.0.0.1:1",
		"--input-topic", "in", "--sink", "table", "--table", "$DIR/t", "--kafka-timeout", "200ms", "--until-idle"}, extra...)
}

func engineFlag(name string, want string, extra ...string) badCase {
	return badCase{name: "flag/" + name, files: map[string]string{"q.yaml": cq}, args: engineArgs(extra...), code: 2, want: []string{want}}
}

// engineCkpt is a checkpoint the engine must refuse: exit 2, one line,
// the file named. The Kafka source's offsets are {"in":{"0":N}}.
func engineCkpt(name string, over map[string]string, want ...string) badCase {
	f := map[string]string{
		"q.yaml":       cq,
		"ck/metadata":  `{"id":"` + cid + `"}`,
		"ck/offsets/0": offsets0(goodMeta, `{"in":{"0":1}}`),
		"ck/commits/0": "v1\n{\"nextBatchWatermarkMs\":0}",
	}
	for n, c := range over {
		if c == "" {
			delete(f, "ck/"+n)
		} else {
			f["ck/"+n] = c
		}
	}
	return badCase{name: "checkpoint/" + name, files: f, args: engineArgs(), code: 2, want: want}
}

func engineCorpus() []badCase {
	var cases []badCase
	add := func(c ...badCase) { cases = append(cases, c...) }
	add(
		badCase{name: "flag/nothing", args: []string{"engine"}, code: 2, want: []string{"--query, --checkpoint, --bootstrap and --input-topic are required"}},
		badCase{name: "flag/no checkpoint", args: []string{"engine", "--query", "q", "--bootstrap", "b:1", "--input-topic", "t"}, code: 2, want: []string{"are required"}},
		badCase{name: "flag/no bootstrap", args: []string{"engine", "--query", "q", "--checkpoint", "c", "--input-topic", "t"}, code: 2, want: []string{"are required"}},
		badCase{name: "flag/no input topic", args: []string{"engine", "--query", "q", "--checkpoint", "c", "--bootstrap", "b:1"}, code: 2, want: []string{"are required"}},
		badCase{name: "flag/unknown flag", args: []string{"engine", "--max-batch", "3"}, code: 2, want: []string{"unknown flag"}},
		badCase{name: "flag/positional argument", args: []string{"engine", "x"}, code: 2, want: []string{"unknown command"}},
		engineFlag("sink unknown", `--sink "delta"`, "--sink", "delta"),
		engineFlag("table sink without table", "needs --table DIR", "--table", ""),
		engineFlag("merge sink without table", "--sink merge needs --table", "--sink", "merge", "--table", ""),
		engineFlag("plain sink without topic", "--sink plain needs --output-topic", "--sink", "plain"),
		engineFlag("transactional sink without topic", "--sink transactional needs --output-topic", "--sink", "transactional"),
		engineFlag("max batches -1", "--max-batches -1", "--max-batches", "-1"),
		engineFlag("max batches huge", "--max-batches 4294967296", "--max-batches", "4294967296"),
		engineFlag("max batches a word", "--max-batches", "--max-batches", "many"),
		engineFlag("max batches a fraction", "--max-batches", "--max-batches", "1.5"),
		engineFlag("trigger -1s", "--trigger-interval -1s", "--trigger-interval", "-1s"),
		engineFlag("trigger 1ns", "[1ms, 24h]", "--trigger-interval", "1ns"),
		engineFlag("trigger 25h", "--trigger-interval 25h0m0s", "--trigger-interval", "25h"),
		engineFlag("trigger without unit", "--trigger-interval", "--trigger-interval", "100"),
		engineFlag("trigger a word", "--trigger-interval", "--trigger-interval", "soon"),
		engineFlag("kafka timeout 0s", "--kafka-timeout 0s", "--kafka-timeout", "0s"),
		engineFlag("kafka timeout -1s", "--kafka-timeout -1s", "--kafka-timeout", "-1s"),
		engineFlag("kafka timeout 1us", "[1ms, 24h]", "--kafka-timeout", "1us"),
		engineFlag("kafka timeout 48h", "--kafka-timeout 48h0m0s", "--kafka-timeout", "48h"),
		engineFlag("fetch offset num retries 0", "--fetch-offset-num-retries 0: fetchOffset.numRetries 0: want an attempt count in [1, 1000]", "--fetch-offset-num-retries", "0"),
		engineFlag("fetch offset num retries 1001", "--fetch-offset-num-retries 1001", "--fetch-offset-num-retries", "1001"),
		engineFlag("fetch offset num retries a word", "--fetch-offset-num-retries", "--fetch-offset-num-retries", "few"),
		engineFlag("fetch offset retry interval -1", "--fetch-offset-retry-interval-ms -1: fetchOffset.retryIntervalMs -1: want milliseconds in [0, 3600000]", "--fetch-offset-retry-interval-ms", "-1"),
		engineFlag("fetch offset retry interval 2h", "--fetch-offset-retry-interval-ms 7200000", "--fetch-offset-retry-interval-ms", "7200000"),
		engineFlag("fetch offset retry interval with unit", "--fetch-offset-retry-interval-ms", "--fetch-offset-retry-interval-ms", "10ms"),
		engineFlag("crash from -1", "--crash-from -1", "--crash-from", "-1"),
		engineFlag("crash until -1", "--crash-until -1", "--crash-until", "-1"),
		engineFlag("crash from a word", "--crash-from", "--crash-from", "now"),
		engineFlag("crash until before from", "is not after --crash-from", "--crash-at", "after-commit", "--crash-from", "2000", "--crash-until", "1000"),
		engineFlag("crash until equal to from", "could never fire", "--crash-at", "after-commit", "--crash-from", "2000", "--crash-until", "2000"),
		engineFlag("crash at unknown point", `crash point "before-commit"`, "--crash-at", "before-commit"),
		engineFlag("crash at negative batch", `batch "-1" is not a batch id`, "--crash-at", "after-commit:-1"),
		engineFlag("crash at word batch", `batch "x" is not a batch id`, "--crash-at", "after-commit:x"),
		engineFlag("crash at empty batch", "is not a batch id", "--crash-at", "after-commit:"),
		engineFlag("clock two parts", "VIRT0_MS:WALL0_MS:SCALE", "--clock", "1:2"),
		engineFlag("clock four parts", "VIRT0_MS:WALL0_MS:SCALE", "--clock", "1:2:3:4"),
		engineFlag("clock scale 0", "positive scale", "--clock", "0:0:0"),
		engineFlag("clock scale negative", "positive scale", "--clock", "0:0:-1"),
		engineFlag("clock scale NaN", "positive scale", "--clock", "0:0:NaN"),
		engineFlag("clock scale Inf", "positive scale", "--clock", "0:0:Inf"),
		engineFlag("clock scale 1e7", "SCALE at most 1e+06", "--clock", "0:0:1e7"),
		engineFlag("clock virt0 beyond year 9999", "years 0000-9999", "--clock", "253402300800000:0:1"),
		engineFlag("clock wall0 negative", "years 0000-9999", "--clock", "0:-5:1"),
		engineFlag("clock virt0 a fraction", "integer times", "--clock", "1.5:0:1"),
		engineFlag("bootstrap empty entry", "--bootstrap", "--bootstrap", "127.0.0.1:1,,127.0.0.1:2"),
		engineFlag("bootstrap a space", "--bootstrap", "--bootstrap", "127.0.0.1:1, 127.0.0.1:2"),
		engineFlag("input topic empty", "--input-topic: a topic name must not be empty", "--input-topic", ""),
		engineFlag("app id empty", "--app-id: must not be empty", "--app-id", ""),
		engineFlag("two topics for one source", "has 1 sources and 2 --input-topic", "--input-topic", "in2"),
		engineFlag("starting offsets garbage", "startingOffsets", "--starting-offsets", "{oops"),
		engineFlag("starting offsets another topic", "startingOffsets", "--starting-offsets", `{"other":{"0":1}}`),
		engineFlag("starting offsets below earliest", "startingOffsets", "--starting-offsets", `{"in":{"0":-3}}`),
		engineFlag("starting offsets bad partition", "startingOffsets", "--starting-offsets", `{"in":{"x":1}}`),
	)
	// The query file.
	for _, qc := range []struct{ name, doc, want string }{
		{"query tag", "dedup: {api: !!int dropDuplicates, keys: [id]}\n", "YAML tag !!int"},
		{"query second document", cq + "---\n", "more than one YAML document"},
		{"query unknown field", cq + "shufle_partitions: 2\n", "shuffle_partitions"},
		{"query negative delay", "dedup: {api: dropDuplicates}\nwatermark: {column: ts, delay: -1s}\n", "should not be negative"},
		{"query 2000 keys", "dedup: {api: dropDuplicates, keys: [" + strings.Repeat("k,", 1999) + "k]}\n", "at most 1024"},
		{"query larger than 1 MiB", "# " + strings.Repeat("x", 1<<20) + "\n" + cq, "larger than"},
	} {
		add(badCase{name: "query/" + qc.name, files: map[string]string{"q.yaml": qc.doc}, args: engineArgs(), code: 2, want: []string{"q.yaml", qc.want}})
	}
	add(badCase{name: "query/dev zero", args: []string{"engine", "--query", "/dev/zero", "--checkpoint", "$DIR/ck", "--bootstrap", "127.0.0.1:1", "--input-topic", "in", "--sink", "table", "--table", "$DIR/t"},
		code: 2, want: []string{"/dev/zero", "larger than"}})
	add(badCase{name: "query/missing", args: []string{"engine", "--query", "$DIR/none.yaml", "--checkpoint", "$DIR/ck", "--bootstrap", "127.0.0.1:1", "--input-topic", "in", "--sink", "table", "--table", "$DIR/t"},
		code: 2, want: []string{"none.yaml"}})

	// Checkpoints refused at start, before any Kafka call.
	add(
		engineCkpt("watermark 2^63-1", map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":9223372036854775807,"batchTimestampMs":1000,"conf":{}}`, `{"in":{"0":1}}`)},
			"checkpoint error: $DIR/ck/offsets/0", "batchWatermarkMs 9223372036854775807 is outside"),
		engineCkpt("commit watermark 2^63-1", map[string]string{"commits/0": "v1\n{\"nextBatchWatermarkMs\":9223372036854775807}"},
			"checkpoint error: $DIR/ck/commits/0", "nextBatchWatermarkMs"),
		engineCkpt("kafka offset of another topic", map[string]string{"offsets/0": offsets0(goodMeta, `{"other":{"0":1}}`)}, "checkpoint error: $DIR/ck/offsets/0", `"other" is not the source's topic`),
		engineCkpt("kafka offset negative", map[string]string{"offsets/0": offsets0(goodMeta, `{"in":{"0":-1}}`)}, "offsets/0", "has offset -1"),
		engineCkpt("kafka offset a row count", map[string]string{"offsets/0": offsets0(goodMeta, "1")}, "offsets/0", "source 0"),
		engineCkpt("kafka partition not a number", map[string]string{"offsets/0": offsets0(goodMeta, `{"in":{"p":1}}`)}, "offsets/0", "not a partition number"),
		engineCkpt("offsets garbage", map[string]string{"offsets/0": "garbage"}, "checkpoint error: $DIR/ck/offsets/0"),
		engineCkpt("metadata garbage", map[string]string{"metadata": "{"}, "checkpoint error: $DIR/ck/metadata"),
		engineCkpt("commit without offsets", map[string]string{"commits/3": "v1\n{\"nextBatchWatermarkMs\":0}"}, "checkpoint error: $DIR/ck/commits/3"),
		engineCkpt("missing previous offsets", map[string]string{"offsets/0": "", "commits/0": "", "offsets/1": offsets0(goodMeta, `{"in":{"0":1}}`)}, "checkpoint error: $DIR/ck/offsets/0", "doesn't exist"),
		engineCkpt("pinned partitions 0", map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{"spark.sql.shuffle.partitions":"0"}}`, `{"in":{"0":1}}`)}, "offsets/0", "partition count"),
		engineCkpt("schema garbage", map[string]string{"state/0/0/_metadata/schema": "v2\n{}"}, "state/0/0/_metadata/schema"),
		engineCkpt("operator metadata garbage", map[string]string{"state/0/_metadata/metadata": "garbage"}, "state/0/_metadata/metadata"),
		engineCkpt("initial offsets garbage", map[string]string{"offsets/0": "", "commits/0": "", "sources/0/0": "garbage"}, "checkpoint error: $DIR/ck/sources/0/0", "initial offsets"),
		engineCkpt("initial offsets of another topic", map[string]string{"offsets/0": "", "commits/0": "", "sources/0/0": "\x00v1\n{\"x\":{\"0\":0}}"}, "sources/0/0", "not the source's topic"),
		engineCkpt("commit watermark behind the batch", map[string]string{"offsets/0": offsets0(`{"batchWatermarkMs":5000,"batchTimestampMs":6000,"conf":{}}`, `{"in":{"0":1}}`)}, "commits/0", "never goes back"),
		engineCkpt("batch file name with a leading zero", map[string]string{"offsets/00": "x"}, "offsets/00", "not a batch id"),
	)
	// A query the checkpoint refuses is bad input too (a supervisor must
	// not restart it), with Spark's error class.
	add(badCase{name: "checkpoint/operator change refused", files: map[string]string{
		"q.yaml":                        "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 1 second}\n",
		"ck/metadata":                   `{"id":"` + cid + `"}`,
		"ck/offsets/0":                  offsets0(goodMeta, `{"in":{"0":1}}`),
		"ck/commits/0":                  "v1\n{\"nextBatchWatermarkMs\":0}",
		"ck/state/0/_metadata/metadata": `v1` + "\n" + `{"operatorInfo":{"operatorId":0,"operatorName":"dedupe"},"stateStoreInfo":[{"storeName":"default","numColsPrefixKey":0,"numPartitions":4}]}`,
	}, args: engineArgs(), code: 2, want: []string{"q.yaml", "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA"}})
	// A broker that does not answer is a failed run (1): a supervisor
	// restarts it.
	add(badCase{name: "run/broker unreachable", files: map[string]string{"q.yaml": cq}, args: engineArgs(), code: 1, want: []string{"engine:"}})
	return cases
}

// TestEngineBadInputCorpus runs the engine corpus; its size is logged for
// the issue notes.
func TestEngineBadInputCorpus(t *testing.T) {
	n := badInputCorpus(t, engineCorpus())
	t.Logf("engine bad-input corpus: %d cases", n)
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/analyze"
)

// TestAnalyzeBadInput is analyze's bad-input corpus: every flag out of its
// domain, every kind of bad line, and inputs that would take unbounded
// memory. Each exits 2 with one line naming the flag (with its range in
// human units) or file:line: column.
func TestAnalyzeBadInput(t *testing.T) {
	ev := map[string]string{"events.jsonl": "{\"id\":\"a\",\"ts\":1}\n{\"id\":\"a\",\"ts\":2}\n"}
	with := func(name, body string) map[string]string { return map[string]string{name: body} }
	line2 := func(l string) map[string]string { return with("events.jsonl", "{\"id\":\"a\",\"ts\":1}\n"+l+"\n") }
	a := func(args ...string) []string { return append([]string{"analyze"}, args...) }
	f := "$DIR/events.jsonl"
	huge := `{"id":"a","ts":1,"pad":"` + strings.Repeat("x", analyze.MaxLineBytes) + "\"}\n"
	cases := []badCase{
		{name: "no file", args: a(), code: 2, want: []string{"accepts 1 arg(s), received 0"}},
		{name: "two files", files: ev, args: a(f, f), code: 2, want: []string{"accepts 1 arg(s), received 2"}},
		{name: "missing file", args: a("$DIR/absent.jsonl"), code: 2, want: []string{"analyze: open $DIR/absent.jsonl", "no such file"}},
		{name: "folder", files: ev, args: a("$DIR"), code: 2, want: []string{"analyze: $DIR is a folder"}},
		{name: "percentile 0", files: ev, args: a("--percentile", "0", f), code: 2, want: []string{"analyze: --percentile 0: out of range, want (0, 100]"}},
		{name: "percentile NaN", files: ev, args: a("--percentile", "NaN", f), code: 2, want: []string{"--percentile NaN: out of range, want (0, 100]"}},
		{name: "percentile 101", files: ev, args: a("--percentile", "101", f), code: 2, want: []string{"--percentile 101: out of range"}},
		{name: "percentile not a number", files: ev, args: a("--percentile", "high", f), code: 2, want: []string{`invalid argument "high" for "--percentile"`}},
		{name: "margin NaN", files: ev, args: a("--margin", "NaN", f), code: 2, want: []string{"analyze: --margin NaN: out of range, want [0, 10]"}},
		{name: "margin Inf", files: ev, args: a("--margin", "Inf", f), code: 2, want: []string{"--margin +Inf: out of range, want [0, 10]"}},
		{name: "margin 1e9", files: ev, args: a("--margin", "1e9", f), code: 2, want: []string{"--margin 1e+09: out of range, want [0, 10]"}},
		{name: "margin negative", files: ev, args: a("--margin", "-0.5", f), code: 2, want: []string{"--margin -0.5: out of range"}},
		{name: "rate-percentile 0", files: ev, args: a("--rate-percentile", "0", f), code: 2, want: []string{"--rate-percentile 0: out of range, want (0, 100]"}},
		{name: "rate-percentile 100.5", files: ev, args: a("--rate-percentile", "100.5", f), code: 2, want: []string{"--rate-percentile 100.5: out of range"}},
		{name: "rate-percentile -Inf", files: ev, args: a("--rate-percentile", "-Inf", f), code: 2, want: []string{"--rate-percentile -Inf: out of range"}},
		{name: "rate-window 0", files: ev, args: a("--rate-window", "0s", f), code: 2, want: []string{`analyze: --rate-window "0s": out of range, want [1s, 24h]`}},
		{name: "rate-window 500ms", files: ev, args: a("--rate-window", "500ms", f), code: 2, want: []string{"want [1s, 24h]"}},
		{name: "rate-window 25h", files: ev, args: a("--rate-window", "25 hours", f), code: 2, want: []string{"want [1s, 24h]"}},
		{name: "rate-window negative", files: ev, args: a("--rate-window", "-1m", f), code: 2, want: []string{`--rate-window "-1m": out of range`}},
		{name: "rate-window not a duration", files: ev, args: a("--rate-window", "hourly", f), code: 2, want: []string{"--rate-window: invalid interval"}},
		{name: "rate-window overflows", files: ev, args: a("--rate-window", "106751991 days", f), code: 2, want: []string{"--rate-window"}},
		{name: "rate NaN", files: ev, args: a("--rate", "NaN", f), code: 2, want: []string{"analyze: --rate NaN: out of range, want (0, 1 billion] keys/s"}},
		{name: "rate 0", files: ev, args: a("--rate", "0", f), code: 2, want: []string{"--rate 0: out of range, want (0, 1 billion] keys/s"}},
		{name: "rate negative", files: ev, args: a("--rate", "-5", f), code: 2, want: []string{"--rate -5: out of range"}},
		{name: "rate 2e9", files: ev, args: a("--rate", "2e9", f), code: 2, want: []string{"--rate 2e+09: out of range"}},
		{name: "rate Inf", files: ev, args: a("--rate", "+Inf", f), code: 2, want: []string{"--rate +Inf: out of range"}},
		{name: "bytes-per-key NaN", files: ev, args: a("--bytes-per-key", "NaN", f), code: 2, want: []string{"analyze: --bytes-per-key NaN: out of range, want [1 B, 1 MB]"}},
		{name: "bytes-per-key 0", files: ev, args: a("--bytes-per-key", "0", f), code: 2, want: []string{"--bytes-per-key 0: out of range, want [1 B, 1 MB]"}},
		{name: "bytes-per-key Inf", files: ev, args: a("--bytes-per-key", "Inf", f), code: 2, want: []string{"--bytes-per-key +Inf: out of range"}},
		{name: "partitions 0", files: ev, args: a("--partitions", "0", f), code: 2, want: []string{"--partitions 0: out of range, want [1, 1,000,000]"}},
		{name: "partitions negative", files: ev, args: a("--partitions", "-3", f), code: 2, want: []string{"--partitions -3: out of range"}},
		{name: "partitions 2e6", files: ev, args: a("--partitions", "2000000", f), code: 2, want: []string{"--partitions 2000000: out of range"}},
		{name: "max-keys 0", files: ev, args: a("--max-keys", "0", f), code: 2, want: []string{"--max-keys 0: out of range, want [1, 2,147,483,647]"}},
		{name: "max-keys negative", files: ev, args: a("--max-keys", "-1", f), code: 2, want: []string{"--max-keys -1: out of range"}},
		{name: "max-keys 2^31", files: ev, args: a("--max-keys", "2147483648", f), code: 2, want: []string{"--max-keys 2147483648: out of range"}},
		{name: "future-tolerance 0", files: ev, args: a("--future-tolerance", "0s", f), code: 2, want: []string{`--future-tolerance "0s": out of range, want [1ms, 365d]`}},
		{name: "future-tolerance negative", files: ev, args: a("--future-tolerance", "-1h", f), code: 2, want: []string{`--future-tolerance "-1h": out of range`}},
		{name: "future-tolerance 400 days", files: ev, args: a("--future-tolerance", "400 days", f), code: 2, want: []string{"want [1ms, 365d]"}},
		{name: "future-tolerance overflows", files: ev, args: a("--future-tolerance", "106751 days", f), code: 2, want: []string{"want [1ms, 365d]"}},
		{name: "future-tolerance not a duration", files: ev, args: a("--future-tolerance", "soon", f), code: 2, want: []string{"--future-tolerance: invalid interval"}},
		{name: "time-unit misspelt", files: ev, args: a("--time-unit", "mss", f), code: 2, want: []string{`analyze: --time-unit "mss": unknown unit (did you mean ms?); want s, ms or us`}},
		{name: "time-unit word", files: ev, args: a("--time-unit", "milliseconds", f), code: 2, want: []string{"(did you mean ms?)"}},
		{name: "time-unit ns", files: ev, args: a("--time-unit", "hours", f), code: 2, want: []string{"want s, ms or us"}},
		{name: "key empty", files: ev, args: a("--key", ",", f), code: 2, want: []string{"--key has an empty column name"}},
		{name: "key twice", files: ev, args: a("--key", "id,id", f), code: 2, want: []string{`analyze: --key names "id" twice`}},
		{name: "time empty", files: ev, args: a("--time", "", f), code: 2, want: []string{"--time names no column"}},
		{name: "unknown flag", files: ev, args: a("--percentil", "99", f), code: 2, want: []string{"unknown flag: --percentil"}},
		{name: "line not JSON", files: line2("{\"id\":"), args: a(f), code: 2, want: []string{"events.jsonl:2: invalid JSON"}},
		{name: "line an array", files: line2("[1,2]"), args: a(f), code: 2, want: []string{"events.jsonl:2: row is an array, want a JSON object"}},
		{name: "key missing", files: line2(`{"ts":3}`), args: a(f), code: 2, want: []string{"events.jsonl:2: id: missing"}},
		{name: "time missing", files: line2(`{"id":"b"}`), args: a(f), code: 2, want: []string{"events.jsonl:2: ts: missing"}},
		{name: "time null", files: line2(`{"id":"b","ts":null}`), args: a(f), code: 2, want: []string{"events.jsonl:2: ts: event time is null"}},
		{name: "time a word", files: line2(`{"id":"b","ts":"soon"}`), args: a(f), code: 2, want: []string{"events.jsonl:2: ts: invalid RFC 3339 timestamp"}},
		{name: "time a boolean", files: line2(`{"id":"b","ts":true}`), args: a(f), code: 2, want: []string{"events.jsonl:2: ts: want a number"}},
		{name: "time beyond 9999", files: line2(`{"id":"b","ts":1e30}`), args: a(f), code: 2, want: []string{"events.jsonl:2: ts: event time 1e30 seconds is out of range"}},
		{name: "epoch ms read as seconds", files: line2(`{"id":"b","ts":1717200000000}`), args: a(f), code: 2, want: []string{"events.jsonl:2: ts:", "give --time-unit ms or us"}},
		{name: "epoch ms out of range", files: line2(`{"id":"b","ts":1717200000000000000}`), args: a("--time-unit", "ms", f), code: 2, want: []string{"events.jsonl:2: ts: event time 1717200000000000000 milliseconds is out of range (years 0000-9999)"}},
		{name: "epoch us a boolean", files: line2(`{"id":"b","ts":false}`), args: a("--time-unit", "us", f), code: 2, want: []string{"events.jsonl:2: ts: want a number (microseconds since the epoch)"}},
		{name: "column twice", files: line2(`{"id":"b","id":"c","ts":1}`), args: a(f), code: 2, want: []string{"events.jsonl:2: id: appears twice in the row"}},
		{name: "arrival null", files: with("events.jsonl", `{"id":"a","ts":1,"at":null}`+"\n"), args: a("--arrival", "at", f), code: 2, want: []string{"events.jsonl:1: at: arrival time is null"}},
		{name: "arrival missing", files: with("events.jsonl", `{"id":"a","ts":1}`+"\n"), args: a("--arrival", "at", f), code: 2, want: []string{"events.jsonl:1: at: missing"}},
		{name: "line over 16 MiB", files: with("events.jsonl", "{\"id\":\"a\",\"ts\":1}\n"+huge), args: a(f), code: 2, want: []string{"events.jsonl:2: line longer than 16 MiB, the limit of one event"}},
		{name: "line over 16 MiB with --skip-bad", files: with("events.jsonl", huge), args: a("--skip-bad", f), code: 2, want: []string{"events.jsonl:1: line longer than 16 MiB"}},
		{name: "no newlines", files: with("events.jsonl", strings.Repeat("{}", analyze.MaxLineBytes/2+1)), args: a(f), code: 2, want: []string{"events.jsonl:1: line longer than 16 MiB", "a file without newlines"}},
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		cases = append(cases, badCase{name: "/dev/zero", args: a("/dev/zero"), code: 2, want: []string{"/dev/zero:1: line longer than 16 MiB"}})
	}
	t.Logf("analyze: %d bad inputs", badInputCorpus(t, cases))
}

// TestSizeBadInput is size's bad-input corpus.
func TestSizeBadInput(t *testing.T) {
	s := func(args ...string) []string {
		return append([]string{"size", "--rate", "20000", "--delay", "1h"}, args...)
	}
	bare := func(args ...string) []string { return append([]string{"size"}, args...) }
	cases := []badCase{
		{name: "no rate", args: bare("--delay", "1h"), code: 2, want: []string{"size: --rate is required"}},
		{name: "no delay", args: bare("--rate", "10"), code: 2, want: []string{"size: --delay is required"}},
		{name: "argument", args: s("extra"), code: 2, want: []string{`unknown command "extra"`}},
		{name: "rate NaN", args: bare("--rate", "NaN", "--delay", "1h"), code: 2, want: []string{"size: --rate NaN: out of range, want (0, 1 billion] keys/s"}},
		{name: "rate Inf", args: bare("--rate", "Inf", "--delay", "1h"), code: 2, want: []string{"size: --rate +Inf: out of range"}},
		{name: "rate -Inf", args: bare("--rate", "-Inf", "--delay", "1h"), code: 2, want: []string{"size: --rate -Inf: out of range"}},
		{name: "rate 0", args: bare("--rate", "0", "--delay", "1h"), code: 2, want: []string{"size: --rate 0: out of range"}},
		{name: "rate negative", args: bare("--rate", "-1", "--delay", "1h"), code: 2, want: []string{"size: --rate -1: out of range"}},
		{name: "rate 2e9", args: bare("--rate", "2e9", "--delay", "1h"), code: 2, want: []string{"size: --rate 2e+09: out of range"}},
		{name: "rate not a number", args: bare("--rate", "fast", "--delay", "1h"), code: 2, want: []string{`invalid argument "fast" for "--rate"`}},
		{name: "delay negative", args: bare("--rate", "1", "--delay", "-1s"), code: 2, want: []string{`size: --delay "-1s": out of range, want [0s, 365d]`}},
		{name: "delay 400 days", args: bare("--rate", "1", "--delay", "400 days"), code: 2, want: []string{`size: --delay "400 days": out of range, want [0s, 365d]`}},
		{name: "delay overflows", args: bare("--rate", "1", "--delay", "106751991167 days"), code: 2, want: []string{"size: --delay"}},
		{name: "delay not a duration", args: bare("--rate", "1", "--delay", "soon"), code: 2, want: []string{"size: --delay: invalid interval"}},
		{name: "delay empty", args: bare("--rate", "1", "--delay", ""), code: 2, want: []string{"size: --delay: invalid interval"}},
		{name: "bytes-per-key NaN", args: s("--bytes-per-key", "NaN"), code: 2, want: []string{"size: --bytes-per-key NaN: out of range, want [1 B, 1 MB]"}},
		{name: "bytes-per-key 0", args: s("--bytes-per-key", "0"), code: 2, want: []string{"size: --bytes-per-key 0: out of range"}},
		{name: "bytes-per-key 2e6", args: s("--bytes-per-key", "2e6"), code: 2, want: []string{"size: --bytes-per-key 2e+06: out of range"}},
		{name: "bytes-per-key Inf", args: s("--bytes-per-key", "Inf"), code: 2, want: []string{"size: --bytes-per-key +Inf: out of range"}},
		{name: "partitions 0", args: s("--partitions", "0"), code: 2, want: []string{"size: --partitions 0: out of range, want [1, 1,000,000]"}},
		{name: "partitions 2e6", args: s("--partitions", "2000000"), code: 2, want: []string{"size: --partitions 2000000: out of range"}},
		{name: "memory NaNGB", args: s("--memory", "NaNGB"), code: 2, want: []string{`size: --memory "NaNGB" is not a size such as 64GB or 512MiB`}},
		{name: "memory InfGB", args: s("--memory", "InfGB"), code: 2, want: []string{`size: --memory "InfGB" is not a size`}},
		{name: "memory negative", args: s("--memory", "-1GB"), code: 2, want: []string{`size: --memory -1GB: out of range, want (0 B, 1 PB]`}},
		{name: "memory 0", args: s("--memory", "0"), code: 2, want: []string{"want (0 B, 1 PB]"}},
		{name: "memory 2PB", args: s("--memory", "2PB"), code: 2, want: []string{"want (0 B, 1 PB]"}},
		{name: "memory a word", args: s("--memory", "lots"), code: 2, want: []string{`size: --memory "lots" is not a size`}},
		{name: "memory empty", args: s("--memory", ""), code: 2, want: []string{`size: --memory "" is not a size`}},
		{name: "api misspelt", args: s("--api", "dropDuplicate"), code: 2, want: []string{`size: --api "dropDuplicate": unknown API (did you mean dropDuplicates?); want dropDuplicatesWithinWatermark, dropDuplicates or batchDropDuplicates`}},
		{name: "api misspelt within", args: s("--api", "dropDuplicatesWithinWatermrk"), code: 2, want: []string{"(did you mean dropDuplicatesWithinWatermark?)"}},
		{name: "api lower case", args: s("--api", "dropduplicates"), code: 2, want: []string{"(did you mean dropDuplicates?)"}},
		{name: "api unknown", args: s("--api", "distinct"), code: 2, want: []string{`--api "distinct": unknown API; want`}},
		{name: "executors 0", args: s("--executors", "0", "--executor-memory", "8g"), code: 2, want: []string{"size: --executors 0: out of range, want [1, 100,000]"}},
		{name: "executors negative", args: s("--executors", "-1"), code: 2, want: []string{"size: --executors -1: out of range"}},
		{name: "executors 200,000", args: s("--executors", "200000"), code: 2, want: []string{"size: --executors 200000: out of range"}},
		{name: "executor-memory fraction", args: s("--executors", "10", "--executor-memory", "1.5t"), code: 2, want: []string{`size: --executor-memory "1.5t": Spark's memory strings take whole numbers`, "write 1536g"}},
		{name: "executor-memory suffix", args: s("--executors", "10", "--executor-memory", "8x"), code: 2, want: []string{`--executor-memory "8x": unknown suffix "x"`}},
		{name: "executor-memory GiB", args: s("--executors", "10", "--executor-memory", "8GiB"), code: 2, want: []string{`unknown suffix "gib"`}},
		{name: "executor-memory space", args: s("--executors", "10", "--executor-memory", "8 g"), code: 2, want: []string{"(did you mean 8g?)"}},
		{name: "executor-memory below Spark's floor", args: s("--executors", "10", "--executor-memory", "300m"), code: 2, want: []string{`--executor-memory "300m" (300 MiB): out of range, want [450m, 16t]`}},
		{name: "executor-memory 17t", args: s("--executors", "10", "--executor-memory", "17t"), code: 2, want: []string{"want [450m, 16t]"}},
		{name: "executor-memory overflows", args: s("--executors", "10", "--executor-memory", "99999999999t"), code: 2, want: []string{`"99999999999t" is too large`}},
		{name: "executor-memory negative", args: s("--executors", "10", "--executor-memory", "-8g"), code: 2, want: []string{"is not a JVM memory string"}},
		{name: "executor-memory empty", args: s("--executors", "10", "--executor-memory", ""), code: 2, want: []string{"is not a JVM memory string"}},
		{name: "executor-memory without executors", args: s("--executor-memory", "8g"), code: 2, want: []string{"size: --executor-memory needs --executors"}},
		{name: "memory and executors", args: s("--memory", "64GB", "--executors", "10"), code: 2, want: []string{"size: give --memory (the total for state) or --executors and --executor-memory"}},
		{name: "memory-fraction NaN", args: s("--executors", "10", "--executor-memory", "8g", "--memory-fraction", "NaN"), code: 2, want: []string{"size: --memory-fraction NaN: out of range, want (0, 1]"}},
		{name: "memory-fraction 0", args: s("--executors", "10", "--executor-memory", "8g", "--memory-fraction", "0"), code: 2, want: []string{"--memory-fraction 0: out of range"}},
		{name: "memory-fraction 1.5", args: s("--executors", "10", "--executor-memory", "8g", "--memory-fraction", "1.5"), code: 2, want: []string{"--memory-fraction 1.5: out of range"}},
		{name: "memory-fraction without executor-memory", args: s("--memory-fraction", "0.3"), code: 2, want: []string{"size: --memory-fraction needs --executor-memory"}},
		{name: "store misspelt", args: s("--measure", "--store", "pebbel"), code: 2, want: []string{`size: --store "pebbel": unknown store (did you mean pebble?)`}},
		{name: "store without measure", args: s("--store", "disk"), code: 2, want: []string{`size: --store "disk": unknown store; want hdfs or rocksdb (or memory and pebble, dedupsim's analogues of them)`}},
		{name: "store rocksdb misspelt", args: s("--store", "rocksbd"), code: 2, want: []string{"(did you mean rocksdb?)"}},
		{name: "schema without store", args: s("--schema", "id STRING(3)"), code: 2, want: []string{"size: --sample and --schema need --store hdfs or rocksdb"}},
		{name: "schema without width", args: s("--store", "hdfs", "--schema", "id STRING"), code: 2, want: []string{"size: --schema id STRING: give the mean width of its values in bytes"}},
		{name: "sample and schema", args: s("--store", "hdfs", "--schema", "id STRING(3)", "--sample", "x.jsonl"), code: 2, want: []string{"size: give --sample or --schema, not both"}},
		{name: "sample without keys", args: s("--store", "hdfs", "--sample", "x.jsonl"), code: 2, want: []string{"size: --sample needs --keys"}},
		{name: "sample absent", args: s("--store", "hdfs", "--keys", "id", "--sample", "absent.jsonl"), code: 2, want: []string{"size: --sample: open absent.jsonl"}},
		{name: "keys alone", args: s("--keys", "id"), code: 2, want: []string{"size: --keys needs --sample FILE or --schema DDL"}},
		{name: "schema and bytes-per-key", args: s("--store", "hdfs", "--schema", "id STRING(3)", "--bytes-per-key", "50"), code: 2, want: []string{"size: give --bytes-per-key or --sample/--schema, not both"}},
		{name: "versions 0", args: s("--store", "hdfs", "--schema", "id STRING(3)", "--versions", "0"), code: 2, want: []string{"size: --versions 0: out of range, want [1, 100]"}},
		{name: "trigger 0", args: s("--store", "hdfs", "--schema", "id STRING(3)", "--trigger", "0s"), code: 2, want: []string{`size: --trigger "0s": out of range, want [1ms, 24h]`}},
		{name: "skew below 1", args: s("--skew", "0.5"), code: 2, want: []string{"size: --skew 0.5: out of range, want [1, 1,000,000]"}},
		{name: "skew NaN", args: s("--skew", "NaN"), code: 2, want: []string{"size: --skew NaN: out of range"}},
		{name: "from-progress absent", args: s("--from-progress", "absent.json"), code: 2, want: []string{"size: --from-progress absent.json:"}},
		{name: "measure without state", args: s("--measure", "--api", "batchDropDuplicates"), code: 2, want: []string{"size: --measure: batchDropDuplicates keeps no state"}},
		{name: "measure unbounded", args: s("--measure", "--api", "dropDuplicates", "--event-time-in-key=false"), code: 2, want: []string{"retention unbounded"}},
		{name: "unknown flag", args: s("--executor-mem", "8g"), code: 2, want: []string{"unknown flag: --executor-mem"}},
	}
	t.Logf("size: %d bad inputs", badInputCorpus(t, cases))
}

// TestSizeDoneWhen is issue 11's check: 20,000 keys/s, a 1 h delay,
// dropDuplicatesWithinWatermark, 64 partitions, 10 executors of 8g: 144
// million keys, and the busiest executor's 7 partitions x 2.25 million keys
// x 100 B = 1.47 GiB fit in 0.25 of its 8 GiB heap.
func TestSizeDoneWhen(t *testing.T) {
	bin := binary(t)
	out, errOut, code := run(bin, "size", "--rate", "20000", "--delay", "1h", "--api", "dropDuplicatesWithinWatermark",
		"--partitions", "64", "--executors", "10", "--executor-memory", "8g")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"retention          2 hours = 2 x delay",
		"keys in state      144,000,000 (144 million) = 20,000 keys/s x 2 hours",
		"bytes per key      100 B, assumed (--bytes-per-key; seed 000's RocksDB figure",
		"per partition      2,250,000 (2.25 million) keys, 225 MB (64 partitions)",
		"per executor       7 of 64 partitions on the busiest of 10 executors (an even spread): 15,750,000 (15.75 million) keys, 1.57 GB (1.47 GiB)",
		"heap budget        2 GiB = 0.25 (--memory-fraction) x 8 GiB heap (--executor-memory 8g)",
		"fits               yes: 1.47 GiB of state per executor is 73.3% of the 2 GiB budget (HDFS-backed store",
		"with RocksDB",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// No line says the same thing twice.
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if seen[l] {
			t.Errorf("repeated line %q", l)
		}
		seen[l] = true
	}

	// At 3 executors it does not fit (22 partitions, 4.61 GiB), and size
	// says what would.
	out, _, code = run(bin, "size", "--rate", "20000", "--delay", "1h", "--partitions", "64", "--executors", "3", "--executor-memory", "8g")
	if code != 0 || !strings.Contains(out, "fits               no: 4.61 GiB of state per executor is 230.5% of the 2 GiB budget") ||
		!strings.Contains(out, "it fits with 8 executors, --executor-memory 19g or the RocksDB store") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// --measure sizes from the measured bytes per key and says where the
	// figure comes from.
	out, errOut, code = run(bin, "size", "--rate", "20000", "--delay", "1h", "--partitions", "64", "--executors", "10", "--executor-memory", "8g", "--measure", "--store", "memory")
	if code != 0 || !strings.Contains(out, "B, measured on dedupsim's memory store") || strings.Contains(out, "100 B, assumed") ||
		!strings.Contains(out, "plateau / rate x retention") {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
}

// TestAnalyzeDoneWhen is issue 11's analyze check through the CLI: 1,000
// new keys a second for 5 minutes, 3% retried up to 6 hours later; the
// sizing rate is the burst's, the mean is printed beside it.
func TestAnalyzeDoneWhen(t *testing.T) {
	bin := binary(t)
	path := filepath.Join(t.TempDir(), "burst.jsonl")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := analyze.RetriedBurst().Write(fh); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(bin, "analyze", "--json", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep analyze.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("sizing rate %.1f keys/s (%s), mean %.2f keys/s", rep.SizingRatePerSec, rep.SizingRateBasis, rep.KeyRatePerSec)
	if rep.SizingRatePerSec < 800 || rep.SizingRatePerSec > 1250 || rep.KeyRatePerSec > 100 {
		t.Fatalf("sizing rate %v, mean %v", rep.SizingRatePerSec, rep.KeyRatePerSec)
	}
	out, _, _ = run(bin, "analyze", path)
	if !strings.Contains(out, "sizing rate            1,000 keys/s: p99 of the distinct keys per 1 minute window of event time") || !strings.Contains(out, "mean 16.26/s") {
		t.Fatalf("text:\n%s", out)
	}
	// The same trace in epoch milliseconds, with --time-unit ms.
	ms := filepath.Join(t.TempDir(), "burst-ms.jsonl")
	data, _ := os.ReadFile(path)
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		i := strings.Index(l, `"ts":`) + 5
		b.WriteString(l[:i] + strings.Replace(l[i:len(l)-1], ".", "", 1) + "}\n")
	}
	if err := os.WriteFile(ms, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	outMs, errOut, code := run(bin, "analyze", "--time-unit", "ms", ms)
	if code != 0 || strings.ReplaceAll(outMs, ms, path) != out {
		t.Fatalf("exit %d %s: epoch ms differ from seconds:\n%s", code, errOut, outMs)
	}
}

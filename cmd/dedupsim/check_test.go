package main

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

// twiceHistory is a history whose table holds event a twice: two copies
// with different event times under dropDuplicates on (id, ts), which the
// API allows.
const twiceHistory = `{"version":1,"seed":1,"query":"","api":"dropDuplicates","keys":["id","ts"],"delayMs":1000,"partitions":1,"sinkKind":"table","eventTimeInKey":true,"healAtMs":0,"endMs":3000,"arrivalRatePerSec":1,` +
	`"copies":[{"event":"a","copy":0,"source":0,"partition":0,"offset":0,"eventTimeUs":1000000,"appendedAtMs":1000},{"event":"a","copy":1,"source":0,"partition":0,"offset":1,"eventTimeUs":2000000,"appendedAtMs":1500}],` +
	`"batches":[{"batchId":0,"atMs":2000,"input":[0,1],"outcomes":["emitted","emitted"],"lateWatermarkMs":0,"watermarkMs":0,"nextWatermarkMs":1000,"maxEventTimeMs":2000,"numRowsTotal":2,"numRowsUpdated":2,"numRowsRemoved":0}],` +
	`"crashes":[],"restarts":[],"sinkWrites":[{"batchId":0,"atMs":2000,"rows":[0,1],"kept":2}],"table":[0,1],"hasTable":true,"faultsEnabled":[],"coverage":{}}`

func gzipped(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

// TestCheckCorpus: check refuses what is not a history or contradicts
// itself (exit 2, one line naming the file and the field), reads gzip,
// and with --strict fails a table that holds an event twice although the
// API kept its contract.
func TestCheckCorpus(t *testing.T) {
	h := "$DIR/history.json"
	rep := func(old, new string) string {
		if !strings.Contains(twiceHistory, old) {
			t.Fatalf("corpus: %q not in the history", old)
		}
		return strings.Replace(twiceHistory, old, new, 1)
	}
	n := badInputCorpus(t, []badCase{
		{name: "twice, default", files: map[string]string{"history.json": twiceHistory}, args: []string{"check", h}, code: 0},
		{name: "twice, strict", files: map[string]string{"history.json": twiceHistory}, args: []string{"check", "--strict", h}, code: 1,
			want: []string{"history.json", "--strict", "1 events more than once"}},
		{name: "gzip, strict", files: map[string]string{"history.json.gz": gzipped(twiceHistory)}, args: []string{"check", "--strict", "$DIR/history.json.gz"}, code: 1, want: []string{"--strict"}},
		{name: "report.json", files: map[string]string{"report.json": `{"headline":[],"scenario":"x"}`}, args: []string{"check", "$DIR/report.json"}, code: 2,
			want: []string{"report.json", "pass history.json"}},
		{name: "a report renamed", files: map[string]string{"r.json": "{\n  \"headline\": [],\n  \"scenario\": \"x\"\n}"}, args: []string{"check", "$DIR/r.json"}, code: 2, want: []string{"pass history.json"}},
		{name: "report.html", files: map[string]string{"report.html": "<!DOCTYPE html>"}, args: []string{"check", "$DIR/report.html"}, code: 2, want: []string{"pass history.json"}},
		{name: "missing file", args: []string{"check", "$DIR/nope.json"}, code: 2, want: []string{"nope.json"}},
		{name: "trailing garbage", files: map[string]string{"history.json": twiceHistory + "}"}, args: []string{"check", h}, code: 2, want: []string{"history.json", "byte offset"}},
		{name: "two histories", files: map[string]string{"history.json": twiceHistory + twiceHistory}, args: []string{"check", h}, code: 2, want: []string{"byte offset"}},
		{name: "duplicate key", files: map[string]string{"history.json": rep(`"seed":1,`, `"seed":1,"seed":1,`)}, args: []string{"check", h}, code: 2, want: []string{"duplicate", "seed"}},
		{name: "unknown field", files: map[string]string{"history.json": rep(`"seed":1,`, `"seeds":1,`)}, args: []string{"check", h}, code: 2, want: []string{"seeds"}},
		{name: "unknown sink kind", files: map[string]string{"history.json": rep(`"sinkKind":"table"`, `"sinkKind":"delta"`)}, args: []string{"check", h}, code: 2, want: []string{"sinkKind", "delta"}},
		{name: "absurd event time", files: map[string]string{"history.json": rep(`"eventTimeUs":1000000`, `"eventTimeUs":-9223372036854775808`)}, args: []string{"check", h}, code: 2, want: []string{"copies[0].eventTimeUs", "9999-12-31"}},
		{name: "table with no sink writes", files: map[string]string{"history.json": rep(`"sinkWrites":[{"batchId":0,"atMs":2000,"rows":[0,1],"kept":2}]`, `"sinkWrites":[]`)}, args: []string{"check", h}, code: 2,
			want: []string{"malformed-history", "no sink write kept a row"}},
		{name: "sink write for batch 1e9", files: map[string]string{"history.json": rep(`"sinkWrites":[`, `"sinkWrites":[{"batchId":1000000000,"atMs":2000,"rows":[0],"kept":1},`)}, args: []string{"check", h}, code: 2,
			want: []string{"malformed-history", "batch 1000000000, which never ran"}},
		{name: "input out of range", files: map[string]string{"history.json": rep(`"input":[0,1]`, `"input":[0,7]`)}, args: []string{"check", h}, code: 2, want: []string{"malformed-history", "out of range"}},
		{name: "gzip cut short", files: map[string]string{"history.json.gz": gzipped(twiceHistory)[:30]}, args: []string{"check", "$DIR/history.json.gz"}, code: 2, want: []string{"history (gzip)"}},
		{name: "not json", files: map[string]string{"history.json": "hello"}, args: []string{"check", h}, code: 2, want: []string{"history.json", "byte offset 0"}},
		// A copy's fault is a byte, its counters and the rows 32 bits, an
		// outcome a byte: what does not fit is refused naming the field.
		{name: "misspelt fault", files: map[string]string{"history.json": rep(`"appendedAtMs":1500}`, `"appendedAtMs":1500,"fault":"duplicate-apend"}`)}, args: []string{"check", h}, code: 2,
			want: []string{"history.json", "copies[1].fault", `did you mean "duplicate-append"`}},
		{name: "a number as the fault", files: map[string]string{"history.json": rep(`"appendedAtMs":1500}`, `"appendedAtMs":1500,"fault":7}`)}, args: []string{"check", h}, code: 2,
			want: []string{"copies[1].fault", `a fault is a name in quotes such as "producer-retry", not 7`}},
		{name: "copy number beyond 32 bits", files: map[string]string{"history.json": rep(`"copy":1,`, `"copy":2147483648,`)}, args: []string{"check", h}, code: 2,
			want: []string{"copies[1].copy", "2147483648 is not a whole number in [0, 2147483647]"}},
		{name: "negative partition", files: map[string]string{"history.json": rep(`"partition":0,`, `"partition":-1,`)}, args: []string{"check", h}, code: 2,
			want: []string{"copies[0].partition", "negative"}},
		{name: "table row beyond 32 bits", files: map[string]string{"history.json": rep(`"table":[0,1]`, `"table":[0,4294967296]`)}, args: []string{"check", h}, code: 2,
			want: []string{"table[1]", "[-2147483648, 2147483647]"}},
		{name: "misspelt outcome", files: map[string]string{"history.json": rep(`"outcomes":["emitted","emitted"]`, `"outcomes":["emitted","emited"]`)}, args: []string{"check", h}, code: 2,
			want: []string{"batches[0].outcomes[1]", `did you mean "emitted"`}},
		{name: "a number as an outcome", files: map[string]string{"history.json": rep(`"outcomes":["emitted","emitted"]`, `"outcomes":["emitted",2]`)}, args: []string{"check", h}, code: 2,
			want: []string{"batches[0].outcomes[1]", "an outcome is a name in quotes"}},
	})
	t.Logf("check corpus: %d cases", n)
}

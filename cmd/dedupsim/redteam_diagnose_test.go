package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"
	"testing"
)

// The red-team cases of issue 25 on diagnose (make redteam runs every
// TestRedteam*): each one was a wrong or dangerous answer once.

func gzipText(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

// sparkRecords is n records of one run, batches 0..n-1, a minute apart,
// each with rows in and state growing; edit changes each line.
func sparkRecords(n int, edit func(i int, line string) string) string {
	var b strings.Builder
	for i := range n {
		line := strings.Replace(goodProgress, `"batchId":3`, fmt.Sprintf(`"batchId":%d`, i), 1)
		line = strings.Replace(line, "08:45:12.123Z", fmt.Sprintf("08:%02d:12.123Z", i%60), 1)
		if edit != nil {
			line = edit(i, line)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

func TestRedteamDiagnose(t *testing.T) {
	d := func(args ...string) []string { return append([]string{"diagnose"}, args...) }
	good := sparkRecords(3, nil)
	noAddBatch := sparkRecords(12, func(i int, l string) string {
		return strings.Replace(l, `"durationMs":{"addBatch":10}`, `"durationMs":{"triggerExecution":10}`, 1)
	})
	cases := []badCase{
		// 1. every input read as what it is, or refused.
		{name: "gzip progress is read", files: map[string]string{"p.jsonl.gz": gzipText(good)}, args: d("$DIR/p.jsonl.gz"), code: 0},
		{name: "gzip beside plain is read", files: map[string]string{"p.jsonl.gz": gzipText(good), "q.jsonl": good}, args: d("$DIR/q.jsonl", "$DIR/p.jsonl.gz"), code: 0},
		{name: "truncated gzip", files: map[string]string{"p.gz": gzipText(good)[:30]}, args: d("$DIR/p.gz"), code: 2, want: []string{"diagnose: $DIR/p.gz", "gzip"}},
		{name: "xz refused by name", files: map[string]string{"p.xz": "\xfd7zXZ\x00\x00\x04junk", "q.jsonl": good}, args: d("$DIR/q.jsonl", "$DIR/p.xz"), code: 2, want: []string{"diagnose: $DIR/p.xz", "xz"}},
		{name: "binary beside good", files: map[string]string{"p.bin": "\x00\x01\x02binary", "q.jsonl": good}, args: d("$DIR/q.jsonl", "$DIR/p.bin"), code: 2, want: []string{"diagnose: $DIR/p.bin", "binary data"}},
		{name: "empty beside good", files: map[string]string{"e.log": "", "q.jsonl": good}, args: d("$DIR/e.log", "$DIR/q.jsonl"), code: 2, want: []string{"diagnose: $DIR/e.log", "no StreamingQueryProgress record"}},
		{name: "other log beside good", files: map[string]string{"o.log": "INFO a\nINFO b\n", "q.jsonl": good}, args: d("$DIR/q.jsonl", "$DIR/o.log"), code: 2, want: []string{"diagnose: $DIR/o.log", "no StreamingQueryProgress record", "2 other lines"}},
		{name: "no addBatch with rows", files: map[string]string{"p.jsonl": noAddBatch}, args: d("$DIR/p.jsonl"), code: 2, want: []string{"durationMs.addBatch", "$DIR/p.jsonl:1"}},
	}
	n := badInputCorpus(t, cases)
	t.Logf("%d diagnose red-team cases", n)
}

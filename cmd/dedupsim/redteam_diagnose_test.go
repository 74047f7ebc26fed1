package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	withWM := func(wm func(i int) string) string {
		return sparkRecords(6, func(i int, l string) string {
			return strings.Replace(l, `"stateOperators"`, `"eventTime":{"watermark":"`+wm(i)+`"},"stateOperators"`, 1)
		})
	}
	regress := withWM(func(i int) string {
		if i == 4 {
			i = 1
		}
		return fmt.Sprintf("2026-12-01T08:%02d:00.000Z", i)
	})
	year0 := withWM(func(i int) string { return "0000-12-01T08:00:00.000Z" })
	year10000 := withWM(func(i int) string { return "9999-12-31T23:30:00.000-01:00" })
	cases := []badCase{
		// 8. watermarks in Spark's range and order.
		{name: "watermark year 0", files: map[string]string{"p.jsonl": year0}, args: d("$DIR/p.jsonl"), code: 2, want: []string{"eventTime.watermark", "years 1 to 9999", "$DIR/p.jsonl:1"}},
		{name: "watermark past 9999 by its offset", files: map[string]string{"p.jsonl": year10000}, args: d("$DIR/p.jsonl"), code: 2, want: []string{"year 10000", "years 1 to 9999"}},
		{name: "watermark goes back in a run", files: map[string]string{"p.jsonl": regress}, args: d("$DIR/p.jsonl"), code: 1, want: []string{"watermark-regressed"}},
		// 1. every input read as what it is, or refused.
		{name: "gzip progress is read", files: map[string]string{"p.jsonl.gz": gzipText(good)}, args: d("$DIR/p.jsonl.gz"), code: 0},
		{name: "gzip beside plain is read", files: map[string]string{"p.jsonl.gz": gzipText(good), "q.jsonl": good}, args: d("$DIR/q.jsonl", "$DIR/p.jsonl.gz"), code: 0},
		{name: "truncated gzip", files: map[string]string{"p.gz": gzipText(good)[:30]}, args: d("$DIR/p.gz"), code: 2, want: []string{"diagnose: $DIR/p.gz", "gzip"}},
		{name: "xz refused by name", files: map[string]string{"p.xz": "\xfd7zXZ\x00\x00\x04junk", "q.jsonl": good}, args: d("$DIR/q.jsonl", "$DIR/p.xz"), code: 2, want: []string{"diagnose: $DIR/p.xz", "xz"}},
		{name: "binary beside good", files: map[string]string{"p.bin": "\x00\x01\x02binary", "q.jsonl": good}, args: d("$DIR/q.jsonl", "$DIR/p.bin"), code: 2, want: []string{"diagnose: $DIR/p.bin", "binary data"}},
		{name: "empty beside good", files: map[string]string{"e.log": "", "q.jsonl": good}, args: d("$DIR/e.log", "$DIR/q.jsonl"), code: 2, want: []string{"diagnose: $DIR/e.log", "no StreamingQueryProgress record"}},
		{name: "other log beside good", files: map[string]string{"o.log": "INFO a\nINFO b\n", "q.jsonl": good}, args: d("$DIR/q.jsonl", "$DIR/o.log"), code: 2, want: []string{"diagnose: $DIR/o.log", "no StreamingQueryProgress record", "2 other lines"}},
		// Hangs: a device is refused, not read forever.
		{name: "device as input", files: map[string]string{"q.jsonl": good}, args: d("$DIR/q.jsonl", "/dev/zero"), code: 2, want: []string{"diagnose: /dev/zero: not a regular file (a character device)"}},
		{name: "no addBatch with rows", files: map[string]string{"p.jsonl": noAddBatch}, args: d("$DIR/p.jsonl"), code: 2, want: []string{"durationMs.addBatch", "$DIR/p.jsonl:1"}},
	}
	n := badInputCorpus(t, cases)
	t.Logf("%d diagnose red-team cases", n)
}

// TestRedteamDiagnoseConflicts: two inputs with the same batches and
// different figures give the same verdict in either order, a problem naming
// both files and lines; identical copies count once.
func TestRedteamDiagnoseConflicts(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	grow := sparkRecords(8, func(i int, l string) string {
		return strings.Replace(l, `"stateOperators":[]`, fmt.Sprintf(`"stateOperators":[{"operatorName":"dedupe","numRowsTotal":%d,"numRowsUpdated":5}]`, 20+30*i), 1)
	})
	flatOp := sparkRecords(8, func(i int, l string) string {
		return strings.Replace(l, `"stateOperators":[]`, `"stateOperators":[{"operatorName":"dedupe","numRowsTotal":20,"numRowsUpdated":5}]`, 1)
	})
	a := write(t, dir, "a.jsonl", flatOp)
	b := write(t, dir, "b.jsonl", grow)
	var outs []string
	for _, order := range [][]string{{a, b}, {b, a}} {
		out, errOut, code := run(bin, append([]string{"diagnose"}, order...)...)
		if code != 1 || !strings.Contains(errOut, "conflicting-copies") {
			t.Errorf("%v: exit %d, want 1 with conflicting-copies\n%s\n%s", order, code, out, errOut)
		}
		for _, w := range []string{a + ":2", b + ":2", "stateOperators[0].numRowsTotal 20 at " + a + ":2, 50 at " + b + ":2"} {
			if !strings.Contains(out, w) {
				t.Errorf("%v: the report lacks %q:\n%s", order, w, out)
			}
		}
		outs = append(outs, out[strings.Index(out, "\n"):])
	}
	if len(outs) == 2 && outs[0] != outs[1] {
		t.Errorf("the order of the inputs changed the report:\n%s\n----\n%s", outs[0], outs[1])
	}
	// Identical copies: one batch each, the verdict of one input.
	c := write(t, dir, "c.jsonl", flatOp)
	out, errOut, code := run(bin, "diagnose", a, c)
	if code != 0 || !strings.Contains(out, "records seen in two inputs: 8") || !strings.Contains(out, "healthy over 8 batches") {
		t.Errorf("identical copies: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestRedteamDiagnoseFIFO: a named pipe with no writer as an input, or as
// a rolling event log's part, is refused at once (it blocked forever). A
// hang fails by go test's -timeout.
func TestRedteamDiagnoseFIFO(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "p.jsonl")
	roll := filepath.Join(dir, "eventlog_v2_local-1")
	os.Mkdir(roll, 0o755)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no named pipes: %v", err)
	}
	syscall.Mkfifo(filepath.Join(roll, "events_1_local-1"), 0o644)
	for _, p := range []string{fifo, roll} {
		_, errOut, code := run(bin, "diagnose", p)
		if code != 2 || !strings.Contains(errOut, "a named pipe") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s: exit %d, %s", p, code, errOut)
		}
	}
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestMessages holds what a person reads at 3 a.m. to golden outputs
// (testdata/messages.txt): the verdicts of diagnose with and without the
// checkpoint, an event-log folder's listing, a trend over few points, a
// checkpoint without a watermark, a PASS beside a broken API contract,
// examples without Go's raw values, and the messages that list what is
// accepted. Directives:
//
//	file name=NAME        writes the input to $TMP/NAME
//	dedupsim ARGS...      runs the binary ($FIX, $TMP, $EVDIR expanded);
//	                      stdout, then stderr, then the exit status; a
//	                      head=N argument keeps the first N lines of stdout,
//	                      grep=RE only its lines that match
//
// Paths are written back as $FIX, $TMP and $EVDIR. Rewrite with
// go test ./cmd/dedupsim -run TestMessages -rewrite.
func TestMessages(t *testing.T) {
	bin := binary(t)
	tmp := t.TempDir()
	fix, err := filepath.Abs(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	ev := eventLogDir(t, fix)
	expand := func(s string) string {
		return strings.NewReplacer("$FIX", fix, "$TMP", tmp, "$EVDIR", ev).Replace(s)
	}
	back := strings.NewReplacer(ev, "$EVDIR", tmp, "$TMP", fix, "$FIX")
	memory := regexp.MustCompile(`(?m)^dedupsim (run|replay): (predicted peak memory|\d+ of \d+ runs done).*\n`)
	datadriven.RunTest(t, "testdata/messages.txt", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "file":
			var name string
			d.ScanArgs(t, "name", &name)
			if err := os.WriteFile(filepath.Join(tmp, name), []byte(d.Input), 0o644); err != nil {
				t.Fatal(err)
			}
			return ""
		case "dedupsim":
			var args []string
			head, grep := 0, ""
			for _, a := range d.CmdArgs {
				switch a.Key {
				case "head":
					fmt.Sscan(a.Vals[0], &head)
				case "grep":
					grep = a.Vals[0]
				default:
					s := a.Key
					if len(a.Vals) > 0 {
						s += "=" + strings.Join(a.Vals, ",")
					}
					args = append(args, expand(s))
				}
			}
			c := exec.Command(bin, args...)
			c.Env = append(os.Environ(), "GITHUB_STEP_SUMMARY=")
			var o, e strings.Builder
			c.Stdout, c.Stderr = &o, &e
			err := c.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			out := o.String()
			if grep != "" {
				re := regexp.MustCompile(grep)
				var keep []string
				for _, l := range strings.Split(out, "\n") {
					if re.MatchString(l) {
						keep = append(keep, l)
					}
				}
				out = strings.Join(keep, "\n") + "\n"
			}
			if head > 0 {
				lines := strings.SplitAfter(out, "\n")
				if len(lines) > head {
					out = strings.Join(lines[:head], "")
				}
			}
			stderr := memory.ReplaceAllString(e.String(), "")
			res := back.Replace(out)
			if stderr != "" {
				res += "--- stderr\n" + back.Replace(stderr)
			}
			return res + fmt.Sprintf("--- exit %d\n", code)
		}
		t.Fatalf("unknown directive %s", d.Cmd)
		return ""
	})
}

// eventLogDir is a spark.eventLog.dir made of the fixtures' event logs
// (every name as Spark 4.1.1 wrote it), one of them still being written,
// and a batch application.
func eventLogDir(t *testing.T, fix string) string {
	dir := t.TempDir()
	cp := func(src, dst string, cut bool) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if cut {
			b = b[:len(b)/2]
		}
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	roll, _ := filepath.Glob(fix + "/restamped-hdfs/eventlog/eventlog_v2_*/*")
	for _, f := range roll {
		cp(f, filepath.Join(dir, filepath.Base(filepath.Dir(f)), filepath.Base(f)), false)
	}
	for _, g := range []string{"/healthy-hdfs/eventlog/local-*", "/stalled-min-hdfs/eventlog/local-*"} {
		m, _ := filepath.Glob(fix + g)
		cp(m[0], filepath.Join(dir, filepath.Base(m[0])), false)
	}
	m, _ := filepath.Glob(fix + "/unbounded-rocksdb/eventlog/local-*.zstd")
	cp(m[0], filepath.Join(dir, filepath.Base(m[0])+".inprogress"), true)
	os.WriteFile(filepath.Join(dir, "local-1000"), []byte(`{"Event":"SparkListenerLogStart","Spark Version":"4.1.1"}`+"\n"), 0o644)
	return dir
}

// TestDiagnoseHTMLWithoutWatermark: the report of a query without a
// watermark has no watermark or late-rows chart, and says why.
func TestDiagnoseHTMLWithoutWatermark(t *testing.T) {
	bin := binary(t)
	for _, tc := range []struct {
		log   string
		chart bool
	}{{fixtures + "/unbounded-hdfs/progress.jsonl", false}, {fixtures + "/healthy-hdfs/progress.jsonl", true}} {
		dir := t.TempDir()
		run(bin, "diagnose", tc.log, "--out", dir)
		b, err := os.ReadFile(filepath.Join(dir, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		if strings.Contains(page, "Watermark vs max event time") != tc.chart || strings.Contains(page, "Late rows dropped per batch") != tc.chart ||
			strings.Contains(page, "No watermark or late-rows chart: the query has no watermark") == tc.chart {
			t.Errorf("%s: watermark chart %v wanted, page:\n%.600s", tc.log, tc.chart, page)
		}
	}
}

package engine_test

// Golden data-driven tests (cockroachdb/datadriven): each file in testdata/
// is a series of commands with their input and the expected output side by
// side. Regenerate expectations with `go test ./engine -run TestGolden -rewrite`
// and read the diff: every changed line is a behaviour change.
//
// Commands:
//
//	exec [ckpt=NAME] [seed=N] [progress] [metrics] [files]
//	<query YAML>
//	===
//	<steps JSONL>
//	----
//	<one line per batch execution, then the table and any warnings>
//
// ckpt=NAME keeps the checkpoint (an in-memory filesystem) across commands
// of the same file, so a later exec resumes from it; progress prints each
// batch's full StreamingQueryProgress JSON; metrics prints each batch's
// stateOperators[0].customMetrics on one line; files lists the
// checkpoint's files after the run.
//
//	files ckpt=NAME [cat=PATH]
//
// lists a kept checkpoint's files, or prints one.
//
//	rm ckpt=NAME path=PATH
//
// removes one file of a kept checkpoint (a lost metadata file).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/state/stores"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
)

func TestGolden(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasSuffix(path, ".txt") {
			return // rapid's failure files live under testdata/rapid
		}
		ckpts := map[string]*fsys.Mem{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "exec":
				return runExec(t, d, ckpts)
			case "rm":
				var name, path string
				d.ScanArgs(t, "ckpt", &name)
				d.ScanArgs(t, "path", &path)
				fs, ok := ckpts[name]
				if !ok {
					d.Fatalf(t, "no checkpoint %q", name)
				}
				if err := fs.Remove(path); err != nil {
					return "error: " + err.Error() + "\n"
				}
				return "ok\n"
			case "files":
				var name, cat string
				d.ScanArgs(t, "ckpt", &name)
				if d.HasArg("cat") {
					d.ScanArgs(t, "cat", &cat)
				}
				fs, ok := ckpts[name]
				if !ok {
					d.Fatalf(t, "no checkpoint %q", name)
				}
				if cat != "" {
					b, err := fs.ReadFile(cat)
					if err != nil {
						return "error: " + err.Error() + "\n"
					}
					return string(b) + "\n"
				}
				return strings.Join(fs.Files(), "\n") + "\n"
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}

func runExec(t *testing.T, d *datadriven.TestData, ckpts map[string]*fsys.Mem) string {
	qText, stepsText, ok := strings.Cut(d.Input, "\n===\n")
	if !ok {
		if strings.HasSuffix(d.Input, "\n===") {
			qText, stepsText = strings.TrimSuffix(d.Input, "\n==="), ""
		} else {
			d.Fatalf(t, "exec input needs a line === between the query and the steps")
		}
	}
	q, err := query.Parse("query.yaml", []byte(qText))
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	st, err := steps.ParseTyped("steps.jsonl", []byte(stepsText), q)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var fs *fsys.Mem
	if d.HasArg("ckpt") {
		var name string
		d.ScanArgs(t, "ckpt", &name)
		if fs = ckpts[name]; fs == nil {
			fs = fsys.NewMem()
			ckpts[name] = fs
		}
	} else {
		fs = fsys.NewMem()
	}
	var seed uint64
	if d.HasArg("seed") {
		d.ScanArgs(t, "seed", &seed)
	}
	var buf bytes.Buffer
	res, err := trace.Run(q, st, trace.Options{Checkpoint: fs, Seed: seed, NewStateProvider: stores.Open,
		Warn: func(s string) { fmt.Fprintf(&buf, "warning: %s\n", s) }})
	if err != nil {
		fmt.Fprintf(&buf, "error: %v\n", err)
		return buf.String()
	}
	var out bytes.Buffer
	for _, r := range res.Records {
		out.WriteString(summarize(r))
		if d.HasArg("progress") {
			b, _ := json.MarshalIndent(r.Progress, "", "  ")
			out.Write(b)
			out.WriteByte('\n')
		}
		if d.HasArg("metrics") {
			for _, op := range r.Progress.StateOperators {
				b, _ := json.Marshal(op.CustomMetrics)
				fmt.Fprintf(&out, "  customMetrics: %s\n", b)
			}
		}
	}
	if res.HasTable {
		fmt.Fprintf(&out, "table: %s\n", joinRaw(sortedRaw(res.Table)))
	}
	if d.HasArg("files") {
		out.WriteString("files:\n  " + strings.Join(fs.Files(), "\n  ") + "\n")
	}
	out.Write(buf.Bytes())
	return out.String()
}

// summarize prints one batch execution on one line: the rows the sink got
// (sorted: order across partitions is unspecified in Spark) and the figures
// Spark tests assert on.
func summarize(r trace.Record) string {
	p := r.Progress
	var b strings.Builder
	fmt.Fprintf(&b, "batch %d", r.BatchID)
	if r.Replay {
		b.WriteString(" (replay)")
	}
	if r.Crashed != "" {
		fmt.Fprintf(&b, " (crashed %s)", r.Crashed)
	}
	fmt.Fprintf(&b, ": in=%d out=%s", p.NumInputRows, joinRaw(sortedRaw(r.Rows)))
	for _, op := range p.StateOperators {
		fmt.Fprintf(&b, " %s{updated=%d total=%d removed=%d late=%d dups=%d}", op.OperatorName,
			op.NumRowsUpdated, op.NumRowsTotal, op.NumRowsRemoved, op.NumRowsDroppedByWatermark,
			op.CustomMetrics["numDroppedDuplicateRows"])
	}
	if wm, ok := p.EventTime["watermark"]; ok {
		fmt.Fprintf(&b, " wm=%s", wm)
	}
	b.WriteByte('\n')
	return b.String()
}

func sortedRaw(rows []json.RawMessage) []string {
	s := make([]string, len(rows))
	for i, r := range rows {
		s[i] = string(r)
	}
	sort.Strings(s)
	return s
}

func joinRaw(s []string) string { return "[" + strings.Join(s, " ") + "]" }

package execpipe

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/dedup"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/trace"
	"github.com/dedupsim/dedupsim/expect"
	"github.com/dedupsim/dedupsim/inspect/delta"
	"github.com/dedupsim/dedupsim/internal/atomicfile"
	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/scenarios"
)

// maxTableDiffs bounds the keys listed by tableDiffs.
const maxTableDiffs = 20

// tableDiffs compares a run's final table with a Delta table's keys: every
// key the two hold a different number of times, sorted, at most
// maxTableDiffs of them and a count of the rest.
func tableDiffs(want *delta.TableKeys, table []json.RawMessage) ([]string, error) {
	got := map[string]int64{}
	for _, r := range table {
		k, err := want.RowKey(r)
		if err != nil {
			return nil, err
		}
		got[k]++
	}
	var keys []string
	for k, n := range got {
		if want.Counts[k] != n {
			keys = append(keys, k)
		}
	}
	for k := range want.Counts {
		if _, ok := got[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for i, k := range keys {
		if i == maxTableDiffs {
			out = append(out, fmt.Sprintf("and %d more keys", len(keys)-i))
			break
		}
		out = append(out, fmt.Sprintf("table key %s (%s): the run's table holds it %d time(s), the Delta table %d",
			k, strings.Join(want.Columns, ", "), got[k], want.Counts[k]))
	}
	return out, nil
}

// expectHook is exec --check and --record (docs/expectations.md): it
// watches every batch record of the run.
type expectHook struct {
	obs       *expect.Observer
	checkPath string
	rec       *outFile // --record's temp file
	// table is --check's Delta table: the run's final table must hold its
	// keys, each as many times.
	table *delta.TableKeys
	// reportDir is --report; queryPath and inputPath name the pair in it.
	reportDir, queryPath, inputPath string
	// inputErr is the first error reading an execution's input (no-loss).
	inputErr error
	// version and stepSummary are Options.Version and StepSummary.
	version     string
	stepSummary func(md []byte, whole string) error
}

// newExpectHook reads --check's file (bad input: exit 2, before anything
// runs) and opens --record's temp file; nil when neither is given.
func newExpectHook(o Options, q *query.Query) (*expectHook, error) {
	if o.ReportDir != "" && o.CheckPath == "" {
		return nil, exitcode.Bad(errors.New("exec: --report writes the result of --check (junit.xml, summary.md): give --check FILE too"))
	}
	if fi, err := os.Stat(o.ReportDir); o.ReportDir != "" && err == nil && !fi.IsDir() {
		return nil, exitcode.Bad(fmt.Errorf("exec: --report %s: not a folder", o.ReportDir))
	}
	if o.CheckPath == "" && o.RecordPath == "" {
		return nil, nil
	}
	h := &expectHook{checkPath: o.CheckPath, reportDir: o.ReportDir, queryPath: o.QueryPath, inputPath: o.InputPath,
		version: o.Version, stepSummary: o.StepSummary}
	var exp *expect.Expectations
	if o.CheckPath != "" && delta.IsTable(o.CheckPath) {
		d, _ := sink.Lookup(q.Sink.Kind)
		if !d.HasTable {
			return nil, exitcode.Bad(fmt.Errorf("exec: --check %s is a Delta table, and the query's sink (%s) keeps no table: use sink kind table, merge or append", o.CheckPath, q.Sink.Kind))
		}
		t, err := delta.ReadKeys(o.CheckPath, q.Keys)
		if err != nil {
			return nil, exitcode.Bad(fmt.Errorf("exec: --check: %w", err))
		}
		h.table = t
	} else if o.CheckPath != "" {
		var err error
		if exp, err = expect.ParseFile(o.CheckPath); err != nil {
			return nil, exitcode.Bad(fmt.Errorf("exec: --check: %w", err))
		}
	}
	if o.RecordPath != "" {
		// --record naming --check, --out or an input is refused first, by
		// the command line (cmd/dedupsim/outpaths.go).
		rec, err := createRecord(o.RecordPath)
		if err != nil {
			return nil, err
		}
		h.rec = rec
	}
	if h.rec != nil {
		h.obs = expect.NewObserver(q.Keys, exp, h.rec)
	} else {
		h.obs = expect.NewObserver(q.Keys, exp, nil)
	}
	return h, nil
}

// createRecord is createOut for --record: a temp file beside it, renamed
// over it when the run ends; a symbolic link or a folder is refused.
func createRecord(path string) (*outFile, error) {
	if st, err := os.Lstat(path); err == nil && (st.Mode()&os.ModeSymlink != 0 || !st.Mode().IsRegular()) {
		return nil, exitcode.Bad(fmt.Errorf("exec: --record %s is a symbolic link or not a regular file: refusing to write through it", path))
	}
	out, err := createOut(path)
	if err != nil {
		var ee *exitcode.Error
		if errors.As(err, &ee) {
			return nil, exitcode.Bad(fmt.Errorf("exec: --record %s: folder %s does not exist or is not writable", path, filepath.Dir(path)))
		}
		return nil, err
	}
	return out, nil
}

// observe takes one batch record.
func (h *expectHook) observe(r *trace.Record) error {
	if h == nil {
		return nil
	}
	x := expect.Execution{BatchID: r.BatchID, Rows: r.Rows}
	for _, op := range r.Progress.StateOperators {
		x.NumDroppedDuplicateRows += op.CustomMetrics["numDroppedDuplicateRows"]
		x.NumRowsDroppedByWatermark += op.NumRowsDroppedByWatermark
		x.NumRowsTotal += op.NumRowsTotal
	}
	return h.obs.Observe(x)
}

// onBatch gives the observer the rows an execution read, when a no-loss
// property needs them.
func (h *expectHook) onBatch(r *engine.BatchRecord) {
	if h == nil || !h.obs.NeedsInput() || h.inputErr != nil {
		return
	}
	rows := make([]json.RawMessage, len(r.Input))
	dropped := make([]bool, len(r.Input))
	for i, in := range r.Input {
		rows[i] = in.Data
		if i < len(r.Outcomes) {
			dropped[i] = r.Outcomes[i] == dedup.Late || r.Outcomes[i] == dedup.Filtered
		}
	}
	h.inputErr = h.obs.ObserveInput(rows, dropped)
}

// finish writes --record and compares the run with --check: the
// differences go to standard error, one a line, and the run fails (exit 1).
// With --check, --report gets junit.xml and summary.md, and a GitHub
// Actions step summary (GITHUB_STEP_SUMMARY) gets summary.md, met or not.
func (h *expectHook) finish(res *trace.Result) error {
	if h == nil {
		return nil
	}
	if h.inputErr != nil {
		return &exitcode.Error{Code: 1, Err: fmt.Errorf("exec: --check: %w", h.inputErr)}
	}
	diffs, err := h.obs.Finish(res.Table, res.HasTable)
	var tableCheck *reports.Check // --check with a Delta table: one test of its own
	if err == nil && h.table != nil {
		var more []string
		if more, err = tableDiffs(h.table, res.Table); err != nil {
			return &exitcode.Error{Code: 1, Err: fmt.Errorf("exec: --check: %w", err)}
		}
		diffs = append(diffs, more...)
		tableCheck = &reports.Check{Name: "final table holds the Delta table's keys", Where: h.checkPath, Diffs: more}
	}
	if err == nil && h.rec != nil {
		err = h.rec.commit()
	}
	if err != nil {
		return &exitcode.Error{Code: 1, Err: fmt.Errorf("exec: --record: %w", err)}
	}
	if h.checkPath != "" {
		if err := h.report(tableCheck); err != nil {
			return err
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	fmt.Fprintf(os.Stderr, "exec: expectations of %s not met:\n", h.checkPath)
	for _, d := range diffs {
		fmt.Fprintln(os.Stderr, "  "+d)
	}
	return &exitcode.Error{Code: 1, Err: fmt.Errorf("exec: --check %s: %d differences (listed above)", h.checkPath, len(diffs))}
}

// discard drops --record's temp file after a failed run.
func (h *expectHook) discard() {
	if h != nil && h.rec != nil {
		h.rec.discard()
	}
}

// report writes --report's junit.xml and summary.md, and appends
// summary.md to GITHUB_STEP_SUMMARY when it is set: one test per line of
// the expectations file, or one for a Delta table's keys (tableCheck).
func (h *expectHook) report(tableCheck *reports.Check) error {
	var checks []reports.Check
	if tableCheck != nil {
		checks = append(checks, *tableCheck)
	}
	for _, c := range h.obs.Cases() {
		where := fmt.Sprintf("%s:%d", h.checkPath, c.Line)
		if c.Line == 0 {
			where = h.checkPath
		}
		checks = append(checks, reports.Check{Name: c.Name, Where: where, Diffs: c.Diffs})
	}
	about := fmt.Sprintf("dedupsim exec --query %s --input %s --check %s", scenarios.QuoteArg(h.queryPath), scenarios.QuoteArg(h.inputPath), scenarios.QuoteArg(h.checkPath))
	md := []byte(reports.ChecksMarkdown("dedupsim exec: "+filepath.Base(h.checkPath), about, checks))
	if h.reportDir != "" {
		root, err := atomicfile.OpenDir(h.reportDir)
		if err != nil {
			return exitcode.Output(err)
		}
		root.Close()
		ju, err := reports.ChecksJUnit("dedupsim.exec", h.version, checks)
		if err != nil {
			return err
		}
		for _, f := range []struct {
			name string
			data []byte
		}{{"junit.xml", ju}, {"summary.md", md}} {
			if err := atomicfile.WriteFile(filepath.Join(h.reportDir, f.name), f.data); err != nil {
				return exitcode.Output(err)
			}
		}
	}
	whole := h.checkPath
	if h.reportDir != "" {
		whole = filepath.Join(h.reportDir, "summary.md")
	}
	if h.stepSummary == nil {
		return nil
	}
	if err := h.stepSummary(md, whole); err != nil {
		return &exitcode.Error{Code: 1, Err: err}
	}
	return nil
}

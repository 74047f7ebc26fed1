package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/trace"
	"github.com/dedupsim/dedupsim/expect"
)

// expectHook is exec --check and --record (docs/expectations.md): it
// watches every batch record of the run.
type expectHook struct {
	obs       *expect.Observer
	checkPath string
	rec       *outFile // --record's temp file
}

// newExpectHook reads --check's file (bad input: exit 2, before anything
// runs) and opens --record's temp file; nil when neither is given.
func newExpectHook(o execOptions, q *query.Query) (*expectHook, error) {
	if o.checkPath == "" && o.recordPath == "" {
		return nil, nil
	}
	h := &expectHook{checkPath: o.checkPath}
	var exp *expect.Expectations
	if o.checkPath != "" {
		var err error
		if exp, err = expect.ParseFile(o.checkPath); err != nil {
			return nil, badInput(fmt.Errorf("exec: --check: %w", err))
		}
	}
	if o.recordPath != "" {
		// --record naming --check, --out or an input is refused first, by
		// refuseOverlap (outpaths.go).
		rec, err := createRecord(o.recordPath)
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
		return nil, badInput(fmt.Errorf("exec: --record %s is a symbolic link or not a regular file: refusing to write through it", path))
	}
	out, err := createOut(path)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return nil, badInput(fmt.Errorf("exec: --record %s: folder %s does not exist or is not writable", path, filepath.Dir(path)))
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

// finish writes --record and compares the run with --check: the
// differences go to standard error, one a line, and the run fails (exit 1).
func (h *expectHook) finish(res *trace.Result) error {
	if h == nil {
		return nil
	}
	diffs, err := h.obs.Finish(res.Table, res.HasTable)
	if err == nil && h.rec != nil {
		err = h.rec.commit()
	}
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("exec: --record: %w", err)}
	}
	if len(diffs) == 0 {
		return nil
	}
	fmt.Fprintf(os.Stderr, "exec: expectations of %s not met:\n", h.checkPath)
	for _, d := range diffs {
		fmt.Fprintln(os.Stderr, "  "+d)
	}
	return &exitError{code: 1, err: fmt.Errorf("exec: --check %s: %d differences (listed above)", h.checkPath, len(diffs))}
}

// discard drops --record's temp file after a failed run.
func (h *expectHook) discard() {
	if h != nil && h.rec != nil {
		h.rec.discard()
	}
}

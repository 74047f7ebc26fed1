package execpipe

import (
	"errors"
	"io"
	"math"
	"os"
	"runtime"
	"sync"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/steps"
)

// exec's passes before the run (schema inference, the check) decode every
// line of the steps file on its own; they give the lines to one goroutine
// per core, so each pass takes its time divided by the cores. The answer
// is the sequential pass's: the error of the lowest bad line, and for
// inference, whose errors depend on the order of the rows, a sequential
// pass whenever anything goes wrong.

// passWorkers is how many goroutines decode a pass's lines.
func passWorkers() int { return min(runtime.GOMAXPROCS(0), 8) }

// parallelLines calls do for every line r gives, from workers goroutines
// (worker w with its own LineParser), and returns the error of the lowest
// line that has one, or else the reader's own error (a line too long, not
// UTF-8, a failed read), which comes after every line handed out: what a
// sequential pass over r returns. Lines in flight: at most 2*workers+1.
// A line's text is reused for a later line once do returns: do keeps none
// of it (errors are formatted, rows of a check or inference are scratch).
func parallelLines(r *steps.Reader, workers int, do func(w int, lp *steps.LineParser, l steps.Line) error) error {
	lps := make([]*steps.LineParser, workers)
	for w := range lps {
		lps[w] = r.LineParser()
	}
	return parallelLinesWith(r, lps, do)
}

// maxPooledLine is the largest line buffer parallelLinesWith keeps for
// reuse: a pool of buffers each as large as the longest line seen (up to
// 256 MiB) would stay allocated for the whole pass.
const maxPooledLine = 1 << 20

// parallelLinesWith is parallelLines with worker w's LineParser lps[w]
// (one goroutine per parser), for a pass that reads them afterwards.
func parallelLinesWith(r *steps.Reader, lps []*steps.LineParser, do func(w int, lp *steps.LineParser, l steps.Line) error) error {
	workers := len(lps)
	jobs := make(chan steps.Line, workers)
	// free holds the texts of lines done with, for the next lines: the
	// buffers made are no more than the lines ever in flight at once.
	free := make(chan []byte, 2*workers+1)
	var (
		mu      sync.Mutex
		errLine int
		lineErr error
		wg      sync.WaitGroup
	)
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return lineErr != nil
	}
	for w, lp := range lps {
		wg.Go(func() {
			for l := range jobs {
				if err := do(w, lp, l); err != nil {
					mu.Lock()
					if lineErr == nil || l.No < errLine {
						errLine, lineErr = l.No, err
					}
					mu.Unlock()
				}
				if cap(l.Text) <= maxPooledLine { // a rare long line's buffer is not kept
					select {
					case free <- l.Text:
					default:
					}
				}
			}
		})
	}
	var readErr error
	for !failed() {
		var buf []byte
		select {
		case buf = <-free:
		default:
		}
		l, err := r.NextLineInto(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		jobs <- l
	}
	close(jobs)
	wg.Wait()
	if lineErr != nil {
		return lineErr
	}
	return readErr
}

// checkSteps is Reader.Check over the steps file at path, its lines
// decoded in parallel when they are independent of each other.
func checkSteps(path string, q *query.Query) error { return checkStepsThrough(path, q, 0) }

// checkStepsThrough is checkSteps over the lines up to and including
// line (0: all of them).
func checkStepsThrough(path string, q *query.Query, line int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := steps.NewReader(path, f, q)
	if err != nil {
		return err
	}
	r.StopAfter(line)
	if n := passWorkers(); n > 1 && r.Independent() {
		return parallelLines(r, n, func(_ int, lp *steps.LineParser, l steps.Line) error { return lp.Check(l) })
	}
	return r.Check()
}

// inferSteps is steps.InferSchema over the file at path: one Inferrer per
// goroutine, merged; on any error, or names that differ only in case
// across the parts, the file is read again in order for the error
// InferSchema gives.
func inferSteps(path string, q *query.Query) error {
	sequential := func() error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return steps.InferSchema(path, f, q)
	}
	n := passWorkers()
	if n < 2 || q.Schema != nil {
		return sequential()
	}
	f, r, err := openStepsReader(path, q)
	if err != nil {
		return err
	}
	defer f.Close()
	infs := make([]*row.Inferrer, n)
	for i := range infs {
		infs[i] = row.NewInferrer()
	}
	err = parallelLines(r, n, func(w int, lp *steps.LineParser, l steps.Line) error { return lp.Infer(l, infs[w]) })
	if err != nil || !mergeInto(infs) {
		return sequential()
	}
	return steps.SetInferred(path, infs[0], q)
}

// openStepsReader opens the steps file at path and a Reader of it for q; the
// caller closes the file.
func openStepsReader(path string, q *query.Query) (*os.File, *steps.Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	r, err := steps.NewReader(path, f, q)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, r, nil
}

// mergeInto merges every Inferrer of infs into infs[0], reporting false
// when that is refused (Inferrer.Merge: the ordered pass must find the
// error).
func mergeInto(infs []*row.Inferrer) bool {
	for _, inf := range infs[1:] {
		if !infs[0].Merge(inf) {
			return false
		}
	}
	return true
}

// inferCheckSteps is inferSteps then checkSteps, in one pass over the
// file when the query has key columns: each worker infers the types of
// its lines and checks every row under the types it has inferred so far
// (LineParser.InferCheck), in the same scan of the row. Once the schema is
// known, only the rows checked under other types (in practice: none, or
// the first rows, before every column has its final type) are checked
// again (checkStepsThrough); a worker whose types never reached the
// file's has its lines checked again, all of them (checkSteps). The
// answer is the two passes': inference's error first, then the first
// refused row under the inferred schema.
func inferCheckSteps(path string, q *query.Query) error {
	return inferCheckStepsN(path, q, passWorkers())
}

// inferCheckStepsN is inferCheckSteps with n workers (n >= 1).
func inferCheckStepsN(path string, q *query.Query, n int) error {
	twoPasses := func() error {
		if err := inferSteps(path, q); err != nil {
			return err
		}
		return checkSteps(path, q)
	}
	if q.Schema != nil || len(q.Keys) == 0 {
		return twoPasses()
	}
	f, r, err := openStepsReader(path, q)
	if err != nil {
		return err
	}
	defer f.Close()
	lps := make([]*steps.LineParser, n)
	infs := make([]*row.Inferrer, n)
	for i := range n {
		lps[i], infs[i] = r.LineParser(), row.NewInferrer()
	}
	err = parallelLinesWith(r, lps, func(w int, lp *steps.LineParser, l steps.Line) error { return lp.InferCheck(l, infs[w]) })
	if err != nil || !mergeInto(infs) {
		// Inference's error, as the sequential pass finds it.
		return twoPasses()
	}
	if err := steps.SetInferred(path, infs[0], q); err != nil {
		return err
	}
	recheck := 0
	var first *query.Error
	for _, lp := range lps {
		rc, err := lp.Checked(q)
		recheck = max(recheck, rc)
		var se *query.Error
		if errors.As(err, &se) && (first == nil || se.Line < first.Line) {
			first = se
		} else if err != nil && se == nil {
			return err
		}
	}
	switch {
	case recheck == math.MaxInt:
		return checkSteps(path, q)
	case recheck > 0:
		if err := checkStepsThrough(path, q, recheck); err != nil {
			return err
		}
	}
	if first != nil {
		return first
	}
	return nil
}

package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dedupsim/dedupsim/live"
	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/dedupsim/dedupsim/sim/history"
)

// A batch is the runs of run and sweep: scenario x seed jobs, run on -j
// workers. Each worker runs one job at a time, writes its report folder and
// hands back a small summary; the history is dropped there (or saved
// compressed first), so memory holds -j histories at most, whatever the
// number of seeds. Results come back in job order, so everything written
// over several runs (index.html, summary.md, junit.xml, shard.json) and the
// console are the same for every -j. Each run is deterministic by itself:
// a report folder's bytes do not depend on -j either.

// batchJob is one scenario run with one seed.
type batchJob struct {
	seq  uint64 // position in the batch
	s    *scenarios.Scenario
	seed uint64
}

// batchResult is what a batch keeps of a run.
type batchResult struct {
	job  batchJob
	run  *result.Run // the summary: no history (see summarize)
	dir  string      // the report folder, relative to --out
	cov  map[string]int
	skip error // this mode cannot run the scenario (run with several scenarios goes on)
	err  error
}

type execFunc func(ctx context.Context, s *scenarios.Scenario, seed uint64) (*result.Run, error)

// simExec runs a job on the simulator: the exec of run and sweep without
// --kafka.
func simExec(swarm, strict bool) execFunc {
	return func(_ context.Context, s *scenarios.Scenario, seed uint64) (*result.Run, error) {
		return scenarios.Run(s, seed, scenarios.Options{Swarm: swarm, Strict: strict})
	}
}

type batchOptions struct {
	out         string
	jobs        int
	keepHistory bool // histories of passing runs too
	canSkip     bool // several scenarios: skip those this mode cannot run
	exec        execFunc
}

// defaultJobs is -j's default: one worker per CPU.
func defaultJobs() int { return runtime.NumCPU() }

const maxJobs = 1024

func checkJobs(verb string, j int) error {
	if j < 1 || j > maxJobs {
		return fmt.Errorf("%s: -j %d: want a number of parallel runs in [1, %d]", verb, j, maxJobs)
	}
	return nil
}

// runBatch runs the jobs next yields and calls each with every result, in
// job order, from the calling goroutine. It returns the error of the
// earliest job that failed; jobs not started by then are not run.
func runBatch(ctx context.Context, o batchOptions, next func() (batchJob, bool), each func(batchResult)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan batchJob)
	results := make(chan batchResult)
	go func() {
		defer close(jobs)
		for ctx.Err() == nil {
			j, ok := next()
			if !ok {
				return
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range o.jobs {
		wg.Go(func() {
			for j := range jobs {
				if ctx.Err() != nil {
					continue
				}
				results <- o.runOne(ctx, j)
			}
		})
	}
	go func() {
		wg.Wait()
		close(results)
	}()
	pending := map[uint64]batchResult{}
	var want uint64
	var first error
	handle := func(r batchResult) {
		if r.err != nil {
			if first == nil {
				first = r.err
			}
			cancel()
			return
		}
		each(r)
	}
	for r := range results {
		pending[r.job.seq] = r
		for {
			p, ok := pending[want]
			if !ok {
				break
			}
			delete(pending, want)
			want++
			handle(p)
		}
	}
	// After a failure the jobs after the gap it left, in order.
	for len(pending) > 0 {
		lo := uint64(0)
		found := false
		for seq := range pending {
			if !found || seq < lo {
				lo, found = seq, true
			}
		}
		handle(pending[lo])
		delete(pending, lo)
	}
	return first
}

// runOne runs one job and writes its report folder.
func (o batchOptions) runOne(ctx context.Context, j batchJob) batchResult {
	res := batchResult{job: j}
	start := time.Now()
	r, err := o.exec(ctx, j.s, j.seed)
	switch {
	case (errors.Is(err, live.ErrUnsupported) || errors.Is(err, sim.ErrLiveOnly)) && o.canSkip:
		res.skip = err
		return res
	case errors.Is(err, live.ErrUnsupported) || errors.Is(err, sim.ErrLiveOnly):
		res.err = badInput(err)
		return res
	case err != nil:
		res.err = outputError(err) // 1, or 2 for a refused report folder
		return res
	}
	r.Elapsed = time.Since(start)
	r.Version = buildVersion
	dir, err := writeRun(o.out, r, o.keepHistory || !r.Passed)
	if err != nil {
		res.err = outputError(err)
		return res
	}
	res.dir = filepath.Base(dir)
	if r.History != nil {
		res.cov = r.History.Coverage
	}
	res.run = summarize(r)
	return res
}

// outputError classes an error writing reports: a refused path (a link
// planted in the output folder, an unsafe scenario name) is bad input.
func outputError(err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	if errors.Is(err, reports.ErrUnsafePath) {
		return badInput(err)
	}
	return &exitError{code: 1, err: err}
}

// summarize is what a batch keeps of a run for index.html, summary.md,
// junit.xml and shard.json: the run without its history (megabytes per
// seed), except a live run's account, which summary.md prints.
//
// The checker's report is copied through JSON: its slices may share arrays
// with the history (about 1 MB a seed for a 4 KB report), which a plain
// copy would keep alive.
func summarize(r *result.Run) *result.Run {
	s := *r
	s.History = nil
	if b, err := json.Marshal(r.Report); err == nil {
		var rep check.Report
		if json.Unmarshal(b, &rep) == nil {
			s.Report = rep
		}
	}
	if r.History != nil && r.History.Live != nil {
		s.History = &history.History{Version: r.History.Version, Seed: r.History.Seed, Live: r.History.Live}
	}
	return &s
}

// checkRunName refuses a scenario name that is not a safe folder name:
// report folders are named <scenario>-<seed> under --out, so a name must
// not climb out of it (..), nest (/), hide (.x) or carry what breaks
// index.html or summary.md (control characters, invalid UTF-8). The
// scenario loader refuses such names too; this is defence in depth.
func checkRunName(name string) error {
	why := ""
	switch {
	case name == "":
		why = "it is empty"
	case !utf8.ValidString(name):
		why = "it is not valid UTF-8"
	case len(name) > 200:
		why = "it is longer than 200 bytes"
	case strings.HasPrefix(name, "."):
		why = "it starts with a dot"
	case strings.ContainsAny(name, `/\:`):
		why = `it holds a / \ or :`
	case strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) || !unicode.IsPrint(r) }):
		why = "it holds a control or invisible character"
	}
	if why != "" {
		return fmt.Errorf("scenario name %q is not a safe folder name for its reports: %s", name, why)
	}
	return nil
}

// runDir is a run's report folder: <out>/<scenario>-<seed>, never outside
// out.
func runDir(out string, r *result.Run) (string, error) {
	if err := checkRunName(r.Scenario); err != nil {
		return "", badInput(err)
	}
	dir := filepath.Join(out, fmt.Sprintf("%s-%d", r.Scenario, r.Seed))
	if filepath.Dir(dir) != filepath.Clean(out) {
		return "", badInput(fmt.Errorf("scenario name %q: its report folder %s is not directly in %s", r.Scenario, dir, out))
	}
	return dir, nil
}

// historyFile is where a run folder keeps its history, gzip-compressed
// (a history compresses about sevenfold at gzip's fastest level).
const historyFile = "history.json.gz"

// writeRun writes one run's report folder, with the compressed history
// when keep (a failing run, or --keep-history). A history left by an
// earlier run in the same folder is removed when this run keeps none (and
// the uncompressed history.json of older versions always), so a folder
// never holds a history of another run.
func writeRun(out string, r *result.Run, keep bool) (string, error) {
	dir, err := runDir(out, r)
	if err != nil {
		return "", err
	}
	var extra []reports.File
	if keep && r.History != nil {
		h := r.History
		extra = append(extra, reports.File{Name: historyFile, Write: func(w io.Writer) error {
			zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
			if err != nil {
				return err
			}
			if err := h.Write(zw); err != nil {
				return err
			}
			return zw.Close()
		}})
	}
	if err := reports.WriteRun(dir, r, extra...); err != nil {
		return "", err
	}
	stale := []string{"history.json"}
	if !keep {
		stale = append(stale, historyFile)
	}
	root, err := reports.OpenRunDir(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	for _, name := range stale {
		if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return dir, nil
}

// checkOut refuses an --out that cannot be a folder.
func checkOut(verb, out string) error {
	if out == "" {
		return fmt.Errorf("%s: --out \"\": want a folder for the reports", verb)
	}
	if fi, err := os.Stat(out); err == nil && !fi.IsDir() {
		return fmt.Errorf("%s: --out %s: not a folder", verb, out)
	}
	return nil
}

// writeOutputs writes what sits over all runs in out: index.html (when
// index), summary.md and junit.xml, and appends summary.md to the GitHub
// Actions step summary when GITHUB_STEP_SUMMARY is set.
func writeOutputs(out string, runs []*result.Run, entries []reports.IndexEntry, index bool) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return &exitError{code: 1, err: err}
	}
	if index {
		if err := reports.WriteIndex(filepath.Join(out, "index.html"), entries); err != nil {
			return outputError(err)
		}
	}
	md := []byte(reports.Markdown(runs))
	if err := reports.WriteFile(filepath.Join(out, "summary.md"), md); err != nil {
		return outputError(err)
	}
	if err := reports.WriteJUnit(filepath.Join(out, "junit.xml"), runs); err != nil {
		return outputError(err)
	}
	if err := appendStepSummary(md, filepath.Join(out, "summary.md")); err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

// stepSummaryMax keeps an appended summary under GitHub's limit of 1 MiB
// per step.
const stepSummaryMax = 1<<20 - 4<<10

// appendStepSummary appends md to the file GITHUB_STEP_SUMMARY names (a
// GitHub Actions job's summary page), cut at a line below GitHub's size
// limit with a pointer to the whole file.
func appendStepSummary(md []byte, whole string) error {
	p := os.Getenv("GITHUB_STEP_SUMMARY")
	if p == "" {
		return nil
	}
	if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("GITHUB_STEP_SUMMARY=%s: not a regular file", p)
	}
	if len(md) > stepSummaryMax {
		cut := md[:stepSummaryMax]
		if i := strings.LastIndexByte(string(cut), '\n'); i >= 0 {
			cut = cut[:i+1]
		}
		md = append(cut, fmt.Sprintf("\n_(cut at GitHub's size limit for a step summary: the whole summary is %s)_\n", whole)...)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	if _, err := f.Write(append(md, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	return nil
}

// failed is the exit status of a batch: 1, naming the runs that missed
// their expectations, if any did.
func failed(runs []*result.Run) error {
	var names []string
	for _, r := range runs {
		if !r.Passed {
			names = append(names, fmt.Sprintf("%s (seed %d)", r.Scenario, r.Seed))
		}
	}
	if len(names) == 0 {
		return nil
	}
	if len(names) > 10 {
		names = append(names[:10], fmt.Sprintf("and %d more", len(names)-10))
	}
	n := 0
	for _, r := range runs {
		if !r.Passed {
			n++
		}
	}
	return &exitError{code: 1, err: fmt.Errorf("%d of %d runs did not meet their expectations: %s", n, len(runs), strings.Join(names, ", "))}
}

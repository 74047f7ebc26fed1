package conform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dedupsim/dedupsim/conform/sparkrunner"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/sparkver"
	"github.com/dedupsim/dedupsim/internal/atomicfile"
)

// DefaultSparkVersion is the pyspark the suite pins by default.
const DefaultSparkVersion = "4.1.1"

// Options configure Run.
type Options struct {
	// SparkVersion is the pyspark version to install when Python is empty
	// (default DefaultSparkVersion).
	SparkVersion string
	// Python is the interpreter of a venv with pyspark; empty: Run installs
	// SparkVersion into CacheDir (EnsureEnv) and uses that.
	Python string
	// CacheDir holds the venvs (venv-<version>); required when Python is
	// empty.
	CacheDir string
	// Runner is runner.py's path; empty: the copy embedded in the binary is
	// written into OutDir.
	Runner string
	// Traces is the number of random cases; Seed draws them.
	Traces int
	Seed   uint64
	// Typed draws only cases with a typed or nested key column
	// (GenerateTyped) as the Traces random cases.
	Typed bool
	// GoldenDir is the engine's golden files (engine/testdata); empty: none.
	GoldenDir string
	// OutDir receives the cases' files, both outputs and the repros
	// (required).
	OutDir string
	// Workers is how many traces Spark runs at once (default 3).
	Workers int
	// Shrink is how many disagreements are shrunk (default 2), each within
	// ShrinkRuns Spark runs (default 24; each costs seconds of Spark); the
	// others keep their full case.
	Shrink, ShrinkRuns int
	// Log receives progress lines; SparkLog the runner's standard error
	// (Spark's own messages; default OutDir/spark.log).
	Log, SparkLog io.Writer
	// DeltaJars are Delta Lake's jars, comma-separated, for the cases with
	// a table, merge or append sink; empty: fetched (EnsureDelta) into
	// DeltaCache (default DefaultDeltaCache(CacheDir)) for the Spark line.
	DeltaJars, DeltaCache string
}

// CaseResult is one compared case.
type CaseResult struct {
	Case     *Case
	Flavour  string
	Features []string
	Verdict  Verdict
	// Diff is the first difference (Disagree, Expected).
	Diff *Diff
	// Expected is the ID of the expected difference that covers Diff.
	Expected string
	// Skip says why the case did not run on Spark (Skipped).
	Skip string
	// Repro is the folder with the ready-to-run pair and both outputs
	// (Disagree); Shrunk says it was shrunk.
	Repro  string
	Shrunk bool
}

// Result is a conformance run.
type Result struct {
	SparkVersion string
	Seed         uint64
	Golden       int // cases from the golden files
	Random       int // random cases
	Cases        []CaseResult
	Elapsed      time.Duration
	// Spark is where the Spark side's time went.
	Spark Profile
}

// Count returns how many cases got verdict v.
func (r *Result) Count(v Verdict) int {
	n := 0
	for _, c := range r.Cases {
		if c.Verdict == v {
			n++
		}
	}
	return n
}

// Failed reports whether any case disagrees without an expected difference.
func (r *Result) Failed() bool { return r.Count(Disagree) > 0 }

// Run runs the golden cases and opt.Traces random cases through dedupsim's
// engine and through Spark and compares them.
func Run(ctx context.Context, opt Options) (*Result, error) {
	start := time.Now()
	if opt.OutDir == "" {
		return nil, errors.New("conform: no OutDir")
	}
	if opt.Traces < 0 {
		return nil, fmt.Errorf("conform: traces must be >= 0, got %d", opt.Traces)
	}
	if opt.SparkVersion == "" {
		opt.SparkVersion = DefaultSparkVersion
	}
	if opt.Workers == 0 {
		opt.Workers = 3
	}
	if opt.Shrink == 0 {
		opt.Shrink = 2
	}
	if opt.ShrinkRuns == 0 {
		opt.ShrinkRuns = 24
	}
	logf := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, format+"\n", args...)
		}
	}
	if err := os.MkdirAll(opt.OutDir, 0o755); err != nil {
		return nil, err
	}
	if opt.Python == "" {
		if err := CheckVersion(opt.SparkVersion); err != nil {
			return nil, err
		}
		if opt.CacheDir == "" {
			return nil, errors.New("conform: neither Python nor CacheDir given")
		}
		py, err := EnsureEnv(ctx, opt.SparkVersion, opt.CacheDir, opt.Log)
		if err != nil {
			return nil, err
		}
		opt.Python = py
	}
	if opt.Runner == "" {
		opt.Runner = filepath.Join(opt.OutDir, "runner.py")
		if err := atomicfile.WriteFile(opt.Runner, sparkrunner.Runner); err != nil {
			return nil, err
		}
	}

	var cases []*Case
	res := &Result{Seed: opt.Seed}
	if opt.GoldenDir != "" {
		g, err := GoldenCases(opt.GoldenDir)
		if err != nil {
			return nil, err
		}
		cases = append(cases, g...)
		res.Golden = len(g)
	}
	if opt.Typed {
		cases = append(cases, GenerateTyped(opt.Seed, opt.Traces)...)
	} else {
		cases = append(cases, Generate(opt.Seed, opt.Traces)...)
	}
	res.Random = opt.Traces

	// The engine follows the runner's Spark line (state key order, pinned
	// confs: docs/spark-semantics.md §17) for every case whose query names
	// no version of its own.
	pv, err := PysparkVersion(ctx, opt.Python)
	if err != nil {
		return nil, err
	}
	ver, err := sparkver.Parse(pv)
	if err != nil {
		return nil, fmt.Errorf("conform: the runner's pyspark %s: %w", pv, err)
	}
	for _, c := range cases { // resumed follow-ups are in the list too
		c.engineVersion = ver
	}
	ckpts := map[string]*fsys.Mem{}
	for _, c := range cases {
		c.Engine = RunEngine(c, ckpts)
	}
	setPrevKeys(cases)

	deltaCache := opt.DeltaCache
	if deltaCache == "" {
		d, err := DefaultDeltaCache(opt.CacheDir)
		if err != nil {
			return nil, err
		}
		deltaCache = d
	}
	need := false
	for _, c := range cases {
		need = need || c.needsDelta()
	}
	jars, noDelta, err := deltaFor(ctx, need, opt.DeltaJars, opt.Python, deltaCache, opt.Log)
	if err != nil {
		return nil, err
	}

	sparkLog := opt.SparkLog
	if sparkLog == nil {
		f, err := os.Create(filepath.Join(opt.OutDir, "spark.log"))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		sparkLog = f
	}
	total := len(cases)
	last := time.Now()
	sp := &Spark{Python: opt.Python, Runner: opt.Runner, Workers: opt.Workers, Log: sparkLog, DeltaJars: jars, NoDelta: noDelta, Progress: func(done int) {
		if time.Since(last) > 15*time.Second || done == total {
			last = time.Now()
			logf("conform: %d of %d cases run on Spark (%s)", done, total, time.Since(start).Round(time.Second))
		}
	}}
	logf("conform: %d golden and %d random cases (seed %d); starting Spark (%s)", res.Golden, res.Random, opt.Seed, opt.Python)
	if err := sp.Start(ctx); err != nil {
		return nil, err
	}
	defer sp.Close()
	res.SparkVersion = sp.Version()
	if err := sp.Run(ctx, filepath.Join(opt.OutDir, "cases"), cases); err != nil {
		return nil, err
	}
	sp.Progress = nil

	shrunk := 0
	for i, c := range cases {
		cr := judge(c)
		if cr.Verdict == Disagree {
			dir := filepath.Join(opt.OutDir, fmt.Sprintf("repro-%03d", i))
			final := c
			if c.Checkpoint == "" && shrunk < opt.Shrink {
				shrunk++
				logf("conform: %s disagrees (%s); shrinking", c.Name, cr.Diff)
				if s, err := shrinkCase(ctx, sp, filepath.Join(opt.OutDir, "shrink", fmt.Sprint(i)), c, opt.ShrinkRuns); err == nil && s != c {
					final, cr.Shrunk = s, true
				} else if err != nil {
					logf("conform: shrinking %s: %v", c.Name, err)
				}
			}
			if err := writeRepro(dir, final, cr.Shrunk); err != nil {
				return nil, err
			}
			cr.Repro = dir
			logf("conform: DISAGREE %s: %s\n  repro: %s", c.Name, judge(final).Diff, dir)
		}
		res.Cases = append(res.Cases, cr)
	}
	res.Elapsed = time.Since(start)
	sp.Close() // the runner's last line carries the JVM's CPU seconds
	sp.mu.Lock()
	res.Spark = sp.Profile
	sp.mu.Unlock()
	return res, nil
}

// judge compares one case whose two outcomes are filled.
func judge(c *Case) CaseResult {
	cr := CaseResult{Case: c}
	cr.Flavour, cr.Features = Describe(c)
	switch {
	case c.Spark == nil:
		cr.Verdict, cr.Skip = Skipped, "not run on Spark"
	case c.Spark.Unsupported != "":
		cr.Verdict, cr.Skip = Skipped, c.Spark.Unsupported
	default:
		d := Compare(c.Engine, c.Spark)
		switch {
		case d == nil:
			cr.Verdict = Agree
		case c.Spark.RunnerFault:
			cr.Verdict, cr.Diff = Disagree, d
		default:
			cr.Diff = d
			if e := explain(c, d); e != nil {
				cr.Verdict, cr.Expected = Expected, e.ID
			} else {
				cr.Verdict = Disagree
			}
		}
	}
	return cr
}

// Table prints the result as a table, one row per feature, one column per
// flavour, each cell "agree/disagree/skipped" (expected differences count
// with agree, marked with a +N), then the disagreements with their repro
// folders, the expected differences that fired and the skip reasons.
func (r *Result) Table(w io.Writer) error {
	type cell struct{ agree, disagree, expected, skipped int }
	cells := map[string]map[string]*cell{}
	var features []string
	for _, c := range r.Cases {
		for _, f := range c.Features {
			if cells[f] == nil {
				cells[f] = map[string]*cell{}
				features = append(features, f)
			}
			ce := cells[f][c.Flavour]
			if ce == nil {
				ce = &cell{}
				cells[f][c.Flavour] = ce
			}
			switch c.Verdict {
			case Agree:
				ce.agree++
			case Disagree:
				ce.disagree++
			case Expected:
				ce.expected++
			case Skipped:
				ce.skipped++
			}
		}
	}
	order := map[string]int{}
	for i, f := range featureOrder {
		order[f] = i
	}
	slices.SortStableFunc(features, func(a, b string) int { return order[a] - order[b] })

	fmt.Fprintf(w, "Conformance of dedupsim against Apache Spark %s: %d cases (%d golden, %d random, seed %d) in %s\n",
		r.SparkVersion, len(r.Cases), r.Golden, r.Random, r.Seed, r.Elapsed.Round(time.Second))
	fmt.Fprintf(w, "agree %d, disagree %d, expected differences %d, skipped %d\n",
		r.Count(Agree), r.Count(Disagree), r.Count(Expected), r.Count(Skipped))
	if r.Spark.Traces > 0 {
		fmt.Fprintf(w, "Spark: %s\n", r.Spark)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "cells: agree/disagree/skipped (+N: expected differences, listed below)")
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprint(tw, "feature")
	for _, fl := range Flavours {
		fmt.Fprintf(tw, "\t%s", fl)
	}
	fmt.Fprintln(tw)
	for _, f := range features {
		fmt.Fprint(tw, f)
		for _, fl := range Flavours {
			ce := cells[f][fl]
			if ce == nil {
				fmt.Fprint(tw, "\t-")
				continue
			}
			s := fmt.Sprintf("%d/%d/%d", ce.agree, ce.disagree, ce.skipped)
			if ce.expected > 0 {
				s += fmt.Sprintf(" +%d", ce.expected)
			}
			fmt.Fprintf(tw, "\t%s", s)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := r.Count(Disagree); n > 0 {
		fmt.Fprintf(w, "\nDisagreements (%d):\n", n)
		for _, c := range r.Cases {
			if c.Verdict == Disagree {
				shr := ""
				if c.Shrunk {
					shr = " (shrunk)"
				}
				fmt.Fprintf(w, "  %s: %s\n    repro%s: %s\n", c.Case.Name, c.Diff, shr, c.Repro)
			}
		}
	}
	exp := map[string]int{}
	for _, c := range r.Cases {
		if c.Verdict == Expected {
			exp[c.Expected]++
		}
	}
	if len(exp) > 0 {
		fmt.Fprintln(w, "\nExpected differences (docs/conformance.md):")
		for _, e := range ExpectedDifferences {
			if n := exp[e.ID]; n > 0 {
				fmt.Fprintf(w, "  %s: %d case(s). %s\n", e.ID, n, e.Reason)
			}
		}
	}
	skips := map[string]int{}
	for _, c := range r.Cases {
		if c.Verdict == Skipped {
			skips[skipKind(c.Skip)]++
		}
	}
	if len(skips) > 0 {
		fmt.Fprintln(w, "\nSkipped (not expressible on Spark this way):")
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range skips {
				if !yield(k) {
					return
				}
			}
		}) {
			fmt.Fprintf(w, "  %d: %s\n", skips[k], k)
		}
	}
	return nil
}

// skipKind drops the line number from a skip reason, so reasons group.
func skipKind(s string) string {
	if strings.HasPrefix(s, "line ") {
		if _, rest, ok := strings.Cut(s, ": "); ok {
			return rest
		}
	}
	return s
}

var featureOrder = []string{
	"all cases", "golden", "random", "1 partition", "2-8 partitions", "all-column keys", "5+ key columns", "numeric keys",
	"null keys", "null event times", "fractional seconds", "RFC 3339 times", "delay 0",
	"rows at the watermark", "late rows", "evictions", "empty batches", "no-data batches off",
	"two sources (min)", "two sources (max)", "restart", "crash after-offsets-write",
	"crash after-state-commit", "crash after-sink-write", "crash after-commit", "replays",
	"resumed checkpoint", "absent field", "mixed JSON types",
	"table sink", "merge sink", "append sink", "merge lookback", "generated app id",
}

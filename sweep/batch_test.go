package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/internal/atomicfile"
	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sim"
)

// TestSummaryIsSmall: what a sweep keeps per seed is kilobytes, not the
// run (issue 10.16: 5.5 MB per seed). The checker's report alone keeps
// about 1 MB of the history alive through shared arrays, so the summary
// copies it.
func TestSummaryIsSmall(t *testing.T) {
	s, err := scenarios.Find("retry-gap-beyond-delay")
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const n = 8
	var keep []*result.Run
	before := heap()
	for seed := uint64(1); seed <= n; seed++ {
		r, err := scenarios.Run(s, seed, scenarios.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sum := Summarize(r)
		if sum.History != nil || sum.Report.Verdict.Summary != r.Report.Verdict.Summary || len(sum.Report.Findings) != len(r.Report.Findings) {
			t.Fatalf("summary %+v", sum)
		}
		keep = append(keep, sum)
	}
	per := uint64(0)
	if after := heap(); after > before {
		per = (after - before) / n
	}
	runtime.KeepAlive(keep)
	if per > 64<<10 {
		t.Fatalf("a summary keeps %d KB alive, want at most 64 KB", per>>10)
	}
	t.Logf("%d KB per seed", per>>10)
}

// TestRunBatchOrder: results reach each in job order whatever the number
// of workers, every run gets its report folder, and a failing job stops
// the batch with its error (exit 1) after the jobs before it were handed
// on.
func TestRunBatchOrder(t *testing.T) {
	s := &scenarios.Scenario{Name: "x"}
	const n = 12
	for _, jobs := range []int{1, 3, 8} {
		for _, failAt := range []uint64{0, 5, n} { // n: none fails
			out := t.TempDir()
			exec := func(_ context.Context, s *scenarios.Scenario, seed uint64) (*result.Run, error) {
				if seed == failAt+1 {
					return nil, errors.New("boom")
				}
				return &result.Run{Scenario: s.Name, Seed: seed, Passed: seed%2 == 0}, nil
			}
			seq := uint64(0)
			next := func() (Job, bool) {
				if seq == n {
					return Job{}, false
				}
				seq++
				return Job{Seq: seq - 1, Scenario: s, Seed: seq}, true
			}
			var got []uint64
			err := RunBatch(context.Background(), Options{Out: out, Jobs: jobs, Exec: exec, Version: "test"}, next, func(r Result) {
				if r.Dir != fmt.Sprintf("x-%d", r.Job.Seed) || r.Run.Version != "test" || r.Run.History != nil {
					t.Errorf("-j %d: result %+v", jobs, r)
				}
				got = append(got, r.Job.Seq)
			})
			if failAt == n {
				if err != nil || len(got) != n {
					t.Fatalf("-j %d: %v, %d results", jobs, err, len(got))
				}
			} else {
				var e *exitcode.Error
				if !errors.As(err, &e) || e.Code != exitcode.Failed || err.Error() != "boom" {
					t.Fatalf("-j %d, job %d fails: error %v", jobs, failAt, err)
				}
				if uint64(len(got)) < failAt {
					t.Fatalf("-j %d, job %d fails: only %v handed on", jobs, failAt, got)
				}
			}
			for i, q := range got {
				if i > 0 && q <= got[i-1] || q == failAt {
					t.Fatalf("-j %d, job %d fails: results in order %v", jobs, failAt, got)
				}
			}
			for i := uint64(0); i < min(failAt, n); i++ {
				if _, err := os.Stat(filepath.Join(out, fmt.Sprintf("x-%d", i+1), "report.json")); err != nil {
					t.Errorf("-j %d: %v", jobs, err)
				}
			}
		}
	}
}

// TestRunBatchSkip: a scenario this mode cannot run is skipped when the
// batch may skip, and is bad input (exit 2) when it may not.
func TestRunBatchSkip(t *testing.T) {
	s := &scenarios.Scenario{Name: "x"}
	exec := func(context.Context, *scenarios.Scenario, uint64) (*result.Run, error) {
		return nil, fmt.Errorf("x: %w", sim.ErrLiveOnly)
	}
	for _, canSkip := range []bool{true, false} {
		done := false
		next := func() (Job, bool) {
			if done {
				return Job{}, false
			}
			done = true
			return Job{Scenario: s, Seed: 1}, true
		}
		var skipped int
		err := RunBatch(context.Background(), Options{Out: t.TempDir(), Jobs: 2, CanSkip: canSkip, Exec: exec}, next, func(r Result) {
			if r.Skip != nil {
				skipped++
			}
		})
		var e *exitcode.Error
		switch {
		case canSkip && (err != nil || skipped != 1):
			t.Errorf("can skip: %v, %d skipped", err, skipped)
		case !canSkip && (!errors.As(err, &e) || e.Code != exitcode.BadInput || skipped != 0):
			t.Errorf("cannot skip: %v, %d skipped", err, skipped)
		}
	}
}

func TestOutputError(t *testing.T) {
	coded := &exitcode.Error{Code: exitcode.BadInput, Err: errors.New("already coded")}
	for _, tc := range []struct {
		err  error
		code int
	}{
		{errors.New("disk full"), exitcode.Failed},
		{fmt.Errorf("x: %w", atomicfile.ErrUnsafePath), exitcode.BadInput},
		{fmt.Errorf("wrapped: %w", coded), exitcode.BadInput},
		{&exitcode.Error{Code: exitcode.Failed, Err: atomicfile.ErrUnsafePath}, exitcode.Failed},
	} {
		got := exitcode.Output(tc.err)
		var e interface{ ExitStatus() int }
		if !errors.As(got, &e) || e.ExitStatus() != tc.code || got.Error() != tc.err.Error() {
			t.Errorf("exitcode.Output(%v) = %v, want exit %d and the same message", tc.err, got, tc.code)
		}
	}
}

func TestRunDir(t *testing.T) {
	for _, tc := range []struct {
		name, errHas string
	}{
		{"retry-gap", ""},
		{"", "it is empty"},
		{"..", "it starts with a dot"},
		{"a/b", `it holds a / \ or :`},
		{"a\nb", "it holds a control or invisible character"},
		{"\xff", "it is not valid UTF-8"},
		{strings.Repeat("a", 201), "it is longer than 200 bytes"},
	} {
		dir, err := RunDir("out", &result.Run{Scenario: tc.name, Seed: 7})
		var e *exitcode.Error
		switch {
		case tc.errHas == "" && (err != nil || dir != filepath.Join("out", tc.name+"-7")):
			t.Errorf("%q: %q %v", tc.name, dir, err)
		case tc.errHas != "" && (!errors.As(err, &e) || e.Code != exitcode.BadInput || !strings.Contains(err.Error(), tc.errHas)):
			t.Errorf("%q: %v, want exit 2 with %q", tc.name, err, tc.errHas)
		}
	}
}

func TestFailed(t *testing.T) {
	var runs []*result.Run
	if Failed(runs) != nil {
		t.Fatal("no run failed")
	}
	for i := range 13 {
		runs = append(runs, &result.Run{Scenario: "x", Seed: uint64(i), Passed: i == 0})
	}
	err := Failed(runs)
	var e *exitcode.Error
	want := "12 of 13 runs did not meet their expectations: x (seed 1), x (seed 2), x (seed 3), x (seed 4), x (seed 5), x (seed 6), x (seed 7), x (seed 8), x (seed 9), x (seed 10), and 2 more"
	if !errors.As(err, &e) || e.Code != exitcode.Failed || err.Error() != want {
		t.Errorf("Failed: %v", err)
	}
}

package live_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/live"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/sim/check"
)

// TestRunScenarioKfake runs catalogue scenarios against kfake instead of
// the simulator and checks them with the simulator's checker: the
// transactional Kafka sink survives replays after crash-after-sink-write
// (exactly once), the plain sink keeps both deliveries of a replayed batch.
func TestRunScenarioKfake(t *testing.T) {
	for _, tc := range []struct {
		name        string
		exactlyOnce bool
		finding     check.Kind
	}{
		{"replay-table-stable-app-id", true, ""},
		{"replay-append-sink", false, "sink-replay-duplicate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scenarios.Find(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			k := startKfake(t, nil)
			began := time.Now()
			h, err := live.RunScenario(t.Context(), k, s.Config, 1)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d copies, %d batches, %d crashes, %d writes, table %d rows in %v",
				len(h.Copies), len(h.Batches), len(h.Crashes), len(h.Writes), len(h.Table), time.Since(began))
			if len(h.Crashes) == 0 {
				t.Fatal("no crash fired")
			}
			skipped := 0
			for _, w := range h.Writes {
				if w.Kept == 0 && len(w.Rows) > 0 {
					skipped++
				}
			}
			if want := tc.exactlyOnce; (skipped > 0) != want {
				t.Errorf("%d replayed writes skipped by the sink, want some: %v", skipped, want)
			}
			r := scenarios.Evaluate(s, h, 1, scenarios.Options{})
			if r.Report.Verdict.ExactlyOnce != tc.exactlyOnce {
				t.Errorf("exactly once = %v, want %v: %s", r.Report.Verdict.ExactlyOnce, tc.exactlyOnce, r.Report.Verdict.Summary)
			}
			if tc.finding != "" && r.Report.Find(tc.finding) == nil {
				t.Errorf("no %s finding: %s", tc.finding, r.Report.Verdict.Summary)
			}
			for _, e := range r.Expect {
				if !e.OK {
					t.Errorf("expectation %s %s: got %d", e.Finding, e.Want, e.Got)
				}
			}
			for _, f := range r.Report.Findings {
				t.Logf("finding %s: %d %s", f.Kind, f.Count, f.Message)
			}
		})
	}
}

// TestRunScenarioRefusesUnsupported: a fault --kafka cannot inject is
// refused with the list of what it supports.
func TestRunScenarioRefusesUnsupported(t *testing.T) {
	s, err := scenarios.Find("shape-change-fresh-checkpoint-merge")
	if err != nil {
		t.Fatal(err)
	}
	k := startKfake(t, nil)
	_, err = live.RunScenario(t.Context(), k, s.Config, 1)
	if !errors.Is(err, live.ErrUnsupported) || !strings.Contains(err.Error(), "crash-after-sink-write") {
		t.Fatalf("err = %v, want a refusal listing what --kafka supports", err)
	}
}

// TestRunScenarioKfakeWorkloads: the in-process live runner produces the
// simulator's workload for the seed (several sources, silence, future
// clocks, restamped retries) and the scenario's expectations hold against
// Kafka too.
func TestRunScenarioKfakeWorkloads(t *testing.T) {
	for _, name := range []string{"quiet-source-stalls-watermark", "future-clock-filtered", "restamped-retries-within-watermark", "dead-input-max-policy"} {
		t.Run(name, func(t *testing.T) {
			s, err := scenarios.Find(name)
			if err != nil {
				t.Fatal(err)
			}
			k := startKfake(t, nil)
			h, err := live.RunScenario(t.Context(), k, s.Config, 1)
			if err != nil {
				t.Fatal(err)
			}
			r := scenarios.Evaluate(s, h, 1, scenarios.Options{})
			checkRun(t, r)
		})
	}
}

package scenarios

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/sim"
)

// TestMemoryBudgetRefuses: a scenario predicted above a small budget is
// refused before it runs, with the numbers (issue 10 item 15).
func TestMemoryBudgetRefuses(t *testing.T) {
	s, err := Parse("big.yaml", []byte(refuseBase+"fault_phase: 10m\nheal_phase: 10m\nsources:\n  - name: default\n    rate: {per_sec: 1000}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b := Budget{Bytes: 100 << 20, From: "a test"}
	_, err = Run(s, 1, Options{MemoryBudget: b})
	var me *MemoryError
	if !errors.As(err, &me) || !errors.Is(err, ErrMemoryBudget) {
		t.Fatalf("error %v, want a MemoryError", err)
	}
	for _, want := range []string{"big.yaml: the run would need about 366 MiB, ", "above the memory budget of 100 MiB (a test)",
		"1.2 M copies predicted (1000 events/s x 20m x copy factor 1.00)", "285 B per copy", "40 MiB fixed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err.Error(), want)
		}
	}
	if me.Predict.Copies != 1.2e6 || me.Predict.PeakBytes <= float64(b.Bytes) {
		t.Errorf("prediction %+v", me.Predict)
	}
	// Within the budget it runs; no budget checks nothing.
	small, err := Parse("small.yaml", []byte(refuseBase+"fault_phase: 5s\nheal_phase: 5s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(small, 1, Options{MemoryBudget: b}); err != nil {
		t.Fatal(err)
	}
	if err := CheckMemory([]*Scenario{s}, Budget{}, Options{}, 1); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryBudgetSources(t *testing.T) {
	b, err := MemoryBudget("1.5g")
	if err != nil || b.Bytes != 3<<29 || b.From != "--memory-budget 1.5g" {
		t.Fatalf("%+v %v", b, err)
	}
	for _, bad := range []string{"", "lots", "-1g", "NaN", "1e9", "0", "99999999999999t", "4 gigs"} {
		if bad == "" {
			continue
		}
		if _, err := MemoryBudget(bad); err == nil {
			t.Errorf("--memory-budget %q accepted", bad)
		}
	}
	for in, want := range map[string]int64{"512m": 512 << 20, "4g": 4 << 30, "2GiB": 2 << 30, "1048576": 1 << 20, "1t": 1 << 40, "64 MB": 64 << 20} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	t.Setenv("GOMEMLIMIT", "")
	def, err := MemoryBudget("")
	if err != nil {
		t.Skipf("no memory figure on this machine: %v", err)
	}
	if def.Bytes <= 0 || !strings.Contains(def.From, "3/4 of") {
		t.Fatalf("default budget %+v", def)
	}
}

// TestSizeText: three significant digits, never in e-notation.
func TestSizeText(t *testing.T) {
	for b, want := range map[float64]string{0: "0 B", 999: "999 B", 1000: "0.977 KiB", 1536: "1.5 KiB", 1010 << 20: "0.986 GiB",
		445 << 20: "445 MiB", 16.3 * (1 << 30): "16.3 GiB", 1 << 60: "more than 1EiB", 1023 << 50: "0.999 EiB"} {
		if got := size(b); got != want {
			t.Errorf("size(%v) = %q, want %q", b, got, want)
		}
	}
}

// TestSoftLimit: the collector's limit is the prediction's LimitBytes for
// each run at once, never under sim.MinLimitBytes, and no limit at all for a
// prediction past any machine.
func TestSoftLimit(t *testing.T) {
	s, err := Parse("big.yaml", []byte(refuseBase+"fault_phase: 10m\nheal_phase: 10m\nsources:\n  - name: default\n    rate: {per_sec: 1000}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := predict(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.LimitBytes <= 0 || p.LimitBytes >= p.PeakBytes {
		t.Fatalf("limit %v for a peak of %v", p.LimitBytes, p.PeakBytes)
	}
	for _, jobs := range []int{0, 1, 2, 8} {
		if got, want := SoftLimit(p, jobs), int64(float64(max(jobs, 1))*p.LimitBytes); got != want {
			t.Errorf("SoftLimit(-j %d) = %d, want %d", jobs, got, want)
		}
	}
	huge := p
	huge.LimitBytes = math.MaxFloat64
	if got := SoftLimit(huge, 2); got != math.MaxInt64 {
		t.Errorf("SoftLimit of a huge prediction = %d, want no limit", got)
	}
	small := p
	small.LimitBytes = 14 << 20 // the catalogue's largest run
	for _, jobs := range []int{1, 2} {
		if got := SoftLimit(small, jobs); got != sim.MinLimitBytes {
			t.Errorf("SoftLimit of a small run, -j %d = %d MiB, want the floor %d MiB", jobs, got>>20, sim.MinLimitBytes>>20)
		}
	}
}

// TestMemoryFloorSharedAtOnce: runs at once share one soft limit, so the
// heap the collector may grow under its floor is charged once for them
// all, not to each (review finding 2): 4 runs of 350 k copies at -j 4
// under --memory-budget 560m fit their 140 MiB shares; one such run alone
// under 140 MiB does not, as it may grow to the floor by itself.
func TestMemoryFloorSharedAtOnce(t *testing.T) {
	var list []*Scenario
	for _, name := range []string{"a.yaml", "b.yaml", "c.yaml", "d.yaml"} {
		s, err := Parse(name, []byte(refuseBase+"fault_phase: 175s\nheal_phase: 175s\nsources:\n  - name: default\n    rate: {per_sec: 1000}\n"))
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, s)
	}
	share := Budget{Bytes: (560 << 20) / 4, From: "--memory-budget 560m, shared by -j 4 runs at once"}
	if err := CheckMemory(list, share, Options{}, 4); err != nil {
		t.Fatalf("4 runs that fit at -j 4: %v", err)
	}
	_, p, err := Largest(list, Options{}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if p.Copies != 350e3 || p.PeakBytes > float64(share.Bytes) || p.FloorBytes < 0 {
		t.Errorf("at -j 4: %+v", p)
	}
	// The process's limit, max(4 x LimitBytes, floor), is above the floor:
	// nothing grows under it.
	if 4*p.LimitBytes < sim.MinLimitBytes || p.FloorBytes != 0 {
		t.Errorf("4 x limit %.0f, floor share %.0f", 4*p.LimitBytes, p.FloorBytes)
	}
	alone, err := list[0].config(Options{}).Predict()
	if err != nil {
		t.Fatal(err)
	}
	if alone.FloorBytes <= 0 || alone.PeakBytes <= float64(share.Bytes) {
		t.Errorf("alone: %+v", alone)
	}
	var me *MemoryError
	if err := CheckMemory(list[:1], share, Options{}, 1); !errors.As(err, &me) {
		t.Fatalf("one run alone under 140 MiB: %v", err)
	}
	// Two at once: the floor's growth, shared, is less than one's alone.
	two := alone.AtOnce(2, alone.GrownBytes)
	if !(two.FloorBytes < alone.FloorBytes) || two.PeakBytes != two.FixedBytes+two.Copies*two.BytesPerCopy {
		t.Errorf("two at once %+v, alone %+v", two, alone)
	}
}

package faults

import (
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine/crashpoint"
)

var kebab = regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
var snake = regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)

// TestCatalogue: names are stable-looking and unique, knobs are
// well-formed and their defaults lie in their ranges, requirements exist.
func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Catalogue() {
		if !kebab.MatchString(f.Name) || seen[f.Name] {
			t.Errorf("fault name %q: not kebab-case or repeated", f.Name)
		}
		seen[f.Name] = true
		if f.Doc == "" || f.Class == "" {
			t.Errorf("%s: no doc or class", f.Name)
		}
		knobs := map[string]bool{}
		for _, k := range f.Knobs {
			if !snake.MatchString(k.Name) || knobs[k.Name] || k.Doc == "" {
				t.Errorf("%s knob %q: not snake_case, repeated or undocumented", f.Name, k.Name)
			}
			knobs[k.Name] = true
			switch k.Kind {
			case Choice:
				if len(k.Choices) < 2 || int(k.Default) >= len(k.Choices) {
					t.Errorf("%s knob %s: choices %v default %v", f.Name, k.Name, k.Choices, k.Default)
				}
			case Bool:
				if k.Default != 0 && k.Default != 1 {
					t.Errorf("%s knob %s: bool default %v", f.Name, k.Name, k.Default)
				}
			default:
				if k.Min > k.Max || k.Default < k.Min || k.Default > k.Max {
					t.Errorf("%s knob %s: default %v outside [%v, %v]", f.Name, k.Name, k.Default, k.Min, k.Max)
				}
				if k.Kind == Probability && (k.Min < 0 || k.Max > 1) {
					t.Errorf("%s knob %s: probability range [%v, %v]", f.Name, k.Name, k.Min, k.Max)
				}
				if k.SwarmMax != 0 && (k.SwarmMax <= k.Min || k.SwarmMax > k.Max) {
					t.Errorf("%s knob %s: swarm max %v outside (%v, %v]", f.Name, k.Name, k.SwarmMax, k.Min, k.Max)
				}
				if k.LogScale && k.Min <= 0 {
					t.Errorf("%s knob %s: log scale from %v", f.Name, k.Name, k.Min)
				}
			}
		}
		for _, r := range f.Requires {
			if _, ok := Lookup(r); !ok {
				t.Errorf("%s requires unknown %s", f.Name, r)
			}
		}
	}
	for _, p := range []string{"after-offsets-write", "after-state-commit", "after-sink-write", "after-commit"} {
		if !seen[CrashAt(p)] {
			t.Errorf("no fault for crash point %s", p)
		}
	}
	// Catalogue returns copies.
	c := Catalogue()
	c[0].Knobs[0].Default = 42
	if Catalogue()[0].Knobs[0].Default == 42 {
		t.Error("Catalogue shares its knobs")
	}
}

// TestCrashFaultsFromPoints: one crash-after-* fault per crash point, in
// the points' order, named and documented as before the list moved to
// package crashpoint (scenario files and PRNG stream names use the names).
func TestCrashFaultsFromPoints(t *testing.T) {
	want := []string{"crash-after-offsets-write", "crash-after-state-commit", "crash-after-sink-write", "crash-after-commit"}
	if got := []string{CrashAfterOffsetsWrite, CrashAfterStateCommit, CrashAfterSinkWrite, CrashAfterCommit}; !slices.Equal(got, want) {
		t.Fatalf("constants %v", got)
	}
	names := Names()
	i := slices.Index(names, want[0])
	if i < 0 || i+len(want) > len(names) || !slices.Equal(names[i:i+len(want)], want) || names[i-1] != LaggingInput || names[i+len(want)] != CrashRandom {
		t.Fatalf("catalogue order %v", names)
	}
	for k, p := range crashpoint.All() {
		f, ok := Lookup(want[k])
		if !ok || f.Class != ClassCrash || len(f.Knobs) != 1 || f.Knobs[0].Name != "rate" {
			t.Fatalf("%s: %+v", want[k], f)
		}
		if got, ok := CrashPoint(want[k]); !ok || got != p {
			t.Errorf("CrashPoint(%q) = %q, %v", want[k], got, ok)
		}
	}
	if f, _ := Lookup(CrashAfterSinkWrite); f.Doc != "The driver dies at after-sink-write, leaving the checkpoint with the sink holds batch N; commits/N not written: the batch is replayed." {
		t.Errorf("doc %q", f.Doc)
	}
	for _, name := range []string{CrashRandom, "crash-", "crash-after", ProducerRetry, "after-commit"} {
		if p, ok := CrashPoint(name); ok {
			t.Errorf("CrashPoint(%q) = %q", name, p)
		}
	}
}

func TestResolve(t *testing.T) {
	s, err := Plan{Faults: map[string]Knobs{
		ProducerRetry:     {"probability": 0.3, "gap": "lognormal", "gap_ms": "1m30s", "copies_max": 2},
		LaggingInput:      {"dead": true, "lag_ms": 5000},
		ClockSkew:         nil,
		QueryShapeChange:  {"starting_offsets": "earliest", "at_frac": "0.25"},
		FutureTimestamp:   {"ahead_ms": "2d"},
		CrashRandom:       {"rate": 0.1},
		TornWrite:         {},
		CrashAfterCommit:  {},
		LostUnsyncedWrite: {"probability": 1},
	}}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ClockSkew, CrashAfterCommit, CrashRandom, FutureTimestamp, LaggingInput, LostUnsyncedWrite, ProducerRetry, QueryShapeChange, TornWrite}
	if !slices.Equal(s.Names(), want) {
		t.Fatalf("names %v", s.Names())
	}
	checks := []struct {
		got, want float64
	}{
		{s.Value(ProducerRetry, "probability"), 0.3},
		{float64(s.Ms(ProducerRetry, "gap_ms")), 90_000},
		{float64(s.Int(ProducerRetry, "copies_max")), 2},
		{s.Value(ProducerRetry, "gap_sigma"), 1}, // default
		{float64(s.Ms(LaggingInput, "lag_ms")), 5000},
		{float64(s.Ms(FutureTimestamp, "ahead_ms")), 2 * 86_400_000},
		{s.Value(QueryShapeChange, "at_frac"), 0.25},
		{s.Value(ClockSkew, "producers_fraction"), 0.2},
	}
	for i, c := range checks {
		if c.got != c.want {
			t.Errorf("check %d: %v, want %v", i, c.got, c.want)
		}
	}
	if s.Choice(ProducerRetry, "gap") != "lognormal" || !s.Bool(LaggingInput, "dead") || s.Choice(QueryShapeChange, "starting_offsets") != "earliest" {
		t.Error("choice or bool knob")
	}
	if s.On(DuplicateAppend) {
		t.Error("a fault not in the plan is on")
	}
	// Knobs round-trips through a plan.
	back, err := s.Plan().Resolve()
	if err != nil || !reflect.DeepEqual(back.Knobs(), s.Knobs()) {
		t.Fatalf("round trip: %v\n%v\n%v", err, back.Knobs(), s.Knobs())
	}
	if _, err := (Plan{}).Resolve(); err != nil {
		t.Fatal(err)
	}
}

func TestResolveErrors(t *testing.T) {
	for name, p := range map[string]map[string]Knobs{
		"unknown fault":      {"gremlins": nil},
		"unknown knob":       {ProducerRetry: {"probabilty": 0.1}},
		"out of range":       {ProducerRetry: {"probability": 0.9}},
		"not an integer":     {ProducerRetry: {"copies_max": 1.5}},
		"bad choice":         {ProducerRetry: {"gap": "pareto"}},
		"bad duration":       {ProducerRetry: {"gap_ms": "soon"}},
		"duration too short": {LaggingInput: {"lag_ms": "1ms"}},
		"bool as number 2":   {LaggingInput: {"dead": 2}},
		"requirement off":    {LostUnsyncedWrite: nil},
		"string for number":  {ProducerRetry: {"probability": "lots"}},
	} {
		if _, err := (Plan{Faults: p}).Resolve(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestDraw(t *testing.T) {
	mixes := map[string]bool{}
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		s, err := Plan{Swarm: true}.Draw(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Names()) == 0 {
			t.Fatal("no fault on")
		}
		mixes[joined(s.Names())] = true
		for _, a := range s.on {
			for _, req := range a.f.Requires {
				if !s.On(req) {
					t.Fatalf("seed %d: %s on without %s", seed, a.f.Name, req)
				}
			}
		}
		// Drawn values resolve as an explicit plan (in range, right kind).
		if _, err := s.Plan().Resolve(); err != nil {
			t.Fatalf("seed %d: drawn plan does not resolve: %v", seed, err)
		}
		// Same state, same draw.
		again, _ := Plan{Swarm: true}.Draw(rand.New(rand.NewPCG(seed, 1)), nil)
		if !reflect.DeepEqual(again.Knobs(), s.Knobs()) {
			t.Fatalf("seed %d: not deterministic", seed)
		}
		if s.On(ProducerRetry) && s.Value(ProducerRetry, "offline_fraction") > 0.2 {
			t.Fatalf("seed %d: drawn above the swarm cap", seed)
		}
		// Fixed knobs keep their default.
		if s.On(SourceSilence) && s.Int(SourceSilence, "source") != -1 {
			t.Fatalf("seed %d: fixed knob drawn", seed)
		}
	}
	if len(mixes) < 150 {
		t.Errorf("200 seeds drew only %d mixes", len(mixes))
	}
}

func TestDrawRestricted(t *testing.T) {
	plan := Plan{Swarm: true, Faults: map[string]Knobs{
		ProducerRetry: {"probability": 0.25}, TornWrite: nil, LaggingInput: nil, CrashRandom: nil,
	}}
	noLag := func(name string) bool { return name != LaggingInput }
	sawTornAlone := false
	for seed := uint64(0); seed < 100; seed++ {
		s, err := plan.Draw(rand.New(rand.NewPCG(seed, 2)), noLag)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range s.Names() {
			if _, ok := plan.Faults[n]; !ok || n == LaggingInput {
				t.Fatalf("seed %d: %s is not a candidate", seed, n)
			}
		}
		if s.On(ProducerRetry) && s.Value(ProducerRetry, "probability") != 0.25 {
			t.Fatalf("seed %d: pinned knob drawn", seed)
		}
		if s.On(TornWrite) && !s.On(CrashRandom) {
			t.Fatalf("seed %d: torn-write without its requirement", seed)
		}
		sawTornAlone = sawTornAlone || (s.On(TornWrite) && !s.On(ProducerRetry))
	}
	if !sawTornAlone {
		t.Error("never drew torn-write without producer-retry")
	}
	// A fault whose requirement cannot be drawn is never on.
	s, err := Plan{Swarm: true, Faults: map[string]Knobs{TornWrite: nil, CrashAfterCommit: nil}}.Draw(rand.New(rand.NewPCG(1, 1)), nil)
	if err != nil || s.On(TornWrite) || !s.On(CrashAfterCommit) {
		t.Fatalf("torn-write without crash-random as a candidate: %v %v", s.Names(), err)
	}
}

// TestDrawStable: switching one fault off does not change the knob values
// drawn for the others.
func TestDrawStable(t *testing.T) {
	all := Plan{Swarm: true}
	for seed := uint64(0); seed < 20; seed++ {
		a, _ := all.Draw(rand.New(rand.NewPCG(seed, 3)), nil)
		b, _ := all.Draw(rand.New(rand.NewPCG(seed, 3)), func(n string) bool { return n != ClockSkew })
		ka, kb := a.Knobs(), b.Knobs()
		for name, k := range kb {
			if ka[name] != nil && !reflect.DeepEqual(ka[name], k) {
				t.Fatalf("seed %d: %s knobs changed when clock-skew was excluded", seed, name)
			}
		}
	}
}

func TestMissing(t *testing.T) {
	cov := Coverage{}
	cov.Mark(ProducerRetry)
	cov.Add(CrashRandom, 3)
	cov.Add(TornWrite, 0)
	got := Missing([]string{TornWrite, ProducerRetry, CrashRandom, ClockSkew, TornWrite}, cov)
	if !slices.Equal(got, []string{ClockSkew, TornWrite}) {
		t.Fatalf("Missing = %v", got)
	}
	sweep := Coverage{}
	sweep.Merge(cov)
	sweep.Merge(map[string]int{ClockSkew: 1})
	if m := Missing([]string{ClockSkew, CrashRandom}, sweep); len(m) != 0 || sweep[CrashRandom] != 3 {
		t.Fatalf("merged %v missing %v", sweep, m)
	}
	if Missing(nil, nil) != nil {
		t.Fatal("Missing(nil, nil)")
	}
}

// TestDurationKnobStrings: a duration knob written as a string is read
// with package duration's grammar, as every other duration of a scenario.
func TestDurationKnobStrings(t *testing.T) {
	for _, tc := range []struct {
		fault, knob, in string
		want            float64
	}{
		{ProducerRetry, "gap_ms", "250ms", 250}, // gap_ms takes [10ms, 10m]
		{ProducerRetry, "gap_ms", "30s", 30_000},
		{FutureTimestamp, "ahead_ms", "1h30m", 5_400_000}, // ahead_ms takes [1m, 366d]
		{FutureTimestamp, "ahead_ms", "2d", 172_800_000},
		{FutureTimestamp, "ahead_ms", "1d12h", 129_600_000},
		{FutureTimestamp, "ahead_ms", "10 minutes", 600_000},
	} {
		if got, err := ParseValue(tc.fault, tc.knob, tc.in); err != nil || got != tc.want {
			t.Errorf("%s: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
	for _, s := range []string{"", "soon", "-1s", "d", "1ns", "90"} {
		if v, err := ParseValue(FutureTimestamp, "ahead_ms", s); err == nil {
			t.Errorf("%q accepted as %v", s, v)
		}
	}
	if v, err := ParseValue(ProducerRetry, "gap_ms", 2*time.Second); err != nil || v != 2000 {
		t.Errorf("time.Duration knob: %v %v", v, err)
	}
}

func joined(s []string) string {
	out := ""
	for _, x := range s {
		out += x + ","
	}
	return out
}

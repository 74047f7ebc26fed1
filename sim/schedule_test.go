package sim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sim/history"
	"github.com/dedupsim/dedupsim/sim/record"
)

// The tests of Schedule live in the external test package: they run the
// catalogue scenarios, and package scenarios imports sim.

// checkSchedule runs cfg with seed both ways and compares the workload with
// the history: the copies exactly, each row's content, the coverage of the
// workload faults and the run's parameters.
func checkSchedule(t *testing.T, name string, cfg sim.Config, seed uint64) *sim.Workload {
	t.Helper()
	h, err := sim.Run(cfg, seed)
	if err != nil {
		t.Fatalf("%s seed %d: run: %v", name, seed, err)
	}
	wl, err := sim.Schedule(cfg, seed)
	if err != nil {
		t.Fatalf("%s seed %d: schedule: %v", name, seed, err)
	}
	compareCopies(t, fmt.Sprintf("%s seed %d", name, seed), wl.Copies, h.Copies)
	checkRows(t, name, seed, wl)
	if got, want := wl.Coverage, workloadCoverage(h.Coverage); !reflect.DeepEqual(got, want) {
		t.Errorf("%s seed %d: coverage %v, the run's workload faults %v", name, seed, got, want)
	}
	if !reflect.DeepEqual(wl.Faults, h.Faults) || !reflect.DeepEqual(wl.FaultKnobs, h.FaultKnobs) {
		t.Errorf("%s seed %d: faults %v %v, the run's %v %v", name, seed, wl.Faults, wl.FaultKnobs, h.Faults, h.FaultKnobs)
	}
	if wl.HealMs != h.HealAtMs || wl.ArrivalRatePerSec != h.ArrivalRatePerSec || wl.EndMs > h.EndMs {
		t.Errorf("%s seed %d: heal %d, rate %v, end %d; the run's heal %d, rate %v, end %d",
			name, seed, wl.HealMs, wl.ArrivalRatePerSec, wl.EndMs, h.HealAtMs, h.ArrivalRatePerSec, h.EndMs)
	}
	c := cfg.WithDefaults()
	if wl.TriggerMs != c.TriggerInterval.Ms() || wl.DowntimeMs != c.Downtime.Ms() ||
		wl.HealMs-wl.StartMs != c.FaultPhase.Ms() || wl.EndMs-wl.HealMs != c.HealPhase.Ms() {
		t.Errorf("%s: phases %+v do not match the config", name, wl)
	}
	return wl
}

func compareCopies(t *testing.T, what string, got, want []history.Copy) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("%s: copy %d: schedule %+v, run %+v", what, i, got[i], want[i])
		}
	}
	t.Fatalf("%s: schedule has %d copies, run %d", what, len(got), len(want))
}

// workloadCoverage keeps the marks of workload faults (and their
// "fault/variant" marks).
func workloadCoverage(cov map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range cov {
		name, _, _ := strings.Cut(k, "/")
		if f, ok := faults.Lookup(name); ok && f.Workload {
			out[k] = v
		}
	}
	return out
}

// checkRows: Rows[i] is the row of Copies[i], encoded as the simulator
// encodes rows, and the offsets are dense per partition.
func checkRows(t *testing.T, name string, seed uint64, wl *sim.Workload) {
	t.Helper()
	if len(wl.Rows) != len(wl.Copies) {
		t.Fatalf("%s seed %d: %d rows for %d copies", name, seed, len(wl.Rows), len(wl.Copies))
	}
	next := make([][]int64, len(wl.Sources))
	for i, s := range wl.Sources {
		next[i] = make([]int64, s.Partitions)
	}
	for i, c := range wl.Copies {
		row := wl.Rows[i]
		if c.Offset != next[c.Source][c.Partition] {
			t.Fatalf("%s seed %d: copy %d (%+v): offset %d, want %d", name, seed, i, c, c.Offset, next[c.Source][c.Partition])
		}
		next[c.Source][c.Partition]++
		var m map[string]json.RawMessage
		if err := json.Unmarshal(row, &m); err != nil || len(m) != len(wl.Columns) {
			t.Fatalf("%s seed %d: row %d %s: not a row of the %d columns %v (%v)", name, seed, i, row, len(wl.Columns), wl.Columns, err)
		}
		var id string
		_ = json.Unmarshal(m[wl.IDColumn], &id)
		us, err := eventTimeUs(m[wl.EventColumn])
		if id != c.Event || err != nil || us != c.EventTimeUs || string(m[record.CopyColumn]) != strconv.Itoa(i) {
			t.Fatalf("%s seed %d: row %d %s does not match copy %+v (%v)", name, seed, i, row, c, err)
		}
		// Byte for byte: the simulator's encoding, _copy last.
		prefix := `{"` + wl.IDColumn + `":"` + c.Event + `","` + wl.EventColumn + `":`
		suffix := `,"` + record.CopyColumn + `":` + strconv.Itoa(i) + `}`
		if !bytes.HasPrefix(row, []byte(prefix)) || !bytes.HasSuffix(row, []byte(suffix)) {
			t.Fatalf("%s seed %d: row %d %s: want %s...%s", name, seed, i, row, prefix, suffix)
		}
	}
}

// eventTimeUs reads an event-time value: seconds with a six-digit fraction,
// or an RFC 3339 string.
func eventTimeUs(v json.RawMessage) (int64, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		tm, err := time.Parse(time.RFC3339Nano, s)
		return tm.UnixMicro(), err
	}
	text := string(v)
	neg := strings.HasPrefix(text, "-")
	whole, frac, ok := strings.Cut(strings.TrimPrefix(text, "-"), ".")
	if !ok || len(frac) != 6 {
		return 0, fmt.Errorf("event time %s: want seconds with six fractional digits", v)
	}
	sec, err1 := strconv.ParseInt(whole, 10, 64)
	us, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("event time %s: not a number", v)
	}
	if neg {
		return -(sec*1e6 + us), nil
	}
	return sec*1e6 + us, nil
}

// TestScheduleMatchesRunCatalogue: on every catalogue scenario, Schedule
// gives exactly the copies, rows and workload coverage of sim.Run.
func TestScheduleMatchesRunCatalogue(t *testing.T) {
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("empty catalogue")
	}
	seeds := []uint64{1, 2, 42}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, s := range all {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			for _, seed := range seeds {
				wl := checkSchedule(t, s.Name, s.Config, seed)
				if len(wl.Copies) == 0 {
					t.Fatalf("seed %d: no copies", seed)
				}
				// A scenario keyed on id without payload keeps the rows
				// {"id":...,"<event time>":...,"_copy":N}.
				if len(s.Config.Columns) == 0 && wl.IDColumn == "id" {
					if want := []string{"id", wl.EventColumn, record.CopyColumn}; !reflect.DeepEqual(wl.Columns, want) {
						t.Fatalf("columns %v, want %v", wl.Columns, want)
					}
				}
			}
		})
	}
}

// crashyTwoSources is a busy two-source run with frequent crashes: many
// copies of the two sources share their append microsecond, and restarts
// after a crash append at times off the trigger grid. The append order of
// such ties must not depend on when the driver appended (it did, before
// generation was tied to the trigger grid).
func crashyTwoSources() sim.Config {
	cfg := sim.Defaults()
	cfg.Query = `sources:
  - name: web
    watermark: {column: ts, delay: 10 seconds}
  - name: mobile
    watermark: {column: ts, delay: 10 seconds}
dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}
shuffle_partitions: 2
sink: {kind: table}
`
	cfg.FaultPhase = sim.Duration(40 * time.Second)
	cfg.HealPhase = sim.Duration(20 * time.Second)
	cfg.Downtime = sim.Duration(3 * time.Second)
	cfg.OmitProgress = true
	cfg.Sources = []sim.SourceConfig{
		{Name: "web", Rate: sim.Rate{PerSec: 2000}},
		{Name: "mobile", Rate: sim.Rate{PerSec: 1500}, TimestampFormat: "rfc3339", Partitioner: "round_robin", Partitions: 3},
	}
	cfg.Plan = faults.Plan{Faults: map[string]faults.Knobs{
		faults.CrashRandom:            {"rate": 0.3},
		faults.CrashAfterSinkWrite:    {"rate": 0.1},
		faults.ProducerRetry:          {"probability": 0.1, "gap": "fixed", "gap_ms": 1000.0},
		faults.ProducerRetryRestamped: {"probability": 0.05},
		faults.DuplicateAppend:        {"probability": 0.05},
		faults.ClockSkew:              nil,
	}}
	return cfg
}

func TestScheduleMatchesRunAcrossCrashes(t *testing.T) {
	cfg := crashyTwoSources()
	for _, seed := range []uint64{1, 2} {
		h, err := sim.Run(cfg, seed)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Crashes) < 3 {
			t.Fatalf("seed %d: %d crashes: the test needs restarts off the grid", seed, len(h.Crashes))
		}
		wl := checkSchedule(t, "crashy-two-sources", cfg, seed)
		if wl.Coverage[faults.DuplicateAppend] == 0 || wl.Coverage[faults.ClockSkew] == 0 {
			t.Fatalf("seed %d: workload faults did not fire: %v", seed, wl.Coverage)
		}
	}
}

// TestScheduleEngineFaults: engine, disk and operator faults are accepted,
// listed, and change no copy; a fault the simulator cannot inject at all
// (live only) does not make Schedule refuse the config.
func TestScheduleEngineFaults(t *testing.T) {
	base := crashyTwoSources()
	base.FaultPhase, base.HealPhase = sim.Duration(30*time.Second), sim.Duration(10*time.Second)
	base.Sources[0].Rate.PerSec, base.Sources[1].Rate.PerSec = 50, 30
	workload := map[string]faults.Knobs{faults.ProducerRetry: nil, faults.DuplicateAppend: {"probability": 0.05},
		faults.LaggingInput: {"source": 1, "lag_ms": 5000.0}}
	all, simulated := map[string]faults.Knobs{}, map[string]faults.Knobs{}
	for k, v := range workload {
		all[k], simulated[k] = v, v
	}
	var engineOnly []string
	for _, f := range faults.Catalogue() {
		if f.Workload {
			continue
		}
		all[f.Name] = nil
		engineOnly = append(engineOnly, f.Name)
		one := base
		one.Plan = faults.Plan{Faults: map[string]faults.Knobs{f.Name: nil}}
		for _, r := range f.Requires {
			one.Plan.Faults[r] = nil
		}
		if !f.LiveOnly && one.Validate() == nil {
			simulated[f.Name] = nil
		}
	}
	if _, ok := simulated[faults.QueryShapeChange]; !ok {
		t.Fatal("query-shape-change should be simulated")
	}
	cfgOf := func(plan map[string]faults.Knobs) sim.Config {
		c := base
		c.Plan = faults.Plan{Faults: plan}
		return c
	}
	const seed = 5
	plain, err := sim.Schedule(cfgOf(workload), seed)
	if err != nil {
		t.Fatal(err)
	}
	full, err := sim.Schedule(cfgOf(all), seed)
	if err != nil {
		t.Fatalf("schedule with every engine fault: %v", err)
	}
	compareCopies(t, "every fault vs the workload faults", full.Copies, plain.Copies)
	if !reflect.DeepEqual(full.Rows, plain.Rows) || !reflect.DeepEqual(full.Coverage, plain.Coverage) {
		t.Fatal("the engine faults changed the rows or the coverage")
	}
	for _, f := range engineOnly {
		if !containsString(full.Faults, f) || full.FaultKnobs[f] == nil {
			t.Errorf("fault %s is not listed: %v", f, full.Faults)
		}
	}
	wl := checkSchedule(t, "engine-faults", cfgOf(simulated), seed)
	compareCopies(t, "simulated engine faults vs the workload faults", wl.Copies, plain.Copies)
	if wl.Coverage[faults.LaggingInput] == 0 {
		t.Fatalf("lagging-input did not fire: %v", wl.Coverage)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestScheduleDeterministic: the same seed gives the same workload, byte
// for byte; another seed another one.
func TestScheduleDeterministic(t *testing.T) {
	cfg := crashyTwoSources()
	cfg.Sources[0].Rate.PerSec, cfg.Sources[1].Rate.PerSec = 200, 100
	encode := func(seed uint64) ([]byte, *sim.Workload) {
		wl, err := sim.Schedule(cfg, seed)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(wl)
		if err != nil {
			t.Fatal(err)
		}
		return b, wl
	}
	a, wa := encode(9)
	b, wb := encode(9)
	if !bytes.Equal(a, b) || !reflect.DeepEqual(wa, wb) {
		t.Fatal("the same seed gave two workloads")
	}
	for i := range wa.Rows {
		if !bytes.Equal(wa.Rows[i], wb.Rows[i]) {
			t.Fatalf("row %d differs: %s vs %s", i, wa.Rows[i], wb.Rows[i])
		}
	}
	if c, _ := encode(10); bytes.Equal(a, c) {
		t.Fatal("seeds 9 and 10 gave the same workload")
	}
}

// TestScheduleErrors: an invalid config fails as it fails sim.Run, and
// swarm mode is refused.
func TestScheduleErrors(t *testing.T) {
	bad := func(mut func(*sim.Config)) sim.Config {
		c := sim.Defaults()
		mut(&c)
		return c
	}
	cases := []struct {
		name string
		cfg  sim.Config
		want string
	}{
		{"query", bad(func(c *sim.Config) { c.Query = "dedup: {api: nope}" }), "query"},
		{"unknown fault", bad(func(c *sim.Config) { c.Plan.Faults = map[string]faults.Knobs{"no-such-fault": nil} }), "no-such-fault"},
		{"bad knob", bad(func(c *sim.Config) {
			c.Plan.Faults = map[string]faults.Knobs{faults.ProducerRetry: {"probability": 7.0}}
		}), "probability"},
		{"source", bad(func(c *sim.Config) { c.Sources = []sim.SourceConfig{{Name: "elsewhere"}} }), "elsewhere"},
		{"phases", bad(func(c *sim.Config) { c.HealPhase = -1 }), "phases"},
		{"lagging one source", bad(func(c *sim.Config) {
			c.Plan.Faults = map[string]faults.Knobs{faults.LaggingInput: nil}
		}), "two sources"},
	}
	for _, tc := range cases {
		_, err := sim.Schedule(tc.cfg, 1)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
		if _, rerr := sim.Run(tc.cfg, 1); rerr == nil {
			t.Errorf("%s: sim.Run accepts the config", tc.name)
		}
	}
	swarm := sim.Defaults()
	swarm.Plan.Swarm = true
	if _, err := sim.Schedule(swarm, 1); err == nil || !strings.Contains(err.Error(), "swarm") {
		t.Errorf("swarm: error %v, want a refusal naming swarm mode", err)
	}
}

package sim_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim"
)

// TestCompiledSchedule: a compiled configuration schedules the workload
// Schedule does, with the query and the plan it resolved once.
func TestCompiledSchedule(t *testing.T) {
	cfg := sim.Defaults()
	cfg.Plan = faults.Plan{Faults: map[string]faults.Knobs{faults.DuplicateAppend: {}, faults.CrashAfterSinkWrite: {}, faults.BrokerRestart: {}}}
	c, err := sim.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Query() == nil || c.Query().Sink.Kind == "" || !reflect.DeepEqual(c.Settings().Names(), []string{faults.BrokerRestart, faults.CrashAfterSinkWrite, faults.DuplicateAppend}) ||
		c.Config().TriggerInterval == 0 {
		t.Fatalf("compiled: query %+v, faults %v, config %+v", c.Query(), c.Settings().Names(), c.Config())
	}
	for seed := uint64(1); seed <= 2; seed++ {
		want, err := sim.Schedule(cfg, seed)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Schedule(seed)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: the compiled config's workload differs from Schedule's", seed)
		}
		if len(got.Copies) == 0 || got.Coverage[faults.DuplicateAppend] == 0 {
			t.Fatalf("seed %d: %d copies, coverage %v: the test proves nothing", seed, len(got.Copies), got.Coverage)
		}
	}
	cfg.Plan = faults.Plan{Swarm: true}
	c, err = sim.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Schedule(1); err == nil || !c.Swarm() {
		t.Fatalf("swarm: schedule err %v", err)
	}
	cfg.Query = "dedup: {api: nope}\n"
	if _, err := sim.Compile(cfg); err == nil || errors.Is(err, sim.ErrLiveOnly) {
		t.Fatalf("bad query compiled: %v", err)
	}
}

// TestCheckRunnable: a live-only fault is refused up front with the error
// Run gives; swarm mode (which never draws one) and a plain plan pass; an
// invalid query is refused, but not as live-only.
func TestCheckRunnable(t *testing.T) {
	cfg := sim.Defaults()
	cfg.Plan = faults.Plan{Faults: map[string]faults.Knobs{faults.BrokerRestart: {}}}
	err := cfg.CheckRunnable()
	_, runErr := sim.Run(cfg, 1)
	if !errors.Is(err, sim.ErrLiveOnly) || runErr == nil || err.Error() != runErr.Error() {
		t.Fatalf("live-only: CheckRunnable %v, Run %v", err, runErr)
	}
	cfg.Plan.Swarm = true
	if err := cfg.CheckRunnable(); err != nil {
		t.Fatalf("swarm: %v", err)
	}
	cfg.Plan = faults.Plan{Faults: map[string]faults.Knobs{faults.DuplicateAppend: {}}}
	if err := cfg.CheckRunnable(); err != nil {
		t.Fatalf("duplicate-append: %v", err)
	}
	cfg.Query = "dedup: {api: nope}\n"
	if err := cfg.CheckRunnable(); err == nil || errors.Is(err, sim.ErrLiveOnly) {
		t.Fatalf("bad query: %v", err)
	}
}

package shrink

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sim/check"
)

// The scenario stage: the same seed on smaller configurations (a fault
// dropped, a lower rate, shorter phases and gaps, fewer partitions), each
// kept when the simulator still gives the finding, with the same
// companions (the findings that say how the table got it).

// companions are the findings whose presence must not change while the
// scenario shrinks: they tell one road to a table duplicate from another.
var companions = []check.Kind{check.DuplicateEmitted, check.DuplicateEmittedOutsideGuarantee,
	check.SinkReplayDuplicate, check.RereadFreshCheckpoint}

// signature is which of the finding and its companions a report has.
func signature(r check.Report, kind check.Kind) string {
	var b strings.Builder
	for _, k := range append([]check.Kind{kind}, companions...) {
		if f := r.Find(k); f != nil && f.Count > 0 {
			b.WriteString(string(k) + ";")
		}
	}
	return b.String()
}

// candidate is one smaller configuration and what was changed.
type candidate struct {
	what string
	cfg  sim.Config
}

// cloneConfig copies the parts of cfg the candidates change.
func cloneConfig(cfg sim.Config) sim.Config {
	c := cfg
	c.Sources = slices.Clone(cfg.Sources)
	if cfg.Plan.Faults != nil {
		c.Plan.Faults = make(map[string]faults.Knobs, len(cfg.Plan.Faults))
		for f, k := range cfg.Plan.Faults {
			c.Plan.Faults[f] = maps.Clone(k)
		}
	}
	c.Columns = slices.Clone(cfg.Columns)
	return c
}

// candidates lists cfg's one-step reductions, in a fixed order.
func candidates(cfg sim.Config) []candidate {
	var out []candidate
	add := func(what string, f func(*sim.Config) bool) {
		c := cloneConfig(cfg)
		if f(&c) {
			out = append(out, candidate{what, c})
		}
	}
	names := slices.Sorted(maps.Keys(cfg.Plan.Faults))
	for _, name := range names {
		add("without fault "+name, func(c *sim.Config) bool { delete(c.Plan.Faults, name); return true })
	}
	d := sim.Defaults()
	for _, ph := range []struct {
		name string
		get  func(*sim.Config) *sim.Duration
		def  sim.Duration
	}{{"fault_phase", func(c *sim.Config) *sim.Duration { return &c.FaultPhase }, d.FaultPhase},
		{"heal_phase", func(c *sim.Config) *sim.Duration { return &c.HealPhase }, d.HealPhase}} {
		add(ph.name+" halved", func(c *sim.Config) bool {
			p := ph.get(c)
			v := *p
			if v == 0 {
				v = ph.def
			}
			half := sim.Duration((time.Duration(v) / 2).Truncate(time.Second))
			if half < sim.Duration(time.Second) || half == v {
				return false
			}
			*p = half
			return true
		})
	}
	for i := range cfg.Sources {
		add(fmt.Sprintf("sources[%d] rate halved", i), func(c *sim.Config) bool {
			s := c.Sources[i].WithDefaults()
			if s.Rate.PerSec <= 1 {
				return false
			}
			c.Sources[i].Rate.PerSec = math.Max(1, math.Floor(s.Rate.PerSec/2))
			return true
		})
		add(fmt.Sprintf("sources[%d] on one partition", i), func(c *sim.Config) bool {
			if s := c.Sources[i].WithDefaults(); s.Partitions == 1 {
				return false
			}
			c.Sources[i].Partitions = 1
			return true
		})
	}
	add("one state partition", func(c *sim.Config) bool {
		q, ok := setTopInt([]byte(c.Query), "shuffle_partitions", 1)
		if ok {
			c.Query = sim.QueryText(q)
		}
		return ok
	})
	for _, name := range names {
		f, ok := faults.Lookup(name)
		if !ok {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(cfg.Plan.Faults[name])) {
			kn, ok := f.Knob(k)
			if !ok || kn.Kind != faults.DurationMs || !strings.Contains(k, "gap") {
				continue
			}
			add(fmt.Sprintf("fault %s %s halved", name, k), func(c *sim.Config) bool {
				ms, err := faults.ParseValue(name, k, c.Plan.Faults[name][k])
				if err != nil || ms < 2 {
					return false
				}
				c.Plan.Faults[name][k] = (time.Duration(ms/2) * time.Millisecond).String()
				return true
			})
		}
	}
	return out
}

// shrinkConfig reduces cfg one step at a time while holds accepts the
// result, at most max runs; it returns the smallest configuration and the
// steps taken.
func shrinkConfig(cfg sim.Config, holds func(sim.Config) bool, b *budget, max int) (sim.Config, []string) {
	var steps []string
	spent := 0
	// A reduction that failed once is not tried again: it rarely holds
	// after others, and every try is a whole simulated run.
	rejected := map[string]bool{}
	for {
		found := false
		for _, c := range candidates(cfg) {
			if rejected[c.what] {
				continue
			}
			if spent >= max || !b.take() {
				return cfg, steps
			}
			spent++
			if holds(c.cfg) {
				cfg, found = c.cfg, true
				steps = append(steps, c.what)
				break
			}
			rejected[c.what] = true
		}
		if !found {
			return cfg, steps
		}
	}
}

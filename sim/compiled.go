package sim

import (
	"errors"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/faults"
)

// Compiled is a configuration validated once, its defaults filled in, its
// query parsed and its fault plan resolved: what a live runner needs of a
// scenario, without parsing and resolving it again at every step.
type Compiled struct {
	p *prepared
}

// Compile validates cfg as Validate does and keeps the result.
func Compile(cfg Config) (*Compiled, error) {
	p, err := cfg.prepare()
	if err != nil {
		return nil, err
	}
	return &Compiled{p: p}, nil
}

// Config is the configuration with its defaults (Config.WithDefaults).
func (c *Compiled) Config() Config { return c.p.Config }

// Query is the parsed query.
func (c *Compiled) Query() *query.Query { return c.p.q }

// Swarm reports swarm mode: its faults are drawn per run, so Settings is
// empty and Schedule refuses.
func (c *Compiled) Swarm() bool { return c.p.Plan.Swarm }

// Settings is the resolved fault plan (empty in swarm mode).
func (c *Compiled) Settings() faults.Settings { return c.p.set }

// Schedule is Schedule(c.Config(), seed) without validating again.
func (c *Compiled) Schedule(seed uint64) (*Workload, error) {
	if c.Swarm() {
		return nil, errSwarmSchedule
	}
	return c.schedule(c.p.set, seed)
}

var errSwarmSchedule = errors.New("sim: schedule: swarm mode draws its faults per run; give an explicit fault plan (a swarm run's history has it in faultKnobs)")

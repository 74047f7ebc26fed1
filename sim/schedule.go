package sim

import (
	"fmt"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim/history"
)

// Workload is what a scenario's producers append, in append order, as
// sim.Run with the same config and seed appends it: the copies of the
// history, their row bytes, and what a live runner needs to replay them
// against real Kafka (topics, phases, the trigger) without the engine.
//
// Only the workload faults (the faults package's Workload faults: the
// producer, clock and source classes) shape a workload. Engine, disk and
// operator faults (crash points, crash-random, lost-unsynced-write,
// torn-write, query-shape-change) are not part of a workload: a config may
// enable them, they are listed in Faults and FaultKnobs, but they never
// change a copy and their coverage marks are absent (nothing crashed).
type Workload struct {
	// Copies are the history's copies, in append order: Offset is the
	// offset in the simulated log (per partition 0, 1, 2, ...), and every
	// other field (AppendedAtMs included) is exactly as sim.Run records it.
	Copies []history.Copy
	// Rows[i] is the JSON row of Copies[i], byte-identical to what the
	// simulated log holds: {"<IDColumn>":...,"<EventColumn>":..., further
	// key and payload columns,"_copy":i} (see Config.Columns).
	Rows [][]byte
	// Sources are the query's sources, in query order (Copy.Source indexes
	// them).
	Sources []WorkloadSource
	// Coverage holds the marks of the workload faults (producer, clock and
	// source classes, with their "/offline" variants), as sim.Run's
	// history has them for those faults.
	Coverage map[string]int
	// Faults are the enabled faults of the resolved plan, sorted by name
	// (never nil); FaultKnobs their knob values, as in the history.
	Faults     []string
	FaultKnobs map[string]map[string]any
	// Virtual processing time in ms: the fault phase is [StartMs, HealMs);
	// producers stop at EndMs.
	StartMs, HealMs, EndMs int64
	// TriggerMs is the trigger interval, DowntimeMs how long a crashed
	// driver stays down.
	TriggerMs, DowntimeMs int64
	// EventColumn is the event-time column of the rows.
	EventColumn string
	// IDColumn is the column that holds the event id (Copy.Event).
	IDColumn string
	// Columns are the rows' columns in order: IDColumn, EventColumn, the
	// further key columns, the payload columns, then the hidden _copy.
	Columns []string
	// ArrivalRatePerSec is the configured mean arrival rate of logical
	// events, summed over the sources (as in the history).
	ArrivalRatePerSec float64
}

// WorkloadSource is one query source: its simulated topic and partitions.
type WorkloadSource struct {
	Name       string
	Topic      string
	Partitions int
}

// Schedule returns the workload sim.Run(cfg, seed) appends, without
// starting the engine: it builds the same world and runs the same
// generation over the whole run (the producers' draws come from their own
// streams, and generation advances on the trigger grid whatever times the
// driver appends at; see generateUntil), so Schedule and Run cannot
// diverge.
//
// The config is validated as sim.Run validates it, with one exception: a
// fault that is not a workload fault and that the simulator cannot inject
// (a live-only fault) is accepted and listed, since it changes no copy.
//
// Swarm mode is refused: its fault draw is part of a run; resolve it first
// (the history's FaultKnobs are the explicit plan of a swarm run).
func Schedule(cfg Config, seed uint64) (*Workload, error) {
	if cfg.Plan.Swarm {
		return nil, errSwarmSchedule
	}
	set, err := cfg.Plan.Resolve()
	if err != nil {
		return nil, fmt.Errorf("sim: faults: %w", err)
	}
	c, err := Compile(cfg)
	if err != nil {
		return nil, err
	}
	return c.schedule(set, seed)
}

// schedule generates the workload of a run with seed; set is the resolved
// plan of every fault, listed in the workload.
func (c *Compiled) schedule(set faults.Settings, seed uint64) (*Workload, error) {
	// The world is built with the workload faults alone: the others never
	// change a copy, and one the simulator cannot inject (a live-only
	// fault) must not make it refuse the config.
	wp := *c.p
	wp.Plan.Faults = map[string]faults.Knobs{}
	for name, k := range c.p.Plan.Faults {
		if f, ok := faults.Lookup(name); ok && f.Workload {
			wp.Plan.Faults[name] = k
		}
	}
	var err error
	if wp.set, err = wp.Plan.Resolve(); err != nil {
		return nil, fmt.Errorf("sim: faults: %w", err)
	}
	p := &wp
	w, err := newWorld(p, seed)
	if err != nil {
		return nil, err
	}
	// The producers stop at endUs, and each trigger of sim.Run appends what
	// is due by then: after the last one, before or at endMs, the log holds
	// every copy.
	endMs := w.endUs / 1000
	for t := p.startMs; ; t += w.intervalMs {
		if err := w.appendUntil(t); err != nil {
			return nil, err
		}
		if t >= endMs {
			break
		}
	}
	h := w.h
	faultNames := set.Names()
	if faultNames == nil {
		faultNames = []string{}
	}
	var knobs map[string]map[string]any
	if k := set.Knobs(); len(k) > 0 {
		knobs = map[string]map[string]any{}
		for f, v := range k {
			knobs[f] = v
		}
	}
	wl := &Workload{
		Copies:            h.Copies,
		Rows:              w.rows(),
		Coverage:          map[string]int(w.cov),
		Faults:            faultNames,
		FaultKnobs:        knobs,
		StartMs:           p.startMs,
		HealMs:            w.healUs / 1000,
		EndMs:             endMs,
		TriggerMs:         w.intervalMs,
		DowntimeMs:        w.downMs,
		EventColumn:       p.eventCol,
		IDColumn:          p.layout.idCol,
		Columns:           p.layout.columns(),
		ArrivalRatePerSec: h.ArrivalRatePerSec,
	}
	for _, sc := range p.sourceCfgs {
		wl.Sources = append(wl.Sources, WorkloadSource{Name: sc.Name, Topic: sc.Topic, Partitions: sc.Partitions})
	}
	return wl, nil
}

// rows renders the row of every copy, in copy order, into one buffer
// (each row capped at its length), as the log serves it.
func (w *world) rows() [][]byte {
	copies := w.h.Copies
	var buf []byte
	ends := make([]int, len(copies))
	for i, c := range copies {
		buf, _ = w.topics[c.Source].appendRow(buf, int32(i))
		ends[i] = len(buf)
	}
	out := make([][]byte, len(copies))
	start := 0
	for i, e := range ends {
		out[i] = buf[start:e:e]
		start = e
	}
	return out
}

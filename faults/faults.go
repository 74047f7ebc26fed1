// Package faults is the fault catalogue of the simulator: every way the
// world around a streaming dedup query misbehaves, each with a stable name,
// its knobs (name, default, range) and a coverage mark that the simulator
// sets when the fault actually fired.
//
// The catalogue is data, not behaviour: the simulator (package sim) reads a
// resolved Settings and does the damage. A Plan says which faults a run
// wants and pins knob values; Plan.Resolve checks it against the catalogue,
// and Plan.Draw is swarm mode (TigerBeetle's VOPR, FoundationDB's BUGGIFY):
// per seed, whole faults are switched off at random and the free knobs are
// drawn from their ranges, so different seeds explore different mixes.
//
// A sweep proves its faults fired with Missing: a requested fault whose
// coverage count is zero over the sweep means the sweep tested less than
// it claims.
//
// Fault names are part of the scenario format and of saved histories:
// never rename one, only add.
package faults

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dedupsim/dedupsim/engine/crashpoint"
)

// Names of the faults. The crash-point faults are derived from package
// crashpoint: "crash-" + the point (CrashAt), one per point, in its order.
const (
	// ProducerRetry: a send that in fact succeeded is retried; the copy
	// keeps the original event time (the payload is resent as it was).
	ProducerRetry = "producer-retry"
	// ProducerRetryRestamped: as ProducerRetry, but the copy is stamped
	// with the producer's clock at resend time (a non-idempotent writer
	// that assigns the timestamp when it writes).
	ProducerRetryRestamped = "producer-retry-restamped"
	// DuplicateAppend: a non-idempotent producer's batch is appended twice
	// by the broker: both copies have the same event time and adjacent
	// offsets in one partition.
	DuplicateAppend = "duplicate-append"
	// ClockSkew: some producers' clocks are offset and drift.
	ClockSkew = "clock-skew"
	// FutureTimestamp: a few producers stamp events far in the future,
	// dragging the watermark forward so honest events become late.
	FutureTimestamp = "future-timestamp"
	// SourceSilence: a whole source goes quiet for a while; its watermark
	// input stalls.
	SourceSilence = "source-silence"
	// LaggingInput: one input among several is delayed (or dead until the
	// fault phase ends); under the min policy it holds the watermark back.
	LaggingInput = "lagging-input"

	CrashAfterOffsetsWrite = crashPrefix + string(crashpoint.AfterOffsetsWrite)
	CrashAfterStateCommit  = crashPrefix + string(crashpoint.AfterStateCommit)
	CrashAfterSinkWrite    = crashPrefix + string(crashpoint.AfterSinkWrite)
	CrashAfterCommit       = crashPrefix + string(crashpoint.AfterCommit)
	// CrashRandom: the driver dies at a random filesystem operation in the
	// middle of a batch (the operation fails and every later one too).
	CrashRandom = "crash-random"
	// LostUnsyncedWrite: a random crash is a power loss: what was written
	// but not fsynced (file data, directory entries) is lost.
	LostUnsyncedWrite = "lost-unsynced-write"
	// TornWrite: a power loss during an fsync leaves a prefix of the write
	// being synced on disk (possibly empty), under its name.
	TornWrite = "torn-write"
	// QueryShapeChange: the query is stopped and restarted with a different
	// query on an empty checkpoint; the sink's table persists.
	QueryShapeChange = "query-shape-change"
	// BrokerRestart: the Kafka broker is killed with SIGKILL and started
	// again while producers and the engine run. Live runs only.
	BrokerRestart = "broker-restart"
	// LeaderKill: on a three-broker cluster, the leader of an input or
	// output partition, or of the transaction state log (the transaction
	// coordinator), is killed with SIGKILL mid-run and started again after
	// a while. Live runs only.
	LeaderKill = "leader-kill"
	// BrokerPause: on a three-broker cluster, a partition leader is frozen
	// (SIGSTOP, docker pause) for a while, then thawed: a stalled broker
	// whose connections stay open. Live runs only.
	BrokerPause = "broker-pause"
	// BrokerPartition: on a three-broker cluster, a partition leader is
	// cut off from the network (docker network disconnect, or a local
	// broker's interface down in its network namespace) for a while, then
	// reconnected. Live runs only.
	BrokerPartition = "broker-partition"
)

// The partitions whose leader a broker fault aims at (its target knob).
const (
	TargetInput       = "input"       // partition 0 of the first input topic
	TargetOutput      = "output"      // the output topic (a Kafka sink)
	TargetCoordinator = "coordinator" // the transaction state log (the transactional sink)
)

// BrokerTargets are the choices of a broker fault's target knob.
var BrokerTargets = []string{TargetInput, TargetOutput, TargetCoordinator}

// brokerFaultKnobs are the knobs of leader-kill, broker-pause and
// broker-partition. The duration is real time: the brokers' own timeouts
// (a 3 s session, elections) do not scale with a live run's trigger.
func brokerFaultKnobs(verb string) []Knob {
	return []Knob{
		{Name: "at_frac", Kind: Float, Default: 0.3, Min: 0.05, Max: 0.95, Doc: "when, as a fraction of the fault phase"},
		{Name: "for", Kind: DurationMs, Default: 6000, Min: 500, Max: 120000, Doc: "how long the broker stays " + verb + ", in real time"},
		{Name: "target", Kind: Choice, Default: 0, Choices: BrokerTargets, Fixed: true,
			Doc: "whose leader: partition 0 of the input, the output topic, or the transaction coordinator"},
	}
}

// crashPrefix makes a crash point's fault name.
const crashPrefix = "crash-"

// CrashAt is the fault name of a driver crash at an engine crash point.
func CrashAt(point string) string { return crashPrefix + point }

// CrashPoint is the crash point whose fault is name: false for a fault that
// is not a crash-after-* fault (crash-random included).
func CrashPoint(name string) (crashpoint.Point, bool) {
	rest, ok := strings.CutPrefix(name, crashPrefix)
	if !ok {
		return "", false
	}
	return crashpoint.Parse(rest)
}

// Classes group related faults (for reports and documentation).
const (
	ClassProducer = "producer"
	ClassClock    = "clock"
	ClassSource   = "source"
	ClassCrash    = "crash"
	ClassDisk     = "disk"
	ClassOperator = "operator"
	ClassBroker   = "broker"
)

// KnobKind says how a knob's value is written and drawn. Every value is
// held as a float64.
type KnobKind int

const (
	// Float is any number in [Min, Max].
	Float KnobKind = iota
	// Int is an integer in [Min, Max].
	Int
	// Probability is a number in [Min, Max] within [0, 1].
	Probability
	// DurationMs is milliseconds; written as a number of milliseconds or a
	// duration string ("30s", "2h", "1d").
	DurationMs
	// Choice is an index into Choices; written as the choice's name.
	Choice
	// Bool is 0 or 1; written as true/false.
	Bool
)

func (k KnobKind) String() string {
	switch k {
	case Float:
		return "float"
	case Int:
		return "int"
	case Probability:
		return "probability"
	case DurationMs:
		return "duration"
	case Choice:
		return "choice"
	case Bool:
		return "bool"
	}
	return fmt.Sprintf("KnobKind(%d)", int(k))
}

// Knob is one parameter of a fault.
type Knob struct {
	Name    string
	Kind    KnobKind
	Default float64
	// Min and Max bound the value (Float, Int, Probability, DurationMs).
	Min, Max float64
	// Choices are the names of a Choice knob's values.
	Choices []string
	// LogScale: swarm draws log-uniformly (ranges over orders of magnitude).
	LogScale bool
	// Fixed: swarm keeps the default (selectors such as a source index,
	// where a random value is not a different fault mix).
	Fixed bool
	// SwarmMax, when set, caps what swarm draws below Max: the range a
	// plan may pin is wider than the one worth exploring at random.
	SwarmMax float64
	Doc      string
}

// Fault is one entry of the catalogue.
type Fault struct {
	Name  string
	Class string
	Doc   string
	// Workload: the fault changes what producers append to the log. Faults
	// without it never change a run's copies (a property the simulator's
	// tests check).
	Workload bool
	// Requires names faults that must be on for this one to do anything.
	Requires []string
	// LiveOnly: the fault needs a real broker process (dedupsim run --kafka
	// local); the simulator refuses it.
	LiveOnly bool
	Knobs    []Knob
}

// Knob returns the fault's knob by name.
func (f *Fault) Knob(name string) (*Knob, bool) {
	for i := range f.Knobs {
		if f.Knobs[i].Name == name {
			return &f.Knobs[i], true
		}
	}
	return nil, false
}

func probability(name string, def, lo, hi float64, doc string) Knob {
	return Knob{Name: name, Kind: Probability, Default: def, Min: lo, Max: hi, Doc: doc}
}

func durationKnob(name string, def, lo, hi float64, doc string) Knob {
	return Knob{Name: name, Kind: DurationMs, Default: def, Min: lo, Max: hi, LogScale: true, Doc: doc}
}

func sourceKnob(doc string) Knob {
	return Knob{Name: "source", Kind: Int, Default: -1, Min: -1, Max: 63, Fixed: true, Doc: doc}
}

const (
	second = 1000.0
	minute = 60 * second
	hour   = 60 * minute
	day    = 24 * hour
)

// GapChoices are the values of the retry faults' "gap" knob.
var GapChoices = []string{"fixed", "exponential", "lognormal"}

// StartingOffsetChoices are the values of query-shape-change's
// "starting_offsets" knob: where the new query starts reading.
var StartingOffsetChoices = []string{"previous", "earliest", "latest"}

func retryKnobs() []Knob {
	return []Knob{
		probability("probability", 0.05, 0, 0.5, "chance that an event's send is retried"),
		{Name: "copies_max", Kind: Int, Default: 1, Min: 1, Max: 5, Doc: "extra copies of a retried event, uniform in 1..copies_max"},
		{Name: "gap", Kind: Choice, Default: 1, Choices: GapChoices, Doc: "distribution of the time between two sends"},
		durationKnob("gap_ms", 2*second, 10, 10*minute, "fixed gap, exponential mean or log-normal median"),
		{Name: "gap_sigma", Kind: Float, Default: 1, Min: 0.1, Max: 2.5, Doc: "log-normal sigma (gap: lognormal)"},
		{Name: "offline_fraction", Kind: Probability, Default: 0, Min: 0, Max: 1, SwarmMax: 0.2,
			Doc: "share of retries from clients that were offline: the gap is drawn log-uniformly in [offline_min_ms, offline_max_ms] instead"},
		durationKnob("offline_min_ms", 1*hour, 1*minute, 1*day, "shortest offline gap"),
		durationKnob("offline_max_ms", 4*hour, 1*minute, 1*day, "longest offline gap"),
	}
}

// catalogue is every fault in its stable order (the order of Names, of
// reports and of swarm draws): the workload faults, one crash-after-* fault
// per crash point, then the rest.
var catalogue = slices.Concat([]Fault{
	{Name: ProducerRetry, Class: ClassProducer, Workload: true, Knobs: retryKnobs(),
		Doc: "A producer retries a send that succeeded; the copy keeps the original event time."},
	{Name: ProducerRetryRestamped, Class: ClassProducer, Workload: true, Knobs: retryKnobs(),
		Doc: "A producer retries a send that succeeded and re-stamps the copy with its clock at resend time."},
	{Name: DuplicateAppend, Class: ClassProducer, Workload: true,
		Doc:   "A non-idempotent producer's send is appended twice by the broker: same event time, adjacent offsets.",
		Knobs: []Knob{probability("probability", 0.01, 0, 0.3, "chance that a send is appended twice")}},
	{Name: ClockSkew, Class: ClassClock, Workload: true,
		Doc: "Some producers' clocks are offset and drift; their event times are wrong by that much.",
		Knobs: []Knob{
			probability("producers_fraction", 0.2, 0, 1, "share of producers with a skewed clock"),
			durationKnob("offset_max_ms", 30*second, 100, 1*hour, "clock offset, uniform in ±offset_max_ms"),
			{Name: "drift_ppm_max", Kind: Float, Default: 100, Min: 0, Max: 5000, Doc: "clock drift in parts per million, uniform in ±drift_ppm_max"},
		}},
	{Name: FutureTimestamp, Class: ClassClock, Workload: true,
		Doc: "A few producers stamp events far in the future: the watermark jumps and honest events become late.",
		Knobs: []Knob{
			probability("producers_fraction", 0.01, 0, 0.2, "share of producers with a clock far ahead (at least one)"),
			durationKnob("ahead_ms", 1*day, 1*minute, 366*day, "how far ahead"),
		}},
	{Name: SourceSilence, Class: ClassSource, Workload: true,
		Doc: "A whole source goes quiet (no events) for a while: its watermark input stalls.",
		Knobs: []Knob{
			sourceKnob("source index; -1: one drawn per run"),
			{Name: "start_frac", Kind: Float, Default: 0.3, Min: 0, Max: 0.9, Doc: "start, as a fraction of the fault phase"},
			durationKnob("duration_ms", 2*minute, 1*second, 1*hour, "length of the silence (ends at the heal at the latest)"),
		}},
	{Name: LaggingInput, Class: ClassSource, Workload: true,
		Doc: "One input among several is delayed, or dead until the heal; under the min policy it holds the watermark back.",
		Knobs: []Knob{
			sourceKnob("source index; -1: one drawn per run"),
			durationKnob("lag_ms", 1*minute, 1*second, 1*hour, "extra delay of every copy the source appends during the fault phase"),
			{Name: "dead", Kind: Bool, Default: 0, Doc: "the input appends nothing until the heal, then everything it held"},
		}},
}, crashFaults(), []Fault{
	{Name: CrashRandom, Class: ClassCrash,
		Doc:   "The driver dies at a random filesystem operation mid-batch: the operation fails and so does everything after it.",
		Knobs: []Knob{probability("rate", 0.05, 0.005, 0.3, "chance per batch in the fault phase")}},
	{Name: LostUnsyncedWrite, Class: ClassDisk, Requires: []string{CrashRandom},
		Doc:   "A random crash is a power loss: writes and directory changes not yet fsynced are lost.",
		Knobs: []Knob{probability("probability", 1, 0, 1, "chance that a random crash is a power loss")}},
	{Name: TornWrite, Class: ClassDisk, Requires: []string{CrashRandom},
		Doc:   "A random crash is a power loss during an fsync: a prefix of the write being synced survives under its name.",
		Knobs: []Knob{probability("probability", 0.5, 0, 1, "chance that a random crash lands on an fsync and tears it")}},
	{Name: QueryShapeChange, Class: ClassOperator,
		Doc: "The query is restarted with a different query on an empty checkpoint; the sink's table persists.",
		Knobs: []Knob{
			{Name: "at_frac", Kind: Float, Default: 0.5, Min: 0.1, Max: 0.9, Doc: "when, as a fraction of the fault phase"},
			{Name: "starting_offsets", Kind: Choice, Default: 0, Choices: StartingOffsetChoices, Fixed: true,
				Doc: "where the new query starts: the old query's position, the start of the log (re-emits it), or its end (skips what arrived during the redeploy)"},
		}},
	{Name: BrokerRestart, Class: ClassBroker, LiveOnly: true,
		Doc: "The Kafka broker is killed with SIGKILL and restarted while producers and the engine run (live runs on a local broker only).",
		Knobs: []Knob{
			{Name: "at_frac", Kind: Float, Default: 0.5, Min: 0.05, Max: 0.95, Doc: "when, as a fraction of the fault phase"},
		}},
	{Name: LeaderKill, Class: ClassBroker, LiveOnly: true,
		Doc:   "A partition leader of a three-broker cluster is killed with SIGKILL and restarted after a while (live runs with --brokers 3 only).",
		Knobs: brokerFaultKnobs("down")},
	{Name: BrokerPause, Class: ClassBroker, LiveOnly: true,
		Doc:   "A partition leader of a three-broker cluster is frozen (SIGSTOP or docker pause) for a while, its connections open (live runs with --brokers 3 only).",
		Knobs: brokerFaultKnobs("frozen")},
	{Name: BrokerPartition, Class: ClassBroker, LiveOnly: true,
		Doc:   "A partition leader of a three-broker cluster is cut off from the network for a while (live runs with --brokers 3 only: testcontainers, or local as root with iproute2).",
		Knobs: brokerFaultKnobs("cut off")},
})

// crashFaults is a crash-after-* fault per crash point, in the points' order.
func crashFaults() []Fault {
	var out []Fault
	for _, p := range crashpoint.Infos() {
		out = append(out, Fault{Name: CrashAt(string(p.Point)), Class: ClassCrash,
			Doc:   "The driver dies at " + string(p.Point) + ", leaving the checkpoint with " + p.Leaves + ".",
			Knobs: []Knob{probability("rate", 0.05, 0.005, 0.3, "chance per batch in the fault phase")}})
	}
	return out
}

// Catalogue returns every fault, in a stable order. The result is a copy.
func Catalogue() []Fault {
	out := make([]Fault, len(catalogue))
	for i, f := range catalogue {
		f.Knobs = slices.Clone(f.Knobs)
		f.Requires = slices.Clone(f.Requires)
		out[i] = f
	}
	return out
}

// Names lists every fault name in catalogue order.
func Names() []string {
	out := make([]string, len(catalogue))
	for i := range catalogue {
		out[i] = catalogue[i].Name
	}
	return out
}

// Lookup finds a fault by name.
func Lookup(name string) (Fault, bool) {
	i := index(name)
	if i < 0 {
		return Fault{}, false
	}
	f := catalogue[i]
	f.Knobs = slices.Clone(f.Knobs)
	return f, true
}

func index(name string) int {
	for i := range catalogue {
		if catalogue[i].Name == name {
			return i
		}
	}
	return -1
}

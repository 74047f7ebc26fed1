package sink

import (
	"fmt"
	"slices"

	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/schema"
)

// Kind is a query's sink.kind (exec-format.md).
type Kind string

// The sink kinds, as a query names them.
const (
	KindForeachBatch Kind = "foreachBatch"
	KindTable        Kind = "table"
	KindMerge        Kind = "merge"
	KindAppend       Kind = "append"
	// KindKafka is writeStream.format("kafka"): every row of every batch
	// produced to the output topic, a replayed batch produced again
	// (at-least-once). The only sink of real-time mode dedupsim models.
	KindKafka Kind = "kafka"
)

// Spark's sink classes, as its real-time mode's allowlist names them.
const (
	SparkForeachBatchSink = "org.apache.spark.sql.execution.streaming.sources.ForeachBatchSink"
	SparkKafkaTable       = "org.apache.spark.sql.kafka010.KafkaSourceProvider$KafkaTable"
)

// Settings are what a sink is built from: the query's sink section, with
// the defaults the query supplies resolved.
type Settings struct {
	Kind Kind
	// AppID and GenerateAppID: the table sink's txnAppId (empty: the query
	// id) or a new one at every start (the run id).
	AppID         string
	GenerateAppID bool
	// HasLookback and LookbackMs: the merge sink matches only table rows
	// with event time at or after the batch timestamp minus LookbackMs.
	HasLookback bool
	LookbackMs  int64
	// MatchKeys are the merge sink's match columns: sink.keys, else the
	// dedup keys. EventTimeColumn is the query's event-time column, which
	// decoding a row for its key needs.
	MatchKeys       []string
	EventTimeColumn string
	// Schema is the stream's schema (nil: rows read untyped): the merge
	// sink compares its match columns as Spark's MERGE compares the typed
	// columns, "1" and 1 alike in a STRING column.
	Schema *schema.Schema
}

// Store is where the engine process (`dedupsim engine`) keeps a sink's
// output so that it survives SIGKILL.
type Store string

const (
	// Pebble is a Pebble DB in --table DIR (package pebblesink), which
	// implements the kind itself.
	Pebble Store = "pebble"
	// Kafka is the output topic (package kafkasink): the transactional sink
	// for a versioned kind, the plain at-least-once sink otherwise.
	Kafka Store = "kafka"
)

// Durable is one way the engine process realises a kind.
type Durable struct {
	// Flag is the `dedupsim engine --sink` value.
	Flag  string
	Store Store
}

// Descriptor is everything the drivers, the simulator and the checker know
// of a sink kind. Adding a kind is adding a Descriptor to kinds (and, for
// a new behaviour, its Sink type): the query parser, the steps and trace
// runners, the simulator, history validation, the checker and the engine
// process all look kinds up here.
type Descriptor struct {
	Kind Kind
	// HasTable: the sink keeps a table whose final content the history
	// records and the checker reads. Without one (foreachBatch) the
	// deliveries are the output.
	HasTable bool
	// Versioned: a replayed batch is skipped because the sink already holds
	// its (app id, batch id), as Delta's txnAppId / txnVersion does
	// (spark-semantics.md §9.3). A harness may then infer that a killed
	// write landed from its replay keeping nothing.
	Versioned bool
	// Options are the query's sink.* fields the kind takes, beyond kind;
	// the parser refuses the others.
	Options []string
	// New builds the in-memory sink: exec, the golden tests, the
	// simulator.
	New func(Settings) Sink
	// Durable lists how the engine process keeps the kind, one per store.
	Durable []Durable
	// SparkSink is the class of the sink Spark runs for the kind: the
	// table, merge and append kinds are foreachBatch code writing a Delta
	// table (spark-semantics.md §16).
	SparkSink string
	// RealTime: the sink is in real-time mode's allowlist
	// (RealTimeModeAllowlist.allowedSinks).
	RealTime bool
	// CountsOutput: Spark's sink is a DataSource V2 table, whose progress
	// reports numOutputRows (the rows the batch wrote); a foreachBatch
	// sink (V1) reports -1.
	CountsOutput bool
}

var kinds = []Descriptor{
	{
		Kind: KindForeachBatch,
		// The run's records come from the engine's OnBatch; keeping every
		// delivery as well would hold the whole output in memory.
		New:       func(Settings) Sink { return &ForeachBatch{Forget: true} },
		Durable:   []Durable{{Flag: "plain", Store: Kafka}},
		SparkSink: SparkForeachBatchSink,
	},
	{
		Kind: KindTable, HasTable: true, Versioned: true,
		Options:   []string{"app_id", "generate_app_id"},
		New:       func(s Settings) Sink { return &Table{AppID: s.AppID, PerRun: s.GenerateAppID} },
		Durable:   []Durable{{Flag: "transactional", Store: Kafka}, {Flag: "table", Store: Pebble}},
		SparkSink: SparkForeachBatchSink,
	},
	{
		Kind: KindMerge, HasTable: true,
		Options: []string{"lookback", "keys"},
		New: func(s Settings) Sink {
			return &Merge{HasLookback: s.HasLookback, LookbackMs: s.LookbackMs, Key: MergeKey(s)}
		},
		Durable:   []Durable{{Flag: "merge", Store: Pebble}},
		SparkSink: SparkForeachBatchSink,
	},
	{
		Kind: KindAppend, HasTable: true,
		New:       func(Settings) Sink { return &Append{} },
		Durable:   []Durable{{Flag: "plain", Store: Kafka}},
		SparkSink: SparkForeachBatchSink,
	},
	{
		// The deliveries are the output, as for foreachBatch; what differs
		// is Spark's side: a sink of its own (KafkaTable), the one of real
		// time mode.
		Kind:         KindKafka,
		New:          func(Settings) Sink { return &ForeachBatch{Forget: true, Desc: SparkKafkaTable} },
		Durable:      []Durable{{Flag: "plain", Store: Kafka}},
		SparkSink:    SparkKafkaTable,
		RealTime:     true,
		CountsOutput: true,
	},
}

// Kinds lists every kind's descriptor, in the order messages list them.
// The result is a copy.
func Kinds() []Descriptor {
	out := make([]Descriptor, len(kinds))
	for i, d := range kinds {
		out[i] = d.clone()
	}
	return out
}

// Names lists the kinds as a query writes them.
func Names() []string {
	out := make([]string, len(kinds))
	for i, d := range kinds {
		out[i] = string(d.Kind)
	}
	return out
}

// Lookup finds a kind's descriptor.
func Lookup(k Kind) (Descriptor, bool) {
	for _, d := range kinds {
		if d.Kind == k {
			return d.clone(), true
		}
	}
	return Descriptor{}, false
}

func (d Descriptor) clone() Descriptor {
	d.Options = slices.Clone(d.Options)
	d.Durable = slices.Clone(d.Durable)
	return d
}

// Takes reports whether the kind takes the sink.* field option.
func (d Descriptor) Takes(option string) bool { return slices.Contains(d.Options, option) }

// Taking lists the kinds that take the sink.* field option.
func Taking(option string) []Kind {
	var out []Kind
	for _, d := range kinds {
		if d.Takes(option) {
			out = append(out, d.Kind)
		}
	}
	return out
}

// DurableOn is how the engine process keeps the kind on store s, or, when
// the kind has no realisation there, its first (a merge sink has only a
// Pebble table).
func (d Descriptor) DurableOn(s Store) Durable {
	for _, x := range d.Durable {
		if x.Store == s {
			return x
		}
	}
	return d.Durable[0]
}

// Flags lists the `dedupsim engine --sink` values, each once, in the
// order of the kinds.
func Flags() []string {
	var out []string
	for _, d := range kinds {
		for _, x := range d.Durable {
			if !slices.Contains(out, x.Flag) {
				out = append(out, x.Flag)
			}
		}
	}
	return out
}

// LookupFlag finds the realisation an `engine --sink` value names and the
// first kind it realises. Kinds that share a flag (append and foreachBatch
// share plain) are written alike: the process does not tell them apart.
func LookupFlag(flag string) (Descriptor, Durable, bool) {
	for _, d := range kinds {
		for _, x := range d.Durable {
			if x.Flag == flag {
				return d.clone(), x, true
			}
		}
	}
	return Descriptor{}, Durable{}, false
}

// FlagsOn lists the `engine --sink` values of store s.
func FlagsOn(s Store) []string {
	var out []string
	for _, f := range Flags() {
		if _, x, _ := LookupFlag(f); x.Store == s {
			out = append(out, f)
		}
	}
	return out
}

// MergeKey encodes the merge sink's match columns of a row. A row that
// does not decode (it lacks a sink.keys column) is an error: matching it on
// anything else would insert or drop it silently. The steps parser refuses
// such rows before they reach a sink; any other driver's row fails the
// batch.
func MergeKey(s Settings) func(r row.Row) ([]byte, error) {
	dec := row.NewDecoder(s.MatchKeys, s.EventTimeColumn)
	if s.Schema != nil {
		keys := s.MatchKeys
		if len(keys) == 0 {
			// Every column: MERGE's condition names each one.
			for _, f := range s.Schema.Fields {
				keys = append(keys, f.Name)
			}
		}
		typed, err := row.NewTypedDecoder(keys, s.EventTimeColumn, s.Schema)
		if err != nil {
			return func(row.Row) ([]byte, error) { return nil, fmt.Errorf("sink.keys: %w", err) }
		}
		dec = typed
	}
	return func(r row.Row) ([]byte, error) {
		var d row.Row
		if err := dec.Decode(r.Data, &d); err != nil {
			return nil, fmt.Errorf("sink.keys: %w", err)
		}
		return d.Key, nil
	}
}

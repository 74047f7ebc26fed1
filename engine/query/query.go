// Package query is the definition of one streaming dedup query, read from the
// QUERY.yaml file of `dedupsim exec` (docs/exec-format.md).
//
// Parsing is strict on purpose: a reference implementation that silently
// defaulted a misspelt field would run a different query from the one the user
// wrote and report results that look authoritative. Every error names the file,
// the line and the field.
package query

import (
	"fmt"
	"io"
	"os"

	"github.com/dedupsim/dedupsim/engine/schema"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sparkver"
)

// API is the Spark call that deduplicates.
type API string

const (
	// DropDuplicates is Dataset.dropDuplicates on a stream
	// (StreamingDeduplicateExec, spark-semantics.md §2-§3).
	DropDuplicates API = "dropDuplicates"
	// DropDuplicatesWithinWatermark is Dataset.dropDuplicatesWithinWatermark
	// (StreamingDeduplicateWithinWatermarkExec, §4).
	DropDuplicatesWithinWatermark API = "dropDuplicatesWithinWatermark"
	// BatchDropDuplicates is dropDuplicates on the DataFrame handed to
	// foreachBatch: no state across batches (§5).
	BatchDropDuplicates API = "batchDropDuplicates"
)

// Watermark is one withWatermark(column, delay) call.
type Watermark struct {
	Column string
	// Written is the column as the query wrote it, when ResolveColumns
	// resolved Column to a column of the schema with another case.
	Written string
	// DelayMs is Spark's delayMs: the interval converted by
	// IntervalUtils.getDuration (months of 31 days), truncated to ms.
	DelayMs int64
}

// Source is one input stream. Several sources are unioned before the dedup.
type Source struct {
	Name string
	// Watermark is nil when this source has no withWatermark.
	Watermark *Watermark
}

// Sink is the `sink:` section.
type Sink struct {
	Kind sink.Kind
	// GenerateAppID makes the table sink's txnAppId a value generated at
	// every start (the run id): the seed article's mistake, which silently
	// disables replay protection.
	GenerateAppID bool
	// AppID is the table sink's txnAppId; empty means the query id from the
	// checkpoint's metadata. Only for the table sink.
	AppID string
	// LookbackMs bounds the merge sink's match to table rows with event time
	// >= now - lookback; meaningful only when HasLookback. Only for the merge sink.
	LookbackMs  int64
	HasLookback bool
	// Keys are the merge match columns; empty means the dedup keys.
	// Only for the merge sink.
	Keys []string
	// KeyNames are Keys as written, once ResolveColumns has resolved them.
	KeyNames []string
}

// DefaultSourceName names the only source of a query written in the
// single-source form (a top-level `watermark:` or none).
const DefaultSourceName = "default"

// Query is a parsed and validated QUERY.yaml.
type Query struct {
	// Name is the optional `name:`, reported as the progress "name".
	Name string
	API  API
	// Keys are the dedup key columns in declared order; empty means every
	// column of the row.
	Keys []string
	// Sources has at least one entry. The single-source form gives one
	// source named DefaultSourceName.
	Sources []Source
	// ShufflePartitions is spark.sql.shuffle.partitions: the number of state
	// partitions (default 4, at least 1).
	ShufflePartitions int
	// StateStore is "memory" (default) or "pebble".
	StateStore string
	// CheckpointFormat is spark.sql.streaming.stateStore.
	// checkpointFormatVersion: 0 or 1 (the default, format v1), or 2 (state_store pebble only:
	// commits v2 with each partition's checkpoint id, <V>_<id> state
	// files with a lineage; spark-semantics.md §8.9). Spark 4.0.5 to
	// 4.3.0 write format v2 with 2, 3.5.9 ignores it; real-time mode
	// (4.3) turns it on by itself.
	CheckpointFormat int
	// WatermarkPolicy is spark.sql.streaming.multipleWatermarkPolicy:
	// "min" (default) or "max".
	WatermarkPolicy string
	// NoDataBatches is spark.sql.streaming.noDataMicroBatches.enabled
	// (default true).
	NoDataBatches bool
	Sink          Sink
	// DropFutureEvents filters out rows whose event time is more than
	// DropFutureEventsMs ahead of the batch's processing time, before the
	// watermark sees them: the seed articles' fix for a producer whose
	// clock runs far ahead (Spark: a filter on current_timestamp() placed
	// before withWatermark). Such rows count as filtered, not late.
	DropFutureEvents   bool
	DropFutureEventsMs int64
	// Schema is the stream's schema: the `schema:` field, or one inferred
	// from the rows (SchemaInferred) by the driver before the run; nil for
	// untyped rows, each read by its JSON fields as they are.
	Schema         *schema.Schema
	SchemaInferred bool
	// CaseSensitive is spark.sql.caseSensitive (the query's
	// case_sensitive, default false): whether column names resolve
	// exactly or ignoring case (ResolveColumns).
	CaseSensitive bool
	// KeyNames are the dedup keys as written, once ResolveColumns has
	// resolved Keys to the schema's names (nil before); stateKeys are the
	// resolved keys in the state key's order.
	KeyNames []string
	// keyCols are the schema's columns each written key name resolved to
	// (ResolveColumns); StateKeys orders them by KeyOrder.
	keyCols map[string][]string
	// SparkVersion is the Spark version the run follows (spark_version:
	// or --spark-version); zero for dedupsim's behaviour without one.
	SparkVersion sparkver.Version
	// SparkConf is spark_conf: Spark confs the query sets, checked against
	// the line (CheckSparkVersion).
	SparkConf map[string]string
	// KeyOrder orders the dedup's state key columns (sparkver.KeyOrder):
	// Scala 2.13's set order unless the version says otherwise. The
	// engine sets it from the checkpoint's pinned conf on a restart.
	KeyOrder sparkver.KeyOrder
	// RealTimeMs is the batch duration of trigger(realTime=...), Spark's
	// real-time mode (`trigger: {real_time: 5 minutes}`), in ms; 0 runs
	// micro-batches. A real-time batch always runs, reads what arrives
	// until its duration is up, emits rows before its offsets and commit
	// are written, and is planned again from the last commit after a crash
	// (spark-semantics.md §18).
	RealTimeMs int64
	// pos places errors found after parsing (SetSparkVersion); nil
	// unless the file sets spark_version, spark_conf or
	// checkpoint_format_version.
	pos *positions
}

// positions are where the version-dependent fields are written.
type positions struct {
	file                            string
	versionLine, formatLine, rtLine int
	// apiLine and sinkLine: dedup.api and sink, for a real-time query.
	apiLine, sinkLine int
	// confLines: each spark_conf key's line; "" is spark_conf's own.
	confLines map[string]int
}

// at is the position record, made on first use.
func (q *Query) at() *positions {
	if q.pos == nil {
		q.pos = &positions{confLines: map[string]int{}}
	}
	return q.pos
}

// Values of Query.StateStore and Query.WatermarkPolicy.
const (
	StateStoreMemory = "memory"
	StateStorePebble = "pebble"
	PolicyMin        = "min"
	PolicyMax        = "max"
)

// Defaults for the optional fields.
const (
	DefaultShufflePartitions = 4
	// MaxShufflePartitions bounds shuffle_partitions: the engine opens one
	// store per partition, so an absurd number is a typo, not a plan.
	MaxShufflePartitions = 1 << 16
)

// Caps on the size of a query, so that a hostile or mistaken file (a
// device such as /dev/zero, a generated key list) is refused at once with
// a clear error instead of exhausting time or memory. Real queries are a
// few hundred bytes with a handful of columns.
const (
	// MaxQueryBytes bounds the query file.
	MaxQueryBytes = 1 << 20
	// MaxColumns bounds dedup.keys and sink.keys.
	MaxColumns = 1024
	// MaxSources bounds sources.
	MaxSources = 256
	// MaxNameBytes bounds a column name.
	MaxNameBytes = 1024
)

// ParseFile reads and parses the query file at path; errors name path.
// A file larger than MaxQueryBytes is refused without reading the rest.
func ParseFile(path string) (*Query, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// ReadFile reads the query file at path for Parse, refusing one larger
// than MaxQueryBytes without reading the rest: a caller that needs two
// queries of one file parses the bytes twice.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read query: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxQueryBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read query: %w", err)
	}
	if len(data) > MaxQueryBytes {
		return nil, &Error{File: path, Msg: fmt.Sprintf("larger than %d bytes (1 MiB): not a query file", MaxQueryBytes)}
	}
	return data, nil
}

// Parse parses and validates a QUERY.yaml document. filename is used in error
// messages only. Errors for bad input are *Error. An *Error whose Analysis
// is set (a refusal Spark's analysis makes too) comes with the parsed query,
// its names resolved up to the refusal, for a harness that runs the query
// on Spark to compare; every other error comes with a nil query.
func Parse(filename string, data []byte) (*Query, error) {
	p := &parser{file: filename}
	q, err := p.parse(data)
	if q != nil && q.pos != nil {
		q.pos.file = filename
	}
	return q, err
}

// EventTimeColumn is the watermarked column, or "" when no source has a
// watermark. Validation guarantees every watermarked source names the same
// column and that the first source is watermarked whenever any source is, so
// this is the column Spark's union passes to the dedup with the watermark
// metadata (spark-semantics.md §1.5).
func (q *Query) EventTimeColumn() string {
	if w := q.firstWatermark(); w != nil {
		return w.Column
	}
	return ""
}

// SinkSettings is what a sink of the query is built from: the sink
// section, the merge sink's match columns defaulted to the dedup keys, and
// the event-time column that decoding a row needs.
func (q *Query) SinkSettings() sink.Settings {
	keys := q.Sink.Keys
	if len(keys) == 0 {
		keys = q.Keys
	}
	return sink.Settings{Kind: q.Sink.Kind, AppID: q.Sink.AppID, GenerateAppID: q.Sink.GenerateAppID,
		HasLookback: q.Sink.HasLookback, LookbackMs: q.Sink.LookbackMs, MatchKeys: keys, EventTimeColumn: q.EventTimeColumn(),
		Schema: q.Schema}
}

// DelayMs is the delay of the first watermarked source, 0 when there is none.
// Spark's Union takes its output attributes (and so the watermark delay
// metadata the dedup reads, e.g. for dropDuplicatesWithinWatermark's expiry)
// from its first child.
func (q *Query) DelayMs() int64 {
	if w := q.firstWatermark(); w != nil {
		return w.DelayMs
	}
	return 0
}

func (q *Query) firstWatermark() *Watermark {
	for i := range q.Sources {
		if q.Sources[i].Watermark != nil {
			return q.Sources[i].Watermark
		}
	}
	return nil
}

// OperatorName is the stateful operator's progress name: "dedupe",
// "dedupeWithinWatermark", or "" for batchDropDuplicates, which has no state.
func (q *Query) OperatorName() string {
	switch q.API {
	case DropDuplicates:
		return "dedupe"
	case DropDuplicatesWithinWatermark:
		return "dedupeWithinWatermark"
	}
	return ""
}

// Stateful reports whether the query has a streaming dedup operator (and so
// state, late-row filtering and eviction).
func (q *Query) Stateful() bool { return q.API != BatchDropDuplicates }

// SourceIndex finds a source by name.
func (q *Query) SourceIndex(name string) (int, bool) {
	for i := range q.Sources {
		if q.Sources[i].Name == name {
			return i, true
		}
	}
	return -1, false
}

// SourceNames lists the source names in declared order.
func (q *Query) SourceNames() []string {
	names := make([]string, len(q.Sources))
	for i := range q.Sources {
		names[i] = q.Sources[i].Name
	}
	return names
}

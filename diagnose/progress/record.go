// Package progress reads Spark Structured Streaming's progress records in
// every shape users keep them (docs/diagnose.md A.1, A.2):
//
//   - JSON Lines of StreamingQueryProgress (a listener writing
//     event.progress.json), bare or wrapped as {"progress": {...}}, with
//     the listener's started, idle and terminated events;
//   - one JSON array (query.recentProgress dumped with json.dumps);
//   - driver logs: "Streaming query made progress: " followed by the
//     pretty-printed JSON over many lines, among any other log lines, and
//     structured-logging JSON lines whose msg carries it;
//   - Spark event logs, one file or a rolling eventlog_v2_* folder, plain
//     or compressed (lz4, snappy, zstd; sniffed from the bytes, not the
//     name), where the progress is a Jackson bean dump (offsets as strings,
//     no top-level numInputRows).
//
// A line that should be a record and is not (broken JSON, a field out of its
// domain) is a BadLine, counted and quoted with its file and line; nothing
// is skipped silently. Records are told apart by query id and run id; Read
// returns them grouped per query, runs in start order, batches in order.
package progress

import (
	"strings"
)

// Progress is one StreamingQueryProgress. Numbers absent from the record
// (a NaN rate Spark dropped, batchDuration before 4.0) are flagged by Has*.
type Progress struct {
	ID, RunID, Name string
	// TimestampMs is the trigger start (the "timestamp" field), in ms UTC.
	TimestampMs int64
	BatchID     int64
	// BatchDurationMs is batchDuration, or durationMs.triggerExecution
	// (3.5 writes no batchDuration); -1 when neither is there.
	BatchDurationMs int64
	NumInputRows    int64
	// InputRowsPerSecond and ProcessedRowsPerSecond are -1 when absent.
	InputRowsPerSecond, ProcessedRowsPerSecond float64
	EventTime                                  EventTime
	StateOperators                             []StateOperator
	Sources                                    []Source
	SinkOutputRows                             int64
	// Idle: a trigger that ran no batch (no addBatch phase): Spark rebuilds
	// it from the last batch with stale state figures (A.1), so the
	// findings leave it out.
	Idle bool
	// Where is FILE:LINE (or FILE:element N) of the record.
	Where string
	rank  int32 // the run's place in the order of runs (group)
}

// EventTime is the eventTime map, as ms UTC; Has* say which keys were
// there (no watermark key: the query has no withWatermark).
type EventTime struct {
	MinMs, MaxMs, AvgMs, WatermarkMs     int64
	HasMin, HasMax, HasAvg, HasWatermark bool
}

// StateOperator is one StateOperatorProgress.
type StateOperator struct {
	OperatorName              string
	NumRowsTotal              int64
	NumRowsUpdated            int64
	AllUpdatesTimeMs          int64
	NumRowsRemoved            int64
	AllRemovalsTimeMs         int64
	CommitTimeMs              int64
	MemoryUsedBytes           int64
	NumRowsDroppedByWatermark int64
	NumShufflePartitions      int64
	NumStateStoreInstances    int64
	// DroppedDuplicateRows is customMetrics.numDroppedDuplicateRows (-1:
	// absent). The other custom metrics are not kept (memory: a record
	// holds only what the findings read), except what their keys say:
	// StoreProvider is "rocksdb" (rocksdb* keys), "hdfs" (loadedMapCache*)
	// or "" (A.1).
	DroppedDuplicateRows int64
	StoreProvider        string
}

// DroppedDuplicates is customMetrics.numDroppedDuplicateRows (-1 absent).
func (s StateOperator) DroppedDuplicates() int64 { return s.DroppedDuplicateRows }

// Provider is the state store the custom metric keys betray.
func (s StateOperator) Provider() string { return s.StoreProvider }

func providerOf(m map[string]int64) string {
	for k := range m {
		switch {
		case strings.HasPrefix(k, "rocksdb"):
			return "rocksdb"
		case strings.HasPrefix(k, "loadedMapCache"):
			return "hdfs"
		}
	}
	return ""
}

// Source is one SourceProgress: its counts only (the description and the
// offsets, which can be long for a Kafka topic of many partitions, are
// checked but not kept: no finding reads them, and a year of records must
// fit in memory).
type Source struct {
	NumInputRows       int64
	InputRowsPerSecond float64
}

// EventKind names a listener event other than progress.
type EventKind string

// Listener events.
const (
	Started    EventKind = "started"
	Idle       EventKind = "idle"
	Terminated EventKind = "terminated"
)

// Event is a QueryStartedEvent, QueryIdleEvent or QueryTerminatedEvent.
type Event struct {
	Kind        EventKind
	ID, RunID   string
	Name        string
	TimestampMs int64 // 0 when the event has none (terminated)
	Exception   string
	Where       string
}

// BadLine is a line that should have been a record and was refused.
type BadLine struct {
	Where  string `json:"where"`
	Reason string `json:"reason"`
	// Text is the start of the line (at most QuoteLen bytes, valid UTF-8).
	Text string `json:"text"`
}

// QuoteLen bounds the quoted text of a bad line.
const QuoteLen = 160

// Shape names how a file held its records.
type Shape string

// Shapes.
const (
	JSONLines Shape = "json-lines"
	JSONArray Shape = "json-array"
	DriverLog Shape = "driver-log"
	EventLog  Shape = "event-log"
	Empty     Shape = "empty"
)

// File says what one input was.
type File struct {
	Path  string `json:"path"`
	Shape Shape  `json:"shape"`
	Codec string `json:"codec,omitempty"`
	// Parts is the number of event log files of a rolling folder.
	Parts   int `json:"parts,omitempty"`
	Lines   int `json:"lines"`
	Records int `json:"records"`
	Events  int `json:"events"`
	Bad     int `json:"bad"`
	// Other counts lines that are neither records nor bad: other log lines
	// and other Spark events.
	Other int `json:"other"`
	// InProgress: the event log of a running application (a name ending
	// in .inprogress, or a rolling folder whose appstatus marker does);
	// CutShort: its compressed stream ended mid-block, as a log still
	// being written does, and was read up to there.
	InProgress bool `json:"inProgress,omitempty"`
	CutShort   bool `json:"cutShort,omitempty"`
}

// Run is one start of a query: the records of one run id.
type Run struct {
	RunID   string
	StartMs int64 // the started event's time, else the first record's
	Records []Progress
	// Terminated is the exception of its terminated event ("" none or
	// clean; see Stopped).
	Stopped   bool
	Exception string
}

// Query is every run of one query id, in start order.
type Query struct {
	ID   string
	Name string
	Runs []Run
	// Plan is the dedup as an event log's SQL plan shows it (the first
	// run that has one), nil without an event log.
	Plan *Plan
}

// Records is every record of q in order (runs by start, batches by id).
func (q Query) Records() []Progress {
	var out []Progress
	for _, r := range q.Runs {
		out = append(out, r.Records...)
	}
	return out
}

// Log is everything read from the inputs.
type Log struct {
	Files   []File
	Queries []Query
	Bad     []BadLine
	// BadTotal counts every bad line; Bad keeps the first MaxBad.
	BadTotal int
	// Duplicates counts records seen twice with the same figures (the same
	// executed batch of a run in two inputs, e.g. a listener log and a
	// driver log; an idle trigger: the same batch id and timestamp).
	Duplicates int
	// Conflicts are copies of one executed batch with different figures
	// (the first MaxConflicts, sorted); ConflictTotal counts them all.
	Conflicts         []Conflict
	ConflictTotal     int
	ConflictsPerQuery map[string]int
}

// MaxBad bounds the bad lines a Log quotes.
const MaxBad = 20

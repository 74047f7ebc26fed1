// Package history is the record of one simulated (or live) run: every copy
// a producer appended, every batch execution with the fate of each row it
// read, every crash and restart, every sink write. It is plain data, saved
// as JSON, so that a run can be re-checked later when the checker improves
// (Jepsen's record-then-check).
package history

import (
	"encoding/json"
)

// Version of the file format.
const Version = 1

// History is one run.
type History struct {
	Version int    `json:"version"`
	Seed    uint64 `json:"seed"`
	// Query is the query YAML the run used (the final one when the shape
	// changed mid-run; see Phases).
	Query string `json:"query"`
	// API, key columns, delay and sink kind, for the checker.
	API        string   `json:"api"`
	Keys       []string `json:"keys"`
	DelayMs    int64    `json:"delayMs"` // -1: no watermark
	Partitions int      `json:"partitions"`
	SinkKind   string   `json:"sinkKind"`
	// EventTimeInKey: dropDuplicates whose key holds the event time.
	EventTimeInKey bool `json:"eventTimeInKey"`
	// Phases: the fault phase ends at HealAtMs; the run ends at EndMs.
	HealAtMs int64 `json:"healAtMs"`
	EndMs    int64 `json:"endMs"`
	// ArrivalRatePerSec is the configured mean arrival rate of logical
	// events over all sources (for the state bound).
	ArrivalRatePerSec float64 `json:"arrivalRatePerSec"`

	Copies   []Copy         `json:"copies"`
	Batches  []Batch        `json:"batches"`
	Crashes  []Crash        `json:"crashes"`
	Restarts []Restart      `json:"restarts"`
	Writes   []SinkWrite    `json:"sinkWrites"`
	Table    []int          `json:"table"` // final sink table content as copy indices (table/merge/append sinks)
	HasTable bool           `json:"hasTable"`
	Faults   []string       `json:"faultsEnabled"`
	Coverage map[string]int `json:"coverage"` // fault name -> times it fired
	// FaultKnobs are the knob values of the enabled faults, as a fault plan
	// writes them (drawn ones included in swarm mode), so that a run can be
	// replayed as an explicit plan.
	FaultKnobs map[string]map[string]any `json:"faultKnobs,omitempty"`
	// InitialQuery is the query YAML the run started with, set only when a
	// query-shape-change replaced it (Query is then the final one).
	InitialQuery string `json:"initialQuery,omitempty"`
	// Live describes a run against Kafka; absent for a simulated run.
	Live *Live `json:"live,omitempty"`
}

// Live is what a run against Kafka did beyond the history proper: where
// it ran and how often the engine process and the broker were killed.
type Live struct {
	// Cluster is kfake, local, external or testcontainers; Engine is
	// process (a child process killed with SIGKILL) or inproc.
	Cluster string `json:"cluster"`
	Engine  string `json:"engine"`
	// TriggerMs is the real time one trigger interval took (the timeline's
	// scale); 0 for inproc, which steps simulated time.
	TriggerMs float64 `json:"triggerMs,omitempty"`
	// EngineProcesses started; kills at armed crash points and at random
	// moments; exits with an error (restarted like a crash).
	EngineProcesses int `json:"engineProcesses"`
	KilledAtPoints  int `json:"killedAtCrashPoints"`
	KilledAtRandom  int `json:"killedAtRandom"`
	FailedExits     int `json:"failedExits"`
	BrokerRestarts  int `json:"brokerRestarts"`
	// DroppedAcks are duplicate appends made by a produce ack lost after
	// the broker wrote the batch (kfake drops it; against a real broker,
	// live/faultproxy).
	DroppedAcks int `json:"droppedAcks"`
	// InferredWrites are sink writes of killed executions found committed
	// by their replay (see live.RunProcess).
	InferredWrites int `json:"inferredWrites"`
	// Dir keeps the engine's checkpoint, table, records and logs.
	Dir string `json:"dir,omitempty"`
}

// Copy is one record a producer appended to the log.
type Copy struct {
	// Event is the logical event id: copies of one event share it, and it
	// is the value of the dedup key column "id".
	Event string `json:"event"`
	// CopyNo is 0 for the original send, 1.. for retries and duplicate
	// appends.
	CopyNo    int   `json:"copy"`
	Source    int   `json:"source"`
	Partition int   `json:"partition"`
	Offset    int64 `json:"offset"`
	// EventTimeUs is the event-time column in microseconds.
	EventTimeUs int64 `json:"eventTimeUs"`
	// AppendedAtMs is the processing time the log received it.
	AppendedAtMs int64 `json:"appendedAtMs"`
	// Fault names the fault that produced this copy ("" for an original).
	Fault string `json:"fault,omitempty"`
}

// Outcome of a row in a batch execution.
const (
	Emitted   = "emitted"
	Duplicate = "duplicate"
	Late      = "late"
	// Filtered: dropped before the watermark by the query's
	// drop_future_events filter (event time too far ahead of processing
	// time); not counted as late.
	Filtered = "filtered"
)

// Batch is one execution of one batch.
type Batch struct {
	BatchID int64  `json:"batchId"`
	AtMs    int64  `json:"atMs"` // processing time
	Replay  bool   `json:"replay,omitempty"`
	Crashed string `json:"crashed,omitempty"` // crash point at or after the sink write
	// Input lists the copies read (indices into Copies) in union order;
	// Outcomes[i] is the fate of Input[i].
	Input    []int    `json:"input"`
	Outcomes []string `json:"outcomes"`
	// Watermarks in ms: late filter, eviction, and the value after.
	LateWatermarkMs int64 `json:"lateWatermarkMs"`
	WatermarkMs     int64 `json:"watermarkMs"`
	NextWatermarkMs int64 `json:"nextWatermarkMs"`
	// MaxEventTimeMs over the input (0 when empty).
	MaxEventTimeMs int64 `json:"maxEventTimeMs"`
	// State figures from the progress record (zero for batch dedup).
	NumRowsTotal   int64 `json:"numRowsTotal"`
	NumRowsUpdated int64 `json:"numRowsUpdated"`
	NumRowsRemoved int64 `json:"numRowsRemoved"`
	// Progress is the Spark-shaped progress record, kept verbatim.
	Progress json.RawMessage `json:"progress,omitempty"`
}

// Crash is a driver death.
type Crash struct {
	AtMs    int64  `json:"atMs"`
	Point   string `json:"point"` // a crash point, or "random" (a filesystem operation failed mid-batch)
	BatchID int64  `json:"batchId"`
	// LostFiles are checkpoint files whose unsynced content the crash lost.
	LostFiles []string `json:"lostFiles,omitempty"`
	// TornFile is the checkpoint file a power loss left with a prefix of its
	// last unsynced write (torn-write).
	TornFile string `json:"tornFile,omitempty"`
}

// Restart is a driver start after a crash, a clean stop or a shape change.
type Restart struct {
	AtMs int64 `json:"atMs"`
	// FreshCheckpoint: the query started on an empty checkpoint (shape change).
	FreshCheckpoint bool   `json:"freshCheckpoint,omitempty"`
	Query           string `json:"query,omitempty"` // the new query YAML when it changed
}

// SinkWrite is one delivery to the sink and what the sink kept of it.
type SinkWrite struct {
	BatchID int64 `json:"batchId"`
	AtMs    int64 `json:"atMs"`
	Rows    []int `json:"rows"` // copies delivered
	// Kept is how many of Rows the sink added to its table (table: 0 when
	// the (app id, version) was already committed; merge: the unmatched rows).
	Kept int `json:"kept"`
}

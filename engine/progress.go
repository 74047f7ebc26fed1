package engine

import (
	"encoding/json"
	"math"
)

// Progress is Spark's StreamingQueryProgress with its JSON field names and
// order (spark-semantics.md §11). Rates that are NaN or infinite and empty
// maps are omitted, as Spark omits them.
type Progress struct {
	ID                     string             `json:"id"`
	RunID                  string             `json:"runId"`
	Name                   *string            `json:"name"`
	Timestamp              string             `json:"timestamp"`
	BatchID                int64              `json:"batchId"`
	BatchDuration          int64              `json:"batchDuration"`
	NumInputRows           int64              `json:"numInputRows"`
	InputRowsPerSecond     *float64           `json:"inputRowsPerSecond,omitempty"`
	ProcessedRowsPerSecond *float64           `json:"processedRowsPerSecond,omitempty"`
	DurationMs             map[string]int64   `json:"durationMs,omitempty"`
	EventTime              map[string]string  `json:"eventTime,omitempty"`
	StateOperators         []OperatorProgress `json:"stateOperators"`
	Sources                []SourceProgress   `json:"sources"`
	Sink                   SinkProgress       `json:"sink"`
}

// OperatorProgress is StateOperatorProgress.
type OperatorProgress struct {
	OperatorName              string           `json:"operatorName"`
	NumRowsTotal              int64            `json:"numRowsTotal"`
	NumRowsUpdated            int64            `json:"numRowsUpdated"`
	AllUpdatesTimeMs          int64            `json:"allUpdatesTimeMs"`
	NumRowsRemoved            int64            `json:"numRowsRemoved"`
	AllRemovalsTimeMs         int64            `json:"allRemovalsTimeMs"`
	CommitTimeMs              int64            `json:"commitTimeMs"`
	MemoryUsedBytes           int64            `json:"memoryUsedBytes"`
	NumRowsDroppedByWatermark int64            `json:"numRowsDroppedByWatermark"`
	NumShufflePartitions      int64            `json:"numShufflePartitions"`
	NumStateStoreInstances    int64            `json:"numStateStoreInstances"`
	CustomMetrics             map[string]int64 `json:"customMetrics,omitempty"`
}

// SourceProgress is Spark's SourceProgress.
type SourceProgress struct {
	Description            string          `json:"description"`
	StartOffset            json.RawMessage `json:"startOffset"`
	EndOffset              json.RawMessage `json:"endOffset"`
	LatestOffset           json.RawMessage `json:"latestOffset"`
	NumInputRows           int64           `json:"numInputRows"`
	InputRowsPerSecond     *float64        `json:"inputRowsPerSecond,omitempty"`
	ProcessedRowsPerSecond *float64        `json:"processedRowsPerSecond,omitempty"`
}

// SinkProgress is Spark's SinkProgress. numOutputRows is -1 for the v1
// sinks Spark uses for foreachBatch and Delta, and dedupsim keeps that.
type SinkProgress struct {
	Description   string `json:"description"`
	NumOutputRows int64  `json:"numOutputRows"`
}

// rate returns n per second over ms, or nil where Spark would have NaN or
// infinity (and so omit the field).
func rate(n int64, ms int64) *float64 {
	r := float64(n) * 1000 / float64(ms)
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return nil
	}
	return &r
}

func rawOrNull(o json.RawMessage) json.RawMessage {
	if o == nil {
		return json.RawMessage("null")
	}
	return o
}

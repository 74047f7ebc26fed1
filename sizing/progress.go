package sizing

import (
	"errors"
	"fmt"
	"math"

	"github.com/dedupsim/dedupsim/diagnose/progress"
)

// FromProgress is what a real query's progress says about its state
// (size --from-progress): the figures are read with diagnose's readers
// (diagnose/progress), every shape they read (listener JSON Lines, a
// recentProgress array, driver logs, event logs).
type FromProgress struct {
	Path    string `json:"path"`
	QueryID string `json:"queryId"`
	Name    string `json:"name,omitempty"`
	// Store is "hdfs" or "rocksdb" as the custom metrics betray it, ""
	// when they do not.
	Store string `json:"store"`
	// Memory is what memoryUsedBytes counts on that store:
	// progress.MemoryHeap (HDFS), MemoryNative (RocksDB) or MemoryUnknown.
	Memory     string `json:"memory"`
	Partitions int64  `json:"partitions"`
	// Batches is the non-idle records with a state operator; Plateau
	// those whose numRowsTotal is at least half the largest, which the
	// bytes per key are read from.
	Batches int `json:"batches"`
	Plateau int `json:"plateauBatches"`
	// BytesPerKey is sum(memoryUsedBytes) / sum(numRowsTotal) over the
	// plateau batches (progress.MeasureStateBytes, which diagnose prints
	// too): on the HDFS-backed store the heap of the versions
	// in memory per key; on RocksDB native memory (block cache, memtables)
	// that is per instance, not per key.
	BytesPerKey float64 `json:"bytesPerKey"`
	// Last is the last such batch's figures, which the bytes per key are
	// checked against.
	LastBatchID         int64 `json:"lastBatchId"`
	LastNumRowsTotal    int64 `json:"lastNumRowsTotal"`
	LastMemoryUsedBytes int64 `json:"lastMemoryUsedBytes"`
	// Churn is the mean numRowsRemoved / numRowsTotal over the plateau:
	// the share of the keys a batch evicts, whose rows the version before
	// still holds in memory.
	Churn float64 `json:"churnPerBatch"`
	// KeyRatePerSec is the new keys (numRowsUpdated) after the first
	// batch over the processing time from the first trigger to the last
	// (0 when the records span none).
	KeyRatePerSec float64 `json:"keyRatePerSec"`
	SpanSec       float64 `json:"spanSec"`
}

// ReadProgress reads path (a file or an event-log folder) and returns the
// figures of its stateful query. A log with several stateful queries is
// refused, naming them: the figures are one query's.
func ReadProgress(path string) (FromProgress, error) {
	lg, err := progress.Read([]string{path})
	if err != nil {
		return FromProgress{}, err
	}
	return progressFigures(path, lg)
}

func progressFigures(path string, lg *progress.Log) (FromProgress, error) {
	out := FromProgress{Path: path}
	var recs []progress.Progress
	var ids []string
	for _, q := range lg.Queries {
		var mine []progress.Progress
		for _, r := range q.Records() {
			if !r.Idle && len(r.StateOperators) > 0 {
				mine = append(mine, r)
			}
		}
		if len(mine) == 0 {
			continue
		}
		ids = append(ids, q.ID)
		if recs == nil {
			recs, out.QueryID, out.Name = mine, q.ID, q.Name
		}
	}
	switch {
	case len(ids) == 0:
		if lg.BadTotal > 0 && len(lg.Bad) > 0 {
			return out, fmt.Errorf("%s: no progress record of a stateful query (%d bad lines; the first, %s: %s)", path, lg.BadTotal, lg.Bad[0].Where, lg.Bad[0].Reason)
		}
		return out, fmt.Errorf("%s: no progress record of a stateful query (stateOperators): is this the progress of a dedup query?", path)
	case len(ids) > 1:
		return out, fmt.Errorf("%s: progress of %d stateful queries (%v): give the log of one", path, len(ids), ids)
	}
	ptrs := make([]*progress.Progress, len(recs))
	for i := range recs {
		ptrs[i] = &recs[i]
	}
	for _, r := range recs {
		op := r.StateOperators[0]
		if p := op.NumShufflePartitions; p > 0 {
			out.Partitions = p
		} else if out.Partitions == 0 {
			out.Partitions = op.NumStateStoreInstances
		}
	}
	sb, ok := progress.MeasureStateBytes(ptrs)
	out.Store, out.Memory, out.Batches = sb.Store, sb.Memory, sb.Batches
	if !ok {
		return out, errors.New(path + ": every batch's state is empty (numRowsTotal 0): no bytes per key to read")
	}
	out.Plateau, out.BytesPerKey, out.Churn = sb.Plateau, sb.BytesPerKey, sb.Churn
	out.LastBatchID, out.LastNumRowsTotal, out.LastMemoryUsedBytes = sb.LastBatchID, sb.LastNumRowsTotal, sb.LastMemoryUsedBytes
	var updated float64
	for _, r := range recs[1:] {
		updated += float64(r.StateOperators[0].NumRowsUpdated)
	}
	if span := float64(recs[len(recs)-1].TimestampMs-recs[0].TimestampMs) / 1e3; span > 0 {
		out.SpanSec, out.KeyRatePerSec = span, updated/span
	}
	return out, nil
}

// Rate is the key rate size takes from the progress when --rate is not
// given: KeyRatePerSec to two decimals under 1,000 keys/s (0.01 at
// least), else to a whole number.
func (fp FromProgress) Rate() float64 {
	r := fp.KeyRatePerSec
	if r < 1000 {
		return math.Max(math.Round(r*100)/100, 0.01)
	}
	return math.Round(r)
}

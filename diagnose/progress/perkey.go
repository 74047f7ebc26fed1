package progress

// Memory kinds of StateBytes: what memoryUsedBytes counts on each store.
const (
	// MemoryHeap: the HDFS-backed store's memoryUsedBytes is the JVM heap
	// of the versions of the state map it keeps in memory (SizeEstimator),
	// so bytes per key is a per-key heap figure.
	MemoryHeap = "jvm-heap"
	// MemoryNative: RocksDB's memoryUsedBytes is native memory (block
	// cache, memtables, index and filter blocks), bounded per instance by
	// its confs, not per key: divided by the keys it is a sign, not a
	// figure to size an executor heap with.
	MemoryNative = "rocksdb-native"
	// MemoryUnknown: no custom metric says which store it is.
	MemoryUnknown = "unknown"
)

// StateBytes is the measured bytes per key of a query's state operator 0:
// memoryUsedBytes / numRowsTotal over its plateau batches. It is the one
// home of the figure: diagnose prints it and size --from-progress sizes
// with it.
type StateBytes struct {
	// Store is "hdfs" or "rocksdb" as the custom metrics betray it, ""
	// when they do not; Memory says what memoryUsedBytes counts there
	// (MemoryHeap, MemoryNative or MemoryUnknown).
	Store  string `json:"store"`
	Memory string `json:"memory"`
	// Batches is the non-idle records with a state operator; Plateau
	// those whose numRowsTotal is at least half the largest, which the
	// bytes per key are read from.
	Batches int `json:"batches"`
	Plateau int `json:"plateauBatches"`
	// BytesPerKey is sum(memoryUsedBytes) / sum(numRowsTotal) over the
	// plateau batches.
	BytesPerKey float64 `json:"bytesPerKey"`
	// The last plateau batch's figures.
	LastBatchID         int64 `json:"lastBatchId"`
	LastNumRowsTotal    int64 `json:"lastNumRowsTotal"`
	LastMemoryUsedBytes int64 `json:"lastMemoryUsedBytes"`
	// Churn is the mean numRowsRemoved / numRowsTotal over the plateau.
	Churn float64 `json:"churnPerBatch"`
}

// MeasureStateBytes reads the bytes per key of recs (one query's records in
// order; idle ones and those without a state operator are left out). ok is
// false when no record has state rows (no record with a state operator, or
// numRowsTotal 0 in every one); Batches still counts the records.
func MeasureStateBytes(recs []*Progress) (sb StateBytes, ok bool) {
	var most int64
	for _, r := range recs {
		if r.Idle || len(r.StateOperators) == 0 {
			continue
		}
		op := r.StateOperators[0]
		sb.Batches++
		most = max(most, op.NumRowsTotal)
		if sb.Store == "" {
			sb.Store = op.Provider()
		}
	}
	switch sb.Store {
	case "hdfs":
		sb.Memory = MemoryHeap
	case "rocksdb":
		sb.Memory = MemoryNative
	default:
		sb.Memory = MemoryUnknown
	}
	if most == 0 {
		return sb, false
	}
	var mem, rows, churn float64
	for _, r := range recs {
		if r.Idle || len(r.StateOperators) == 0 {
			continue
		}
		op := r.StateOperators[0]
		if op.NumRowsTotal*2 < most {
			continue
		}
		sb.Plateau++
		mem += float64(op.MemoryUsedBytes)
		rows += float64(op.NumRowsTotal)
		churn += float64(op.NumRowsRemoved) / float64(op.NumRowsTotal)
		sb.LastBatchID, sb.LastNumRowsTotal, sb.LastMemoryUsedBytes = r.BatchID, op.NumRowsTotal, op.MemoryUsedBytes
	}
	sb.BytesPerKey = mem / rows
	sb.Churn = churn / float64(sb.Plateau)
	return sb, true
}

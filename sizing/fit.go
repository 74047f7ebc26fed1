package sizing

import (
	"fmt"
	"math"
)

// DefaultMemoryFraction is the share of an executor's heap that state may
// take by default (size --memory-fraction).
//
// Why 0.25: Spark's unified memory manager takes spark.memory.fraction
// (0.6) of the heap less 300 MiB reserved for execution and storage; the
// HDFS-backed state store's maps are not in it (Spark does not account
// them), so they live in the remaining "user memory", 0.4 x (heap - 300
// MiB), about 38% of an 8g heap, next to user objects and Spark's internal
// metadata. A quarter of the heap is about two thirds of that, leaving the
// rest for everything else that lives there and for the garbage
// collector's headroom. The figure is per executor, for the state of every
// partition that executor holds, and the bytes per key it is checked with
// should include every version the store keeps in memory (Spark's
// memoryUsedBytes does: the HDFS-backed store keeps
// spark.sql.streaming.maxBatchesToRetainInMemory = 2 versions).
//
// RocksDB's state is outside the heap altogether (native memory and local
// disk), so the fraction does not apply to it.
const DefaultMemoryFraction = 0.25

// Cluster is how the state is spread: spark-submit's --num-executors and
// --executor-memory, and the share of each heap state may take.
type Cluster struct {
	Executors      int
	ExecutorMemory int64   // bytes of heap (spark.executor.memory); 0: not given
	MemoryFraction float64 // share of the heap state may take (0: DefaultMemoryFraction)
	// Skew is the busiest partition's keys over the mean partition's (0
	// or 1: an even spread). Spark places a key by the hash of its key
	// columns modulo the partitions, so distinct keys spread evenly but
	// every copy of a hot key lands in one partition.
	Skew float64
}

// MaxSkew bounds --skew.
const (
	MaxSkew   = 1e6
	SkewRange = "[1, 1,000,000]"
)

// CheckSkew checks --skew.
func CheckSkew(flag string, v float64) error {
	if !(v >= 1 && v <= MaxSkew) {
		return RangeError(flag, Num(v), SkewRange)
	}
	return nil
}

// Fit is the state of the busiest executor against its share of the heap.
type Fit struct {
	Cluster
	// PartitionsPerExecutor: the state partitions the busiest executor
	// holds when they are spread evenly, ceil(partitions / executors).
	// Spark schedules each partition's task where its store is loaded, so
	// the spread is even after a steady start, not guaranteed.
	PartitionsPerExecutor int
	// ExecutorsWithState: executors that hold any (fewer than Executors
	// when there are fewer partitions).
	ExecutorsWithState int
	KeysPerPartition   float64
	// BusiestPartitionKeys is KeysPerPartition x Skew.
	BusiestPartitionKeys float64
	KeysPerExecutor      float64
	BytesPerExecutor     float64
	// The rest is set when ExecutorMemory is given.
	BudgetBytes float64 // MemoryFraction x ExecutorMemory
	// UserMemoryBytes is Spark's user memory at the default
	// spark.memory.fraction: 0.4 x (heap - 300 MiB), where the
	// HDFS-backed store's maps live.
	UserMemoryBytes float64
	Fits            bool
	Share           float64 // BytesPerExecutor / BudgetBytes
	// When it does not fit: the fewest executors that would fit at these
	// partitions (0: none would, one partition alone is over the budget),
	// and the smallest whole-GiB heap that fits at these executors (0:
	// none up to MaxExecutorMemory).
	ExecutorsNeeded int
	MemoryNeeded    int64
}

// CheckFraction checks --memory-fraction.
func CheckFraction(flag string, f float64) error {
	if !(f > 0 && f <= 1) {
		return RangeError(flag, Num(f), FractionRange)
	}
	return nil
}

// CheckExecutors checks --executors.
func CheckExecutors(flag string, n int) error {
	if n < 1 || n > MaxExecutors {
		return RangeError(flag, fmt.Sprint(n), ExecutorsRange)
	}
	return nil
}

// FitOn spreads the estimate over the cluster.
func (e Estimate) FitOn(c Cluster) (Fit, error) {
	if c.MemoryFraction == 0 {
		c.MemoryFraction = DefaultMemoryFraction
	}
	if err := CheckExecutors("executors", c.Executors); err != nil {
		return Fit{}, err
	}
	if err := CheckFraction("memory-fraction", c.MemoryFraction); err != nil {
		return Fit{}, err
	}
	if c.ExecutorMemory != 0 && (c.ExecutorMemory < MinExecutorMemory || c.ExecutorMemory > MaxExecutorMemory) {
		return Fit{}, RangeError("executor-memory", MemoryString(c.ExecutorMemory), ExecutorMemoryRange)
	}
	if c.Skew == 0 {
		c.Skew = 1
	}
	if err := CheckSkew("skew", c.Skew); err != nil {
		return Fit{}, err
	}
	if e.Unbounded {
		return Fit{}, fmt.Errorf("state grows without bound: no executor holds it")
	}
	p := e.Params.Partitions
	f := Fit{Cluster: c}
	f.PartitionsPerExecutor = (p + c.Executors - 1) / c.Executors
	f.ExecutorsWithState = min(p, c.Executors)
	f.KeysPerPartition = e.Keys / float64(p)
	// The busiest executor holds the busiest partition and the rest of
	// its share at the mean (the skew cannot make a partition hold more
	// than every key).
	f.BusiestPartitionKeys = math.Min(f.KeysPerPartition*c.Skew, e.Keys)
	f.KeysPerExecutor = math.Min(f.KeysPerPartition*float64(f.PartitionsPerExecutor-1)+f.BusiestPartitionKeys, e.Keys)
	f.BytesPerExecutor = f.KeysPerExecutor * e.Params.BytesPerKey
	if c.ExecutorMemory == 0 {
		return f, nil
	}
	heap := float64(c.ExecutorMemory)
	f.BudgetBytes = c.MemoryFraction * heap
	f.UserMemoryBytes = (1 - SparkMemoryFraction) * (heap - ReservedMemory)
	f.Share = f.BytesPerExecutor / f.BudgetBytes
	f.Fits = f.BytesPerExecutor <= f.BudgetBytes
	if !f.Fits {
		perPartition := f.KeysPerPartition * e.Params.BytesPerKey
		// m partitions fit when the busiest and m - 1 others do.
		if most := math.Floor((f.BudgetBytes-f.BusiestPartitionKeys*e.Params.BytesPerKey)/perPartition) + 1; most >= 1 {
			f.ExecutorsNeeded = int(math.Min(math.Ceil(float64(p)/most), MaxExecutors+1))
		}
		if need := math.Ceil(f.BytesPerExecutor/c.MemoryFraction/(1<<30)) * (1 << 30); need <= MaxExecutorMemory {
			f.MemoryNeeded = int64(math.Max(need, MinExecutorMemory))
		}
	}
	return f, nil
}

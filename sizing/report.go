package sizing

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/inspect"
	"github.com/dedupsim/dedupsim/internal/suggest"
)

// FigureInput says what the bytes per key may come from: Given is
// --bytes-per-key (Params.BytesPerKey holds it), Spark the store the
// user's Spark runs (hdfs, rocksdb or ""), Sim the simulator's store for
// Measure, Layout and Progress what was read, if anything.
type FigureInput struct {
	Given, Measure bool
	Seed           uint64
	Spark, Sim     string
	Layout         *Layout
	Progress       *FromProgress
}

// Figure is the bytes per key size uses and where they come from.
// Kind is "heap" (Java objects on the executor heap: the HDFS-backed
// store), "disk" (RocksDB's bytes on local disk, never checked against a
// heap) or "assumed" (seed 000's 100 B, whatever the store).
type Figure struct {
	Value  float64 `json:"value"`
	Source string  `json:"source"`
	Kind   string  `json:"kind"`
	Store  string  `json:"store,omitempty"`
}

// eventTimeText is the RocksDB figure's share for an event time in the key.
func eventTimeText(lay *Layout) string {
	if !lay.EventTimeInKey {
		return ""
	}
	return fmt.Sprintf(" + %s B for the event time in the key", trimFloat(RocksEventTimeBytes))
}

// FigureFor finds the bytes per key and says where they come from:
// given, from a progress log, from Spark's layout, measured or assumed.
// An on-disk figure is never labelled heap, so it never meets the heap
// check.
// A measurement that fails, or whose bytes per key are out of range, is
// the only error.
func FigureFor(p Params, in FigureInput) (Figure, *Measurement, error) {
	spark, lay, fp := in.Spark, in.Layout, in.Progress
	fig := Figure{Value: p.BytesPerKey, Store: spark, Kind: "assumed",
		Source: "assumed (--bytes-per-key; seed 000's RocksDB figure: key, expiry and storage overhead)"}
	var m *Measurement
	switch {
	case in.Given:
		fig.Source, fig.Kind = "assumed (--bytes-per-key)", map[string]string{"hdfs": "heap", "rocksdb": "disk", "": "assumed"}[spark]
	case fp != nil && fp.Store == "hdfs":
		// memoryUsedBytes is after the commit; a batch also builds the map
		// of the next version: one more entry per key.
		fig.Value = fp.BytesPerKey + StoreLayout("hdfs", 0, 0, 1).EntryBytes
		fig.Kind = "heap"
		fig.Source = fmt.Sprintf("from %s: memoryUsedBytes / numRowsTotal = %s B over its %d largest batches (HDFS-backed store: the versions in memory), + %s B for the map entry of the version a batch builds",
			fp.Path, trimFloat(math.Round(fp.BytesPerKey*10)/10), fp.Plateau, trimFloat(StoreLayout("hdfs", 0, 0, 1).EntryBytes))
	case lay != nil && spark == "hdfs":
		fig.Value, fig.Kind = lay.HeapPerKey, "heap"
		fig.Source = fmt.Sprintf("Spark's layout on the HDFS-backed store: key UnsafeRow %s B + value %s B, as 2 UnsafeRow objects and 2 byte arrays (%s B, shared by the versions), and a map entry of %s B in each of the %d versions kept (spark.sql.streaming.maxBatchesToRetainInMemory) and in the map a batch builds, with %s of the keys evicted per batch (trigger / retention); memoryUsedBytes / numRowsTotal will show about %s B, and up to %s B on large maps, where Spark's SizeEstimator counts each version's rows (docs/sizing.md)",
			trimFloat(lay.KeyRowBytes), trimFloat(lay.ValueRow), trimFloat(lay.RowsBytes), trimFloat(lay.EntryBytes), lay.Versions, pct(lay.Churn), trimFloat(math.Round(lay.MemoryUsedPerKey)),
			trimFloat(math.Round(float64(lay.Versions)*(lay.RowsBytes+lay.EntryBytes))))
	case lay != nil:
		fig.Value, fig.Kind = lay.DiskPerKey, "disk"
		fig.Source = fmt.Sprintf("Spark's layout on RocksDB, calibrated on Spark 4.1.1's SST files: the key's values %s B x %s (lz4 cannot shrink random ids) + %s B per entry (internal key, lengths, bloom filter)%s: bytes on local disk for random ids (UUIDs, hashes); ids that count up or share prefixes compress to less (docs/sizing.md)",
			trimFloat(math.Round(lay.KeyValueBytes*10)/10), trimFloat(RocksLiteralFactor), trimFloat(RocksEntryBytes), eventTimeText(lay))
	case fp != nil && fp.Store == "rocksdb":
		fig.Kind = "disk"
		fig.Source = "assumed: seed 000's RocksDB figure; the progress's memoryUsedBytes is RocksDB's native memory (block cache, memtables), per instance, not per key: give --keys with --sample or --schema for the disk bytes"
	case in.Measure:
		got, err := Measure(p, in.Sim, in.Seed)
		if err != nil {
			return Figure{}, nil, err
		}
		bpk, src := got.BytesPerKey()
		if err := CheckBytesPerKey("measure", bpk); err != nil {
			return Figure{}, nil, fmt.Errorf("size: the measured bytes per key are out of range: %w", err)
		}
		m, fig.Value, fig.Source = &got, bpk, src
		fig.Kind, fig.Store = "heap", "hdfs"
		if in.Sim == "pebble" {
			fig.Kind, fig.Store = "disk", "rocksdb"
		}
	case spark == "rocksdb":
		fig.Kind = "disk"
	}
	return fig, m, nil
}

// CheckpointSkew is the spread of a checkpoint's state over its partitions.
type CheckpointSkew struct {
	Dir                string
	Partitions         int
	Busiest, BusiestID int
	Mean, Skew         float64
}

// ReadCheckpointSkew reads the per-partition key counts of the checkpoint's
// first stateful operator with inspect (read only) and returns the
// busiest partition over the mean.
func ReadCheckpointSkew(dir string) (CheckpointSkew, error) {
	r, err := inspect.Inspect(dir)
	if err != nil {
		return CheckpointSkew{}, err
	}
	if len(r.Operators) == 0 {
		return CheckpointSkew{}, fmt.Errorf("%s: no state operator", dir)
	}
	op := r.Operators[0]
	out := CheckpointSkew{Dir: dir, Partitions: op.NumPartitions}
	var total int64
	for _, pt := range op.Partitions {
		if pt.Keys < 0 {
			return out, fmt.Errorf("%s: partition %d's keys cannot be counted (%s); give --skew", dir, pt.ID, pt.From)
		}
		total += pt.Keys
		if int(pt.Keys) > out.Busiest {
			out.Busiest, out.BusiestID = int(pt.Keys), pt.ID
		}
	}
	if out.Partitions < 1 || total == 0 {
		return out, fmt.Errorf("%s: the state is empty: no spread to read; give --skew", dir)
	}
	out.Mean = float64(total) / float64(out.Partitions)
	out.Skew = math.Max(1, float64(out.Busiest)/out.Mean)
	return out, nil
}

// WriteText prints size's text report: the estimate, each figure once
// with where it comes from, after what the progress log (fp) and the
// checkpoint (ck) said, if given, and before the measurement m, if any;
// assumed is --bytes-per-key, the rule's figure m is checked against.
func WriteText(w io.Writer, e Estimate, fig Figure, cl Cluster, haveExecutors bool, fp *FromProgress, ck *CheckpointSkew, m *Measurement, assumed float64) {
	if e.Unbounded {
		fmt.Fprintf(w, "state: unbounded\n%s\n%s\n", e.Formula, e.StoreReason)
		return
	}
	if fp != nil {
		writeFromProgress(w, fp)
	}
	if ck != nil {
		fmt.Fprintf(w, "%-18s %s: %d partitions, busiest %d keys (partition %d), mean %s: skew %s\n", "from checkpoint", ck.Dir, ck.Partitions, ck.Busiest, ck.BusiestID, trimFloat(math.Round(ck.Mean*10)/10), trimFloat(math.Round(ck.Skew*100)/100))
	}
	writeEstimate(w, e, fig, cl, haveExecutors)
	if m != nil {
		writeMeasurement(w, m, assumed)
	}
}

// writeEstimate prints the estimate, each figure once with where it comes from.
func writeEstimate(w io.Writer, e Estimate, fig Figure, cl Cluster, haveExecutors bool) {
	p := e.Params
	row := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-18s %s\n", label, fmt.Sprintf(format, args...))
	}
	ret := Seconds(e.RetentionSec)
	switch {
	case p.API == query.BatchDropDuplicates:
		row("retention", "none: batchDropDuplicates keeps no state across batches")
	case p.API == query.DropDuplicatesWithinWatermark:
		row("retention", "%s = 2 x delay (a key stays until the watermark, which trails the newest event time by the delay, passes its event time + delay)", ret)
	default:
		row("retention", "%s = the delay (a key stays until the watermark passes its event time)", ret)
	}
	if e.RetentionSec == 0 {
		row("keys in state", "0")
		return
	}
	row("keys in state", "%s = %s keys/s x %s", keyCount(e.Keys), rateText(p.RatePerSec), ret)
	row("bytes per key", "%s B, %s", trimFloat(math.Round(p.BytesPerKey*10)/10), fig.Source)
	row("total state", "%s", Bytes(e.TotalBytes))
	row("per partition", "%s keys, %s (%d partitions)", keyCount(e.Keys/float64(p.Partitions)), Bytes(e.PerPartition), p.Partitions)
	if p.MemoryBytes > 0 {
		row("store", "%s: %s", e.Store, e.StoreReason)
	}
	if !haveExecutors {
		return
	}
	fit, err := e.FitOn(cl)
	if err != nil {
		row("per executor", "%v", err)
		return
	}
	spread := "an even spread"
	if cl.Skew > 1 {
		spread = fmt.Sprintf("the busiest partition %s x the mean (--skew), %s keys", trimFloat(math.Round(cl.Skew*100)/100), keyCount(fit.BusiestPartitionKeys))
	}
	row("per executor", "%d of %d partitions on the busiest of %d executors (%s): %s keys, %s (%s)",
		fit.PartitionsPerExecutor, p.Partitions, cl.Executors, spread, keyCount(fit.KeysPerExecutor), Bytes(fit.BytesPerExecutor), BinaryBytes(fit.BytesPerExecutor))
	if fig.Kind == "disk" {
		writeRocks(w, row, fit, fig)
		return
	}
	if cl.ExecutorMemory == 0 {
		row("fits", "unknown: give --executor-memory to check the executor heap")
		return
	}
	row("heap budget", "%s = %s (--memory-fraction) x %s heap (--executor-memory %s); Spark's user memory, where the HDFS-backed store's maps live, is %s",
		BinaryBytes(fit.BudgetBytes), trimFloat(fit.MemoryFraction), BinaryBytes(float64(cl.ExecutorMemory)), MemoryString(cl.ExecutorMemory), BinaryBytes(fit.UserMemoryBytes))
	verdict := "yes"
	if !fit.Fits {
		verdict = "no"
	}
	row("fits", "%s: %s of state per executor is %s of the %s budget (HDFS-backed store: state as Java objects on the executor heap)",
		verdict, BinaryBytes(fit.BytesPerExecutor), pct(fit.Share), BinaryBytes(fit.BudgetBytes))
	if fig.Kind == "assumed" {
		row("", "on the heap a key costs more than RocksDB's 100 B: Java objects (UnsafeRow key and value, a map entry), and 2 versions kept in memory (spark.sql.streaming.maxBatchesToRetainInMemory); give --store hdfs with --keys and --sample or --schema, or --from-progress with a staging run's progress")
	}
	if !fit.Fits {
		var ways []string
		if fit.ExecutorsNeeded > 0 {
			ways = append(ways, fmt.Sprintf("%d executors", fit.ExecutorsNeeded))
		}
		if fit.MemoryNeeded > 0 {
			ways = append(ways, fmt.Sprintf("--executor-memory %s", MemoryString(fit.MemoryNeeded)))
		}
		ways = append(ways, "the RocksDB store (spark.sql.streaming.stateStore.providerClass = org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider)")
		row("", "it fits with %s", suggest.OrList(ways))
	}
	if fig.Kind == "heap" {
		row("with RocksDB", "state moves to local disk and native memory, off the heap: size it with --store rocksdb")
		return
	}
	row("with RocksDB", "the %s per executor is on local disk and in native memory, not on the heap: the budget above does not bind it; bound its memory with spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage", BinaryBytes(fit.BytesPerExecutor))
}

// writeRocks is the executor check of RocksDB: disk, and the native memory
// its confs allow; an on-disk figure is never checked against the heap.
func writeRocks(w io.Writer, row func(string, string, ...any), fit Fit, fig Figure) {
	perInstance := float64(RocksBlockCacheMB+RocksWriteBufferMB*RocksMaxWriteBuffers) * (1 << 20)
	row("local disk", "%s per executor (%s B/key on disk), in spark.local.dir", BinaryBytes(fit.BytesPerExecutor), trimFloat(math.Round(fig.Value*10)/10))
	row("heap", "not checked: %s B/key is RocksDB's bytes on disk, not the heap's; RocksDB keeps state off the heap", trimFloat(math.Round(fig.Value*10)/10))
	row("native memory", "up to %s per executor unbounded: %d state store instances x (blockCacheSizeMB %d + writeBufferSizeMB %d x maxWriteBufferNumber %d, RocksDB's defaults for -1); with spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage=true all instances share maxMemoryUsageMB (%d MiB, writeBufferCacheRatio 0.5 of it for memtables through the write buffer manager, highPriorityPoolRatio 0.1 for index and filter blocks); add it to spark.executor.memoryOverhead",
		BinaryBytes(perInstance*float64(fit.PartitionsPerExecutor)), fit.PartitionsPerExecutor, RocksBlockCacheMB, RocksWriteBufferMB, RocksMaxWriteBuffers, RocksMaxMemoryMB)
}

// writeFromProgress prints what the progress log said.
func writeFromProgress(w io.Writer, fp *FromProgress) {
	store := fp.Store
	if store == "" {
		store = "unknown (no store-specific custom metrics)"
	}
	fmt.Fprintf(w, "%-18s %s: query %s, %d batches with state, store %s, %d partitions, %s keys/s new (numRowsUpdated over %s); at batch %d numRowsTotal %s, memoryUsedBytes %s\n",
		"from progress", fp.Path, fp.QueryID, fp.Batches, store, fp.Partitions, rateText(math.Round(fp.KeyRatePerSec*100)/100), Seconds(fp.SpanSec),
		fp.LastBatchID, Group(fp.LastNumRowsTotal), Bytes(float64(fp.LastMemoryUsedBytes)))
}

// Report is size --json.
type Report struct {
	API          string          `json:"api"`
	RatePerSec   float64         `json:"ratePerSec"`
	DelayMs      int64           `json:"delayMs"`
	RetentionSec float64         `json:"retentionSec"`
	Unbounded    bool            `json:"unbounded,omitempty"`
	KeysInState  float64         `json:"keysInState"`
	BytesPerKey  Figure          `json:"bytesPerKey"`
	Layout       *Layout         `json:"layout,omitempty"`
	FromProgress *FromProgress   `json:"fromProgress,omitempty"`
	TotalBytes   float64         `json:"totalBytes"`
	Partitions   int             `json:"partitions"`
	PerPartition float64         `json:"perPartitionBytes"`
	Executor     *ExecutorReport `json:"executor,omitempty"`
}

type ExecutorReport struct {
	Executors             int     `json:"executors"`
	PartitionsPerExecutor int     `json:"partitionsPerExecutor"`
	Skew                  float64 `json:"skew"`
	BusiestPartitionKeys  float64 `json:"busiestPartitionKeys"`
	KeysPerExecutor       float64 `json:"keysPerExecutor"`
	BytesPerExecutor      float64 `json:"bytesPerExecutor"`
	// HeapCheck says whether the bytes were checked against the heap:
	// "applied", "no --executor-memory", or why not (an on-disk figure).
	HeapCheck       string  `json:"heapCheck"`
	BudgetBytes     float64 `json:"budgetBytes,omitempty"`
	Fits            *bool   `json:"fits,omitempty"`
	ExecutorsNeeded int     `json:"executorsNeeded,omitempty"`
	NativeMaxBytes  float64 `json:"rocksdbNativeMaxBytes,omitempty"`
}

// ReportJSON is size --json's figures; the only error is a cluster the
// estimate cannot be fitted on.
func ReportJSON(e Estimate, fig Figure, lay *Layout, fp *FromProgress, cl Cluster, haveExecutors bool) (Report, error) {
	p := e.Params
	out := Report{API: string(p.API), RatePerSec: p.RatePerSec, DelayMs: p.Delay.Milliseconds(), RetentionSec: e.RetentionSec,
		Unbounded: e.Unbounded, KeysInState: e.Keys, BytesPerKey: fig, Layout: lay, FromProgress: fp,
		TotalBytes: e.TotalBytes, Partitions: p.Partitions, PerPartition: e.PerPartition}
	if haveExecutors && !e.Unbounded && e.RetentionSec > 0 {
		fit, err := e.FitOn(cl)
		if err != nil {
			return Report{}, err
		}
		x := &ExecutorReport{Executors: cl.Executors, PartitionsPerExecutor: fit.PartitionsPerExecutor, Skew: math.Max(cl.Skew, 1),
			BusiestPartitionKeys: fit.BusiestPartitionKeys, KeysPerExecutor: fit.KeysPerExecutor, BytesPerExecutor: fit.BytesPerExecutor}
		switch {
		case fig.Kind == "disk":
			x.HeapCheck = "not applicable: the bytes per key are RocksDB's on disk, off the heap"
			x.NativeMaxBytes = float64(RocksBlockCacheMB+RocksWriteBufferMB*RocksMaxWriteBuffers) * (1 << 20) * float64(fit.PartitionsPerExecutor)
		case cl.ExecutorMemory == 0:
			x.HeapCheck = "no --executor-memory"
		default:
			x.HeapCheck, x.BudgetBytes, x.ExecutorsNeeded = "applied", fit.BudgetBytes, fit.ExecutorsNeeded
			fits := fit.Fits
			x.Fits = &fits
		}
		out.Executor = x
	}
	return out, nil
}

// writeMeasurement prints the scaled-down simulation's check of the rule.
func writeMeasurement(w io.Writer, m *Measurement, assumed float64) {
	fmt.Fprintf(w, "\nmeasured on a simulation scaled by 1/%.0f (%s store, rate %.0f/s, delay %s):\n", m.Scale, m.Store, m.SimRatePerSec, m.SimDelay)
	fmt.Fprintf(w, "  %-28s %16s %16s\n", "", "rule", "measured")
	fmt.Fprintf(w, "  %-28s %16.0f %16.0f\n", "plateau numRowsTotal (sim)", m.PredictedPlateau, m.MeasuredPlateau)
	fmt.Fprintf(w, "  %-28s %16s %16.2f\n", "plateau / rate x retention", "1.00", m.Ratio)
	fmt.Fprintf(w, "  %-28s %16s %16.1f\n", "bytes per key in memory", trimFloat(assumed), m.MemoryPerKey)
	disk := "n/a"
	if m.DiskPerKey > 0 {
		disk = fmt.Sprintf("%.1f", m.DiskPerKey)
	}
	fmt.Fprintf(w, "  %-28s %16s %16s\n", "bytes per key on disk", "-", disk)
}

func keyCount(v float64) string {
	g := Group(int64(math.Round(v)))
	switch {
	case v >= 1e9:
		return g + " (" + trimFloat(math.Round(v/1e7)/100) + " billion)"
	case v >= 1e6:
		return g + " (" + trimFloat(math.Round(v/1e4)/100) + " million)"
	}
	return g
}

func rateText(v float64) string {
	if v >= 1000 && v == math.Trunc(v) {
		return Group(int64(v))
	}
	return trimFloat(v)
}

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func pct(f float64) string { return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) + "%" }

// Group writes an integer with thousands separators.
func Group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

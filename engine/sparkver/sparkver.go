// Package sparkver is the one table of what dedupsim does differently by
// Spark line (3.5, 4.0, 4.1, 4.2, 4.3): the confs a new checkpoint pins in
// offsets/N, the dedup's state key order, the checks and error classes
// that appeared in a line, the operators it runs, the customMetrics its
// dedup operator reports and whether it writes checksum sidecars next to
// format-v1 state files. Every row cites the
// Spark change it follows; docs/spark-semantics.md §17 prints the table.
//
// No version (the zero Version) is dedupsim's behaviour from before the
// table: the eight confs it always pinned, written in key order, and the
// Scala 2.13 set order for the key. The package imports nothing of the
// engine: query, checkpoint and the engine look rows up here.
package sparkver

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Confs the table names.
const (
	ConfShufflePartitions = "spark.sql.shuffle.partitions"
	ConfStateStore        = "spark.sql.streaming.stateStore.providerClass"
	ConfWatermarkPolicy   = "spark.sql.streaming.multipleWatermarkPolicy"
	// ConfKeyOrder: spark.sql.dropDuplicates.deterministicKeyOrder.enabled
	// (4.3): true keeps dropDuplicates' key columns in call order.
	ConfKeyOrder = "spark.sql.dropDuplicates.deterministicKeyOrder.enabled"
	// ConfRowChecksum: spark.sql.streaming.stateStore.rowChecksum.enabled
	// (4.2): a checksum appended to every state row.
	ConfRowChecksum = "spark.sql.streaming.stateStore.rowChecksum.enabled"
	// ConfIncrementalCleanup: spark.sql.streaming.statefulOperator.
	// incrementalCleanupFactor (4.3, not pinned, default 0).
	ConfIncrementalCleanup = "spark.sql.streaming.statefulOperator.incrementalCleanupFactor"
	// ConfCheckpointFormat: spark.sql.streaming.stateStore.
	// checkpointFormatVersion (4.0, not pinned).
	ConfCheckpointFormat = "spark.sql.streaming.stateStore.checkpointFormatVersion"
)

// Error classes the table hands out.
const (
	ClassMissingMetadata = "STREAMING_CHECKPOINT_MISSING_METADATA_FILE"
	// ClassRealTimeNotInAllowlist: an operator or sink outside real-time
	// mode's allowlist (RealTimeModeAllowlist), raised when the query starts.
	ClassRealTimeNotInAllowlist = "STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST"
	// ClassRealTimeSQLConf: a session conf real-time mode cannot run with
	// (the state store provider other than RocksDB, format v1).
	ClassRealTimeSQLConf = "STREAMING_REAL_TIME_MODE.SQL_CONFIGURATION_NOT_SUPPORTED"
	// ClassRealTimeInterval: a batch duration under
	// spark.sql.streaming.realTimeMode.minBatchDuration (5000 ms).
	ClassRealTimeInterval = "INVALID_STREAMING_REAL_TIME_MODE_TRIGGER_INTERVAL"
	// ClassRealTimeCheckpointV1: a real-time query started on a checkpoint
	// whose commit log is format v1.
	ClassRealTimeCheckpointV1 = "STREAMING_REAL_TIME_MODE.CHECKPOINT_FORMAT_V1_NOT_SUPPORTED"
)

// RealTimeMinBatchMs is spark.sql.streaming.realTimeMode.minBatchDuration's
// default: the shortest real-time batch a query may ask for.
const RealTimeMinBatchMs = 5000

// Spark's class names in real-time mode's messages.
const (
	OpDeduplicate                = "org.apache.spark.sql.execution.streaming.operators.stateful.StreamingDeduplicateExec"
	OpDeduplicateWithinWatermark = "org.apache.spark.sql.execution.streaming.operators.stateful.StreamingDeduplicateWithinWatermarkExec"
)

// Version is a Spark version a run follows: a line ("4.3") and what the
// user wrote ("4.3" or "4.3.0"). The zero Version is "none given".
type Version struct {
	Line string
	Full string
}

// IsZero reports whether no version was given.
func (v Version) IsZero() bool { return v.Line == "" }

func (v Version) String() string { return v.Full }

var versionRe = regexp.MustCompile(`^(\d+)\.(\d+)(\.\d+)?$`)

// Parse reads "4.3" or "4.3.0" (a line, or a version of a line the table
// has). Anything else is an error naming the lines.
func Parse(s string) (Version, error) {
	m := versionRe.FindStringSubmatch(s)
	if m == nil {
		return Version{}, fmt.Errorf("spark version %q is not MAJOR.MINOR or MAJOR.MINOR.PATCH (supported lines: %s)", s, strings.Join(Lines(), ", "))
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	line := fmt.Sprintf("%d.%d", major, minor)
	if _, ok := lookup(line); !ok {
		return Version{}, fmt.Errorf("spark version %q: line %s is not supported (supported lines: %s)", s, line, strings.Join(Lines(), ", "))
	}
	return Version{Line: line, Full: s}, nil
}

// Conf is one pinned conf and the value a new checkpoint writes. Value is
// empty for the three the query sets (shuffle partitions, state store,
// watermark policy).
type Conf struct {
	Key, Value string
	// Since is the Spark change that added the conf to OffsetSeqMetadata.
	// relevantSQLConfs.
	Since string
	// Old is the value the line gives the conf on a restart of a
	// checkpoint whose offsets do not hold it (OffsetSeqMetadata.
	// relevantSQLConfDefaultValues); empty: the session's value.
	Old string
}

// Row is one line's behaviour.
type Row struct {
	Line string
	// Scala212: the line is built on Scala 2.12 (3.5), whose hash sets and
	// maps iterate in another order than 2.13's (HashOrder).
	Scala212 bool
	// Pinned are the confs a new checkpoint writes in offsets/N, in
	// relevantSQLConfs' order (the file's order is HashOrder of the keys).
	Pinned []Conf
	// Known are confs a query may set in spark_conf besides Pinned ones.
	Known []Conf
	// KeyOrderConf: the line has ConfKeyOrder (default true for a new
	// query; a checkpoint that does not pin it restarts with "false").
	KeyOrderConf bool
	// FormatV2: spark.sql.streaming.stateStore.checkpointFormatVersion=2
	// writes state checkpoint format v2.
	FormatV2 bool
	// MissingMetadata: a checkpoint with logs but no metadata file fails
	// with ClassMissingMetadata.
	MissingMetadata bool
	// APIs are the dedup calls the line runs.
	APIs []string
	// RealTime is what the line's real-time mode (trigger(realTime=...))
	// runs; the zero value: the line has no real-time trigger.
	RealTime RealTime
	// Metrics are the customMetrics the line's dedup operator reports
	// beyond dedupsim's no-version set (spark-semantics §17.7).
	Metrics Metrics
	// FileChecksum: the state store writes Spark's checksum sidecar
	// <file>.crc next to every state file of a format-v1 checkpoint
	// (spark.sql.streaming.checkpoint.fileChecksum.enabled, 4.1; from
	// 4.2 StateStoreConf enables it only with checkpointFormatVersion 2).
	FileChecksum bool
	Cite         string
}

// RealTime is a line's real-time mode (Trigger.RealTime, SPARK-53736,
// Spark 4.1; stateful operators from 4.3): whether the trigger exists and
// which dedup calls its operator allowlist (RealTimeModeAllowlist) admits.
type RealTime struct {
	Trigger bool
	// APIs are the dedup calls the allowlist admits; a stateful operator
	// it does not admit fails with ClassRealTimeNotInAllowlist, naming
	// the operators of Denied.
	APIs []string
	// Denied is, per dedup call, the physical operators the allowlist
	// names when it refuses the call (sorted, as Spark sorts them).
	Denied map[string][]string
	Cite   string
}

// Metrics are the stateOperators[0].customMetrics a line adds to the
// ones dedupsim reports with no version (numDroppedDuplicateRows and the
// store's own: loadedMapCacheHitCount, loadedMapCacheMissCount,
// stateOnCurrentVersionSizeBytes, and the Pebble store's
// rocksdbSstFileSize). StateStoreWriter.getProgress reports every metric
// an operator and its provider support, zero or not.
type Metrics struct {
	// Operator are BaseStreamingDeduplicateExec.customStatefulOperatorMetrics
	// after numDroppedDuplicateRows (both stores).
	Operator []string
	// HDFS are HDFSBackedStateStoreProvider.supportedCustomMetrics after
	// its three (the memory store only: the RocksDB provider's have a
	// rocksdb prefix and are not modelled).
	HDFS []string
	// SnapshotLastUploaded: the providers' one instance metric
	// (supportedInstanceMetrics), SnapshotLastUploaded.partition_<p>_default,
	// for at most InstanceMetricsToReport partitions.
	SnapshotLastUploaded bool
	Cite                 string
}

// Names of the metrics in the table.
const (
	MetricRowsReadDuringEviction   = "numRowsReadDuringEviction"
	MetricRowsIncrementallyRemoved = "numRowsIncrementallyRemoved"
	MetricForceSnapshotCount       = "forceSnapshotCount"
	MetricSnapshotsAutoRepaired    = "numSnapshotsAutoRepaired"
	// InstanceMetricsToReport is spark.sql.streaming.stateStore.
	// numStateStoreInstanceMetricsToReport's default (4.1+).
	InstanceMetricsToReport = 5
)

// SnapshotLastUploadedNames are the instance metric names getProgress
// reports for partitions 0..n-1 when every value is the same (-1, no
// snapshot uploaded): it turns the metrics into a Scala Map of name to
// value, sorts its entries by value (a stable sort) and keeps the first
// InstanceMetricsToReport, so ties keep the map's order, HashOrder of the
// names (up to four entries a Scala Map keeps insertion order, but then
// all are kept). Sorted by name, as the progress JSON prints them.
func SnapshotLastUploadedNames(n int) []string {
	names := make([]string, n)
	for p := range names {
		names[p] = fmt.Sprintf("SnapshotLastUploaded.partition_%d_default", p)
	}
	if n > InstanceMetricsToReport {
		names = HashOrder(names, false)[:InstanceMetricsToReport]
	}
	sort.Strings(names)
	return names
}

// The confs every line from 4.0 pins, with the values a default session
// writes (measured on pyspark 4.1.1 and 4.2.1: offsets/0 of a new query).
var base40 = []Conf{
	{ConfShufflePartitions, "", "SQLConf.SHUFFLE_PARTITIONS", ""},
	{ConfStateStore, "", "SQLConf.STATE_STORE_PROVIDER_CLASS", ""},
	{ConfWatermarkPolicy, "", "SQLConf.STREAMING_MULTIPLE_WATERMARK_POLICY (SPARK-24730)", ""},
	{"spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion", "2", "SQLConf.FLATMAPGROUPSWITHSTATE_STATE_FORMAT_VERSION", ""},
	{"spark.sql.streaming.aggregation.stateFormatVersion", "2", "SQLConf.STREAMING_AGGREGATION_STATE_FORMAT_VERSION", ""},
	{"spark.sql.streaming.join.stateFormatVersion", "2", "SQLConf.STREAMING_JOIN_STATE_FORMAT_VERSION", ""},
	{"spark.sql.streaming.stateStore.compression.codec", "lz4", "SQLConf.STATE_STORE_COMPRESSION_CODEC", ""},
	{"spark.sql.streaming.stateStore.rocksdb.formatVersion", "5", "SQLConf.STATE_STORE_ROCKSDB_FORMAT_VERSION", ""},
	{"spark.sql.streaming.statefulOperator.useStrictDistribution", "true", "SQLConf.STATEFUL_OPERATOR_USE_STRICT_DISTRIBUTION", ""},
	{"spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan", "false", "SQLConf.PRUNE_FILTERS_CAN_PRUNE_STREAMING_SUBPLAN", ""},
	{"spark.sql.streaming.stateStore.encodingFormat", "unsaferow", "SQLConf.STREAMING_STATE_STORE_ENCODING_FORMAT", ""},
}

// 4.2 adds four (measured on pyspark 4.2.1).
var added42 = []Conf{
	{ConfRowChecksum, "false", "SQLConf.STATE_STORE_ROW_CHECKSUM_ENABLED", ""},
	{"spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion", "2", "4.2", "1"},
	{"spark.sql.streaming.queryEvolution.enableSourceEvolution", "false", "4.2, source evolution (DataStreamReader.name)", ""},
	{"spark.sql.function.protobufExtensions.enabled", "false", "4.2", ""},
}

// 4.3 adds two (real pyspark 4.3.0 checkpoints, inspect/testdata/spark-v2).
var added43 = []Conf{
	{ConfKeyOrder, "true", "4.3, Dataset.groupColsFromDropDuplicates", "false"},
	{"spark.sql.streaming.statefulOperator.alwaysNullableOutput.enabled", "true", "4.3", "false"},
}

func concat(parts ...[]Conf) []Conf {
	var out []Conf
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var (
	apis35 = []string{"dropDuplicates", "dropDuplicatesWithinWatermark", "batchDropDuplicates"}
)

// Real-time mode by line. 4.1 and 4.2 run stateless queries only: the
// dedup's shuffle and its operator are outside the allowlist. 4.3 adds
// dropDuplicates (its shuffle runs pipelined) but not
// dropDuplicatesWithinWatermark (measured on pyspark 4.3.0).
var (
	realTime41 = RealTime{Trigger: true,
		Denied: map[string][]string{
			"dropDuplicates":                {"org.apache.spark.sql.execution.exchange.ShuffleExchangeExec", OpDeduplicate},
			"dropDuplicatesWithinWatermark": {"org.apache.spark.sql.execution.exchange.ShuffleExchangeExec", OpDeduplicateWithinWatermark},
		},
		Cite: "Spark 4.1: Trigger.RealTime (SPARK-53736), stateless operators only (RealTimeModeAllowlist)"}
	realTime43 = RealTime{Trigger: true, APIs: []string{"dropDuplicates"},
		Denied: map[string][]string{"dropDuplicatesWithinWatermark": {OpDeduplicateWithinWatermark}},
		Cite:   "Spark 4.3: StreamingDeduplicateExec and the pipelined ShuffleExchangeExec join the allowlist; StreamingDeduplicateWithinWatermarkExec does not (measured: pyspark 4.3.0)"}
)

// table is the one table. 3.5's pinned list is 4.0's without the
// encoding format (a 4.0 conf).
var table = []Row{
	{Line: "3.5", Scala212: true, Pinned: base40[:10], APIs: apis35,
		Cite: "Spark 3.5 (Scala 2.12): dropDuplicatesWithinWatermark (SPARK-42931); no state checkpoint format v2 (measured: pyspark 3.5.9 pins 10)"},
	{Line: "4.0", Pinned: base40, FormatV2: true, APIs: apis35,
		Cite: "Spark 4.0 (Scala 2.13, measured: pyspark 4.0.5 pins 11): state encoding format pinned (SQLConf.STREAMING_STATE_STORE_ENCODING_FORMAT), state checkpoint format v2 (SQLConf.STATE_STORE_CHECKPOINT_FORMAT_VERSION)"},
	{Line: "4.1", Pinned: base40, FormatV2: true, APIs: apis35, RealTime: realTime41, Metrics: metrics41, FileChecksum: true,
		Cite: "Spark 4.1: the 4.0 confs (measured: pyspark 4.1.1 pins 11); checksum sidecars (ChecksumCheckpointFileManager, spark.sql.streaming.checkpoint.fileChecksum.enabled, default true, for every state file)"},
	{Line: "4.2", Pinned: concat(base40, added42), FormatV2: true, MissingMetadata: true, APIs: apis35, RealTime: realTime41, Metrics: metrics42,
		Cite: "Spark 4.2: StreamingQueryCheckpointMetadata refuses logs without metadata (STREAMING_CHECKPOINT_MISSING_METADATA_FILE, spark.sql.streaming.checkpoint.verifyMetadataExists.enabled); row checksum (measured: pyspark 4.2.1 pins 15); StateStoreConf.checkpointFileChecksumEnabled needs checkpointFormatVersion >= 2 (no sidecars for format v1)"},
	{Line: "4.3", Pinned: concat(base40, added42, added43), FormatV2: true, MissingMetadata: true, KeyOrderConf: true,
		Known: []Conf{{Key: ConfIncrementalCleanup, Value: "0", Since: "4.3"}}, APIs: apis35, RealTime: realTime43, Metrics: metrics43,
		Cite: "Spark 4.3: deterministic dropDuplicates key order (spark.sql.dropDuplicates.deterministicKeyOrder.enabled), incremental cleanup (measured: pyspark 4.3.0 pins 17)"},
}

// metrics41: StateStoreProvider.supportedInstanceMetrics (4.1.0,
// StateStoreSnapshotLastUploadInstanceMetric, initValue -1) in both
// providers, reported by StateStoreWriter.getProgress.
var metrics41 = Metrics{SnapshotLastUploaded: true,
	Cite: "Spark 4.1: SnapshotLastUploaded.partition_<p>_default (HDFSBackedStateStoreProvider and RocksDBStateStoreProvider.supportedInstanceMetrics; measured: pyspark 4.1.1)"}

// metrics42: the HDFS-backed provider's supportedCustomMetrics add
// numSnapshotsAutoRepaired and forceSnapshotCount (pyspark 4.2.1's
// spark-sql jar; 4.1.1's has three).
var metrics42 = Metrics{SnapshotLastUploaded: true,
	HDFS: []string{MetricForceSnapshotCount, MetricSnapshotsAutoRepaired},
	Cite: "Spark 4.2: HDFSBackedStateStoreProvider.supportedCustomMetrics numSnapshotsAutoRepaired, forceSnapshotCount (pyspark 4.2.1's spark-sql jar)"}

// metrics43: BaseStreamingDeduplicateExec.customStatefulOperatorMetrics
// adds numRowsReadDuringEviction and numRowsIncrementallyRemoved (the
// EvictionIterator and incremental cleanup; pyspark 4.3.0's spark-sql
// jar, 4.2.1's has numDroppedDuplicateRows only).
var metrics43 = Metrics{SnapshotLastUploaded: true,
	Operator: []string{MetricRowsReadDuringEviction, MetricRowsIncrementallyRemoved},
	HDFS:     metrics42.HDFS,
	Cite:     "Spark 4.3: BaseStreamingDeduplicateExec.customStatefulOperatorMetrics numRowsReadDuringEviction, numRowsIncrementallyRemoved (measured: pyspark 4.3.0)"}

func lookup(line string) (Row, bool) {
	for _, r := range table {
		if r.Line == line {
			return r, true
		}
	}
	return Row{}, false
}

// Lookup is the row of v's line. The zero Version has no row (ok false).
func Lookup(v Version) (Row, bool) { return lookup(v.Line) }

// Lines lists the supported lines, oldest first.
func Lines() []string {
	out := make([]string, len(table))
	for i, r := range table {
		out[i] = r.Line
	}
	return out
}

// Rows is the table, oldest line first (for documentation tests).
func Rows() []Row { return append([]Row(nil), table...) }

// Conf finds key among the row's pinned and known confs.
func (r Row) Conf(key string) (Conf, bool) {
	for _, c := range r.Pinned {
		if c.Key == key {
			return c, true
		}
	}
	for _, c := range r.Known {
		if c.Key == key {
			return c, true
		}
	}
	return Conf{}, false
}

// ConfKeys lists the keys a query may set on this line, pinned first.
func (r Row) ConfKeys() []string {
	var out []string
	for _, c := range r.Pinned {
		out = append(out, c.Key)
	}
	for _, c := range r.Known {
		out = append(out, c.Key)
	}
	return out
}

// KeyOrder is how a line orders the dedup's state key columns.
type KeyOrder int

const (
	// SetOrder is Scala 2.13's Set order (colNames.toSet.toSeq), Spark
	// 4.0 to 4.2 and 4.3 with ConfKeyOrder false; dedupsim's order with no
	// version.
	SetOrder KeyOrder = iota
	// SetOrder212 is Scala 2.12's Set order (Spark 3.5).
	SetOrder212
	// CallOrder is the order of the call (4.3, ConfKeyOrder true).
	CallOrder
)

// Order puts names in the key order k.
func (k KeyOrder) Order(names []string) []string {
	switch k {
	case CallOrder:
		return append([]string(nil), names...)
	case SetOrder212:
		return HashOrder(names, true)
	}
	return HashOrder(names, false)
}

func (k KeyOrder) String() string {
	switch k {
	case CallOrder:
		return "call order"
	case SetOrder212:
		return "Scala 2.12 set order"
	}
	return "Scala 2.13 set order"
}

// KeyOrderFor is the key order of a query on the row's line whose
// ConfKeyOrder value is v ("" when the conf is not set: a line without it).
func (r Row) KeyOrderFor(v string) KeyOrder {
	switch {
	case r.Scala212:
		return SetOrder212
	case r.KeyOrderConf && v == "true":
		return CallOrder
	}
	return SetOrder
}

// OldCheckpointValue is the value a line gives a pinned conf that an
// older checkpoint's offsets do not hold (OffsetSeqMetadata.
// relevantSQLConfDefaultValues), and whether it has one. Measured: a
// 4.1.1 checkpoint restarted on 4.3.0 writes deterministicKeyOrder
// "false" (the order its state was written in), mergeOperatorVersion "1"
// and alwaysNullableOutput "false" in each new offsets entry. A conf
// without one takes the session's value, as Spark does.
func OldCheckpointValue(c Conf) (string, bool) {
	return c.Old, c.Old != ""
}

package query

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sparkver"
)

// Real-time mode (`trigger: {real_time: ...}`, Spark's Trigger.RealTime):
// what a query must be to start in it, with Spark's error classes and
// messages (spark-semantics.md §18, measured on pyspark 4.3.0).

// Spark's message around an allowlist refusal.
const (
	rtmLimitation = "Streaming real-time mode has the following limitation: "
	rtmBypass     = " To bypass this check, set spark.sql.streaming.realTimeMode.allowlistCheck to false. By changing this, you agree to run the query at your own risk."
)

// RealTime reports whether the query runs in real-time mode.
func (q *Query) RealTime() bool { return q.RealTimeMs > 0 }

func (q *Query) realTimeErr(line int, path, format string, args ...any) error {
	return &Error{File: q.at().file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// realTimeDefaults applies real-time mode's soft defaults (the RocksDB
// provider, dedupsim's pebble store, and state checkpoint format v2) to
// the fields the file leaves out, and refuses the ones it sets otherwise,
// as Spark refuses the session confs (SQL_CONFIGURATION_NOT_SUPPORTED).
// It also checks the batch duration against minBatchDuration.
func (q *Query) realTimeDefaults(storeKey, formatKey *yaml.Node) error {
	pos := q.at()
	if q.RealTimeMs < sparkver.RealTimeMinBatchMs {
		return q.realTimeErr(pos.rtLine, "trigger.real_time", "[%s] The real-time trigger interval is set to %d ms. This is less than the %d ms minimum specified by spark.sql.streaming.realTimeMode.minBatchDuration.",
			sparkver.ClassRealTimeInterval, q.RealTimeMs, sparkver.RealTimeMinBatchMs)
	}
	confErr := func(line int, path, conf string) error {
		return q.realTimeErr(line, path, "[%s] %sThe following session configuration(s) are incompatible with Real-Time Mode: 1. %s. Update or remove them and restart the query. (real-time mode needs state_store: pebble, dedupsim's RocksDB store, and checkpoint_format_version: 2; leave both out to get them)",
			sparkver.ClassRealTimeSQLConf, rtmLimitation, conf)
	}
	if storeKey == nil {
		q.StateStore = StateStorePebble
	} else if q.StateStore != StateStorePebble {
		return confErr(storeKey.Line, "state_store", sparkver.ConfStateStore+" must be org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
	}
	if formatKey == nil {
		q.CheckpointFormat = 2
	} else if q.CheckpointFormat != 2 {
		return confErr(formatKey.Line, "checkpoint_format_version", sparkver.ConfCheckpointFormat+" must be 2")
	}
	return nil
}

// checkRealTime checks a real-time query against its line: the trigger
// exists (4.1+), the sink and then the dedup operator are in the line's
// allowlist (Spark checks the sink when the query starts, the operators
// when the first batch is planned, after the checkpoint's metadata is
// written; dedupsim refuses both before it touches the checkpoint).
func (q *Query) checkRealTime(row sparkver.Row) error {
	if q.RealTimeMs == 0 {
		return nil
	}
	pos := q.at()
	if !row.RealTime.Trigger {
		return q.realTimeErr(pos.rtLine, "trigger.real_time", "Spark %s has no real-time mode: Trigger.RealTime arrived in Spark 4.1 (SPARK-53736), and runs dropDuplicates from 4.3", q.SparkVersion.Full)
	}
	d, _ := sink.Lookup(q.Sink.Kind)
	spark := d.SparkSink
	if q.API == BatchDropDuplicates {
		spark = sink.SparkForeachBatchSink // the dedup runs inside foreachBatch
	}
	if !d.RealTime || q.API == BatchDropDuplicates {
		line, path := pos.sinkLine, "sink.kind"
		if q.API == BatchDropDuplicates {
			line, path = pos.apiLine, "dedup.api"
		} else if line == 0 {
			line, path = pos.rtLine, "trigger.real_time"
		}
		return q.realTimeErr(line, path, "[%s] %sThe sink(s): %s is not in the sink allowlist for Real-Time Mode.%s (real-time mode writes rows as they are processed: sink kind %s, Spark's Kafka sink, is the one it takes)",
			sparkver.ClassRealTimeNotInAllowlist, rtmLimitation, spark, rtmBypass, sink.KindKafka)
	}
	api := string(q.API)
	for _, a := range row.RealTime.APIs {
		if a == api {
			return nil
		}
	}
	ops := row.RealTime.Denied[api]
	verb := "is"
	if len(ops) > 1 {
		verb = "are"
	}
	return q.realTimeErr(pos.apiLine, "dedup.api", "[%s] %sThe operator(s): %s %s not in the operator allowlist for Real-Time Mode.%s (%s)",
		sparkver.ClassRealTimeNotInAllowlist, rtmLimitation, strings.Join(ops, ", "), verb, rtmBypass, row.RealTime.Cite)
}

package query

import (
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sparkver"
)

// TestRealTimeRefusals: a real-time query starts only as Spark's would,
// each refusal naming the file, line and field, with Spark's error class
// (messages measured on pyspark 4.3.0 and 4.2.1).
func TestRealTimeRefusals(t *testing.T) {
	const ok43 = "spark_version: 4.3.0\ndedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: kafka}\ntrigger: {real_time: 5 seconds}\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"no version", "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: kafka}\ntrigger: {real_time: 5 minutes}\n",
			"query.yaml:3: trigger.real_time: needs a Spark version (spark_version: or --spark-version): real-time mode exists from Spark 4.1 and runs dropDuplicates from 4.3"},
		{"3.5 has none", strings.Replace(ok43, "4.3.0", "3.5.9", 1),
			"query.yaml:4: trigger.real_time: Spark 3.5.9 has no real-time mode: Trigger.RealTime arrived in Spark 4.1 (SPARK-53736), and runs dropDuplicates from 4.3"},
		{"4.2 refuses dropDuplicates", strings.Replace(ok43, "4.3.0", "4.2.1", 1),
			"query.yaml:2: dedup.api: [STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST] Streaming real-time mode has the following limitation: The operator(s): org.apache.spark.sql.execution.exchange.ShuffleExchangeExec, org.apache.spark.sql.execution.streaming.operators.stateful.StreamingDeduplicateExec are not in the operator allowlist for Real-Time Mode."},
		{"4.3 refuses WithinWatermark", "spark_version: 4.3.0\ndedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\nsink: {kind: kafka}\ntrigger: {real_time: 5 seconds}\n",
			"query.yaml:2: dedup.api: [STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST] Streaming real-time mode has the following limitation: The operator(s): org.apache.spark.sql.execution.streaming.operators.stateful.StreamingDeduplicateWithinWatermarkExec is not in the operator allowlist for Real-Time Mode."},
		{"foreachBatch sink", strings.Replace(ok43, "kafka", "foreachBatch", 1),
			"query.yaml:3: sink.kind: [STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST] Streaming real-time mode has the following limitation: The sink(s): org.apache.spark.sql.execution.streaming.sources.ForeachBatchSink is not in the sink allowlist for Real-Time Mode."},
		{"table sink", strings.Replace(ok43, "{kind: kafka}", "{kind: table}", 1), "query.yaml:3: sink.kind: [STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST]"},
		{"default sink", strings.Replace(ok43, "sink: {kind: kafka}\n", "", 1), "query.yaml:3: trigger.real_time: [STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST]"},
		{"batch dedup", strings.Replace(ok43, "api: dropDuplicates,", "api: batchDropDuplicates,", 1),
			"query.yaml:2: dedup.api: [STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST] Streaming real-time mode has the following limitation: The sink(s): org.apache.spark.sql.execution.streaming.sources.ForeachBatchSink"},
		{"too short", strings.Replace(ok43, "5 seconds", "2 seconds", 1),
			"query.yaml:4: trigger.real_time: [INVALID_STREAMING_REAL_TIME_MODE_TRIGGER_INTERVAL] The real-time trigger interval is set to 2000 ms. This is less than the 5000 ms minimum specified by spark.sql.streaming.realTimeMode.minBatchDuration."},
		{"month", strings.Replace(ok43, "5 seconds", "1 month", 1), `query.yaml:4: trigger.real_time: "1 month" is month-based`},
		{"zero", strings.Replace(ok43, "5 seconds", "0 seconds", 1), `query.yaml:4: trigger.real_time: must be a positive interval, got "0 seconds"`},
		{"negative", strings.Replace(ok43, "5 seconds", "-5 seconds", 1), `query.yaml:4: trigger.real_time: must be a positive interval, got "-5 seconds"`},
		{"memory store", ok43 + "state_store: memory\n",
			"query.yaml:5: state_store: [STREAMING_REAL_TIME_MODE.SQL_CONFIGURATION_NOT_SUPPORTED] Streaming real-time mode has the following limitation: The following session configuration(s) are incompatible with Real-Time Mode: 1. spark.sql.streaming.stateStore.providerClass must be org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider."},
		{"format v1", ok43 + "checkpoint_format_version: 1\n",
			"query.yaml:5: checkpoint_format_version: [STREAMING_REAL_TIME_MODE.SQL_CONFIGURATION_NOT_SUPPORTED]"},
		{"no real_time", "dedup: {api: dropDuplicates}\ntrigger: {}\n", `query.yaml:2: trigger: missing required field "real_time"`},
		{"unknown trigger field", "dedup: {api: dropDuplicates}\ntrigger: {realtime: 5 seconds}\n", `query.yaml:2: trigger: unknown field "realtime"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse("query.yaml", []byte(tc.yaml))
			if err == nil && q != nil {
				err = q.CheckSparkVersion()
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant prefix %s", err, tc.want)
			}
		})
	}
}

// TestRealTimeDefaults: real-time mode's soft defaults (RocksDB, format
// v2) fill the fields the file leaves out; the version check passes.
func TestRealTimeDefaults(t *testing.T) {
	q, err := Parse("query.yaml", []byte("spark_version: 4.3.0\ndedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: kafka}\ntrigger: {real_time: 5 minutes}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !q.RealTime() || q.RealTimeMs != 300000 || q.StateStore != StateStorePebble || q.CheckpointFormat != 2 || q.Sink.Kind != sink.KindKafka {
		t.Fatalf("got %+v", q)
	}
	if q.KeyOrder != sparkver.CallOrder {
		t.Fatalf("key order %v", q.KeyOrder)
	}
	// The version given later (--spark-version) is checked the same way.
	q, err = Parse("query.yaml", []byte("dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 1 minute}\nsink: {kind: kafka}\ntrigger: {real_time: 5 minutes}\n"))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := sparkver.Parse("4.3.0")
	if err := q.SetSparkVersion(v); err == nil || !strings.Contains(err.Error(), "query.yaml:1: dedup.api: [STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST]") {
		t.Fatalf("SetSparkVersion: %v", err)
	}
	// A micro-batch query may use the Kafka sink too.
	if _, err := Parse("query.yaml", []byte("dedup: {api: dropDuplicates}\nsink: {kind: kafka}\n")); err != nil {
		t.Fatal(err)
	}
}

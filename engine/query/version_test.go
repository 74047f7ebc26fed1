package query

import (
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/sparkver"
)

func TestSparkVersionFields(t *testing.T) {
	base := "dedup: {api: dropDuplicates, keys: [id, n, l, d, b, ts]}\n"
	for _, c := range []struct {
		name, yaml, err string
		order           sparkver.KeyOrder
	}{
		{"none", "", "", sparkver.SetOrder},
		{"4.3 call order", "spark_version: 4.3.0\n", "", sparkver.CallOrder},
		{"4.3 line", "spark_version: \"4.3\"\n", "", sparkver.CallOrder},
		{"4.3 conf off", "spark_version: 4.3.0\nspark_conf: {spark.sql.dropDuplicates.deterministicKeyOrder.enabled: false}\n", "", sparkver.SetOrder},
		{"4.1", "spark_version: 4.1.1\n", "", sparkver.SetOrder},
		{"3.5", "spark_version: 3.5.9\n", "", sparkver.SetOrder212},
		{"bad version", "spark_version: 3.4.0\n", "query.yaml:2: spark_version: spark version \"3.4.0\": line 3.4 is not supported", 0},
		{"conf without version", "spark_conf: {spark.sql.streaming.stateStore.rowChecksum.enabled: false}\n", "query.yaml:2: spark_conf: needs a Spark version", 0},
		{"key order on 4.1", "spark_version: 4.1.1\nspark_conf:\n  spark.sql.dropDuplicates.deterministicKeyOrder.enabled: true\n", "query.yaml:4: spark_conf.spark.sql.dropDuplicates.deterministicKeyOrder.enabled: Spark 4.1.1 has no conf", 0},
		{"row checksum", "spark_version: 4.3.0\nspark_conf:\n  spark.sql.streaming.stateStore.rowChecksum.enabled: true\n", "query.yaml:4: spark_conf.spark.sql.streaming.stateStore.rowChecksum.enabled: true is not supported", 0},
		{"incremental cleanup", "spark_version: 4.3.0\nspark_conf:\n  spark.sql.streaming.statefulOperator.incrementalCleanupFactor: 1\n", "incrementalCleanupFactor: 1 is not supported", 0},
		{"incremental cleanup 0", "spark_version: 4.3.0\nspark_conf:\n  spark.sql.streaming.statefulOperator.incrementalCleanupFactor: 0\n", "", sparkver.CallOrder},
		{"incremental cleanup on 4.2", "spark_version: 4.2.1\nspark_conf:\n  spark.sql.streaming.statefulOperator.incrementalCleanupFactor: 0\n", "Spark 4.2.1 has no conf", 0},
		{"query field", "spark_version: 4.3.0\nspark_conf: {spark.sql.shuffle.partitions: 8}\n", "set with the query field shuffle_partitions", 0},
		{"unmodelled value", "spark_version: 4.3.0\nspark_conf: {spark.sql.streaming.stateStore.compression.codec: zstd}\n", "only lz4 (Spark's default) is modelled", 0},
		{"unknown conf", "spark_version: 4.3.0\nspark_conf: {spark.sql.nope: 1}\n", "has no conf \"spark.sql.nope\"", 0},
		{"twice", "spark_version: 4.3.0\nspark_conf:\n  spark.sql.streaming.stateStore.rowChecksum.enabled: false\n  spark.sql.streaming.stateStore.rowChecksum.enabled: false\n", "query.yaml:5: spark_conf.spark.sql.streaming.stateStore.rowChecksum.enabled: conf given twice (first at line 4)", 0},
		{"not a map", "spark_version: 4.3.0\nspark_conf: [a]\n", "spark_conf: want a mapping", 0},
		{"v2 on 3.5", "spark_version: 3.5.9\nstate_store: pebble\ncheckpoint_format_version: 2\n", "query.yaml:4: checkpoint_format_version: 2 needs Spark 4.0 or later", 0},
		{"v2 on 4.0", "spark_version: 4.0.5\nstate_store: pebble\ncheckpoint_format_version: 2\n", "", sparkver.SetOrder},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, err := Parse("query.yaml", []byte(base+c.yaml))
			if err == nil {
				err = q.CheckSparkVersion()
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if q.KeyOrder != c.order {
				t.Fatalf("key order %v, want %v", q.KeyOrder, c.order)
			}
			want := c.order.Order([]string{"id", "n", "l", "d", "b", "ts"})
			if got := q.StateKeys(); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("state keys %v, want %v", got, want)
			}
		})
	}
}

func TestSetSparkVersion(t *testing.T) {
	q, err := Parse("query.yaml", []byte("dedup: {api: dropDuplicates, keys: [id]}\nspark_version: 4.3.0\n"))
	if err != nil {
		t.Fatal(err)
	}
	v41, _ := sparkver.Parse("4.1.1")
	if err := q.SetSparkVersion(v41); err == nil || !strings.Contains(err.Error(), "query.yaml:2: spark_version: the query file says 4.3.0 but --spark-version says 4.1.1") {
		t.Fatalf("conflict: %v", err)
	}
	v43, _ := sparkver.Parse("4.3.0")
	if err := q.SetSparkVersion(v43); err != nil {
		t.Fatalf("same version: %v", err)
	}
	line, _ := sparkver.Parse("4.3")
	if err := q.SetSparkVersion(line); err != nil || q.SparkVersion.Full != "4.3" {
		t.Fatalf("the line of the file's version: %v %v", err, q.SparkVersion)
	}
	v431, _ := sparkver.Parse("4.3.1")
	q.SparkVersion = v43
	if err := q.SetSparkVersion(v431); err == nil {
		t.Fatal("4.3.0 in the file and 4.3.1 given: want a conflict")
	}
	q2, _ := Parse("query.yaml", []byte("dedup: {api: dropDuplicates, keys: [a,b,c,d,e]}\n"))
	if err := q2.SetSparkVersion(v43); err != nil || q2.KeyOrder != sparkver.CallOrder {
		t.Fatalf("flag: %v %v", err, q2.KeyOrder)
	}
}

package sim

import (
	"strings"
	"testing"
)

// TestFoldSparkVersion: the scenario's spark_version and spark_conf go
// into the query text; a query naming another version or value is
// refused; with neither the text is kept byte for byte.
func TestFoldSparkVersion(t *testing.T) {
	c := Config{Query: "dedup: {api: dropDuplicates, keys: [id]}\n"}
	before := c.Query
	if err := c.FoldSparkVersion(); err != nil || c.Query != before {
		t.Fatalf("no version: %v %q", err, c.Query)
	}
	c.SparkVersion = "4.3.0"
	c.SparkConf = map[string]string{"spark.sql.dropDuplicates.deterministicKeyOrder.enabled": "false"}
	if err := c.FoldSparkVersion(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c.Query), `spark_version: "4.3.0"`) || !strings.Contains(string(c.Query), `spark.sql.dropDuplicates.deterministicKeyOrder.enabled: "false"`) || c.SparkVersion != "" || c.SparkConf != nil {
		t.Fatalf("folded: %q", c.Query)
	}
	if _, err := c.prepare(); err != nil {
		t.Fatalf("folded query does not run: %v", err)
	}
	c.SparkVersion = "4.3.0"
	if err := c.FoldSparkVersion(); err != nil {
		t.Fatalf("same version again: %v", err)
	}
	c.SparkVersion = "4.1.1"
	if err := c.FoldSparkVersion(); err == nil || !strings.Contains(err.Error(), "the query says spark_version: 4.3.0") {
		t.Fatalf("conflict: %v", err)
	}
	c.SparkVersion = ""
	c.SparkConf = map[string]string{"spark.sql.dropDuplicates.deterministicKeyOrder.enabled": "true"}
	if err := c.FoldSparkVersion(); err == nil {
		t.Fatal("conf conflict: want an error")
	}
}

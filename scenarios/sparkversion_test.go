package scenarios

import (
	"strings"
	"testing"
)

// TestScenarioSparkVersion: a scenario's top-level spark_version and
// spark_conf go into its query; a conf the line does not have is refused
// with the scenario file named.
func TestScenarioSparkVersion(t *testing.T) {
	base := "query:\n  dedup: {api: dropDuplicates, keys: [id]}\nfault_phase: 10s\nheal_phase: 5s\n"
	s, err := Parse("v.yaml", []byte(base+"spark_version: 4.3.0\nspark_conf:\n  spark.sql.dropDuplicates.deterministicKeyOrder.enabled: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if q := string(s.Config.Query); !strings.Contains(q, `spark_version: "4.3.0"`) || !strings.Contains(q, "deterministicKeyOrder.enabled") || s.Config.SparkVersion != "" {
		t.Fatalf("query %q", q)
	}
	_, err = Parse("v.yaml", []byte(base+"spark_version: 4.1.1\nspark_conf:\n  spark.sql.dropDuplicates.deterministicKeyOrder.enabled: false\n"))
	if err == nil || !strings.Contains(err.Error(), "v.yaml") || !strings.Contains(err.Error(), "Spark 4.1.1 has no conf") {
		t.Fatalf("want a refusal naming v.yaml, got %v", err)
	}
	s, err = Parse("v.yaml", []byte(base))
	if err != nil || strings.Contains(string(s.Config.Query), "spark_version") {
		t.Fatalf("no version: %v %q", err, s.Config.Query)
	}
}

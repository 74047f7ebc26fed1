package sizing

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// sparkCalibrationCases are re-measured on real Spark by
// TestSparkCalibration: one key shape per store (a UUID id on the
// HDFS-backed store, a string and a bigint on RocksDB), one API each.
var sparkCalibrationCases = []string{"uuid36/hdfs/dropDuplicatesWithinWatermark", "string12+bigint/rocksdb/dropDuplicates"}

// TestSparkCalibration is in the Spark suite (make test-spark): it runs
// scripts/sizing/calibrate.py on the venv's pyspark (DEDUPSIM_SPARK_PYTHON)
// for sparkCalibrationCases, with the committed table's random keys, and
// checks that size's figure falls inside the range Spark measures now, as
// TestCalibration does with the committed table. About a minute on one
// core: make test's Spark subset (SPARK_CALIBRATION=0) leaves it out, to
// keep make test's time.
func TestSparkCalibration(t *testing.T) {
	py := os.Getenv("DEDUPSIM_SPARK_PYTHON")
	if py == "" {
		t.Skip("!!! SKIPPING the real-Spark calibration check: DEDUPSIM_SPARK_PYTHON is not set (make test-spark installs pyspark and sets it)")
	}
	if os.Getenv("SPARK_CALIBRATION") == "0" {
		t.Skip("SPARK_CALIBRATION=0 (make test's Spark subset): the calibration check runs in make test-spark")
	}
	out := filepath.Join(t.TempDir(), "calibration.json")
	cmd := exec.Command(py, append([]string{filepath.Join("..", "scripts", "sizing", "calibrate.py"), out}, sparkCalibrationCases...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("calibrate.py: %v\n%s", err, b)
	}
	tab := readCalibration(t, out)
	if len(tab.Results) != len(sparkCalibrationCases) {
		t.Fatalf("calibrate.py measured %d cases, want %d", len(tab.Results), len(sparkCalibrationCases))
	}
	t.Logf("Spark %s", tab.SparkVersion)
	for _, r := range tab.Results {
		checkCalibration(t, r)
	}
}

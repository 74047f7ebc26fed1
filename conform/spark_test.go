package conform

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSpark is the conformance suite against real Spark (make test-spark):
// every golden case the runner can express and SPARK_TRACES random cases
// (default 300) from SPARK_SEED (default 1; SPARK_TYPED=1: only cases with
// typed or nested keys, SPARK_GOLDEN=0: no golden cases), run through the engine and
// through pyspark, compared batch for batch. It needs the venv's python in
// DEDUPSIM_SPARK_PYTHON (scripts/spark-env.sh prints it) and skips loudly
// without it. Any disagreement that no expected difference covers fails,
// with a shrunk repro folder per disagreement.
func TestSpark(t *testing.T) {
	py := os.Getenv("DEDUPSIM_SPARK_PYTHON")
	if py == "" {
		t.Skip("!!! SKIPPING the real-Spark conformance suite: DEDUPSIM_SPARK_PYTHON is not set (make test-spark installs pyspark and sets it)")
	}
	traces := envInt(t, "SPARK_TRACES", 300)
	seed := envInt(t, "SPARK_SEED", 1)
	workers := envInt(t, "SPARK_WORKERS", 3)
	out := os.Getenv("SPARK_OUT")
	if out == "" {
		out = t.TempDir()
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	golden := "../engine/testdata"
	if os.Getenv("SPARK_GOLDEN") == "0" {
		golden = "" // random traces only
	}
	runner, err := filepath.Abs(filepath.Join("sparkrunner", "runner.py"))
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	res, err := Run(context.Background(), Options{
		Python: py, Runner: runner, Traces: traces, Seed: uint64(seed), Typed: os.Getenv("SPARK_TYPED") == "1", GoldenDir: golden,
		OutDir: out, Workers: workers, Log: testLog{t}, DeltaJars: os.Getenv("DEDUPSIM_DELTA_JARS"),
		DeltaCache: deltaCache(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Table(&log); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + log.String())
	if res.Count(Agree) == 0 {
		t.Fatal("no case agreed: the comparison ran nothing")
	}
	if n := res.Count(Agree) + res.Count(Expected); n < traces {
		t.Errorf("only %d cases were compared, want at least the %d random traces", n, traces)
	}
	for _, c := range res.Cases {
		if c.Verdict == Disagree {
			t.Errorf("%s: %s\n  repro: %s", c.Case.Name, c.Diff, c.Repro)
		}
	}
}

// deltaCache is where the Delta jars are (make delta-fetch): DEDUPSIM_DELTA_CACHE,
// else the checkout's .cache/delta.
func deltaCache(t *testing.T) string {
	if d := os.Getenv("DEDUPSIM_DELTA_CACHE"); d != "" {
		return d
	}
	d, err := filepath.Abs("../.cache/delta")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a whole number >= 0", name, s)
	}
	return n
}

package conform

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
)

// benchCase is the speed comparison's trace: BenchQuery over
// BenchSteps(rows, nsteps).
func benchCase(rows, nsteps int) *Case {
	return &Case{Name: "bench", Query: []byte(BenchQuery), Steps: BenchSteps(rows, nsteps)}
}

// BenchmarkExecVsSpark runs the same 500k-row trace through dedupsim's
// exec path (parse the steps, run on an on-disk checkpoint) and through
// Spark (the runner, after its session started), checks that both agree
// batch for batch, and reports both throughputs and their ratio. It needs
// DEDUPSIM_SPARK_PYTHON (make bench-spark).
func BenchmarkExecVsSpark(b *testing.B) {
	py := os.Getenv("DEDUPSIM_SPARK_PYTHON")
	if py == "" {
		b.Skip("!!! SKIPPING the Spark speed comparison: DEDUPSIM_SPARK_PYTHON is not set (make bench-spark)")
	}
	rows := 500_000
	c := benchCase(rows, 10)
	for b.Loop() {
		// dedupsim: as `dedupsim exec` does it, parsing included.
		dir := b.TempDir()
		start := time.Now()
		q, err := query.Parse("query.yaml", c.Query)
		if err != nil {
			b.Fatal(err)
		}
		st, err := steps.Parse("steps.jsonl", c.Steps, q)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := trace.Run(q, st, trace.Options{Checkpoint: fsys.NewOS(dir)}); err != nil {
			b.Fatal(err)
		}
		engineSec := time.Since(start).Seconds()
		c.Engine = RunEngine(c, map[string]*fsys.Mem{})

		runner, err := filepath.Abs("../scripts/spark/runner.py")
		if err != nil {
			b.Fatal(err)
		}
		var sparkSec float64
		sp := &Spark{Python: py, Runner: runner, Workers: 1, onStatus: func(st runnerStatus) {
			if st.Out != "" {
				sparkSec = st.Seconds
			}
		}}
		if err := sp.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		err = sp.Run(context.Background(), b.TempDir(), []*Case{c})
		sp.Close()
		if err != nil {
			b.Fatal(err)
		}
		if d := Compare(c.Engine, c.Spark); d != nil || c.Spark.Err != "" {
			b.Fatalf("dedupsim and Spark disagree on the benchmark trace: %v %s", d, c.Spark.Err)
		}
		b.ReportMetric(float64(rows)/engineSec, "dedupsim-rows/s")
		b.ReportMetric(float64(rows)/sparkSec, "spark-rows/s")
		b.ReportMetric(sparkSec/engineSec, "speedup(x)")
		b.Logf("%d rows, %d batch executions: dedupsim exec %.2f s, Spark %s %.2f s (session start excluded): dedupsim %.1fx faster",
			rows, len(c.Engine.Execs), engineSec, sp.Version(), sparkSec, sparkSec/engineSec)
	}
}

// TestBenchSteps pins the speed trace's bytes (Spark's side of the
// comparison reads the same file): its first rows, a copy in the same
// batch and one of the previous batch.
func TestBenchSteps(t *testing.T) {
	got := string(BenchSteps(6, 2))
	want := `{"rows": [{"id":"evt-0000000","ts":1700000000.000000,"amount":0},{"id":"evt-0000000","ts":1700000000.000100,"amount":1},{"id":"evt-0000002","ts":1700000000.000200,"amount":2}]}` + "\n" +
		`{"rows": [{"id":"evt-0000003","ts":1700000000.000300,"amount":3},{"id":"evt-0000003","ts":1700000000.000400,"amount":4},{"id":"evt-0000002","ts":1700000000.000500,"amount":5}]}` + "\n"
	if got != want {
		t.Fatalf("BenchSteps(6, 2) =\n%s\nwant\n%s", got, want)
	}
}

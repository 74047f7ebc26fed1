package conform

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/sparkver"
)

// benchCase is the speed comparison's trace: BenchQuery over
// BenchSteps(rows, nsteps).
func benchCase(rows, nsteps int) *Case {
	return &Case{Name: "bench", Query: []byte(BenchQuery), Steps: BenchSteps(rows, nsteps)}
}

// BenchmarkExecVsSpark runs the same 500k-row trace through `dedupsim
// exec` (the binary, as a user runs it, process start included) and
// through Spark (the runner, after its session started), checks that both
// agree batch for batch, and reports both throughputs and their ratio. It
// needs DEDUPSIM_SPARK_PYTHON (make bench-spark).
func BenchmarkExecVsSpark(b *testing.B) {
	py := os.Getenv("DEDUPSIM_SPARK_PYTHON")
	if py == "" {
		b.Skip("!!! SKIPPING the Spark speed comparison: DEDUPSIM_SPARK_PYTHON is not set (make bench-spark)")
	}
	rows := 500_000
	c := benchCase(rows, 10)
	// Both dedupsim sides follow the runner's Spark line, as the suite does
	// for a query that names none (its progress metrics are per line).
	pv, err := PysparkVersion(context.Background(), py)
	if err != nil {
		b.Fatal(err)
	}
	if c.engineVersion, err = sparkver.Parse(pv); err != nil {
		b.Fatalf("the runner's pyspark %s: %v", pv, err)
	}
	bin, qPath, sPath := buildExec(b, c)
	for b.Loop() {
		// dedupsim: the exec verb as a user runs it (a process: schema
		// inference, the check pass, the run on an on-disk checkpoint, the
		// JSON Lines output to a file).
		out := filepath.Join(b.TempDir(), "out.jsonl")
		start := time.Now()
		if msg, err := exec.Command(bin, "exec", "--query", qPath, "--input", sPath, "--out", out, "--spark-version", pv).CombinedOutput(); err != nil {
			b.Fatalf("dedupsim exec: %v\n%s", err, msg)
		}
		engineSec := time.Since(start).Seconds()
		c.Engine = RunEngine(c, map[string]*fsys.Mem{})

		runner, err := filepath.Abs(filepath.Join("sparkrunner", "runner.py"))
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

// buildExec builds the dedupsim binary and writes c's query and steps
// files, for BenchmarkExecVsSpark's run of `dedupsim exec`.
func buildExec(b *testing.B, c *Case) (bin, qPath, sPath string) {
	dir := b.TempDir()
	bin = filepath.Join(dir, "dedupsim")
	if msg, err := exec.Command("go", "build", "-o", bin, "../cmd/dedupsim").CombinedOutput(); err != nil {
		b.Fatalf("build dedupsim: %v\n%s", err, msg)
	}
	qPath, sPath = filepath.Join(dir, "query.yaml"), filepath.Join(dir, "steps.jsonl")
	if err := os.WriteFile(qPath, c.Query, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(sPath, c.Steps, 0o644); err != nil {
		b.Fatal(err)
	}
	return bin, qPath, sPath
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

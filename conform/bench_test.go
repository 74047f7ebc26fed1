package conform

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
)

// benchCase is the speed comparison's trace (shared/spec/spark-oracle.md):
// 500,000 rows in 10 steps, dropDuplicatesWithinWatermark on a string id
// with a 10-second delay, 4 partitions, 5% duplicates (half of them in the
// same batch, half one batch later, inside the delay).
func benchCase(rows, nsteps int) *Case {
	q := "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 4\n"
	var b strings.Builder
	per := rows / nsteps
	n := 0
	for s := range nsteps {
		b.WriteString(`{"rows": [`)
		for i := range per {
			if i > 0 {
				b.WriteByte(',')
			}
			id := n
			switch {
			case i%40 == 1 && n > 0: // a copy in the same batch
				id = n - 1
			case i%40 == 2 && s > 0: // a copy of the previous batch, within the delay
				id = n - per
			}
			// 5 s of event time per step, 100 µs apart: the watermark
			// trails by the delay, so copies a batch apart are caught.
			ts := 1_700_000_000_000_000 + int64(n)*100
			fmt.Fprintf(&b, `{"id":"evt-%07d","ts":%d.%06d,"amount":%d}`, id, ts/1_000_000, ts%1_000_000, n%997)
			n++
		}
		b.WriteString("]}\n")
	}
	return &Case{Name: "bench", Query: []byte(q), Steps: []byte(b.String())}
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

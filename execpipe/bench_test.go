package execpipe

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dedupsim/dedupsim/conform"
	"github.com/dedupsim/dedupsim/engine/query"
)

// BenchmarkExec runs the exec pipeline in process over the speed comparison's
// 500k-row trace (conform.BenchSteps, the trace BenchmarkExecVsSpark gives
// Spark): schema inference, the check pass, the run on a temporary on-disk
// checkpoint and the JSON Lines output to a file, as `dedupsim exec
// --query Q --input S --out O` does. Profile it with -cpuprofile.
func BenchmarkExec(b *testing.B) {
	const rows = 500_000
	dir := b.TempDir()
	q := filepath.Join(dir, "query.yaml")
	s := filepath.Join(dir, "steps.jsonl")
	if err := os.WriteFile(q, []byte(conform.BenchQuery), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(s, conform.BenchSteps(rows, 10), 0o644); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	for b.Loop() {
		if err := Run(Options{QueryPath: q, InputPath: s, OutPath: out, Format: "jsonl", Engine: "dedupsim"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkExecPrepass times exec's pass before the run alone (schema
// inference and the check of every row, one pass) over the same trace.
func BenchmarkExecPrepass(b *testing.B) {
	const rows = 500_000
	s := filepath.Join(b.TempDir(), "steps.jsonl")
	if err := os.WriteFile(s, conform.BenchSteps(rows, 10), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		q, err := query.Parse("q.yaml", []byte(conform.BenchQuery))
		if err != nil {
			b.Fatal(err)
		}
		if err := inferCheckSteps(s, q); err != nil || q.Schema == nil {
			b.Fatal(err, q.Schema)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

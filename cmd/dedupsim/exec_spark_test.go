package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dedupsim/dedupsim/conform"
)

// TestExecEngineSpark runs the worked example through exec on both engines
// and compares the two outputs batch for batch with conform's comparison.
// It needs a pyspark venv (DEDUPSIM_SPARK_PYTHON; make test-spark sets it)
// and skips loudly without one.
func TestExecEngineSpark(t *testing.T) {
	if os.Getenv("DEDUPSIM_SPARK_PYTHON") == "" {
		t.Skip("!!! SKIPPING exec --engine spark: DEDUPSIM_SPARK_PYTHON is not set (make test-spark)")
	}
	bin := binary(t)
	dir := t.TempDir()
	ex := filepath.Join("..", "..", "examples", "worked-example")
	outs := map[string]string{}
	for _, engine := range []string{"dedupsim", "spark"} {
		out := filepath.Join(dir, engine+".jsonl")
		_, errOut, code := run(bin, "exec", "--engine", engine, "--query", filepath.Join(ex, "query.yaml"),
			"--input", filepath.Join(ex, "steps.jsonl"), "--out", out)
		if code != 0 {
			t.Fatalf("exec --engine %s: exit %d: %s", engine, code, errOut)
		}
		outs[engine] = out
	}
	eng, err := conform.ReadOutcome(outs["dedupsim"])
	if err != nil {
		t.Fatal(err)
	}
	sp, err := conform.ReadOutcome(outs["spark"])
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Execs) == 0 {
		t.Fatal("Spark ran no batch")
	}
	if d := conform.Compare(eng, sp); d != nil {
		t.Fatalf("exec on dedupsim and on Spark differ: %s", d)
	}
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	ex := filepath.Join("..", "..", "examples", "worked-example")
	eng, sp := execBoth(t, filepath.Join(ex, "query.yaml"), filepath.Join(ex, "steps.jsonl"))
	if len(sp.Execs) == 0 {
		t.Fatal("Spark ran no batch")
	}
	if d := conform.Compare(eng, sp); d != nil {
		t.Fatalf("exec on dedupsim and on Spark differ: %s", d)
	}
}

// execBoth runs exec on one pair with both engines (extra flags for the
// Spark run) and reads the two outputs.
func execBoth(t *testing.T, query, steps string, sparkFlags ...string) (eng, sp *conform.Outcome) {
	t.Helper()
	bin := binary(t)
	dir := t.TempDir()
	// dedupsim runs as the runner's Spark line (its customMetrics, key
	// order and pinned confs are the line's), as conform runs it.
	v, err := exec.Command(os.Getenv("DEDUPSIM_SPARK_PYTHON"), "-c", "import pyspark; print(pyspark.__version__)").Output()
	if err != nil {
		t.Fatalf("the runner's pyspark version: %v", err)
	}
	version := strings.TrimSpace(string(v))
	outs := map[string]*conform.Outcome{}
	for _, engine := range []string{"dedupsim", "spark"} {
		out := filepath.Join(dir, engine+".jsonl")
		args := []string{"exec", "--engine", engine, "--query", query, "--input", steps, "--out", out}
		if engine == "spark" {
			args = append(args, sparkFlags...)
		} else {
			args = append(args, "--spark-version", version)
		}
		if _, errOut, code := run(bin, args...); code != 0 {
			t.Fatalf("exec --engine %s: exit %d: %s", engine, code, errOut)
		}
		o, err := conform.ReadOutcome(out)
		if err != nil {
			t.Fatal(err)
		}
		outs[engine] = o
	}
	return outs["dedupsim"], outs["spark"]
}

// TestExecEngineSparkDelta: a table sink whose txnAppId is generated at
// every start, with a crash after batch 1's write, on both engines: Spark
// writes a real Delta table (kept in --checkpoint's delta-table), the
// final tables and txn versions agree, and inspect on Spark's table finds
// the replayed batch's keys held twice (exit 1).
func TestExecEngineSparkDelta(t *testing.T) {
	if os.Getenv("DEDUPSIM_SPARK_PYTHON") == "" {
		t.Skip("!!! SKIPPING exec --engine spark with Delta: DEDUPSIM_SPARK_PYTHON is not set (make test-spark)")
	}
	bin := binary(t)
	dir := t.TempDir()
	q := filepath.Join(dir, "q.yaml")
	st := filepath.Join(dir, "steps.jsonl")
	os.WriteFile(q, []byte("dedup: {api: dropDuplicates, keys: [id]}\nno_data_batches: false\nsink: {kind: table, generate_app_id: true}\n"), 0o644)
	os.WriteFile(st, []byte(`{"rows": [{"id":"a","ts":1},{"id":"b","ts":2}]}
{"crash": "after-sink-write"}
{"rows": [{"id":"c","ts":3}]}
{"rows": [{"id":"d","ts":4}]}
`), 0o644)
	ckpt := filepath.Join(dir, "spark-ckpt")
	eng, sp := execBoth(t, q, st, "--checkpoint", ckpt)
	if !sp.HasTable || len(sp.Table) != 5 || !sp.HasTxn {
		t.Fatalf("Spark's table line: %v %v txn %v", sp.HasTable, sp.Table, sp.Txn)
	}
	if d := conform.Compare(eng, sp); d != nil {
		t.Fatalf("exec on dedupsim and on Spark differ: %s", d)
	}
	out, errOut, code := run(bin, "inspect", filepath.Join(ckpt, "delta-table"), "--keys", "id")
	if code != 1 || !strings.Contains(out, `["c"] x2`) {
		t.Fatalf("inspect on Spark's Delta table: exit %d, want 1 (batch 1 replayed under a new app id)\n%s%s", code, out, errOut)
	}
}

package conform

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dedupsim/dedupsim/internal/atomicfile"
)

// writeRepro writes a disagreeing case as a ready-to-run pair with both
// outputs:
//
//	query.yaml, steps.jsonl        the exec pair (dedupsim exec --query query.yaml --input steps.jsonl)
//	dedupsim-out.jsonl             dedupsim's output in the exec format
//	spark-out.jsonl                Spark's output in the exec format (the runner's)
//	spark-query.json, spark-steps.jsonl, request.jsonl   the runner's input, to re-run Spark alone
//	README.txt                     the first difference, both outcomes and the commands
func writeRepro(dir string, c *Case, shrunk bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string][]byte{"query.yaml": c.Query, "steps.jsonl": c.Steps}
	if c.Engine != nil {
		files["dedupsim-out.jsonl"] = c.Engine.Raw
	}
	if qj, sj, err := c.sparkFiles(); err == nil {
		files["spark-query.json"] = qj
		files["spark-steps.jsonl"] = sj
		files["request.jsonl"] = []byte(fmt.Sprintf(`{"query": %q, "steps": %q, "out": %q}`+"\n",
			filepath.Join(dir, "spark-query.json"), filepath.Join(dir, "spark-steps.jsonl"), filepath.Join(dir, "spark-out.again.jsonl")))
	}
	if c.Spark != nil && c.Spark.Raw != nil {
		files["spark-out.jsonl"] = c.Spark.Raw
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: dedupsim and Spark disagree", c.Name)
	if shrunk {
		b.WriteString(" (shrunk: steps and rows dropped while the difference stayed)")
	}
	b.WriteString("\n\n")
	if c.Engine != nil && c.Spark != nil {
		if d := Compare(c.Engine, c.Spark); d != nil {
			fmt.Fprintf(&b, "first difference: %s\n\n", d)
		}
	}
	if c.Checkpoint != "" {
		fmt.Fprintf(&b, "This case resumes the checkpoint %q of its golden file: run that file's earlier execs\nwith the same ckpt= first, on one checkpoint folder.\n\n", c.Checkpoint)
	}
	fmt.Fprintf(&b, "dedupsim, every execution:\n%s\nSpark, every execution:\n%s\n", c.Engine.Describe(), c.Spark.Describe())
	fmt.Fprintf(&b, "To replay on dedupsim:\n  dedupsim exec --query %s --input %s\n", filepath.Join(dir, "query.yaml"), filepath.Join(dir, "steps.jsonl"))
	fmt.Fprintf(&b, "To replay on Spark (the venv of scripts/spark-env.sh):\n  $(scripts/spark-env.sh | tail -n 1) conform/sparkrunner/runner.py --requests %s\n  (writes spark-out.again.jsonl here)\n", filepath.Join(dir, "request.jsonl"))
	files["README.txt"] = []byte(b.String())
	for name, data := range files {
		if err := atomicfile.WriteFile(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	return nil
}

package shrink

import (
	"path/filepath"

	"github.com/dedupsim/dedupsim/internal/atomicfile"
)

// Files are what a shrink writes into its folder, in this order.
var Files = []string{"query.yaml", "steps.jsonl", "expected.jsonl", "scenario.yaml", "story.md"}

// Write writes r's Files into dir, creating it (never through a link),
// each file atomically.
func (r *Result) Write(dir string) error {
	root, err := atomicfile.OpenDir(dir)
	if err != nil {
		return err
	}
	root.Close()
	for i, data := range [][]byte{r.Query, r.Steps, r.Expected, r.ScenarioYAML, []byte(r.Story)} {
		if err := atomicfile.WriteFile(filepath.Join(dir, Files[i]), data); err != nil {
			return err
		}
	}
	return nil
}

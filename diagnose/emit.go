package diagnose

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/internal/atomicfile"
	"github.com/dedupsim/dedupsim/scenarios"
)

// EmitScenario is diagnose --emit-scenario: it writes the scenario fitted
// to the first query with a problem (else the first query) to file,
// atomically and never through a link, checks that it parses, and says
// how to run it.
func EmitScenario(w io.Writer, rep Report, q *query.Query, file string) error {
	qi := 0
	for i, qr := range rep.Queries {
		if slicesContainsProblem(qr.Finding) {
			qi = i
			break
		}
	}
	h := ScenarioHints{}
	for _, f := range rep.Files {
		h.Files = append(h.Files, filepath.Base(f.Path))
	}
	if q != nil {
		h.Keys, h.Policy, h.Sources, h.TimeCol = q.Keys, q.WatermarkPolicy, len(q.Sources), q.EventTimeColumn()
	}
	text, want := Scenario(rep, qi, h)
	if _, err := scenarios.Parse(file, []byte(text)); err != nil {
		return fmt.Errorf("diagnose: the fitted scenario does not parse (a bug, please report it): %w", err)
	}
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("diagnose: --emit-scenario %s: %w", file, err)
	}
	if err := atomicfile.WriteFile(file, []byte(text)); err != nil {
		return fmt.Errorf("diagnose: --emit-scenario %s: %w", file, err)
	}
	what := "the healthy run (no finding expected)"
	if len(want) > 0 {
		what = strings.Join(want, ", ")
	}
	fmt.Fprintf(w, "scenario: %s reproduces %s on the simulator: dedupsim run %s\n", file, what, file)
	return nil
}

func slicesContainsProblem(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == Problem {
			return true
		}
	}
	return false
}

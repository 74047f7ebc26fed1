// Package result is what one checked scenario run produced: the verdict,
// the scenario's expectations and whether each was met, and the command
// that replays it.
//
// It is the scenarios package's output type, kept in a leaf package of its
// own so that the renderers (reports) and the live runners can take a run
// without importing the simulator and the scenario loader behind it: it
// imports only the history and the checker's report.
package result

import (
	"fmt"
	"time"

	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/dedupsim/dedupsim/sim/history"
)

// Expectation is one line of a scenario's expect section and whether the
// run met it.
type Expectation struct {
	// Finding is a checker finding kind, or "exactly-once" for the verdict.
	Finding string `json:"finding"`
	// Want is what the scenario asked: "present", "absent", or a bound
	// such as ">= 1" on the finding's count.
	Want string `json:"want"`
	// Got is the finding's count in this run (or 1/0 for the verdict:
	// GotText says true or false).
	Got int  `json:"got"`
	OK  bool `json:"ok"`
}

// Run is one scenario run with one seed, checked.
type Run struct {
	Scenario    string        `json:"scenario"`
	File        string        `json:"file,omitempty"`
	Description string        `json:"description,omitempty"`
	Seed        uint64        `json:"seed"`
	Passed      bool          `json:"passed"`
	Expect      []Expectation `json:"expect"`
	// Replay is the command that reproduces this run exactly.
	Replay  string           `json:"replay"`
	Report  check.Report     `json:"check"`
	History *history.History `json:"-"`
	// Elapsed is the wall time the run took (set by the CLI). It appears
	// only in junit.xml, never in report.json, which stays byte-identical
	// for a seed.
	Elapsed time.Duration `json:"-"`
	// Version is the dedupsim version line that made the run (module
	// version and commit; set by the CLI). It is the same for every run of
	// one binary, so report.json stays byte-identical for a seed.
	Version string `json:"version,omitempty"`
}

// GotText is what a run gave for the expectation, as a person reads it:
// true or false for the exactly-once verdict (Got is 1 or 0), else the
// count.
func (e Expectation) GotText() string {
	if e.Finding == "exactly-once" {
		if e.Got == 1 {
			return "true"
		}
		return "false"
	}
	return fmt.Sprint(e.Got)
}

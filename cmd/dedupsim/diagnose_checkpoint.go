package main

import (
	"fmt"

	"github.com/dedupsim/dedupsim/diagnose"
	"github.com/dedupsim/dedupsim/inspect"
	"github.com/dedupsim/dedupsim/internal/exitcode"
)

// joinCheckpoint is diagnose --checkpoint: dedupsim inspect reads the
// checkpoint (a folder it cannot read is bad input, exit 2, as for
// inspect), and diagnose.Join adds what its state shows.
func joinCheckpoint(rep *diagnose.Report, dir string) error {
	ir, err := inspect.Inspect(dir)
	if err != nil {
		return exitcode.Bad(fmt.Errorf("diagnose: --checkpoint: %w", err))
	}
	diagnose.Join(rep, diagnose.CheckpointOf(dir, ir))
	return nil
}

package main

import (
	"fmt"

	"github.com/dedupsim/dedupsim/diagnose"
	"github.com/dedupsim/dedupsim/inspect"
)

// joinCheckpoint is diagnose --checkpoint: dedupsim inspect reads the
// checkpoint (a folder it cannot read is bad input, exit 2, as for
// inspect), and diagnose.Join adds what its state shows.
func joinCheckpoint(rep *diagnose.Report, dir string) error {
	ir, err := inspect.Inspect(dir)
	if err != nil {
		return badInput(fmt.Errorf("diagnose: --checkpoint: %w", err))
	}
	ck := diagnose.Checkpoint{Dir: dir, QueryID: ir.QueryID, LastOffsetBatch: ir.LastOffsetBatch, LastCommitBatch: ir.LastCommitBatch}
	for _, op := range ir.Operators {
		ck.Operators = append(ck.Operators, diagnose.CheckpointOperator{ID: op.ID, Name: op.Name, EventTime: op.EventTime, Version: op.Version,
			Keys: op.Keys, KeysWithSeveralTimes: op.KeysWithSeveralTimes, Examples: op.SeveralTimesExamples})
	}
	diagnose.Join(rep, ck)
	return nil
}

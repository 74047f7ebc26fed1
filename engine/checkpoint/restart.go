package checkpoint

import (
	"fmt"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

// Restart is what a query restarted on a checkpoint reads first: the
// latest batch of the offset log and of the commit log (-1 when a log is
// empty). Next applies the restart rule to them (spark-semantics.md §9).
type Restart struct {
	LatestOffsets int64
	LatestCommit  int64
}

// ReadRestart reads the latest batch ids of both logs, with Batches'
// checks (a name Spark would read as another batch id is a *CorruptError).
func (l *Log) ReadRestart() (Restart, error) {
	off, err := l.Latest("offsets")
	if err != nil {
		return Restart{}, err
	}
	com, err := l.Latest("commits")
	if err != nil {
		return Restart{}, err
	}
	return Restart{LatestOffsets: off, LatestCommit: com}, nil
}

// Next is the batch a restart runs first and whether it re-runs a planned
// batch (§9): no offsets, batch 0 of a new query (§9.1, whatever the commit
// log holds); offsets/N with commits/N, batch N+1 (§9.2); offsets/N with
// an older commit or none, batch N again (§9.3, §9.4). A commit log ahead
// of the offset log is a *CorruptError naming the commit.
func (r Restart) Next() (batch int64, replay bool, err error) {
	switch {
	case r.LatestOffsets < 0:
		return 0, false, nil
	case r.LatestCommit == r.LatestOffsets:
		return r.LatestOffsets + 1, false, nil
	case r.LatestCommit < r.LatestOffsets:
		return r.LatestOffsets, true, nil
	}
	return 0, false, Corrupt(fmt.Sprintf("commits/%d", r.LatestCommit), "a commit without offsets/%d (the offset log ends at batch %d)", r.LatestCommit, r.LatestOffsets)
}

// Next is the batch a restart on the checkpoint in fs runs first, and
// whether it is a replay: the one rule the engine and the harnesses that
// arm a crash point at "the next batch" share.
func Next(fs fsys.FS) (batch int64, replay bool, err error) {
	r, err := New(fs).ReadRestart()
	if err != nil {
		return 0, false, err
	}
	return r.Next()
}

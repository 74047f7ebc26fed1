package engine

import (
	"fmt"
	"strconv"

	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/sparkver"
	"github.com/dedupsim/dedupsim/engine/state"
)

// State checkpoint format v2 (query checkpoint_format_version: 2,
// spark-semantics.md §8.9): the state provider names each committed
// version's files <V>_<id> with ids from Config.NewID (the driver's seeded
// generator, engine/ids), and commits/N is "v2" with the id of every
// partition's new version; a restart loads each partition at the id the
// last commit names.

// startFormatV2 switches the provider to format v2 when the query asks
// for it, and checks that the checkpoint's last commit is in the query's
// format: a checkpoint does not change format (Spark 4.3's real-time mode
// refuses a v1 checkpoint too).
func (e *Engine) startFormatV2(latestCommit int64) error {
	if !e.q.Stateful() {
		return nil
	}
	v2 := e.q.CheckpointFormat == 2
	var c checkpoint.Commit
	if latestCommit >= 0 {
		var err error
		if c, err = e.ckpt.ReadCommit(latestCommit); err != nil {
			return err
		}
		name := fmt.Sprintf("commits/%d", latestCommit)
		switch has := c.StateUniqueIDs != nil; {
		case has && !v2:
			return checkpoint.Corrupt(name, "written in state checkpoint format v2 (a v2 entry with stateUniqueIds), but the query does not set checkpoint_format_version: 2: a checkpoint keeps the format it was started with")
		case !has && e.q.RealTime():
			return checkpoint.Corrupt(name, "[%s] Streaming real-time mode has the following limitation: Real-time mode does not support state store checkpoint format v1, because a re-executed batch can reuse the state file names of a partially-written failed batch and lose data. If you encountered this while switching an existing query to real-time mode, use a fresh checkpoint location.", sparkver.ClassRealTimeCheckpointV1)
		case !has && v2:
			return checkpoint.Corrupt(name, "written in state checkpoint format v1, but the query sets checkpoint_format_version: 2: a checkpoint keeps the format it was started with")
		}
	}
	if !v2 {
		return nil
	}
	p, ok := e.provider.(state.CheckpointIDer)
	if !ok {
		return fmt.Errorf("state store %q cannot write checkpoint format v2", e.q.StateStore)
	}
	p.EnableFormatV2(e.cfg.NewID)
	if latestCommit < 0 {
		return nil
	}
	ids, err := loadIDs(c, latestCommit, e.q.ShufflePartitions)
	if err != nil {
		return err
	}
	p.SetLoadIDs(latestCommit+1, ids)
	return nil
}

// loadIDs are the ids commits/n names for operator 0's partitions.
func loadIDs(c checkpoint.Commit, n int64, partitions int) (map[state.ID]string, error) {
	name := fmt.Sprintf("commits/%d", n)
	parts, ok := c.StateUniqueIDs["0"]
	if !ok {
		return nil, checkpoint.Corrupt(name, "stateUniqueIds names no checkpoint ids for operator 0, the dedup operator")
	}
	if len(parts) != partitions {
		return nil, checkpoint.Corrupt(name, "stateUniqueIds names %d partitions for operator 0; the query has %d", len(parts), partitions)
	}
	ids := make(map[state.ID]string, len(parts))
	for p, s := range parts {
		if len(s) != 1 {
			return nil, checkpoint.Corrupt(name, "stateUniqueIds names %d stores for operator 0 partition %d; the dedup operator has one", len(s), p)
		}
		ids[state.ID{Operator: 0, Partition: p}] = s[0]
	}
	return ids, nil
}

// committedIDs are the stateUniqueIds of the commit of batch n (state
// version n+1), nil in format v1.
func (e *Engine) committedIDs(n int64) (map[string][][]string, error) {
	p, ok := e.provider.(state.CheckpointIDer)
	if !ok || e.q.CheckpointFormat != 2 || !e.q.Stateful() {
		return nil, nil
	}
	got := p.CommittedIDs(n + 1)
	parts := make([][]string, e.q.ShufflePartitions)
	for i := range parts {
		id, ok := got[state.ID{Operator: 0, Partition: i}]
		if !ok {
			return nil, fmt.Errorf("batch %d: partition %d committed no state version %d", n, i, n+1)
		}
		parts[i] = []string{id}
	}
	return map[string][][]string{"0": parts}, nil
}

// stampFile is the name of the state file of partition 0 whose trailer
// stamps batch n (version n+1): in format v2 the id commits/n names.
func stampFile(id state.ID, n int64, suffix string, c *checkpoint.Commit) string {
	if c != nil && c.StateUniqueIDs != nil {
		if parts := c.StateUniqueIDs[strconv.Itoa(id.Operator)]; len(parts) > id.Partition && len(parts[id.Partition]) > 0 {
			return id.Dir() + "/" + state.V2Name(n+1, parts[id.Partition][0], suffix)
		}
	}
	return fmt.Sprintf("%s/%d%s", id.Dir(), n+1, suffix)
}

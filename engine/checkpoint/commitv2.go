package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/dedupsim/dedupsim/engine/query"
)

// State checkpoint format v2 in the commit log (spark-semantics.md §8.9):
// commits/N is "v2" and {"nextBatchWatermarkMs":W,"stateUniqueIds":
// {"<operator>":[[<id>],...]}}: per operator, per partition, one checkpoint
// id per store (a lower-case UUID), naming the state version N+1 batch N
// committed.

// ConfCheckpointFormat is Spark's conf for the state checkpoint format
// (1 or 2). Spark does not pin it in the offset log; the commit log's
// version says which format a checkpoint is in.
const ConfCheckpointFormat = "spark.sql.streaming.stateStore.checkpointFormatVersion"

// maxStoresPerPartition bounds the ids of one partition (a stream-stream
// join has 4 stores; dedup 1).
const maxStoresPerPartition = 64

// parseStateUniqueIDs checks a v2 commit's stateUniqueIds: present (a v2
// entry without them is one of a query without state, and dedupsim's are
// all stateful), operator ids as Spark writes them, 1 to
// MaxShufflePartitions partitions, 1 to 64 UUIDs each, no id twice.
func parseStateUniqueIDs(raw json.RawMessage) (map[string][][]string, error) {
	if raw == nil || string(raw) == "null" {
		return nil, errors.New("a v2 entry without stateUniqueIds (the checkpoint id of each state partition)")
	}
	ops, err := object(raw)
	if err != nil {
		return nil, fmt.Errorf("stateUniqueIds: %v", err)
	}
	if len(ops) == 0 {
		return nil, errors.New("stateUniqueIds names no operator (a v2 entry of a stateful query names each operator's)")
	}
	keys := make([]string, 0, len(ops))
	for k := range ops {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string][][]string, len(ops))
	seen := map[string]bool{}
	for _, k := range keys {
		op, err := strconv.Atoi(k)
		if err != nil || op < 0 || strconv.Itoa(op) != k {
			return nil, fmt.Errorf("stateUniqueIds: %q is not an operator id", truncate([]byte(k)))
		}
		var parts [][]string
		if err := json.Unmarshal(ops[k], &parts); err != nil || len(parts) == 0 || len(parts) > maxPartitionsV2 {
			return nil, fmt.Errorf("stateUniqueIds %s: want 1 to %d partitions, each an array of checkpoint ids", k, maxPartitionsV2)
		}
		for p, ids := range parts {
			if len(ids) == 0 || len(ids) > maxStoresPerPartition {
				return nil, fmt.Errorf("stateUniqueIds %s partition %d: %d ids, want 1 to %d", k, p, len(ids), maxStoresPerPartition)
			}
			for _, id := range ids {
				if !uuidRe.MatchString(id) {
					return nil, fmt.Errorf("stateUniqueIds %s partition %d: %q is not a checkpoint id (a lower-case UUID)", k, p, truncate([]byte(id)))
				}
				if seen[id] {
					return nil, fmt.Errorf("stateUniqueIds %s partition %d: checkpoint id %s is named twice", k, p, id)
				}
				seen[id] = true
			}
		}
		out[k] = parts
	}
	return out, nil
}

// maxPartitionsV2 is the partition bound of a commit's ids: the engine's
// shuffle partition bound.
const maxPartitionsV2 = query.MaxShufflePartitions

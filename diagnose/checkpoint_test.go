package diagnose

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/diagnose/progress"
	"github.com/dedupsim/dedupsim/inspect"
)

// checkpointOf reads a fixture's checkpoint as the CLI gives it to Join.
func checkpointOf(t *testing.T, dir string) Checkpoint {
	t.Helper()
	ir, err := inspect.Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	ck := Checkpoint{Dir: dir, QueryID: ir.QueryID, LastOffsetBatch: ir.LastOffsetBatch, LastCommitBatch: ir.LastCommitBatch}
	for _, op := range ir.Operators {
		ck.Operators = append(ck.Operators, CheckpointOperator{ID: op.ID, Name: op.Name, EventTime: op.EventTime, Version: op.Version,
			Keys: op.Keys, KeysWithSeveralTimes: op.KeysWithSeveralTimes, Examples: op.SeveralTimesExamples})
	}
	return ck
}

// TestCheckpointJoin: on real Spark 4.1.1 records of dropDuplicates on
// (id, event time) with re-stamped retries, the metrics alone give a risk
// and never "healthy"; with the query's checkpoint the ids held under
// several event times are a table-duplicate problem with examples; a
// checkpoint of another query, or one that lacks the log's last batches,
// is a checkpoint-mismatch; the healthy query's own checkpoint settles its
// risk as healthy.
func TestCheckpointJoin(t *testing.T) {
	for _, store := range []string{"hdfs", "rocksdb"} {
		dir := filepath.Join("testdata/spark", "restamped-"+store)
		other := filepath.Join("testdata/spark", "healthy-"+store)
		read := func(d string) Report {
			l, err := progress.Read([]string{filepath.Join(d, "progress.jsonl")})
			if err != nil {
				t.Fatal(err)
			}
			return Diagnose(l, Options{})
		}
		r := read(dir)
		if r.Problems != 0 || r.Risks != 1 || !strings.HasPrefix(r.Verdict, "no problem in the metrics; 1 risk they cannot show") || strings.Contains(r.Verdict, "healthy") {
			t.Errorf("%s without the checkpoint: %d problems, %d risks, verdict %q", store, r.Problems, r.Risks, r.Verdict)
		}
		if f := r.Find(EventTimeInKey); f == nil || f.Severity != Risk {
			t.Errorf("%s: event-time-in-key %+v, want a risk", store, f)
		}
		Join(&r, checkpointOf(t, filepath.Join(dir, "checkpoint")))
		f := r.Find(TableDuplicate)
		if f == nil || f.Severity != Problem || r.Problems != 1 || r.Risks != 0 || !strings.Contains(f.Message, "20 id(s) are held in operator 0's state under more than one ts") ||
			!strings.Contains(strings.Join(f.Evidence, "\n"), "for example: r") || !strings.Contains(r.Verdict, "1 problem: restamped_"+store+": table-duplicate") {
			t.Errorf("%s with the checkpoint: %+v, verdict %q", store, f, r.Verdict)
		}
		if e := r.Find(EventTimeInKey); e == nil || e.Severity != Info {
			t.Errorf("%s: the risk is not settled: %+v", store, e)
		}
		// Another query's checkpoint.
		r = read(dir)
		Join(&r, checkpointOf(t, filepath.Join(other, "checkpoint")))
		if f := r.Find(CheckpointMismatch); f == nil || !strings.Contains(f.Message, "not a query of the log") || r.Find(TableDuplicate) != nil {
			t.Errorf("%s, another query's checkpoint: %+v", store, f)
		}
		// A copy taken before the log's last batches.
		r = read(dir)
		ck := checkpointOf(t, filepath.Join(dir, "checkpoint"))
		ck.LastOffsetBatch, ck.LastCommitBatch = 10, 9
		Join(&r, ck)
		if f := r.Find(CheckpointMismatch); f == nil || !strings.Contains(f.Message, "the log runs to batch 23, the checkpoint's offsets only to 10") {
			t.Errorf("%s, an old copy: %+v", store, f)
		}
		// The healthy query with its own checkpoint.
		r = read(other)
		Join(&r, checkpointOf(t, filepath.Join(other, "checkpoint")))
		if r.Problems != 0 || r.Risks != 0 || !strings.HasPrefix(r.Verdict, "healthy (") {
			t.Errorf("healthy-%s with its checkpoint: verdict %q", store, r.Verdict)
		}
	}
}

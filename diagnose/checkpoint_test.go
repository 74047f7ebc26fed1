package diagnose

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/diagnose/progress"
	"github.com/dedupsim/dedupsim/inspect"
	"github.com/dedupsim/dedupsim/scenarios"
)

// checkpointOf reads a fixture's checkpoint as the CLI gives it to Join.
func checkpointOf(t *testing.T, dir string) Checkpoint {
	t.Helper()
	ir, err := inspect.Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	return CheckpointOf(dir, ir)
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

// TestScenarioKeepsWorld: the emitted scenario takes the user's key and
// event-time columns, delay, partitions, policy and rate from the best
// source there is (--query, the checkpoint, the event log's plan), and a
// table duplicate the checkpoint shows is reproduced on the simulator.
func TestScenarioKeepsWorld(t *testing.T) {
	// The restamped query from its event log and checkpoint, through the
	// simulator.
	dir := "testdata/spark/restamped-hdfs"
	ev, _ := filepath.Glob(dir + "/eventlog/*")
	l, err := progress.Read(ev)
	if err != nil {
		t.Fatal(err)
	}
	r := Diagnose(l, Options{})
	Join(&r, checkpointOf(t, dir+"/checkpoint"))
	text, want := Scenario(r, 0, ScenarioHints{})
	for _, w := range []string{"dedup: {api: dropDuplicates, keys: [id, ts]}", "watermark: {column: ts, delay: 30 seconds}", "shuffle_partitions: 2",
		"rate: {per_sec: 287}", "producer-retry-restamped:", "table-duplicate: present", "Columns from the checkpoint's key schema"} {
		if !strings.Contains(text, w) {
			t.Errorf("the scenario lacks %q:\n%s", w, text)
		}
	}
	if !slices.Equal(want, []string{"table-duplicate"}) {
		t.Errorf("reproduces %v", want)
	}
	if !testing.Short() {
		s, err := scenarios.Parse("restamped.yaml", []byte(text))
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		run, err := scenarios.Run(s, 1, scenarios.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !run.Passed || run.Report.Find("table-duplicate") == nil {
			t.Errorf("the simulator did not reproduce the table duplicate: %+v", run.Expect)
		}
	}
	// Another world, from a plan alone: its names, delay and partitions; a
	// rate above MaxScenarioRate scaled and said; a policy from the
	// checkpoint; --query before everything.
	q := QueryReport{ID: "q1", Name: "payments", Batches: 50, Facts: Facts{Operators: []string{"dedupe"}, Partitions: 16, HasWatermark: true,
		DelayMs: 118_000, DelayEstimate: true, TriggerMs: 30_000, InputRate: 85_000, DuplicateRate: 0.02,
		Plan: &progress.Plan{API: "dropDuplicatesWithinWatermark", Keys: []string{"payment_id"}, EventTime: "event_ts", DelayMs: 120_000, HasDelay: true}}}
	rep := Report{Queries: []QueryReport{q}, Checkpoint: &Checkpoint{QueryID: "q1", Policy: "max"}}
	text, _ = Scenario(rep, 0, ScenarioHints{Sources: 2})
	for _, w := range []string{"dedup: {api: dropDuplicatesWithinWatermark, keys: [payment_id]}", "watermark: {column: event_ts, delay: 2 minutes}",
		"watermark_policy: max", "shuffle_partitions: 16", "rate: {per_sec: 10000}", "scaled from 85000 to 10000 rows/s", "Columns from the event log's SQL plan"} {
		if !strings.Contains(text, w) {
			t.Errorf("the scenario lacks %q:\n%s", w, text)
		}
	}
	if _, err := scenarios.Parse("payments.yaml", []byte(text)); err != nil {
		t.Errorf("%v\n%s", err, text)
	}
	text, _ = Scenario(rep, 0, ScenarioHints{Keys: []string{"txn_id"}, TimeCol: "created_at"})
	if !strings.Contains(text, "keys: [txn_id]") || !strings.Contains(text, "column: created_at") || !strings.Contains(text, "Columns from --query") {
		t.Errorf("--query does not win:\n%s", text)
	}
}

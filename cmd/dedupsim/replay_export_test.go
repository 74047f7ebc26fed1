package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/sim/history"
	"github.com/dedupsim/dedupsim/sweep"
)

// TestReplayExportReproducesBatches: `replay --export DIR` writes exec pairs
// that `dedupsim exec` runs batch for batch as the simulator ran them: the
// same executions (batch ids, replays, crash points), the same rows reaching
// the sink (by _copy), the same input counts, watermarks and state figures,
// and the same final table. The scenarios cover named crashes on a table
// sink, payload columns (the rows rendered as the simulator rendered them)
// and a query-shape-change (one pair per checkpoint).
func TestReplayExportReproducesBatches(t *testing.T) {
	bin := binary(t)
	for _, tc := range []struct {
		scenario    string
		seed        int
		checkpoints int
		crashes     bool
		// columns, when set, are the columns of every row the sink
		// received: the simulator's, payload included.
		columns []string
	}{
		{"replay-table-generated-app-id", 1, 1, true, nil},
		{"production-columns-event-id", 1, 1, true, []string{"_copy", "amount", "currency", "event_id", "event_ts", "note"}},
		{"shape-change-fresh-checkpoint-merge", 1, 2, false, nil},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			dir := t.TempDir()
			out, export := filepath.Join(dir, "out"), filepath.Join(dir, "export")
			seed := fmt.Sprint(tc.seed)
			stdout, errOut, code := run(bin, "replay", "--seed", seed, "--out", out, "--export", export, tc.scenario)
			if code != 0 {
				t.Fatalf("replay: exit %d\n%s%s", code, stdout, errOut)
			}
			h := readHistory(t, filepath.Join(out, tc.scenario+"-"+seed, sweep.HistoryFile))
			epochs := checkpointEpochs(h)
			if len(epochs) != tc.checkpoints {
				t.Fatalf("the run used %d checkpoints, want %d", len(epochs), tc.checkpoints)
			}
			crashed := 0
			for k, ep := range epochs {
				pair := export
				if k > 0 {
					pair = filepath.Join(export, fmt.Sprintf("checkpoint-%d", k))
				}
				q, s := filepath.Join(pair, "query.yaml"), filepath.Join(pair, "steps.jsonl")
				if want := "dedupsim exec --query " + q + " --input " + s; !strings.Contains(stdout, want) {
					t.Fatalf("replay did not print %q:\n%s", want, stdout)
				}
				for _, f := range []string{q, s} {
					b, err := os.ReadFile(f)
					if want := "# Exported from: dedupsim replay --seed " + seed + " " + tc.scenario + " "; err != nil || !bytes.HasPrefix(b, []byte(want)) {
						t.Fatalf("%s does not start with %q (%v)", f, want, err)
					}
				}
				recs := filepath.Join(dir, fmt.Sprintf("records-%d.jsonl", k))
				if o, e, code := run(bin, "exec", "--query", q, "--input", s, "--checkpoint", fastDir(t), "--out", recs); code != 0 {
					t.Fatalf("exec of checkpoint %d: exit %d\n%s%s", k, code, o, e)
				}
				got, table, hasTable := readExecRecords(t, recs)
				if tc.columns != nil {
					checkColumns(t, got, tc.columns)
				}
				// The table is compared for a run on one checkpoint: a later
				// checkpoint's table starts empty in exec (sim/export.go).
				crashed += compareExec(t, h, ep, got, table, hasTable && len(epochs) == 1)
			}
			if tc.crashes && crashed == 0 {
				t.Fatal("no execution crashed: the case tests nothing of the restarts")
			}
			// The export is idempotent and leaves no stale pair: a second one
			// into the same folder gives the same bytes.
			first := readTree(t, export)
			if _, errOut, code := run(bin, "replay", "--seed", seed, "--out", out, "--export", export, tc.scenario); code != 0 {
				t.Fatalf("second replay: exit %d\n%s", code, errOut)
			}
			if second := readTree(t, export); !mapsEqual(first, second) {
				t.Fatalf("a second export differs: %d files, then %d", len(first), len(second))
			}
		})
	}
}

// TestReplayExportRemovesStalePairs: an export of a run with one checkpoint
// into a folder that holds the pairs of a run with two removes the second.
func TestReplayExportRemovesStalePairs(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	export := filepath.Join(dir, "export")
	for _, sc := range []string{"shape-change-fresh-checkpoint-merge", "replay-append-sink"} {
		if _, errOut, code := run(bin, "replay", "--seed", "1", "--out", filepath.Join(dir, "out"), "--export", export, sc); code != 0 {
			t.Fatalf("%s: exit %d\n%s", sc, code, errOut)
		}
	}
	files := readTree(t, export)
	if len(files) != 2 || !bytes.Contains(files["query.yaml"], []byte("kind: append")) {
		t.Fatalf("the export folder holds %d files, want the append run's query.yaml and steps.jsonl", len(files))
	}
}

// checkColumns asserts that every row the sink received has exactly the
// columns want (sorted), and that there were rows.
func checkColumns(t *testing.T, recs []execRecord, want []string) {
	t.Helper()
	n := 0
	for _, r := range recs {
		for _, row := range r.Rows {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(row, &m); err != nil {
				t.Fatalf("row %s: %v", row, err)
			}
			got := slices.Sorted(maps.Keys(m))
			if !slices.Equal(got, want) {
				t.Fatalf("row %s has columns %q, want %q", row, got, want)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no row reached the sink")
	}
}

// TestReplayExportOfAFailedRun: the pair of a run that misses its
// expectations is written, and the exit status still says the run failed.
func TestReplayExportOfAFailedRun(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	export := filepath.Join(dir, "export")
	stdout, errOut, code := run(bin, "replay", "--seed", "1", "--strict", "--out", filepath.Join(dir, "out"), "--export", export, "restamped-retries-event-time-key")
	if code != 1 || !strings.Contains(stdout, "FAIL restamped-retries-event-time-key") {
		t.Fatalf("exit %d, want 1 (--strict: events twice in the table)\n%s%s", code, stdout, errOut)
	}
	files := readTree(t, export)
	if len(files) != 2 || !bytes.Contains(files["steps.jsonl"], []byte(`"once": true}`)) ||
		!bytes.HasPrefix(files["query.yaml"], []byte("# Exported from: dedupsim replay --seed 1 --strict restamped-retries-event-time-key ")) {
		t.Fatalf("the failed run's pair is missing or wrong: %d files", len(files))
	}
}

// TestReplayExportRefusesLinks: a symbolic link where an exported file
// goes is refused (exit 2), not followed, and the file it points to is left
// alone.
func TestReplayExportRefusesLinks(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	export, victim := filepath.Join(dir, "export"), filepath.Join(dir, "victim")
	write(t, dir, "victim", "keep me")
	if err := os.MkdirAll(export, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(export, "steps.jsonl")); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(bin, "replay", "--seed", "1", "--out", filepath.Join(dir, "out"), "--export", export, "replay-append-sink")
	if code != 2 || !strings.Contains(errOut, "steps.jsonl is a symbolic link") {
		t.Fatalf("exit %d, want 2 and the link named; stderr: %s", code, errOut)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep me" {
		t.Fatalf("the link's target changed: %q, %v", b, err)
	}
}

// epoch is one checkpoint's stretch of the run: [fromMs, toMs).
type epoch struct{ fromMs, toMs int64 }

// checkpointEpochs splits the run at its fresh-checkpoint restarts, as the
// export does.
func checkpointEpochs(h *history.History) []epoch {
	eps := []epoch{{-1 << 63, 1<<63 - 1}}
	for _, r := range h.Restarts {
		if r.FreshCheckpoint {
			eps[len(eps)-1].toMs = r.AtMs
			eps = append(eps, epoch{r.AtMs, 1<<63 - 1})
		}
	}
	return eps
}

// execRecord is what the test reads of one exec output line.
type execRecord struct {
	BatchID  int64             `json:"batchId"`
	Replay   bool              `json:"replay"`
	Crashed  string            `json:"crashed"`
	Rows     []json.RawMessage `json:"rows"`
	Progress engine.Progress   `json:"progress"`
	Table    []json.RawMessage `json:"table"`
}

func readExecRecords(t *testing.T, path string) (recs []execRecord, table []int, hasTable bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r execRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if r.Table != nil {
			for _, row := range r.Table {
				table = append(table, copyOf(t, row))
			}
			hasTable = true
			continue
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs, table, hasTable
}

func copyOf(t *testing.T, row json.RawMessage) int {
	t.Helper()
	var r struct {
		Copy *int `json:"_copy"`
	}
	if err := json.Unmarshal(row, &r); err != nil || r.Copy == nil {
		t.Fatalf("row %s has no _copy (%v)", row, err)
	}
	return *r.Copy
}

// compareExec asserts that exec ran exactly the history's executions of
// one checkpoint and returns how many of them crashed.
func compareExec(t *testing.T, h *history.History, ep epoch, recs []execRecord, table []int, wantTable bool) (crashed int) {
	t.Helper()
	var want []*history.Batch
	for i := range h.Batches {
		if b := &h.Batches[i]; b.AtMs >= ep.fromMs && b.AtMs < ep.toMs {
			want = append(want, b)
		}
	}
	if len(recs) != len(want) || len(want) == 0 {
		t.Fatalf("exec ran %d batch executions, the history %d", len(recs), len(want))
	}
	for i, r := range recs {
		b := want[i]
		where := fmt.Sprintf("execution %d (batch %d)", i, b.BatchID)
		if r.BatchID != b.BatchID || r.Replay != b.Replay || r.Crashed != b.Crashed {
			t.Fatalf("%s: exec ran batch %d replay=%v crashed=%q, the history batch %d replay=%v crashed=%q",
				where, r.BatchID, r.Replay, r.Crashed, b.BatchID, b.Replay, b.Crashed)
		}
		if b.Crashed != "" {
			crashed++
		}
		var gotRows, wantRows []int
		for _, row := range r.Rows {
			gotRows = append(gotRows, copyOf(t, row))
		}
		filtered := 0
		for j, c := range b.Input {
			switch b.Outcomes[j] {
			case history.Emitted:
				wantRows = append(wantRows, int(c))
			case history.Filtered:
				filtered++ // the export leaves out what drop_future_events filtered
			}
		}
		slices.Sort(gotRows)
		slices.Sort(wantRows)
		if !slices.Equal(gotRows, wantRows) {
			t.Fatalf("%s: the sink received copies %v in exec, %v in the simulator", where, gotRows, wantRows)
		}
		var p engine.Progress
		if err := json.Unmarshal(b.Progress, &p); err != nil {
			t.Fatalf("%s: the history's progress: %v", where, err)
		}
		if r.Progress.NumInputRows+int64(filtered) != p.NumInputRows || r.Progress.EventTime["watermark"] != p.EventTime["watermark"] {
			t.Fatalf("%s: numInputRows, watermark: exec %d %q, simulator %d %q", where,
				r.Progress.NumInputRows, r.Progress.EventTime["watermark"], p.NumInputRows, p.EventTime["watermark"])
		}
		var total, updated, removed int64
		if ops := r.Progress.StateOperators; len(ops) > 0 {
			total, updated, removed = ops[0].NumRowsTotal, ops[0].NumRowsUpdated, ops[0].NumRowsRemoved
		}
		if total != b.NumRowsTotal || updated != b.NumRowsUpdated || removed != b.NumRowsRemoved {
			t.Fatalf("%s: state rows (total, updated, removed) exec (%d, %d, %d), simulator (%d, %d, %d)", where,
				total, updated, removed, b.NumRowsTotal, b.NumRowsUpdated, b.NumRowsRemoved)
		}
	}
	if wantTable {
		simTable := make([]int, len(h.Table))
		for i, c := range h.Table {
			simTable[i] = int(c)
		}
		if !h.HasTable || !slices.Equal(table, simTable) {
			t.Fatalf("final table: exec %d rows, the simulator %d (has table %v)", len(table), len(h.Table), h.HasTable)
		}
	}
	return crashed
}

func readHistory(t *testing.T, path string) *history.History {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func mapsEqual(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// fastDir is a fresh checkpoint folder, in memory (/dev/shm) where the
// machine has one: exec fsyncs every checkpoint file, which on a real disk
// costs seconds per run and tests nothing more here.
func fastDir(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "dedupsim-export-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

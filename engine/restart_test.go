package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/state/stores"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
)

const restartQuery = "dedup: {api: dropDuplicates, keys: [id]}\nshuffle_partitions: 2\n"

// restartQueries are restartQuery in both state checkpoint formats.
var restartQueries = map[string]string{"v1": restartQuery, "v2": restartQuery + "state_store: pebble\ncheckpoint_format_version: 2\n"}

func execOn(t *testing.T, fs *fsys.Mem, qText string, lines []string) (*trace.Result, []string, error) {
	t.Helper()
	q, err := query.Parse("q.yaml", []byte(qText))
	if err != nil {
		t.Fatal(err)
	}
	st, err := steps.Parse("s.jsonl", []byte(strings.Join(lines, "\n")), q)
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	res, err := trace.Run(q, st, trace.Options{Checkpoint: fs, Warn: func(s string) { warnings = append(warnings, s) }, NewStateProvider: stores.Open})
	return res, warnings, err
}

func rowLines(n int) []string {
	var lines []string
	for i := 0; i < n; i++ {
		lines = append(lines, fmt.Sprintf(`{"rows": [{"id":"k%d"}]}`, i))
	}
	return lines
}

// §8.8: offset and commit entries older than minBatchesToRetain (100)
// batches are purged when a new batch is planned; the run still resumes.
// In format v2 the state files of old versions go too, and the restart
// finds the last version through the commit log's ids.
func TestLogRetention(t *testing.T) {
	for format, restartQuery := range restartQueries {
		t.Run(format, func(t *testing.T) { testLogRetention(t, restartQuery) })
	}
}

func testLogRetention(t *testing.T, restartQuery string) {
	fs := fsys.NewMem()
	if _, _, err := execOn(t, fs, restartQuery, rowLines(130)); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"offsets", "commits"} {
		names, _ := fs.ReadDir(dir)
		if len(names) != 101 {
			t.Fatalf("%s keeps %d entries; want batches 29..129", dir, len(names))
		}
		if ok, _ := fs.Exists(dir + "/29"); !ok {
			t.Fatalf("%s/29 purged", dir)
		}
		if ok, _ := fs.Exists(dir + "/28"); ok {
			t.Fatalf("%s/28 not purged", dir)
		}
	}
	// Old state files go as well (versions below the newest snapshot at
	// or below version 31): at most 101 changelogs and their snapshots.
	if names, _ := fs.ReadDir("state/0/0"); len(names) > 115 {
		t.Fatalf("state/0/0 keeps %d files", len(names))
	}
	res, _, err := execOn(t, fs, restartQuery, rowLines(131))
	if err != nil || len(res.Records) != 1 || res.Records[0].BatchID != 130 {
		t.Fatalf("resume after purge: %v %+v", err, res)
	}
}

// §9.3/§9.4: a commit log behind the offset log re-runs the latest planned
// batch; more than one behind is a warning. §9.5: a missing offsets/N-1 is
// an error. In format v2, a re-run two batches behind is refused: the
// version it loads is named by a commit that is gone.
func TestRestartFromDamagedLogs(t *testing.T) {
	for format, restartQuery := range restartQueries {
		t.Run(format, func(t *testing.T) { testRestartFromDamagedLogs(t, format, restartQuery) })
	}
}

func testRestartFromDamagedLogs(t *testing.T, format, restartQuery string) {
	base := fsys.NewMem()
	if _, _, err := execOn(t, base, restartQuery, rowLines(4)); err != nil {
		t.Fatal(err)
	}

	oneBehind := base.Clone()
	oneBehind.Remove("commits/3")
	res, warnings, err := execOn(t, oneBehind, restartQuery, rowLines(4))
	if err != nil || len(res.Records) != 1 || !res.Records[0].Replay || res.Records[0].BatchID != 3 || len(warnings) != 0 {
		t.Fatalf("one behind: err %v warnings %v records %+v", err, warnings, res.Records)
	}

	twoBehind := base.Clone()
	twoBehind.Remove("commits/3")
	twoBehind.Remove("commits/2")
	res, warnings, err = execOn(t, twoBehind, restartQuery, rowLines(4))
	if format == "v2" {
		if err == nil || !strings.Contains(err.Error(), "no checkpoint id is known for version 3 of state/0/0") {
			t.Fatalf("two behind in format v2: %v", err)
		}
	} else if err != nil || len(res.Records) != 1 || res.Records[0].BatchID != 3 || len(warnings) != 1 || !strings.Contains(warnings[0], "behind") {
		t.Fatalf("two behind: err %v warnings %v records %+v", err, warnings, res.Records)
	}

	gap := base.Clone()
	gap.Remove("commits/3")
	gap.Remove("offsets/2")
	if _, _, err := execOn(t, gap, restartQuery, rowLines(4)); err == nil || !strings.Contains(err.Error(), "batch 2 doesn't exist") {
		t.Fatalf("missing offsets/2: %v", err)
	}
}

package inspect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/state/stores"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
)

// engineCheckpoint runs the engine on lines into a new checkpoint folder.
func engineCheckpoint(t *testing.T, yaml string, lines []string) (string, *trace.Result) {
	t.Helper()
	dir := t.TempDir()
	q, err := query.Parse("q.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	st, err := steps.Parse("s.jsonl", []byte(strings.Join(lines, "\n")), q)
	if err != nil {
		t.Fatal(err)
	}
	res, err := trace.Run(q, st, trace.Options{Checkpoint: fsys.NewOS(dir), Seed: 3, NewStateProvider: stores.Open})
	if err != nil {
		t.Fatal(err)
	}
	return dir, res
}

// inspect reads the engine's own checkpoints in both state checkpoint
// formats: in format v2 through the commit log's ids (a crash after a
// state commit leaves the first attempt's files, which are ignored), with
// the same keys per partition as the format-v1 run of the same trace and
// as many as the engine's last numRowsTotal.
func TestReadsEngineCheckpoints(t *testing.T) {
	const q = "dedup: {api: dropDuplicates, keys: [id, ts]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 2\nstate_store: pebble\n"
	var lines []string
	for b := 0; b < 14; b++ {
		if b == 5 {
			lines = append(lines, `{"crash": "after-state-commit"}`)
		}
		if b == 9 {
			lines = append(lines, `{"restart": true}`)
		}
		lines = append(lines, fmt.Sprintf(`{"rows": [{"id":"k%d","ts":%d},{"id":"k%d","ts":%d},{"id":"k%d","ts":%d}]}`, b, b*5, b+100, b*5+1, b, b*5))
	}
	keys := map[string][]int64{}
	for _, format := range []string{"v1", "v2"} {
		yaml := q
		if format == "v2" {
			yaml += "checkpoint_format_version: 2\n"
		}
		dir, res := engineCheckpoint(t, yaml, lines)
		r, err := Inspect(dir)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if want := map[string]int{"v1": 1, "v2": 2}[format]; r.CheckpointFormat != want || len(r.Operators) != 1 {
			t.Fatalf("%s: format %d, %d operators", format, r.CheckpointFormat, len(r.Operators))
		}
		last := res.Records[len(res.Records)-1].Progress
		op := r.Operators[0]
		if op.Keys != last.StateOperators[0].NumRowsTotal || op.Keys == 0 {
			t.Errorf("%s: inspect %d keys, the engine's numRowsTotal %d", format, op.Keys, last.StateOperators[0].NumRowsTotal)
		}
		ignored := 0
		for _, p := range op.Partitions {
			keys[format] = append(keys[format], p.Keys)
			ignored += p.Ignored
			if !strings.Contains(p.From, "written by dedupsim") || p.HasRange {
				t.Errorf("%s partition %d: from %s", format, p.ID, p.From)
			}
			if (format == "v2") != (p.CheckpointID != "") {
				t.Errorf("%s partition %d: checkpoint id %q", format, p.ID, p.CheckpointID)
			}
		}
		if (format == "v2") != (ignored == 2) {
			t.Errorf("%s: %d ignored files, want the crashed attempt's 2 in v2", format, ignored)
		}
	}
	if fmt.Sprint(keys["v1"]) != fmt.Sprint(keys["v2"]) {
		t.Errorf("keys per partition: v1 %v, v2 %v", keys["v1"], keys["v2"])
	}
}

// A damaged byte in one of the engine's state files is refused by its
// trailer's CRC-32C, naming the file.
func TestEngineCheckpointDamaged(t *testing.T) {
	dir, _ := engineCheckpoint(t, "dedup: {api: dropDuplicates, keys: [id]}\nshuffle_partitions: 1\nstate_store: pebble\ncheckpoint_format_version: 2\n", []string{
		`{"rows": [{"id":"a"},{"id":"b"}]}`, `{"rows": [{"id":"c"}]}`,
	})
	names, _ := filepath.Glob(filepath.Join(dir, "state/0/0/2_*.changelog"))
	if len(names) != 1 {
		t.Fatalf("changelogs of version 2: %v", names)
	}
	b, _ := os.ReadFile(names[0])
	b[len(b)/2] ^= 1
	os.WriteFile(names[0], b, 0o644)
	_, err := Inspect(dir)
	var ie *Error
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), filepath.Base(names[0])+": dedupsim's trailer: CRC-32C") {
		t.Fatalf("got %v", err)
	}
}

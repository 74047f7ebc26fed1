package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// v2Fixtures are real Spark 4.3 checkpoints in state checkpoint format v2
// (scripts/inspect/fixtures.sh).
const v2Fixtures = "../../inspect/testdata/spark-v2"

// The CLI reads a format-v2 checkpoint: text and JSON name the format and
// each partition's checkpoint id, and a commit naming an id whose files are
// gone is exit 2 naming the commit.
func TestInspectFormatV2(t *testing.T) {
	bin := binary(t)
	ck := v2Fixtures + "/v2-dedup/checkpoint"
	out, errOut, code := run(bin, "inspect", ck)
	if code != 0 || !strings.Contains(out, "state checkpoint format v2") || !strings.Contains(out, "checkpoint id ") || !strings.Contains(out, "2 ignored)") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	out, _, code = run(bin, "inspect", "--json", ck)
	var r struct {
		Format    int `json:"checkpointFormatVersion"`
		Operators []struct {
			Keys       int64 `json:"keys"`
			Partitions []struct {
				ID string `json:"checkpointId"`
			} `json:"partitions"`
		} `json:"operators"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Format != 2 || len(r.Operators) != 1 || r.Operators[0].Keys != 24 || r.Operators[0].Partitions[1].ID == "" {
		t.Fatalf("--json: exit %d %s", code, out)
	}
	// The commit names an id no file has.
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(ck)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "commits/23"))
	i := strings.Index(string(b), `[["`) + 3
	os.WriteFile(filepath.Join(dir, "commits/23"), []byte(string(b[:i])+"00000000-0000-4000-8000-000000000000"+string(b[i+36:])), 0o644)
	_, errOut, code = run(bin, "inspect", dir)
	if code != 2 || !strings.Contains(errOut, "commits/23 names checkpoint id 00000000-0000-4000-8000-000000000000 for partition 0") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("exit %d: %q", code, errOut)
	}
}

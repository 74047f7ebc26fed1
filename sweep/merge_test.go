package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/scenarios/result"
)

// shardOf writes the folder of shard i of n of a sweep of scenario x over
// seeds 1..seeds, with a run and a report folder for each of its seeds
// but those in drop, and returns the folder.
func shardOf(t *testing.T, root string, i, n int, seeds uint64, drop ...uint64) string {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprintf("s%d", i))
	m := Manifest{Format: ManifestFormat, Dedupsim: "test", Shard: i, Shards: n, FirstSeed: 1, Seeds: seeds, Runs: []ManifestRun{},
		Scenarios: []ManifestScenario{{Name: "x", File: "x.yaml", Expected: shardSeeds(seeds, i, n), Faults: []string{}, Coverage: map[string]int{}}}}
	cur := newSeedCursor(1, seeds, i, n)
	for seed, ok := cur.next(); ok; seed, ok = cur.next() {
		if slices.Contains(drop, seed) {
			continue
		}
		r := result.Run{Scenario: "x", Seed: seed, Passed: true}
		m.Runs = append(m.Runs, newManifestRun(&r, fmt.Sprintf("x-%d", seed)))
		if err := os.MkdirAll(filepath.Join(dir, fmt.Sprintf("x-%d", seed)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("x-%d", seed), "report.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMerge (shards 0, 1 and 2 of 4 over seeds 1..10: 1 5 9, 2 6 10, 3 7;
// seed 6 gone): the shards' runs come out in the order of one unsharded
// sweep, whatever the order of the folders; missing seeds and shards are
// problems (exit 1); shards of another sweep are bad input (exit 2).
func TestMerge(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "merged")
	s0, s1, s2 := shardOf(t, root, 0, 4, 10), shardOf(t, root, 1, 4, 10, 6), shardOf(t, root, 2, 4, 10)
	var e *exitcode.Error
	if _, _, err := LoadShards([]string{s2, s0, filepath.Join(root, "nothing")}, out); !errors.As(err, &e) || e.Code != exitcode.BadInput ||
		!strings.HasSuffix(err.Error(), "nothing: no such folder") {
		t.Fatalf("a folder that does not exist: %v, want exit 2", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	shards, problems, err := LoadShards([]string{s2, s0, s1, filepath.Join(root, "empty")}, out)
	if err != nil || len(shards) != 3 || len(problems) != 1 || !strings.Contains(problems[0], "empty has no shard.json") {
		t.Fatalf("LoadShards: %d shards, %q, %v", len(shards), problems, err)
	}
	m, err := Merge(shards, problems, out)
	if err != nil {
		t.Fatal(err)
	}
	var seeds []uint64
	for _, r := range m.Runs {
		seeds = append(seeds, r.Seed)
	}
	if want := []uint64{1, 2, 3, 5, 7, 9, 10}; !slices.Equal(seeds, want) {
		t.Errorf("merged seeds %v, want %v", seeds, want)
	}
	all := strings.Join(m.problems, "; ")
	for _, want := range []string{"empty has no shard.json", "shards missing: 3/4", "x: 1 of 3 seeds missing, the first 6"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems %q lack %q", all, want)
		}
	}
	var w strings.Builder
	err = m.Finish(&w, out)
	if !errors.As(err, &e) || e.Code != exitcode.Failed || !strings.HasPrefix(err.Error(), "merge: ") {
		t.Errorf("Finish: %v, want exit 1", err)
	}
	if want := "merged 3 of 4 shards: 7 of 7 runs met their expectations; report: " + filepath.Join(out, "index.html") + "\n"; w.String() != want {
		t.Errorf("Finish printed %q, want %q", w.String(), want)
	}
	for _, f := range []string{"index.html", "summary.md", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}

	other := shardOf(t, filepath.Join(root, "other"), 3, 4, 12)
	_, err = Merge(append(shards, loaded(t, other, out)...), nil, out)
	if !errors.As(err, &e) || e.Code != exitcode.BadInput || !strings.Contains(err.Error(), "are not shards of one sweep: seeds 1+10 and 1+12") {
		t.Errorf("shards of two sweeps: %v, want exit 2", err)
	}
	_, err = Merge(append(shards, loaded(t, s0, out)...), nil, out)
	if !errors.As(err, &e) || e.Code != exitcode.BadInput || !strings.Contains(err.Error(), "shard 0/4 given twice") {
		t.Errorf("a shard twice: %v, want exit 2", err)
	}
	_, err = Merge(nil, []string{"a has no shard.json"}, out)
	if !errors.As(err, &e) || e.Code != exitcode.Failed || err.Error() != "merge: no shard to merge: a has no shard.json" {
		t.Errorf("no shard: %v, want exit 1", err)
	}
}

func loaded(t *testing.T, dir, out string) []Shard {
	t.Helper()
	s, _, err := LoadShards([]string{dir}, out)
	if err != nil || len(s) != 1 {
		t.Fatalf("%s: %v", dir, err)
	}
	return s
}

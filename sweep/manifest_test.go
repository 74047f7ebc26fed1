package sweep

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dedupsim/dedupsim/scenarios/result"
)

// FuzzManifest: any shard.json is refused or accepted without a panic, and
// an accepted one never holds a run whose passed is not "every
// expectation ok" (issue 25: the contradiction merged green).
func FuzzManifest(f *testing.F) {
	seed := func(mod func(*Manifest)) []byte {
		m := Manifest{Format: ManifestFormat, Dedupsim: "test", Shard: 0, Shards: 1, FirstSeed: 1, Seeds: 1,
			Scenarios: []ManifestScenario{{Name: "x", File: "x.yaml", Expected: 1, Faults: []string{}, Coverage: map[string]int{}}},
			Runs:      []ManifestRun{{Dir: "x-1", Run: result.Run{Scenario: "x", Seed: 1, Passed: true}}}}
		mod(&m)
		b, _ := json.Marshal(m)
		return b
	}
	f.Add(seed(func(m *Manifest) {}))
	f.Add(seed(func(m *Manifest) {
		m.Runs[0].Expect = []result.Expectation{{Finding: "lost", Want: "absent", Got: 1, OK: false}}
	}))
	f.Add(seed(func(m *Manifest) {
		m.Runs[0].Passed = false
		m.Runs[0].Expect = []result.Expectation{{Finding: "exactly-once", Want: "true", Got: 0, OK: false}}
	}))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "shard.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := ReadManifest(p)
		if err != nil {
			return
		}
		for i, r := range m.Runs {
			all := true
			for _, e := range r.Expect {
				all = all && e.OK
			}
			if r.Passed != all {
				t.Fatalf("runs[%d]: passed %v accepted with expectations %+v", i, r.Passed, r.Expect)
			}
		}
	})
}

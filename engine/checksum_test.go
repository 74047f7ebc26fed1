package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
)

// TestChecksumSidecarsByLine (spark-semantics §17.7): a format-v1
// checkpoint of the memory store gets Spark's <file>.crc sidecar next to
// every delta and snapshot on 4.1 (pyspark 4.1.1 writes them), and none
// on 3.5, 4.0, 4.2 and 4.3 (pyspark 4.2.1 and 4.3.0 write none for format
// v1) or with no version. Old files deleted by cleanup take their
// sidecars with them.
func TestChecksumSidecarsByLine(t *testing.T) {
	var st strings.Builder
	for i := range 25 {
		fmt.Fprintf(&st, "{\"rows\": [{\"id\": \"k%d\"}]}\n", i)
	}
	for _, c := range []struct {
		version  string
		sidecars bool
	}{
		{"", false}, {"3.5.9", false}, {"4.0.5", false}, {"4.1.1", true}, {"4.2.1", false}, {"4.3.0", false},
	} {
		t.Run("v"+c.version, func(t *testing.T) {
			y := "dedup: {api: dropDuplicates, keys: [id]}\nshuffle_partitions: 2\n"
			if c.version != "" {
				y += "spark_version: " + c.version + "\n"
			}
			q, err := query.Parse("query.yaml", []byte(y))
			if err != nil {
				t.Fatal(err)
			}
			s, err := steps.ParseTyped("steps.jsonl", []byte(st.String()), q)
			if err != nil {
				t.Fatal(err)
			}
			fs := fsys.NewMem()
			if _, err := trace.Run(q, s, trace.Options{Checkpoint: fs}); err != nil {
				t.Fatal(err)
			}
			files := map[string]bool{}
			for _, f := range fs.Files() {
				files[f] = true
			}
			var state0, sidecars int
			for f := range files {
				if !strings.HasPrefix(f, "state/0/") {
					continue
				}
				switch {
				case strings.HasSuffix(f, ".delta"), strings.HasSuffix(f, ".snapshot"):
					state0++
					side, err := fs.ReadFile(f + state.ChecksumSuffix)
					if !c.sidecars {
						if err == nil {
							t.Errorf("%s has a sidecar", f)
						}
						continue
					}
					if err != nil {
						t.Errorf("%s has no sidecar: %v", f, err)
						continue
					}
					data, err := fs.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					if err := state.CheckSidecar(data, side); err != nil {
						t.Errorf("%s: %v", f, err)
					}
				case strings.HasSuffix(f, state.ChecksumSuffix):
					sidecars++
					if !files[strings.TrimSuffix(f, state.ChecksumSuffix)] {
						t.Errorf("%s: a sidecar without its file", f)
					}
				}
			}
			if state0 == 0 || !files["state/0/0/20.snapshot"] {
				t.Fatalf("no state files, or no snapshot of version 20: %v", fs.Files())
			}
			if c.sidecars && sidecars != state0 {
				t.Errorf("%d sidecars for %d state files", sidecars, state0)
			}
			for f := range files {
				if !strings.HasPrefix(f, "state/") && strings.HasSuffix(f, state.ChecksumSuffix) {
					t.Errorf("%s: a sidecar outside the state folder (Spark 4.1 writes them for state files only)", f)
				}
			}
		})
	}
}

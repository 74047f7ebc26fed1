package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/pebblestore"
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

// TestLineMetricsOnPebble (spark-semantics §17.7): on 4.3 the Pebble store
// (Spark's RocksDB provider) reports the operator's metrics and
// SnapshotLastUploaded, not the HDFS-backed provider's forceSnapshotCount
// and numSnapshotsAutoRepaired, and writes no 4.1 sidecars.
func TestLineMetricsOnPebble(t *testing.T) {
	for _, c := range []struct {
		version string
		want    []string
		absent  []string
	}{
		{"4.3.0", []string{"numRowsReadDuringEviction", "numRowsIncrementallyRemoved", "SnapshotLastUploaded.partition_0_default", "SnapshotLastUploaded.partition_1_default"},
			[]string{"forceSnapshotCount", "numSnapshotsAutoRepaired"}},
		{"4.1.1", []string{"SnapshotLastUploaded.partition_0_default"}, []string{"numRowsReadDuringEviction", "forceSnapshotCount"}},
	} {
		y := "dedup: {api: dropDuplicates, keys: [id, ts]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 2\nstate_store: pebble\nspark_version: " + c.version + "\n"
		q, err := query.Parse("query.yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		s, err := steps.ParseTyped("steps.jsonl", []byte(`{"rows": [{"id":"a","ts":"2026-01-01T00:00:00Z"},{"id":"b","ts":"2026-01-01T00:00:01Z"}]}`+"\n"), q)
		if err != nil {
			t.Fatal(err)
		}
		fs := fsys.NewMem()
		var opened []state.Provider
		res, err := trace.Run(q, s, trace.Options{Checkpoint: fs, NewStateProvider: func(_ string, f fsys.FS) (state.Provider, error) {
			p, err := pebblestore.New(f, pebblestore.Options{})
			if err == nil {
				opened = append(opened, p)
			}
			return p, err
		}})
		for _, p := range opened {
			p.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		cm := res.Records[0].Progress.StateOperators[0].CustomMetrics
		for _, name := range c.want {
			if _, ok := cm[name]; !ok {
				t.Errorf("%s: no %s in %v", c.version, name, cm)
			}
		}
		for _, name := range c.absent {
			if _, ok := cm[name]; ok {
				t.Errorf("%s: %s in %v", c.version, name, cm)
			}
		}
		if c.version == "4.3.0" && cm["numRowsReadDuringEviction"] != 2 {
			t.Errorf("%s: numRowsReadDuringEviction %d, want 2", c.version, cm["numRowsReadDuringEviction"])
		}
		for _, f := range fs.Files() {
			if strings.HasSuffix(f, state.ChecksumSuffix) {
				t.Errorf("%s: the Pebble store wrote %s", c.version, f)
			}
		}
	}
}

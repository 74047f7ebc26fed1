package engine_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
)

// TestCheckpointBytesDeterministic: one exec trace and one seed give
// byte-identical checkpoint files, run after run, on the memory store.
// Go randomises map iteration on every range statement, so a file whose
// bytes follow a map's order (the order of eviction's removals in a delta,
// of a snapshot's entries, of a metadata file's fields) differs between
// two of the runs with near certainty: each trace evicts hundreds of keys
// that share one expiry, in every batch, across restarts and a crash.
func TestCheckpointBytesDeterministic(t *testing.T) {
	const runs = 8
	for _, api := range []string{"dropDuplicatesWithinWatermark", "dropDuplicates"} {
		t.Run(api, func(t *testing.T) {
			keys := "[id]"
			if api == "dropDuplicates" {
				keys = "[id, ts]" // case B1: evicted by the key's own event time
			}
			qText := fmt.Sprintf("dedup: {api: %s, keys: %s}\nwatermark: {column: ts, delay: 1 second}\nshuffle_partitions: 3\n", api, keys)
			q, err := query.Parse("query.yaml", []byte(qText))
			if err != nil {
				t.Fatal(err)
			}
			st, err := steps.Parse("steps.jsonl", []byte(determinismSteps()), q)
			if err != nil {
				t.Fatal(err)
			}
			var first map[string][]byte
			evicted := false
			for run := range runs {
				m := fsys.NewMem()
				res, err := trace.Run(q, st, trace.Options{Checkpoint: m, Seed: 7})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res.Records {
					for _, op := range r.Progress.StateOperators {
						evicted = evicted || op.NumRowsRemoved > 0
					}
				}
				files := map[string][]byte{}
				for _, name := range m.Files() {
					if strings.HasSuffix(name, "/") {
						continue
					}
					data, err := m.ReadFile(name)
					if err != nil {
						t.Fatal(err)
					}
					files[name] = data
				}
				if run == 0 {
					first = files
					if !slices.ContainsFunc(m.Files(), func(f string) bool { return strings.HasSuffix(f, ".snapshot") }) {
						t.Fatalf("the trace wrote no snapshot: %v", m.Files())
					}
					continue
				}
				for name, data := range files {
					if want, ok := first[name]; !ok {
						t.Fatalf("run %d wrote %s, run 0 did not", run, name)
					} else if !bytes.Equal(data, want) {
						t.Fatalf("run %d: %s differs from run 0's (%d vs %d bytes)", run, name, len(data), len(want))
					}
				}
				if len(files) != len(first) {
					t.Fatalf("run %d wrote %d files, run 0 %d", run, len(files), len(first))
				}
			}
			if !evicted {
				t.Fatal("the trace evicted nothing")
			}
		})
	}
}

// determinismSteps is 14 batches of 300 keys each, 100 of them per event
// time (so that evictions tie on their expiry), with a clean restart and a
// crash after a state commit along the way.
func determinismSteps() string {
	var b strings.Builder
	for batch := range 14 {
		switch batch {
		case 5:
			b.WriteString(`{"restart": true}` + "\n")
		case 9:
			b.WriteString(`{"crash": "after-state-commit"}` + "\n")
		}
		b.WriteString(`{"rows": [`)
		for i := range 300 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"k%d-%d","ts":%d}`, batch, i, batch*2000+(i/100)*10)
		}
		b.WriteString("]}\n")
	}
	return b.String()
}

package state_test

import (
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
)

// TestChecksumSidecarsFollowTheirFiles: with checksums on, every delta and
// snapshot the memory provider writes has a valid <file>.crc, cleanup
// deletes a file's sidecar with it, and the sidecar's timestampMs is the
// given clock's.
func TestChecksumSidecarsFollowTheirFiles(t *testing.T) {
	fs := fsys.NewMem()
	p := state.NewMemoryProvider(fs, state.Options{MinDeltasForSnapshot: 2, MinVersionsToRetain: 2})
	p.EnableFileChecksum(func() int64 { return 1796134568576 })
	id := state.ID{Operator: 0, Partition: 0}
	for v := int64(0); v < 9; v++ {
		st, err := p.Load(id, v)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Put([]byte{byte(v)}, []byte{1}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]bool{}
	for _, f := range fs.Files() {
		files[f] = true
	}
	if files["state/0/0/1.delta"] || files["state/0/0/1.delta.crc"] {
		t.Fatalf("cleanup kept version 1 or its sidecar: %v", fs.Files())
	}
	n := 0
	for f := range files {
		switch {
		case strings.HasSuffix(f, ".delta"), strings.HasSuffix(f, ".snapshot"):
			n++
			data, _ := fs.ReadFile(f)
			side, err := fs.ReadFile(f + state.ChecksumSuffix)
			if err != nil {
				t.Fatalf("%s has no sidecar", f)
			}
			if err := state.CheckSidecar(data, side); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if !strings.Contains(string(side), `"timestampMs":1796134568576,"creator":{"executorId":"driver","taskInfo":""}`) {
				t.Fatalf("%s: sidecar %s", f, side)
			}
		case strings.HasSuffix(f, state.ChecksumSuffix):
			if !files[strings.TrimSuffix(f, state.ChecksumSuffix)] {
				t.Fatalf("%s: a sidecar without its file", f)
			}
		}
	}
	if n == 0 {
		t.Fatal("no state files")
	}
}

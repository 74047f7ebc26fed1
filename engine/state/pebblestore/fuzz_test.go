package pebblestore

import (
	"errors"
	"testing"

	"github.com/dedupsim/dedupsim/engine/state"
)

// FuzzDecodeSnapshot: the snapshot zip reader takes any bytes and refuses
// what is not a stamped snapshot of the store and version with a
// *state.CorruptFileError naming the file, never a panic.
func FuzzDecodeSnapshot(f *testing.F) {
	id := state.ID{Operator: 0, Partition: 1}
	meta := snapshotMeta{NumKeys: 2, DataBytes: 10}
	meta.Operator, meta.Partition, meta.Version = stamp(id, 4)
	good, err := encodeSnapshot(meta, []snapshotFile{{name: "MANIFEST-000001", data: []byte("m")}, {name: "000002.sst", data: []byte("s")}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	other := meta
	other.Operator, other.Partition, other.Version = stamp(id, 3)
	stale, _ := encodeSnapshot(other, nil)
	f.Add(stale)
	unstamped, _ := encodeSnapshot(snapshotMeta{NumKeys: 1}, nil)
	f.Add(unstamped)
	f.Add([]byte("PK\x03\x04garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "state/0/1/4.zip"
		m, files, err := decodeSnapshot(path, data, id, 4)
		if err != nil {
			var cf *state.CorruptFileError
			if !errors.As(err, &cf) || cf.Path != path {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		if m.NumKeys < 0 || m.DataBytes < 0 || m.Operator == nil || *m.Operator != 0 || *m.Partition != 1 || *m.Version != 4 {
			t.Fatalf("accepted metadata %+v", m)
		}
		seen := map[string]bool{}
		for _, f := range files {
			if f.name == "" || seen[f.name] || f.name == metadataEntry {
				t.Fatalf("accepted entry %q", f.name)
			}
			seen[f.name] = true
		}
	})
}

package state_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
)

// Issue 10 item 10: a stale but well-formed state file (an old snapshot
// copied over a newer one, a delta copied into another partition) is
// refused by its stamp; a flipped byte by its checksum.
func TestStaleStateFilesRefused(t *testing.T) {
	m := fsys.NewMem()
	p := state.NewMemoryProvider(m, state.MemoryOptions{MinDeltasForSnapshot: 2})
	other := state.ID{Operator: 0, Partition: 4}
	for v := int64(0); v < 6; v++ {
		apply(t, p, id03, v, change{put: map[string]string{fmt.Sprint(v): "v"}})
		apply(t, p, other, v, change{put: map[string]string{"o" + fmt.Sprint(v): "v"}})
	}
	fresh := func() *state.MemoryProvider { return state.NewMemoryProvider(m, state.MemoryOptions{}) }
	if _, err := fresh().Load(id03, 6); err != nil {
		t.Fatal(err)
	}
	restore := func(name string) func() {
		data, err := m.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return func() { fsys.WriteAtomic(m, name, data) }
	}
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"old snapshot over a newer one", "state/0/3/4.snapshot", "state/0/3/6.snapshot", "stamped as the snapshot of state/0/3 version 4"},
		{"another partition's delta", "state/0/4/5.delta", "state/0/3/5.delta", "stamped as the delta of state/0/4 version 5"},
		{"a snapshot as a delta", "state/0/3/6.snapshot", "state/0/3/6.delta", "stamped as the snapshot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			undo := restore(tc.to)
			defer undo()
			data, _ := m.ReadFile(tc.from)
			fsys.WriteAtomic(m, tc.to, data)
			v := int64(6)
			if strings.HasSuffix(tc.to, ".delta") {
				// Make the delta needed: no snapshot at or above it.
				undoSnap := restore("state/0/3/6.snapshot")
				defer undoSnap()
				m.Remove("state/0/3/6.snapshot")
			}
			_, err := fresh().Load(id03, v)
			var cf *state.CorruptFileError
			if !errors.As(err, &cf) || cf.Path != tc.to || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a corrupt %s: %s", err, tc.to, tc.want)
			}
		})
	}
	undo := restore("state/0/3/6.snapshot")
	data, _ := m.ReadFile("state/0/3/6.snapshot")
	data[len(data)/2] ^= 1
	fsys.WriteAtomic(m, "state/0/3/6.snapshot", data)
	if _, err := fresh().Load(id03, 6); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("flipped byte: %v", err)
	}
	undo()
	if _, err := fresh().Load(id03, 6); err != nil {
		t.Fatalf("restored: %v", err)
	}
}

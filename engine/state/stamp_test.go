package state_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/statetest"
)

// Issue 10 item 10, the memory store's own files (the stale copies that
// both stores refuse by their stamp are in the contract suite,
// StaleFilesRefused): a snapshot copied over a delta is refused by its
// stamp's kind, a flipped byte by the trailer's checksum.
func TestStaleStateFilesRefused(t *testing.T) {
	m := fsys.NewMem()
	p := state.NewMemoryProvider(m, state.Options{MinDeltasForSnapshot: 2})
	for v := int64(0); v < 6; v++ {
		apply(t, p, id03, v, statetest.Change{Put: map[string]string{fmt.Sprint(v): "v"}})
	}
	fresh := func() *state.MemoryProvider { return state.NewMemoryProvider(m, state.Options{}) }
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
	t.Run("a snapshot as a delta", func(t *testing.T) {
		const from, to = "state/0/3/6.snapshot", "state/0/3/6.delta"
		undo := restore(to)
		defer undo()
		data, _ := m.ReadFile(from)
		fsys.WriteAtomic(m, to, data)
		// Make the delta needed: no snapshot at or above it.
		undoSnap := restore(from)
		defer undoSnap()
		m.Remove(from)
		_, err := fresh().Load(id03, 6)
		var cf *state.CorruptFileError
		if !errors.As(err, &cf) || cf.Path != to || !strings.Contains(err.Error(), "stamped as the snapshot") {
			t.Fatalf("err = %v, want a corrupt %s: stamped as the snapshot", err, to)
		}
	})
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

package stores_test

import (
	"os"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/pebblestore"
	"github.com/dedupsim/dedupsim/engine/state/stores"
)

func TestOpen(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fs     fsys.FS
		pebble bool
		// workDir is where the Pebble provider keeps its working
		// databases: "" in memory.
		workDir string
	}{
		{name: "", fs: fsys.NewMem()},
		{name: "memory", fs: fsys.NewMem()},
		{name: "pebble", fs: fsys.NewMem(), pebble: true},
		{name: "pebble", fs: fsys.NewOS(t.TempDir()), pebble: true, workDir: os.TempDir()},
		{name: "pebble", fs: spilling(), pebble: true, workDir: os.TempDir()},
	} {
		p, err := stores.Open(tc.name, tc.fs)
		if err != nil {
			t.Fatalf("Open(%q): %v", tc.name, err)
		}
		switch pp := p.(type) {
		case *state.MemoryProvider:
			if tc.pebble {
				t.Fatalf("Open(%q) = the memory provider", tc.name)
			}
		case *pebblestore.Provider:
			if !tc.pebble || pp.Options().WorkDir != tc.workDir {
				t.Fatalf("Open(%q, %T) = a Pebble provider with WorkDir %q", tc.name, tc.fs, pp.Options().WorkDir)
			}
		default:
			t.Fatalf("Open(%q) = %T", tc.name, p)
		}
		// The provider works on the checkpoint it was given.
		st, err := p.Load(state.ID{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Put([]byte("k"), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Commit(); err != nil {
			t.Fatal(err)
		}
		if ok, err := tc.fs.Exists("state/0/0"); err != nil || !ok {
			t.Fatalf("Open(%q): no state/0/0 after a commit (%v)", tc.name, err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := stores.Open("rocksdb", fsys.NewMem()); err == nil || err.Error() != `state_store "rocksdb" is not available (memory or pebble)` {
		t.Fatalf("Open(rocksdb): %v", err)
	}
}

// spilling is an in-memory checkpoint that moves large files to the host's
// temp directory (exec's temporary checkpoint).
func spilling() *fsys.Mem {
	m := fsys.NewMem()
	m.SpillAbove(1 << 10)
	return m
}

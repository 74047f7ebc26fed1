// Package stores is where a driver chooses the state store: it maps a
// query's pinned state_store to a provider. It sits outside the engine
// core so that the core (package engine) links only the memory store;
// drivers (exec, the simulator, the live runners, sizing) pass Open in
// engine.Config.NewStateProvider to offer every store.
package stores

import (
	"fmt"
	"os"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/pebblestore"
)

// Open opens the state store named by the query's pinned state_store:
// "memory" (or empty) the in-memory provider, the analogue of Spark's
// HDFS-backed one; "pebble" the Pebble provider, the analogue of Spark's
// RocksDB one with changelog checkpointing. The Pebble provider's working
// databases are disposable copies outside the checkpoint: in the OS temp
// directory when the checkpoint is on the real disk (fsys.OS) or is kept
// in memory but spills large files to it (fsys.Mem.Spills: exec's
// temporary checkpoint, whose state may be larger than the heap should
// hold), in memory otherwise.
func Open(name string, fs fsys.FS) (state.Provider, error) {
	switch name {
	case "", query.StateStoreMemory:
		return state.NewMemoryProvider(fs, state.Options{}), nil
	case query.StateStorePebble:
		var opts pebblestore.Options
		switch f := fs.(type) {
		case *fsys.OS:
			opts.WorkDir = os.TempDir()
		case *fsys.Mem:
			if f.Spills() {
				opts.WorkDir = os.TempDir()
			}
		}
		p, err := pebblestore.New(fs, opts)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	return nil, fmt.Errorf("state_store %q is not available (memory or pebble)", name)
}

package engine_test

import (
	"testing"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/stores"
)

// closeCounter is a state provider that counts its Close calls.
type closeCounter struct {
	state.Provider
	closes int
}

func (c *closeCounter) Close() error { c.closes++; return c.Provider.Close() }

// TestAbandonReleasesStores: an engine abandoned after a death that was no
// crash point (the simulator's crash at a filesystem operation) closes its
// state provider, so that its stores' databases do not outlive it, runs no
// further batch, and may be abandoned twice. Before Abandon, a sweep of the
// real-time catalogue scenario kept every Pebble database of every such
// death open: 1 GB after 100 seeds.
func TestAbandonReleasesStores(t *testing.T) {
	for _, store := range []string{"memory", "pebble"} {
		t.Run(store, func(t *testing.T) {
			q, err := query.Parse("q.yaml", []byte("dedup: {api: dropDuplicates, keys: [id]}\nshuffle_partitions: 2\nstate_store: "+store+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			var p *closeCounter
			src := &benchSource{batches: [][]row.Row{benchInput()[0][:100]}}
			e, err := engine.Start(engine.Config{Query: q, Checkpoint: fsys.NewMem(), Sources: []source.Source{src},
				Sink: discardSink{}, Clock: benchClock{}, NewID: ids.Seeded(1),
				NewStateProvider: func(name string, fs fsys.FS) (state.Provider, error) {
					sp, err := stores.Open(name, fs)
					if err != nil {
						return nil, err
					}
					p = &closeCounter{Provider: sp}
					return p, nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			src.avail++
			if ran, err := e.RunOnce(); !ran || err != nil {
				t.Fatalf("first batch: ran %v, %v", ran, err)
			}
			e.Abandon()
			if p == nil || p.closes != 1 {
				t.Fatalf("provider closed %d times after Abandon, want 1", p.closes)
			}
			if _, err := e.RunOnce(); err == nil {
				t.Fatal("an abandoned engine ran a batch")
			}
			e.Abandon() // a second death report: no panic (Pebble panics on a second close of a database)
		})
	}
}

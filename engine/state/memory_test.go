package state_test

import (
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/statetest"
	"pgregory.net/rapid"
)

var id03 = state.ID{Operator: 0, Partition: 3}

var (
	mustLoad = statetest.MustLoad
	contents = statetest.Contents
	apply    = statetest.Apply
)

// memoryStore is the memory provider as the contract suite sees it.
var memoryStore = statetest.Store{
	New: func(_ testing.TB, f fsys.FS, o state.Options) state.Provider {
		return state.NewMemoryProvider(f, o)
	},
	Files:         state.FileNames{Delta: ".delta", Snapshot: ".snapshot", DeltaKind: state.KindDelta},
	EntryOverhead: state.EntryOverheadBytes,
	MemoryIsSize:  true,
}

// TestMemoryContract runs the providers' contract suite (statetest) on
// the memory provider.
func TestMemoryContract(t *testing.T) { statetest.Run(t, memoryStore) }

func TestDefaults(t *testing.T) {
	p := state.NewMemoryProvider(fsys.NewMem(), state.Options{})
	if o := p.Options(); o.MinDeltasForSnapshot != 10 || o.MinVersionsToRetain != 100 {
		t.Fatalf("defaults = %+v", o)
	}
	p = state.NewMemoryProvider(fsys.NewMem(), state.Options{MinDeltasForSnapshot: -1, MinVersionsToRetain: 3})
	if o := p.Options(); o.MinDeltasForSnapshot != 10 || o.MinVersionsToRetain != 3 {
		t.Fatalf("options = %+v", o)
	}
}

// evictUpTo runs EvictUpTo and checks it against a Range-based reference
// taken from the same store just before: the entries left and the count.
func (m *propModel) evictUpTo(t *rapid.T) {
	m.requireOpen(t)
	limit := int64(rapid.IntRange(0, 256).Draw(t, "limit"))<<8 + int64(rapid.IntRange(0, 255).Draw(t, "limitLow"))
	m.work = statetest.EvictChecked(t, m.st, m.work, limit)
	m.checkMetrics(t)
}

// evictBatch is a micro-batch that ends with EvictUpTo, as the dedup
// operator's are, then commits or aborts.
func (m *propModel) evictBatch(t *rapid.T) {
	m.load(t)
	ops := []func(*rapid.T){m.put, m.put, m.put, m.delete, m.get, m.evictUpTo}
	for range rapid.IntRange(0, 8).Draw(t, "ops") {
		ops[rapid.IntRange(0, len(ops)-1).Draw(t, "op")](t)
	}
	m.evictUpTo(t)
	if rapid.IntRange(0, 3).Draw(t, "abort") == 0 {
		m.abort(t)
	} else {
		m.commit(t)
	}
}

// TestEvictUpToProperties: on random sequences of puts, deletes,
// evictions, commits, aborts, cache-hit and cache-miss loads and restarts,
// EvictUpTo removes exactly what a Range scan with the same predicate
// removes, and everything else (files, reloads, metrics) stays as the
// model says.
func TestEvictUpToProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newPropModel(t)
		t.Repeat(map[string]func(*rapid.T){
			"batch":     m.evictBatch,
			"batch2":    m.evictBatch,
			"load":      m.load,
			"put":       m.put,
			"delete":    m.delete,
			"evict":     m.evict,
			"evictUpTo": m.evictUpTo,
			"commit":    m.commit,
			"abort":     m.abort,
			"restart":   m.restart,
			"":          m.check,
		})
	})
}

package state_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
)

const benchKeys = 1_000_000

// benchKey writes the 16-byte key of row n into buf: a fixed prefix and n.
func benchKey(buf []byte, n uint64) []byte {
	copy(buf, "dedupkey")
	binary.BigEndian.PutUint64(buf[8:], n)
	return buf[:16]
}

// fillStore commits version 1 holding keys [0, benchKeys) with 8-byte
// values (an event time, as the dedup operator stores).
func fillStore(b *testing.B, p *state.MemoryProvider) {
	b.Helper()
	st := mustLoad(b, p, id03, 0)
	var kb [16]byte
	var vb [8]byte
	for n := range uint64(benchKeys) {
		binary.BigEndian.PutUint64(vb[:], n)
		if err := st.Put(benchKey(kb[:], n), vb[:]); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := st.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPutGetCommit runs dedup-shaped micro-batches against a store of
// 1M keys: each batch loads the latest version (a cache hit), looks up
// every row's key, inserts the new ones (half the rows are duplicates of
// stored keys), deletes as many of the oldest keys (watermark eviction,
// so the state stays at 1M keys) and commits, writing the delta and, every
// 10th version, a 1M-key snapshot. One op is one batch; rows/s counts rows.
func BenchmarkPutGetCommit(b *testing.B) {
	for _, bc := range []struct {
		rows      int
		snapshots bool
	}{{10_000, true}, {100_000, true}, {100_000, false}} {
		name := fmt.Sprintf("rows=%d", bc.rows)
		if !bc.snapshots {
			name += "/no-snapshots"
		}
		b.Run(name, func(b *testing.B) {
			opts := state.Options{}
			if !bc.snapshots {
				opts.MinDeltasForSnapshot = 1 << 30
			}
			p := state.NewMemoryProvider(fsys.NewMem(), opts)
			fillStore(b, p)
			version := int64(1)
			next := uint64(benchKeys) // next new key
			oldest := uint64(0)       // oldest stored key
			var kb [16]byte
			var vb [8]byte
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				st := mustLoad(b, p, id03, version)
				newKeys := 0
				for i := range bc.rows {
					var n uint64
					if i%2 == 0 {
						n = next // a new key
						next++
					} else {
						n = next - uint64(benchKeys)/2 // a duplicate of a stored key
					}
					key := benchKey(kb[:], n)
					if _, ok, err := st.Get(key); err != nil {
						b.Fatal(err)
					} else if !ok {
						binary.BigEndian.PutUint64(vb[:], n)
						if err := st.Put(key, vb[:]); err != nil {
							b.Fatal(err)
						}
						newKeys++
					}
				}
				for range newKeys {
					if err := st.Delete(benchKey(kb[:], oldest)); err != nil {
						b.Fatal(err)
					}
					oldest++
				}
				v, err := st.Commit()
				if err != nil {
					b.Fatal(err)
				}
				if n := st.Metrics().NumKeys; n != benchKeys {
					b.Fatalf("state has %d keys", n)
				}
				version = v
			}
			b.ReportMetric(float64(bc.rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkLoadFromFiles measures a cold load (a restart) of 1M keys from
// a snapshot plus nine deltas of 10k changes each.
func BenchmarkLoadFromFiles(b *testing.B) {
	m := fsys.NewMem()
	p := state.NewMemoryProvider(m, state.Options{MinDeltasForSnapshot: 1})
	fillStore(b, p) // 1.snapshot
	p = state.NewMemoryProvider(m, state.Options{MinDeltasForSnapshot: 100})
	var kb [16]byte
	for v := int64(1); v < 10; v++ {
		st := mustLoad(b, p, id03, v)
		for i := range uint64(10_000) {
			st.Put(benchKey(kb[:], uint64(v)*10_000+i), []byte("newvalue"))
		}
		if _, err := st.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		st := mustLoad(b, state.NewMemoryProvider(m, state.Options{}), id03, 10)
		if n := st.Metrics().NumKeys; n != benchKeys {
			b.Fatalf("loaded %d keys", n)
		}
	}
	b.ReportMetric(float64(benchKeys)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}

// BenchmarkRangeEvictNothing is the full scan the watermark eviction does
// every batch, when nothing is evicted.
func BenchmarkRangeEvictNothing(b *testing.B) {
	p := state.NewMemoryProvider(fsys.NewMem(), state.Options{})
	fillStore(b, p)
	st := mustLoad(b, p, id03, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		seen := 0
		st.Range(func(k, v []byte) bool {
			if binary.BigEndian.Uint64(v) == ^uint64(0) {
				st.Delete(k)
			}
			seen++
			return true
		})
		if seen != benchKeys {
			b.Fatal(seen)
		}
	}
	b.ReportMetric(float64(benchKeys)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}

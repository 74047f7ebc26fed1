package engine_test

// The Pebble state store against the memory store at 1 M keys.
//
//	go test ./engine -run '^$' -bench 'EnginePebble|StoreRestart|StoreFootprint' -benchtime 1x
//
// BenchmarkEnginePebble is BenchmarkEngine's workload (bench_test.go) with
// state_store: pebble: rows/s per dedup API, the working databases in
// memory (checkpoint on fsys.Mem) or on the local disk (checkpoint on
// fsys.OS, working databases in the OS temp directory, as
// stores.Open sets them up).
//
// BenchmarkStoreRestart builds a checkpoint holding 1 M keys
// (dropDuplicates [id], 10 batches of 100 k new keys, 4 partitions;
// DEDUPSIM_BENCH_KEYS=10000000, as `make bench-10m` sets, makes it 100
// batches and 10 M keys) and
// times what a restart pays before its first batch can run: a new provider
// loading the latest version of every partition, either from a snapshot
// (version 10, the snapshot interval) or from 10 changelogs/deltas alone.
//
// BenchmarkStoreFootprint reports bytes per key after such a restart: Go
// heap growth, the store's memoryUsedBytes, and bytes on disk (checkpoint
// files; for Pebble also its sstables and working directory); and
// memoryUsedBytes per key while the checkpoint was built, at 900 k keys
// (for Pebble: memtables before a snapshot's flush, allocated outside the
// Go heap when cgo is on).

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/pebblestore"
)

func BenchmarkEnginePebble(b *testing.B) {
	batches := benchInput()
	rowsPerRun := 0
	for _, bt := range batches {
		rowsPerRun += len(bt)
	}
	for _, bc := range benchCases {
		if strings.Contains(bc.query, "batchDropDuplicates") {
			continue // stateless: no store
		}
		b.Run(bc.name, func(b *testing.B) {
			q, err := query.Parse("bench.yaml", []byte(bc.query+"shuffle_partitions: 4\nstate_store: pebble\n"))
			if err != nil {
				b.Fatal(err)
			}
			var executed int
			var floor time.Duration
			b.ResetTimer()
			for range b.N {
				var ckpt fsys.FS = fsys.NewMem()
				if bc.osFS {
					b.StopTimer()
					ckpt = fsys.NewOS(b.TempDir())
					b.StartTimer()
				}
				executed += benchRun(b, q, ckpt, batches)
				b.StopTimer()
				runtime.GC() // the floor should not pay for the run's garbage
				floor += benchFloor(bc.floor, batches)
				b.StartTimer()
			}
			reportRates(b, rowsPerRun, floor)
			b.ReportMetric(float64(executed)/float64(b.N), "batches/op")
		})
	}
}

// benchStore is one store set-up of the restart and footprint benchmarks.
type benchStore struct {
	name   string
	pebble bool
	snap   int    // MinDeltasForSnapshot
	work   string // Pebble's WorkDir ("" in memory)
}

func (s benchStore) provider(b *testing.B, ckpt fsys.FS) state.Provider {
	if !s.pebble {
		return state.NewMemoryProvider(ckpt, state.Options{MinDeltasForSnapshot: s.snap})
	}
	p, err := pebblestore.New(ckpt, pebblestore.Options{MinDeltasForSnapshot: s.snap, WorkDir: s.work})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

const benchPartitions = 4

// buildBenchCheckpoint runs the 1 M key dropDuplicates workload on ckpt and
// returns the last committed state version and memoryUsedBytes per state
// key as reported by the next-to-last batch (version 9, 900 k keys: for
// Pebble the memtables before the snapshot of version 10 flushes them).
func buildBenchCheckpoint(b *testing.B, s benchStore, ckpt fsys.FS, batches [][]row.Row) (int64, float64) {
	q, err := query.Parse("bench.yaml", []byte(fmt.Sprintf("dedup: {api: dropDuplicates, keys: [id]}\nshuffle_partitions: %d\n", benchPartitions)))
	if err != nil {
		b.Fatal(err)
	}
	src := &benchSource{batches: batches}
	preFlush := 0.0
	e, err := engine.Start(engine.Config{Query: q, Checkpoint: ckpt, Sources: []source.Source{src},
		Sink: discardSink{}, Clock: benchClock{}, NewID: ids.Seeded(1),
		NewStateProvider: func(string, fsys.FS) (state.Provider, error) { return s.provider(b, ckpt), nil },
		OnBatch: func(r *engine.BatchRecord) {
			for _, op := range r.Progress.StateOperators {
				if r.BatchID == int64(len(batches))-2 && op.NumRowsTotal > 0 {
					preFlush = float64(op.MemoryUsedBytes) / float64(op.NumRowsTotal)
				}
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	for range batches {
		src.avail++
		if err := e.ProcessAllAvailable(); err != nil {
			b.Fatal(err)
		}
	}
	version := e.NextBatchID()
	if err := e.Stop(); err != nil {
		b.Fatal(err)
	}
	return version, preFlush
}

// restartLoad opens every partition at version in a new provider.
func restartLoad(b *testing.B, s benchStore, ckpt fsys.FS, version int64) (state.Provider, []state.Store, int64) {
	p := s.provider(b, ckpt)
	stores := make([]state.Store, benchPartitions)
	keys := int64(0)
	for i := range stores {
		st, err := p.Load(state.ID{Operator: 0, Partition: i}, version)
		if err != nil {
			b.Fatal(err)
		}
		stores[i] = st
		keys += st.Metrics().NumKeys
	}
	return p, stores, keys
}

func benchStores(b *testing.B) []benchStore {
	return []benchStore{
		{name: "memory/fromSnapshot", snap: 10},
		{name: "memory/fromDeltas", snap: 1000},
		{name: "pebble/fromSnapshot", pebble: true, snap: 10},
		{name: "pebble/fromChangelogs", pebble: true, snap: 1000},
		{name: "pebbleOnDisk/fromSnapshot", pebble: true, snap: 10, work: "disk"},
	}
}

func BenchmarkStoreRestart(b *testing.B) {
	batches := benchInput()
	for _, s := range benchStores(b) {
		b.Run(s.name, func(b *testing.B) {
			if s.work != "" {
				s.work = b.TempDir()
			}
			ckpt := fsys.NewMem()
			version, _ := buildBenchCheckpoint(b, s, ckpt, batches)
			var keys int64
			b.ResetTimer()
			for range b.N {
				var p state.Provider
				var stores []state.Store
				p, stores, keys = restartLoad(b, s, ckpt, version)
				b.StopTimer()
				for _, st := range stores {
					st.Abort()
				}
				p.Close()
				b.StartTimer()
			}
			b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/restart")
			b.ReportMetric(float64(keys), "keys")
		})
	}
}

func BenchmarkStoreFootprint(b *testing.B) {
	batches := benchInput()
	for _, s := range benchStores(b) {
		if !strings.HasSuffix(s.name, "fromSnapshot") {
			continue
		}
		b.Run(s.name, func(b *testing.B) {
			for range b.N {
				if s.work != "" {
					s.work = b.TempDir()
				}
				dir := b.TempDir()
				ckpt := fsys.NewOS(dir)
				version, preFlush := buildBenchCheckpoint(b, s, ckpt, batches)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				start := time.Now()
				p, stores, keys := restartLoad(b, s, ckpt, version)
				elapsed := time.Since(start)
				runtime.GC()
				runtime.ReadMemStats(&after)
				var mem, sst int64
				for _, st := range stores {
					m := st.Metrics()
					mem += m.MemoryUsedBytes
					sst += m.Custom["rocksdbSstFileSize"]
				}
				k := float64(keys)
				b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/k, "heapB/key")
				b.ReportMetric(float64(mem)/k, "memoryUsedB/key")
				b.ReportMetric(preFlush, "runMemoryUsedB/key")
				b.ReportMetric(float64(dirSize(b, filepath.Join(dir, "state")))/k, "checkpointB/key")
				if s.pebble {
					b.ReportMetric(float64(sst)/k, "sstB/key")
				}
				if s.work != "" {
					b.ReportMetric(float64(dirSize(b, s.work))/k, "workDirB/key")
				}
				b.ReportMetric(float64(elapsed.Milliseconds()), "restartMs")
				runtime.KeepAlive(stores)
				for _, st := range stores {
					st.Abort()
				}
				p.Close()
			}
		})
	}
}

func dirSize(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		b.Fatal(err)
	}
	return n
}

package sim

import (
	"runtime"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim/history"
)

// simFloor is the floor BenchmarkSim is measured against: a bare Go map
// looking up and inserting the dedup key of every copy the run appended,
// in the same process right after the run. It returns the time taken.
func simFloor(copies []history.Copy) time.Duration {
	start := time.Now()
	m := map[string]struct{}{}
	for i := range copies {
		if _, ok := m[copies[i].Event]; !ok {
			m[copies[i].Event] = struct{}{}
		}
	}
	runtime.KeepAlive(m)
	return time.Since(start)
}

// BenchmarkSim measures whole simulated runs, workload generation, engine
// (memory state store) and history recording together, in copies appended
// per second of wall time. Each run appends about 1 M copies: 10 000 events
// per second for 100 s of processing time, a 1 s trigger, a 10 s delay.
// floorRatio is events/s over simFloor's rate in the same run; heapB/copy
// is the Go heap a finished run holds per copy.
//
//	go test ./sim -run '^$' -bench Sim -benchtime 3x -cpuprofile cpu.out
func BenchmarkSim(b *testing.B) {
	const withinWatermark = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 4\nsink: {kind: table}\n"
	for _, bc := range []struct {
		name, query string
		plan        map[string]faults.Knobs
	}{
		{"clean", withinWatermark, nil},
		// No state store: what the simulator itself costs.
		{"batchDropDuplicates", "dedup: {api: batchDropDuplicates, keys: [id]}\nsink: {kind: foreachBatch}\n", nil},
		{"faults", withinWatermark, map[string]faults.Knobs{
			faults.ProducerRetry: {"probability": 0.05}, faults.DuplicateAppend: {"probability": 0.01},
			faults.CrashRandom: {"rate": 0.05}, faults.LostUnsyncedWrite: nil, faults.CrashAfterSinkWrite: {"rate": 0.05},
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := Defaults()
			cfg.Query = QueryText(bc.query)
			cfg.FaultPhase, cfg.HealPhase = Duration(50*time.Second), Duration(50*time.Second)
			cfg.Sources = []SourceConfig{{Name: "default", Rate: Rate{PerSec: 10_000}, Producers: 1000}}
			cfg.Plan = faults.Plan{Faults: bc.plan}
			copies := 0
			var floor time.Duration
			var heap float64
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				b.StartTimer()
				h, err := Run(cfg, uint64(i+1))
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&after)
				heap += float64(int64(after.HeapAlloc) - int64(before.HeapAlloc))
				copies += len(h.Copies)
				floor += simFloor(h.Copies)
				b.StartTimer()
			}
			rate := float64(copies) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "events/s")
			b.ReportMetric(float64(copies)/float64(b.N), "events/op")
			b.ReportMetric(rate/(float64(copies)/floor.Seconds()), "floorRatio")
			// What a finished run holds per copy (the history, mostly);
			// the peak while it runs is higher.
			b.ReportMetric(heap/float64(copies), "heapB/copy")
		})
	}
}

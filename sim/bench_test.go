package sim

import (
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/faults"
)

// BenchmarkSim measures whole simulated runs, workload generation, engine
// (memory state store) and history recording together, in copies appended
// per second of wall time. Each run appends about 1 M copies: 10 000 events
// per second for 100 s of processing time, a 1 s trigger, a 10 s delay.
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
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				h, err := Run(cfg, uint64(i+1))
				if err != nil {
					b.Fatal(err)
				}
				copies += len(h.Copies)
			}
			b.ReportMetric(float64(copies)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(copies)/float64(b.N), "events/op")
		})
	}
}

package sim

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
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

// BenchmarkRunScale is one run shaped as scenarios/scale (seed 000's
// payments pipeline: dropDuplicatesWithinWatermark on the id, a 2-minute
// delay, a table sink, 0.4% of ids sent twice) at DEDUPSIM_SCALE_RATE
// events/s for DEDUPSIM_SCALE_SECONDS of simulated time (default 2000/s
// for 20 s, so that make bench-smoke stays cheap; 50000 and 200 are the
// 10 M-copy run of docs/performance.md). It reports copies/s and the peak
// Go heap (heap objects, sampled every millisecond by a goroutine of the
// benchmark, not of the run), besides the heap a finished run holds.
//
//	DEDUPSIM_SCALE_RATE=5000 DEDUPSIM_SCALE_SECONDS=200 go test ./sim -run '^$' -bench RunScale -benchtime 1x
func BenchmarkRunScale(b *testing.B) {
	rate, secs := scaleEnv(b, "DEDUPSIM_SCALE_RATE", 2000), scaleEnv(b, "DEDUPSIM_SCALE_SECONDS", 20)
	cfg := Defaults()
	cfg.Query = QueryText("dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 2 minutes}\nshuffle_partitions: 4\nsink: {kind: table}\n")
	heal := secs / 4
	cfg.FaultPhase, cfg.HealPhase = Duration(time.Duration(secs-heal)*time.Second), Duration(time.Duration(heal)*time.Second)
	cfg.Sources = []SourceConfig{{Name: "default", Rate: Rate{PerSec: float64(rate)}}}
	cfg.Plan = faults.Plan{Faults: map[string]faults.Knobs{faults.ProducerRetryRestamped: {"probability": 0.004}}}
	copies := 0
	var peak, held uint64
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		runtime.GC()
		base := heapObjects()
		stop := samplePeak()
		b.StartTimer()
		h, err := Run(cfg, uint64(i+1))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		top := stop()
		peak = max(peak, top-min(base, top))
		runtime.GC()
		held = max(held, heapObjects()-min(base, heapObjects()))
		copies += len(h.Copies)
		runtime.KeepAlive(h)
		b.StartTimer()
	}
	b.ReportMetric(float64(copies)/b.Elapsed().Seconds(), "copies/s")
	b.ReportMetric(float64(copies)/float64(b.N), "copies/op")
	b.ReportMetric(float64(peak)/(1<<20), "peakHeapMiB")
	b.ReportMetric(float64(held)/float64(max(copies/b.N, 1)), "heldB/copy")
}

func scaleEnv(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 10_000_000 {
		b.Fatalf("%s=%q: want a whole number in [1, 10000000]", name, v)
	}
	return n
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

// heapObjects is the bytes of heap objects, live or not yet swept.
func heapObjects() uint64 {
	metrics.Read(heapSample)
	return heapSample[0].Value.Uint64()
}

// samplePeak samples heapObjects every millisecond (in a goroutine of the
// benchmark) until the returned stop is called; stop returns the largest.
func samplePeak() (stop func() uint64) {
	quit, done := make(chan struct{}), make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-quit:
				done <- peak
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(quit)
		return <-done
	}
}

package diagnose

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/diagnose/progress"
)

// records is a reader of n progress records of one run, one JSON line
// each, made as they are read (a year of 30-second triggers is about 1 M
// records; the input is not held in memory).
type records struct {
	n, i int
	buf  bytes.Buffer
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (r *records) Read(p []byte) (int, error) {
	for r.buf.Len() < len(p) && r.i < r.n {
		i := r.i
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		ts := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
		fmt.Fprintf(&r.buf, `{"id":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0","runId":"11111111-2222-3333-4444-555555555555","name":"payments","timestamp":"%s","batchId":%d,"batchDuration":%d,"numInputRows":300,"inputRowsPerSecond":10.0,"processedRowsPerSecond":150.0,"durationMs":{"addBatch":%d,"commitOffsets":3,"getBatch":0,"latestOffset":2,"queryPlanning":5,"triggerExecution":%d,"walCommit":4},"eventTime":{"avg":"%s","max":"%s","min":"%s","watermark":"%s"},"stateOperators":[{"operatorName":"dedupeWithinWatermark","numRowsTotal":%d,"numRowsUpdated":290,"allUpdatesTimeMs":12,"numRowsRemoved":290,"allRemovalsTimeMs":3,"commitTimeMs":20,"memoryUsedBytes":%d,"numRowsDroppedByWatermark":0,"numShufflePartitions":200,"numStateStoreInstances":200,"customMetrics":{"loadedMapCacheHitCount":%d,"loadedMapCacheMissCount":0,"numDroppedDuplicateRows":10,"stateOnCurrentVersionSizeBytes":1000000}}],"sources":[{"description":"KafkaV2[Subscribe[payments]]","startOffset":{"payments":{"0":%d}},"endOffset":{"payments":{"0":%d}},"latestOffset":{"payments":{"0":%d}},"numInputRows":300,"inputRowsPerSecond":10.0,"processedRowsPerSecond":150.0}],"sink":{"description":"DeltaSink","numOutputRows":290}}`+"\n",
			ts(at), i, 200+i%7, 150+i%7, 200+i%7, ts(at.Add(-15*time.Second)), ts(at), ts(at.Add(-30*time.Second)), ts(at.Add(-10*time.Minute)),
			20000+i%50, 5000000+i%1000, i*400, i*300, i*300+300, i*300+300)
		r.i++
	}
	if r.buf.Len() == 0 {
		return 0, io.EOF
	}
	return r.buf.Read(p)
}

// BenchmarkDiagnose reads and judges n records in one stream: the time per
// record must not grow with n (issue 25: it was quadratic, 20 k records
// 5 s, 80 k 101 s). It reports the heap in use after reading (the records
// kept) and the peak of the heap sampled while it runs.
func BenchmarkDiagnose(b *testing.B) {
	for _, n := range []int{20_000, 80_000, 1_000_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			if testing.Short() && n > 80_000 {
				b.Skip("1 M records in -short")
			}
			for range b.N {
				runtime.GC()
				var peak uint64
				stop := make(chan struct{})
				done := make(chan struct{})
				go func() {
					defer close(done)
					var m runtime.MemStats
					for {
						runtime.ReadMemStats(&m)
						peak = max(peak, m.HeapInuse)
						select {
						case <-stop:
							return
						case <-time.After(20 * time.Millisecond):
						}
					}
				}()
				cpu0 := cpuTime()
				l, err := progress.ReadFrom("bench.jsonl", &records{n: n})
				if err != nil {
					b.Fatal(err)
				}
				r := Diagnose(l, Options{})
				close(stop)
				<-done
				if r.Queries[0].Batches != n {
					b.Fatalf("%d batches judged, want %d", r.Queries[0].Batches, n)
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
				// CPU time as well as wall time: on a shared machine the
				// wall time is the neighbours' too.
				b.ReportMetric(float64(cpuTime()-cpu0)/1e9/float64(b.N), "cpu-s/op")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
				runtime.KeepAlive(l)
			}
		})
	}
}

// cpuTime is the process's user and system CPU time in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

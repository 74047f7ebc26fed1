package expiry

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkIndexLateData measures what the index costs per item when a
// share of each batch's items is late: a steady state of window batches of
// perBatch items, each batch pushing perBatch items (10% of them with the
// expiry of one of the last `late` batches) and popping what the watermark
// passed. Late items that precede every run's last item start runs of their
// own, and past maxRuns the two shortest runs are merged: the merge copies
// are the cost this shows as late grows.
//
//	go test ./engine/state/expiry -run '^$' -bench IndexLateData
func BenchmarkIndexLateData(b *testing.B) {
	const perBatch, window, batches = 10_000, 40, 200
	for _, late := range []int{0, 8, 40} {
		b.Run(fmt.Sprintf("late=%d", late), func(b *testing.B) {
			// Keys are 8-byte counters in one arena, made before the clock runs.
			n := perBatch * (window + batches)
			arena := make([]byte, 8*n)
			for i := range n {
				binary.BigEndian.PutUint64(arena[8*i:], uint64(i))
			}
			items := 0
			for range b.N {
				b.StopTimer()
				rng := rand.New(rand.NewPCG(1, uint64(late)))
				k := 0
				item := func(at int64) Item {
					it := Item{At: at, Off: uint64(8 * k), Klen: 8}
					k++
					return it
				}
				initial := make([]Item, 0, perBatch*window)
				for i := range perBatch * window {
					initial = append(initial, item(int64(i)))
				}
				x := Sorted(arena, initial, nil)
				b.StartTimer()
				for batch := window; batch < window+batches; batch++ {
					for i := range perBatch {
						at := int64(batch*perBatch + i)
						if late > 0 && i%10 == 0 {
							at = int64((batch-1-rng.IntN(late))*perBatch + rng.IntN(perBatch))
						}
						x.Push(item(at))
					}
					limit := int64((batch-window+1)*perBatch - 1)
					for {
						it, ok := x.Min(arena)
						if !ok || it.At > limit {
							break
						}
						x.Pop(arena)
						items++
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(items), "ns/item")
		})
	}
}

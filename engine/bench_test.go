package engine_test

// Throughput of the executor per dedup flavour, without JSON decoding: the
// source hands over pre-decoded rows (Key, EventTime, Decoded=true).
//
//	go test ./engine -run '^$' -bench Engine -benchtime 1x
//
// Each iteration runs a fresh query on a fresh checkpoint over 1 M distinct
// keys: benchBatches data batches of benchNewPerBatch new keys plus
// duplicates (half of them copies of earlier batches' keys, half copies
// inside the batch), each followed by the no-data batches Spark would run.
// The reported rows/s counts input rows, duplicates included.
//
// The floor: every iteration also runs benchFloor, a bare Go map doing only
// the lookup, insert and eviction of the same keys, and the benchmark
// reports floorRows/s and floorRatio (rows/s over floorRows/s), both from
// the same run, so the ratio means something on a shared, noisy machine.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/state/stores"
)

// benchBatches is the number of data batches: DEDUPSIM_BENCH_KEYS distinct
// keys (default 1 M; `make bench-10m` sets 10 M) in batches of 100 k.
var benchBatches = func() int {
	if v, err := strconv.Atoi(os.Getenv("DEDUPSIM_BENCH_KEYS")); err == nil && v >= benchNewPerBatch {
		return v / benchNewPerBatch
	}
	return 10
}()

const (
	benchNewPerBatch = 100_000 // distinct keys per batch
	benchDupPerBatch = 10_000  // duplicates per batch
	// benchMicrosPerKey spaces event times: a batch spans 5 s of event time,
	// so with a 2 s delay every batch advances the watermark and evicts.
	benchMicrosPerKey = 50
)

type benchCase struct {
	name  string
	query string
	osFS  bool
	floor floorSpec
}

// floorSpec says what the floor does for a case: evict (with the delay
// added to the event time for WithinWatermark), or forget everything after
// each batch (batchDropDuplicates).
type floorSpec struct {
	evicts, addDelay, batch bool
	delayMicros             int64
}

const benchDelayMicros = 2_000_000 // the queries' 2 seconds

var benchCases = []benchCase{
	{name: "dropDuplicates", query: "dedup: {api: dropDuplicates, keys: [id]}\n"},
	{name: "dropDuplicatesEventTimeKey", query: "dedup: {api: dropDuplicates, keys: [id, ts]}\nwatermark: {column: ts, delay: 2 seconds}\n",
		floor: floorSpec{evicts: true, delayMicros: benchDelayMicros}},
	{name: "dropDuplicatesWithinWatermark", query: "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 2 seconds}\n",
		floor: floorSpec{evicts: true, addDelay: true, delayMicros: benchDelayMicros}},
	{name: "batchDropDuplicates", query: "dedup: {api: batchDropDuplicates, keys: [id]}\n", floor: floorSpec{batch: true}},
	{name: "dropDuplicatesWithinWatermarkOnDisk", query: "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 2 seconds}\n", osFS: true,
		floor: floorSpec{evicts: true, addDelay: true, delayMicros: benchDelayMicros}},
}

func BenchmarkEngine(b *testing.B) {
	batches := benchInput()
	rowsPerRun := 0
	for _, bt := range batches {
		rowsPerRun += len(bt)
	}
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			q, err := query.Parse("bench.yaml", []byte(bc.query+"shuffle_partitions: 4\n"))
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

// reportRates reports rows/s and the ratio to the floor's rows/s, floor
// being the time benchFloor took over the same b.N iterations.
func reportRates(b *testing.B, rowsPerRun int, floor time.Duration) {
	rate := float64(rowsPerRun*b.N) / b.Elapsed().Seconds()
	floorRate := float64(rowsPerRun*b.N) / floor.Seconds()
	b.ReportMetric(rate, "rows/s")
	b.ReportMetric(floorRate, "floorRows/s")
	b.ReportMetric(rate/floorRate, "floorRatio")
}

// benchFloor is the floor the engine is measured against: a bare Go map
// over the same keys doing only what dedup must do per row, look the key
// up and insert it when absent, and, for the flavours that evict, after
// each batch delete the keys whose eviction time (event time, or event
// time + delay) is at or below the watermark (max event time - delay).
// Keys arrive in event-time order, so a FIFO of inserted keys stands in
// for an expiry index. It returns the time taken.
func benchFloor(f floorSpec, batches [][]row.Row) time.Duration {
	start := time.Now()
	m := map[string]int64{}
	var fifo []string
	var maxET int64
	for _, rows := range batches {
		if f.batch {
			clear(m)
		}
		for i := range rows {
			r := &rows[i]
			if _, ok := m[string(r.Key)]; ok {
				continue
			}
			k := string(r.Key)
			at := r.EventTime
			if f.addDelay {
				at += f.delayMicros
			}
			m[k] = at
			maxET = max(maxET, r.EventTime)
			if f.evicts {
				fifo = append(fifo, k)
			}
		}
		for len(fifo) > 0 && m[fifo[0]] <= maxET-f.delayMicros {
			delete(m, fifo[0])
			fifo = fifo[1:]
		}
	}
	runtime.KeepAlive(m)
	return time.Since(start)
}

// benchRun feeds the batches one by one, running every batch that is due
// after each, and returns the number of batch executions.
func benchRun(b *testing.B, q *query.Query, ckpt fsys.FS, batches [][]row.Row) int {
	src := &benchSource{batches: batches}
	n := 0
	e, err := engine.Start(engine.Config{Query: q, Checkpoint: ckpt, Sources: []source.Source{src},
		Sink: discardSink{}, Clock: benchClock{}, NewID: ids.Seeded(1), NewStateProvider: stores.Open,
		OnBatch: func(*engine.BatchRecord) { n++ }})
	if err != nil {
		b.Fatal(err)
	}
	for range batches {
		src.avail++
		for {
			ran, err := e.RunOnce()
			if err != nil {
				b.Fatal(err)
			}
			if !ran {
				break
			}
		}
	}
	if err := e.Stop(); err != nil {
		b.Fatal(err)
	}
	return n
}

// benchInput builds the rows once: keys are 8-byte big-endian key numbers,
// event times grow with the key number, duplicates carry their key's event
// time (so a copy is also a copy for the event-time-in-key flavour).
func benchInput() [][]row.Row {
	data := json.RawMessage(`{}`)
	rng := rand.New(rand.NewPCG(1, 2))
	// All keys live in one arena: the input should not add a million small
	// objects for the garbage collector to scan.
	arena := make([]byte, 8*benchBatches*benchNewPerBatch)
	for k := range benchBatches * benchNewPerBatch {
		binary.BigEndian.PutUint64(arena[8*k:], uint64(k))
	}
	mk := func(k int) row.Row {
		return row.Row{Data: data, Key: arena[8*k : 8*k+8 : 8*k+8], EventTime: int64(k) * benchMicrosPerKey, Decoded: true}
	}
	batches := make([][]row.Row, benchBatches)
	for bi := range batches {
		rows := make([]row.Row, 0, benchNewPerBatch+benchDupPerBatch)
		first := bi * benchNewPerBatch
		for j := range benchNewPerBatch {
			rows = append(rows, mk(first+j))
		}
		for j := range benchDupPerBatch {
			var k int
			if j%2 == 0 && first > 0 {
				k = rng.IntN(first) // an earlier batch's key
			} else {
				k = first + rng.IntN(benchNewPerBatch) // a copy within the batch
			}
			// Put the copy at a random place (the row there moves to the end).
			rows = append(rows, mk(k))
			pos := rng.IntN(len(rows))
			rows[pos], rows[len(rows)-1] = rows[len(rows)-1], rows[pos]
		}
		batches[bi] = rows
	}
	return batches
}

// benchSource serves whole pre-built batches; its offset is the number of
// batches made available.
type benchSource struct {
	batches [][]row.Row
	avail   int
}

func (s *benchSource) Description() string { return "bench" }

func (s *benchSource) LatestOffset() (json.RawMessage, error) {
	if s.avail == 0 {
		return nil, nil
	}
	return json.RawMessage(strconv.Itoa(s.avail)), nil
}

func (s *benchSource) Rows(start, end json.RawMessage) ([]row.Row, error) {
	from, to := 0, 0
	if start != nil {
		var err error
		if from, err = strconv.Atoi(string(start)); err != nil {
			return nil, err
		}
	}
	if end != nil {
		var err error
		if to, err = strconv.Atoi(string(end)); err != nil {
			return nil, err
		}
	}
	if from > to || to > s.avail {
		return nil, fmt.Errorf("bench source: batches (%d, %d] not available", from, to)
	}
	if to == from+1 {
		return s.batches[from], nil
	}
	var rows []row.Row
	for _, bt := range s.batches[from:to] {
		rows = append(rows, bt...)
	}
	return rows, nil
}

type discardSink struct{}

func (discardSink) Description() string       { return "discard" }
func (discardSink) AddBatch(sink.Batch) error { return nil }

type benchClock struct{}

func (benchClock) NowMs() int64 { return 0 }

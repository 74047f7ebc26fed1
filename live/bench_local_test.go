package live_test

// End-to-end throughput through a real Apache Kafka broker (live.StartLocal)
// with the exactly-once sink:
//
//	DEDUPSIM_KAFKA=local go test ./live/ -run '^$' -bench LocalKafka -benchtime 1x -v
//
// The broker starts once; every iteration gets fresh 4-partition input and
// output topics, pre-produced (timer stopped) with benchLocalEvents events,
// ~1% of them duplicates of a recent key. The timed part is the engine in
// process (kafkasource -> dropDuplicatesWithinWatermark on id, 4 state
// partitions, memory store, OS checkpoint -> kafkasink.Transactional)
// running batches of at most benchLocalMaxOffsets offsets until every input
// offset is committed. The read_committed output check runs untimed.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink/kafkasink"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/live"
)

const (
	benchLocalEvents     = 500_000 // input records per iteration, duplicates included
	benchLocalDupEvery   = 100     // every 100th record is a duplicate (~1%)
	benchLocalPartitions = 4
	benchLocalMaxOffsets = 50_000 // maxOffsetsPerTrigger
	// benchLocalEpoch is the first event time in s (2023-11-14): rows at
	// event time 0 would sit on the initial watermark and count as late.
	benchLocalEpoch = 1_700_000_000
)

func BenchmarkLocalKafkaTransactional(b *testing.B) {
	if os.Getenv("DEDUPSIM_KAFKA") != "local" {
		b.Skip("real-Kafka benchmark: set DEDUPSIM_KAFKA=local to run it (make kafka-fetch fetches the jars)")
	}
	ctx, cancel := context.WithTimeout(b.Context(), 90*time.Second)
	l, err := live.StartLocal(ctx, live.LocalOptions{DataDir: b.TempDir()})
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if b.Failed() {
			b.Logf("last lines of %s:\n%s", l.LogPath(), l.LogTail(40))
		}
		l.Close()
	}()
	q, err := query.Parse("bench.yaml", []byte("dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\n"+
		"watermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 4\nstate_store: memory\n"))
	if err != nil {
		b.Fatal(err)
	}
	topicN := 0
	// The sub-benchmark is called once per b.N round; the broker outlives them.
	b.Run(fmt.Sprintf("events=%d", benchLocalEvents), func(b *testing.B) {
		var events int
		for range b.N {
			b.StopTimer()
			topicN++
			in, out := "bench-in-"+strconv.Itoa(topicN), "bench-out-"+strconv.Itoa(topicN)
			end, distinct := benchLocalSetup(b, l, in, out)
			events += benchLocalEvents
			b.StartTimer()
			batches := benchLocalRun(b, l, q, in, out, end)
			b.StopTimer()
			benchLocalCheck(b, l, out, distinct)
			b.Logf("%s: %d events (%d distinct) in %d batches", in, benchLocalEvents, distinct, batches)
			b.StartTimer()
		}
		b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	})
}

// benchLocalSetup creates the topics and produces the input with an
// idempotent, batching producer. It returns the input's end offsets (as
// the source's position JSON decodes) and the number of distinct ids.
func benchLocalSetup(b *testing.B, l *live.Local, in, out string) (map[string]int64, int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), 3*time.Minute)
	defer cancel()
	for _, name := range []string{in, out} {
		if err := l.CreateTopic(ctx, name, benchLocalPartitions); err != nil {
			b.Fatal(err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(l.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	end := map[string]int64{}
	distinct := 0
	errc := make(chan error, 1)
	for i := range benchLocalEvents {
		// Event time: 1000 distinct ids per second of event time, so a run
		// spans ~500 s and every batch moves the watermark; a duplicate
		// copies one of the last 500 ids (same ts), well inside the delay.
		id := distinct
		if i%benchLocalDupEvery == benchLocalDupEvery-1 && distinct > 0 {
			id = distinct - 1 - rng.IntN(min(distinct, 500))
		} else {
			distinct++
		}
		part := int32(i % benchLocalPartitions)
		end[strconv.Itoa(int(part))]++
		rec := &kgo.Record{Topic: in, Partition: part,
			Value: fmt.Appendf(nil, `{"id":"ev-%08d","ts":%d}`, id, benchLocalEpoch+id/1000)}
		cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	select {
	case err := <-errc:
		b.Fatal(err)
	default:
	}
	return end, distinct
}

// benchLocalRun runs the engine until its committed position is end and
// returns the number of batch executions.
func benchLocalRun(b *testing.B, l *live.Local, q *query.Query, in, out string, end map[string]int64) int {
	b.Helper()
	ckpt := fsys.NewOS(b.TempDir())
	src, err := kafkasource.New(kafkasource.Config{Brokers: l.Addrs(), Topic: in, StartingOffsets: "earliest",
		MaxOffsetsPerTrigger: benchLocalMaxOffsets, InitialOffsetsFS: ckpt, Timeout: 60 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	snk, err := kafkasink.NewTransactional(kafkasink.TransactionalConfig{
		Config: kafkasink.Config{Brokers: l.Addrs(), Topic: out, Timeout: 60 * time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	defer snk.Close()
	batches := 0
	e, err := engine.Start(engine.Config{Query: q, Checkpoint: ckpt, Sources: []source.Source{src}, Sink: snk,
		Clock: &clock{}, NewID: ids.Seeded(1), OnBatch: func(*engine.BatchRecord) { batches++ }})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Stop()
	if err := src.Resume(e.Position()[0]); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		ran, err := e.RunOnce()
		if err != nil {
			b.Fatal(err)
		}
		if benchLocalAtEnd(b, e.Position()[0], in, end) {
			return batches
		}
		if !ran {
			if time.Now().After(deadline) {
				b.Fatalf("engine stalled at %s, want %v", e.Position()[0], end)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// benchLocalAtEnd reports whether the committed position pos covers end.
func benchLocalAtEnd(b *testing.B, pos json.RawMessage, in string, end map[string]int64) bool {
	if len(pos) == 0 {
		return false
	}
	var m map[string]map[string]int64
	if err := json.Unmarshal(pos, &m); err != nil {
		b.Fatalf("position %s: %v", pos, err)
	}
	for p, off := range end {
		if m[in][p] < off {
			return false
		}
	}
	return true
}

// benchLocalCheck reads the output with read_committed: every distinct id
// exactly once.
func benchLocalCheck(b *testing.B, l *live.Local, out string, distinct int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), 2*time.Minute)
	defer cancel()
	recs, err := kafkasource.ReadAll(ctx, []kgo.Opt{kgo.SeedBrokers(l.Addrs()...)}, out, true)
	if err != nil {
		b.Fatal(err)
	}
	seen := make(map[string]struct{}, len(recs))
	for _, r := range recs {
		var v struct{ ID string }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			b.Fatalf("output record %s: %v", r.Value, err)
		}
		if _, dup := seen[v.ID]; dup {
			b.Fatalf("output holds %s twice", v.ID)
		}
		seen[v.ID] = struct{}{}
	}
	if len(seen) != distinct {
		b.Fatalf("output (read_committed) holds %d ids, want %d", len(seen), distinct)
	}
	b.Logf("output check (read_committed): %d records, %d distinct ids, no duplicates", len(recs), len(seen))
}

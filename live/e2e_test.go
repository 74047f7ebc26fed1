package live_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sink/kafkasink"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/live"
)

type clock struct{ ms int64 }

func (c *clock) NowMs() int64 { c.ms += 1000; return c.ms }

func startKfake(t *testing.T, topics map[string]int32) *live.Kfake {
	t.Helper()
	k, err := live.StartKfake(t.Context(), topics)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func producer(t *testing.T, k live.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produce writes one row per key to partition part, in one request.
func produce(t *testing.T, cl *kgo.Client, part int32, keys ...string) {
	t.Helper()
	var recs []*kgo.Record
	for _, k := range keys {
		recs = append(recs, &kgo.Record{Topic: "in", Partition: part, Value: fmt.Appendf(nil, `{"id":%q}`, k)})
	}
	if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func parseQuery(t *testing.T, text string) *query.Query {
	t.Helper()
	q, err := query.Parse("query.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// outputKeys reads the output topic with read_committed and returns the
// id of every row, sorted.
func outputKeys(t *testing.T, k live.Cluster) []string {
	t.Helper()
	recs, err := kafkasource.ReadAll(ctxT(t), []kgo.Opt{kgo.SeedBrokers(k.Addrs()...)}, "out", true)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		var v struct{ ID string }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("output record %s: %v", r.Value, err)
		}
		out = append(out, v.ID)
	}
	slices.Sort(out)
	return out
}

// closer is a sink the run owns.
type closer interface {
	sink.Sink
	Close()
}

// TestEngineCrashAfterSinkWrite runs the engine on a Kafka topic holding
// duplicates, kills it at after-sink-write of batch 1, and restarts it on
// the same checkpoint with new source and sink instances (a new
// process). Batch 1 is replayed with the same offsets, so the dedup
// output is the same rows; the transactional sink skips them (every key
// exactly once in the output, read_committed) while the plain sink writes
// them again.
func TestEngineCrashAfterSinkWrite(t *testing.T) {
	for _, kind := range []string{"transactional", "plain"} {
		t.Run(kind, func(t *testing.T) {
			k := startKfake(t, map[string]int32{"in": 2, "out": 2})
			runCrashAfterSinkWrite(t, k, kind)
		})
	}
}

// runCrashAfterSinkWrite is TestEngineCrashAfterSinkWrite on cluster k,
// which holds the topics "in" and "out" with 2 partitions each; kind is
// "transactional" or "plain".
func runCrashAfterSinkWrite(t *testing.T, k live.Cluster, kind string) {
	t.Helper()
	p := producer(t, k)
	q := parseQuery(t, "dedup: {api: dropDuplicates, keys: [id]}\n")
	ckpt := fsys.NewOS(t.TempDir())
	clk := &clock{}
	newID := ids.Seeded(7)

	var recs []*engine.BatchRecord
	start := func(crashAt int64) (*engine.Engine, func()) {
		t.Helper()
		src, err := kafkasource.New(kafkasource.Config{Brokers: k.Addrs(), Topic: "in", StartingOffsets: "earliest",
			InitialOffsetsFS: ckpt, Timeout: 15 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		base := kafkasink.Config{Brokers: k.Addrs(), Topic: "out", Timeout: 15 * time.Second}
		var out closer
		if kind == "transactional" {
			out, err = kafkasink.NewTransactional(kafkasink.TransactionalConfig{Config: base})
		} else {
			out, err = kafkasink.NewPlain(kafkasink.PlainConfig{Config: base})
		}
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.Start(engine.Config{Query: q, Checkpoint: ckpt, Sources: []source.Source{src}, Sink: out,
			Clock: clk, NewID: newID, OnBatch: func(r *engine.BatchRecord) { recs = append(recs, r) },
			Crash: func(p crashpoint.Point, id int64) bool { return p == crashpoint.AfterSinkWrite && id == crashAt }})
		if err != nil {
			t.Fatal(err)
		}
		if err := src.Resume(e.Position()[0]); err != nil {
			t.Fatal(err)
		}
		return e, func() { e.Stop(); src.Close(); out.Close() }
	}

	e, stop := start(1)
	produce(t, p, 0, "k1", "k2")
	produce(t, p, 1, "k3", "k1")
	if err := e.ProcessAllAvailable(); err != nil {
		t.Fatal(err)
	}
	produce(t, p, 0, "k4", "k2")
	produce(t, p, 1, "k5")
	var crash *engine.CrashError
	if err := e.ProcessAllAvailable(); !errors.As(err, &crash) || crash.BatchID != 1 {
		t.Fatalf("run 1 ended with %v, want a crash in batch 1", err)
	}
	stop()

	e, stop = start(-1)
	defer stop()
	if err := e.ProcessAllAvailable(); err != nil {
		t.Fatal(err)
	}
	produce(t, p, 1, "k6", "k1")
	if err := e.ProcessAllAvailable(); err != nil {
		t.Fatal(err)
	}

	var trail []string
	for _, r := range recs {
		var keys []string
		for _, o := range r.Output {
			var v struct{ ID string }
			json.Unmarshal(o.Data, &v)
			keys = append(keys, v.ID)
		}
		slices.Sort(keys)
		trail = append(trail, fmt.Sprintf("%d replay=%v crashed=%q in=%d out=%v", r.BatchID, r.Replay, r.Crashed, len(r.Input), keys))
	}
	wantTrail := []string{
		`0 replay=false crashed="" in=4 out=[k1 k2 k3]`,
		`1 replay=false crashed="after-sink-write" in=3 out=[k4 k5]`,
		`1 replay=true crashed="" in=3 out=[k4 k5]`,
		`2 replay=false crashed="" in=2 out=[k6]`,
	}
	if !slices.Equal(trail, wantTrail) {
		t.Fatalf("batches:\n  %s\nwant:\n  %s", strings.Join(trail, "\n  "), strings.Join(wantTrail, "\n  "))
	}
	// The replay read the same range as the first attempt.
	if a, b := recs[1].Progress.Sources[0], recs[2].Progress.Sources[0]; string(a.StartOffset) != string(b.StartOffset) || string(a.EndOffset) != string(b.EndOffset) {
		t.Fatalf("replay range %s..%s, first attempt %s..%s", b.StartOffset, b.EndOffset, a.StartOffset, a.EndOffset)
	}
	if got, want := string(recs[2].Progress.Sources[0].EndOffset), `{"in":{"0":4,"1":3}}`; got != want {
		t.Fatalf("batch 1 end offset %s, want %s", got, want)
	}

	want := []string{"k1", "k2", "k3", "k4", "k5", "k6"}
	if kind == "plain" {
		want = []string{"k1", "k2", "k3", "k4", "k4", "k5", "k5", "k6"}
	}
	if got := outputKeys(t, k); !slices.Equal(got, want) {
		t.Fatalf("output (read_committed) = %v, want %v", got, want)
	}
}

// TestDroppedAckDuplicateIsDeduplicated: the broker loses the ack of one
// produce request; a non-idempotent producer retries it and the topic
// keeps both copies, which the dedup operator drops
// (numDroppedDuplicateRows == 1). An idempotent producer's retry is
// deduplicated by the broker instead.
func TestDroppedAckDuplicateIsDeduplicated(t *testing.T) {
	for _, idempotent := range []bool{false, true} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) {
			k := startKfake(t, map[string]int32{"in": 1})
			opts := []kgo.Opt{kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond })}
			if !idempotent {
				opts = append(opts, kgo.DisableIdempotentWrite())
			}
			p := producer(t, k, opts...)
			produce(t, p, 0, "k0")
			h, err := k.DropProduceAck("in", 1)
			if err != nil {
				t.Fatal(err)
			}
			produce(t, p, 0, "k1")
			if h.Hits() != 1 {
				t.Fatalf("dropped acks = %d, want 1", h.Hits())
			}
			produce(t, p, 0, "k2")

			src, err := kafkasource.New(kafkasource.Config{Brokers: k.Addrs(), Topic: "in", StartingOffsets: "earliest", Timeout: 15 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			out := &sink.ForeachBatch{}
			var recs []*engine.BatchRecord
			e, err := engine.Start(engine.Config{Query: parseQuery(t, "dedup: {api: dropDuplicates, keys: [id]}\n"), Checkpoint: fsys.NewMem(),
				Sources: []source.Source{src}, Sink: out, Clock: &clock{}, NewID: ids.Seeded(1),
				OnBatch: func(r *engine.BatchRecord) { recs = append(recs, r) }})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Stop()
			if err := e.ProcessAllAvailable(); err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 {
				t.Fatalf("%d batches, want 1", len(recs))
			}
			copies, dropped := 4, int64(1)
			if idempotent {
				copies, dropped = 3, 0
			}
			r := recs[0]
			if len(r.Input) != copies {
				t.Fatalf("topic holds %d rows, want %d", len(r.Input), copies)
			}
			if got := r.Progress.StateOperators[0].CustomMetrics["numDroppedDuplicateRows"]; got != dropped {
				t.Fatalf("numDroppedDuplicateRows = %d, want %d", got, dropped)
			}
			if len(r.Output) != 3 {
				t.Fatalf("output %d rows, want 3", len(r.Output))
			}
		})
	}
}

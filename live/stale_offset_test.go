package live_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/sink/kafkasink"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/live"
)

// staleRun is an in-process engine over kfake's "in" and "out" (two
// partitions each): a dedup on id, the transactional Kafka sink, and a
// Kafka source whose waits between offset attempts are recorded, not
// slept.
type staleRun struct {
	e     *engine.Engine
	recs  []*engine.BatchRecord
	waits []time.Duration
	stop  func()
}

func startStaleRun(t *testing.T, k live.Cluster, ckpt fsys.FS) *staleRun {
	t.Helper()
	r := &staleRun{}
	src, err := kafkasource.New(kafkasource.Config{Brokers: k.Addrs(), Topic: "in", StartingOffsets: "earliest",
		InitialOffsetsFS: ckpt, Timeout: 15 * time.Second,
		Sleep: func(_ context.Context, d time.Duration) error { r.waits = append(r.waits, d); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	out, err := kafkasink.NewTransactional(kafkasink.TransactionalConfig{Config: kafkasink.Config{Brokers: k.Addrs(), Topic: "out", Timeout: 15 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	r.e, err = engine.Start(engine.Config{Query: parseQuery(t, "dedup: {api: dropDuplicates, keys: [id]}\n"), Checkpoint: ckpt,
		Sources: []source.Source{src}, Sink: out, Clock: &clock{}, NewID: ids.Seeded(7),
		OnBatch: func(b *engine.BatchRecord) { r.recs = append(r.recs, b) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Resume(r.e.Position()[0]); err != nil {
		t.Fatal(err)
	}
	r.stop = func() { r.e.Stop(); src.Close(); out.Close() }
	t.Cleanup(r.stop)
	return r
}

func (r *staleRun) trail() []string {
	var out []string
	for _, b := range r.recs {
		out = append(out, fmt.Sprintf("%d in=%d %s..%s", b.BatchID, len(b.Input), b.Progress.Sources[0].StartOffset, b.Progress.Sources[0].EndOffset))
	}
	return out
}

// TestEngineStaleLatestOffset: after batch 0 read partition 0 up to
// offset 3, the broker answers a stale end of 1 for it (a broker that was
// cut off, right after the network partition heals). Answered once, the
// source asks again 1 s later (fetchOffset.retryIntervalMs, not slept
// here), gets the real end, and the query goes on: every record read
// once, every key once in the output. Answered every time, the source
// asks exactly 3 times (fetchOffset.numRetries) and the batch fails with
// Spark's data-loss error, writing nothing; a restart on the checkpoint
// replays the same backwards range and fails again, as Spark's does.
func TestEngineStaleLatestOffset(t *testing.T) {
	for _, tc := range []struct {
		name  string
		times int // stale answers; < 0: all
	}{{"stale once", 1}, {"stays behind", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			k := startKfake(t, map[string]int32{"in": 2, "out": 2})
			p := producer(t, k)
			ckpt := fsys.NewOS(t.TempDir())
			r := startStaleRun(t, k, ckpt)
			produce(t, p, 0, "k1", "k2", "k3")
			produce(t, p, 1, "k4")
			if err := r.e.ProcessAllAvailable(); err != nil {
				t.Fatal(err)
			}
			produce(t, p, 0, "k5", "k1")
			produce(t, p, 1, "k6")
			se, err := k.StaleEnds("in", map[int32]int64{0: 1, 1: 2}, tc.times)
			if err != nil {
				t.Fatal(err)
			}
			err = r.e.ProcessAllAvailable()
			se.Stop()

			if tc.times > 0 {
				if err != nil {
					t.Fatalf("a stale answer once failed the query: %v", err)
				}
				if se.Answers() != 1 || !slices.Equal(r.waits, []time.Duration{time.Second}) {
					t.Fatalf("%d stale answers, waits %v; want 1 and one wait of 1s", se.Answers(), r.waits)
				}
				want := []string{`0 in=4 null..{"in":{"0":3,"1":1}}`, `1 in=3 {"in":{"0":3,"1":1}}..{"in":{"0":5,"1":2}}`}
				if got := r.trail(); !slices.Equal(got, want) {
					t.Fatalf("batches %v, want %v", got, want)
				}
				if got, want := outputKeys(t, k), []string{"k1", "k2", "k3", "k4", "k5", "k6"}; !slices.Equal(got, want) {
					t.Fatalf("output %v, want %v", got, want)
				}
				return
			}

			wantMsg := []string{"[KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED]", "Reason: Partition in-0 offset was changed from 3 to 1."}
			for _, w := range append(wantMsg, "The latest offset was still 1 after 3 attempts (fetchOffset.numRetries 3, fetchOffset.retryIntervalMs 1000).") {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("error %v, want it to say %q", err, w)
				}
			}
			if se.Answers() != 3 || !slices.Equal(r.waits, []time.Duration{time.Second, time.Second}) {
				t.Fatalf("%d stale answers, waits %v; want exactly 3 attempts, 1s apart", se.Answers(), r.waits)
			}
			if got, want := outputKeys(t, k), []string{"k1", "k2", "k3", "k4"}; !slices.Equal(got, want) {
				t.Fatalf("output %v, want batch 0's only", got)
			}
			r.stop()
			// The broker answers the truth again, but batch 1 was planned
			// with the stale end: the restart replays it and fails again.
			r2 := startStaleRun(t, k, ckpt)
			err = r2.e.ProcessAllAvailable()
			for _, w := range wantMsg {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("restart: error %v, want it to say %q", err, w)
				}
			}
		})
	}
}

func TestStaleEndsRejects(t *testing.T) {
	k := startKfake(t, map[string]int32{"in": 1})
	for _, tc := range []struct {
		topic string
		ends  map[int32]int64
		n     int
	}{
		{"", map[int32]int64{0: 1}, 1},
		{"in", nil, 1},
		{"in", map[int32]int64{0: 1}, 0},
		{"in", map[int32]int64{-1: 1}, 1},
		{"in", map[int32]int64{0: -1}, 1},
	} {
		if _, err := k.StaleEnds(tc.topic, tc.ends, tc.n); err == nil || !strings.Contains(err.Error(), "live: StaleEnds") {
			t.Errorf("StaleEnds(%q, %v, %d) = %v, want refused", tc.topic, tc.ends, tc.n, err)
		}
	}
}

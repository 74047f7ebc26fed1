package kafkasink_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sink/kafkasink"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/live"
)

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

func batch(id int64, vals ...string) sink.Batch {
	b := sink.Batch{ID: id, QueryID: "query-1", RunID: fmt.Sprintf("run-%d", id)}
	for _, v := range vals {
		b.Rows = append(b.Rows, row.Row{Data: []byte(v)})
	}
	return b
}

// read returns "batchId:value" for every record of topic.
func read(t *testing.T, k *live.Kfake, topic string, readCommitted bool) []string {
	t.Helper()
	recs, err := kafkasource.ReadAll(ctxT(t), []kgo.Opt{kgo.SeedBrokers(k.Addrs()...)}, topic, readCommitted)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, r := range recs {
		id := "?"
		for _, h := range r.Headers {
			if h.Key == kafkasink.HeaderBatchID {
				id = string(h.Value)
			}
		}
		out = append(out, id+":"+string(r.Value))
	}
	slices.Sort(out)
	return out
}

func newTxn(t *testing.T, k *live.Kfake, cfg kafkasink.TransactionalConfig) *kafkasink.Transactional {
	t.Helper()
	cfg.Brokers, cfg.Topic, cfg.Timeout = k.Addrs(), "out", 15*time.Second
	s, err := kafkasink.NewTransactional(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// The plain sink is at-least-once: a replayed batch is produced again.
func TestPlainDuplicatesReplays(t *testing.T) {
	k := startKfake(t, map[string]int32{"out": 2})
	s, err := kafkasink.NewPlain(kafkasink.PlainConfig{Config: kafkasink.Config{Brokers: k.Addrs(), Topic: "out"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, b := range []sink.Batch{batch(0, "a", "b"), batch(1, "c"), batch(1, "c"), batch(2)} {
		if err := s.AddBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := read(t, k, "out", true), []string{"0:a", "0:b", "1:c", "1:c"}; !slices.Equal(got, want) {
		t.Fatalf("out = %v, want %v", got, want)
	}
}

// The transactional sink commits each batch once per app id: replays to
// the same instance and to a new instance are skipped, and the markers
// are in their own topic.
func TestTransactionalSkipsCommittedBatches(t *testing.T) {
	k := startKfake(t, map[string]int32{"out": 2})
	s := newTxn(t, k, kafkasink.TransactionalConfig{}) // app id: the query id
	for _, b := range []sink.Batch{batch(0, "a", "b"), batch(1, "c"), batch(1, "c"), batch(2)} {
		if err := s.AddBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	if s.AppID() != "query-1" || s.Commits != 3 || s.Skipped != 1 {
		t.Fatalf("app %q commits %d skipped %d, want query-1 3 1", s.AppID(), s.Commits, s.Skipped)
	}
	s.Close()

	s2 := newTxn(t, k, kafkasink.TransactionalConfig{AppID: "query-1"})
	if s2.LastCommitted() != 2 {
		t.Fatalf("new instance found batch %d committed, want 2", s2.LastCommitted())
	}
	for _, b := range []sink.Batch{batch(1, "c"), batch(2), batch(3, "d")} {
		if err := s2.AddBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	if s2.Skipped != 2 || s2.Commits != 1 {
		t.Fatalf("new instance skipped %d committed %d, want 2 1", s2.Skipped, s2.Commits)
	}
	if got, want := read(t, k, "out", true), []string{"0:a", "0:b", "1:c", "3:d"}; !slices.Equal(got, want) {
		t.Fatalf("out = %v, want %v", got, want)
	}
	markers := read(t, k, "out"+kafkasink.MarkerTopicSuffix, true)
	if want := []string{"0:0", "1:1", "2:2", "3:3"}; !slices.Equal(markers, want) {
		t.Fatalf("markers = %v, want %v", markers, want)
	}

	// Another app id has its own history.
	s3 := newTxn(t, k, kafkasink.TransactionalConfig{AppID: "other"})
	if s3.LastCommitted() != -1 {
		t.Fatalf("other app found batch %d", s3.LastCommitted())
	}
}

// A second instance with the same app id fences the first: the zombie's
// next batch fails and nothing of it becomes visible to read_committed.
func TestTransactionalFencesZombie(t *testing.T) {
	k := startKfake(t, map[string]int32{"out": 1})
	a := newTxn(t, k, kafkasink.TransactionalConfig{AppID: "app"})
	if err := a.AddBatch(batch(0, "a0")); err != nil {
		t.Fatal(err)
	}
	b := newTxn(t, k, kafkasink.TransactionalConfig{AppID: "app"})
	err := a.AddBatch(batch(1, "zombie"))
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("zombie AddBatch error = %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	t.Logf("zombie: %v", err)
	if err := a.AddBatch(batch(2, "zombie")); err == nil {
		t.Fatal("a fenced sink accepted another batch")
	}
	for _, bt := range []sink.Batch{batch(0, "a0"), batch(1, "b1")} {
		if err := b.AddBatch(bt); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := read(t, k, "out", true), []string{"0:a0", "1:b1"}; !slices.Equal(got, want) {
		t.Fatalf("out = %v, want %v", got, want)
	}
}

// A failed produce aborts the transaction: the rows never become visible,
// the sink refuses further batches, and a new instance commits the batch.
func TestTransactionalAbortsOnFailure(t *testing.T) {
	k := startKfake(t, map[string]int32{"out": 1})
	s := newTxn(t, k, kafkasink.TransactionalConfig{AppID: "app"})
	if err := s.AddBatch(batch(0, "a")); err != nil {
		t.Fatal(err)
	}
	h := k.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.InvalidRecord})
	if err := s.AddBatch(batch(1, "lost")); err == nil || !strings.Contains(err.Error(), "produce transaction") {
		t.Fatalf("AddBatch with a failing produce: %v", err)
	}
	if h.Hits() != 1 {
		t.Fatalf("fault hits = %d", h.Hits())
	}
	if err := s.AddBatch(batch(1, "b")); err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Fatalf("broken sink: %v", err)
	}
	s2 := newTxn(t, k, kafkasink.TransactionalConfig{AppID: "app"})
	if s2.LastCommitted() != 0 {
		t.Fatalf("after the abort, batch %d is committed, want 0", s2.LastCommitted())
	}
	if err := s2.AddBatch(batch(1, "b")); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, k, "out", true), []string{"0:a", "1:b"}; !slices.Equal(got, want) {
		t.Fatalf("out = %v, want %v", got, want)
	}
}

// PerRun (the seed article's mistake): a new run id is a new app id, so a
// replay after a restart is written again.
func TestTransactionalPerRunDuplicates(t *testing.T) {
	k := startKfake(t, map[string]int32{"out": 1})
	s := newTxn(t, k, kafkasink.TransactionalConfig{PerRun: true})
	b := batch(0, "a")
	if err := s.AddBatch(b); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := newTxn(t, k, kafkasink.TransactionalConfig{PerRun: true})
	b.RunID = "run-after-restart"
	if err := s2.AddBatch(b); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, k, "out", true), []string{"0:a", "0:a"}; !slices.Equal(got, want) {
		t.Fatalf("out = %v, want %v", got, want)
	}
}

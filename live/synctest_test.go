package live_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/sink/kafkasink"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/live"
)

// The whole path — non-idempotent producer with a dropped ack, Kafka
// source, dedup, transactional sink — inside a testing/synctest bubble on
// kfake's VirtualNetwork: franz-go's retry backoff and fetch waits run on
// the fake clock, so fault tests cost no wall time.
func TestVirtualNetworkInSyncTest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var vn kfake.VirtualNetwork
		k, err := live.StartKfake(t.Context(), map[string]int32{"in": 1, "out": 1}, kfake.ListenFn(vn.Listen), kfake.Ports(9092))
		if err != nil {
			t.Fatal(err)
		}
		defer k.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		dial := kgo.Dialer(vn.DialContext)

		p, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs()...), dial, kgo.DisableIdempotentWrite())
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if _, err := k.DropProduceAck("in", 1); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for _, id := range []string{"k0", "k1", "k2"} {
			if err := p.ProduceSync(ctx, &kgo.Record{Topic: "in", Value: fmt.Appendf(nil, `{"id":%q}`, id)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if time.Since(start) == 0 {
			t.Fatal("the retry took no fake time: was the ack dropped?")
		}

		src, err := kafkasource.New(kafkasource.Config{Brokers: k.Addrs(), Topic: "in", StartingOffsets: "earliest", Dialer: vn.DialContext})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		out, err := kafkasink.NewTransactional(kafkasink.TransactionalConfig{AppID: "app",
			Config: kafkasink.Config{Brokers: k.Addrs(), Topic: "out", Dialer: vn.DialContext}})
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
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
		if len(recs) != 1 || len(recs[0].Input) != 4 || recs[0].Progress.StateOperators[0].CustomMetrics["numDroppedDuplicateRows"] != 1 {
			t.Fatalf("batches %d, input %d, want 1 batch of 4 rows with 1 duplicate dropped", len(recs), len(recs[0].Input))
		}
		got, err := kafkasource.ReadAll(ctx, []kgo.Opt{kgo.SeedBrokers(k.Addrs()...), dial}, "out", true)
		if err != nil {
			t.Fatal(err)
		}
		var vals []string
		for _, r := range got {
			vals = append(vals, string(r.Value))
		}
		slices.Sort(vals)
		if want := []string{`{"id":"k0"}`, `{"id":"k1"}`, `{"id":"k2"}`}; !slices.Equal(vals, want) {
			t.Fatalf("out = %v, want %v", vals, want)
		}
	})
}

package kafkasink_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine/sink/kafkasink"
	"github.com/dedupsim/dedupsim/live"
)

// App ids sharing a marker topic: another app's open transaction holds the
// marker topic's last stable offset below a marker this app committed
// after it. A new instance must wait for that transaction to end rather
// than read up to the LSO, miss its own marker and write the batch again.
func TestTransactionalWaitsForOtherAppsOpenTransaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var vn kfake.VirtualNetwork
		k, err := live.StartKfake(t.Context(), map[string]int32{"out": 1}, kfake.ListenFn(vn.Listen), kfake.Ports(9092))
		if err != nil {
			t.Fatal(err)
		}
		defer k.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cfg := func(app string) kafkasink.TransactionalConfig {
			return kafkasink.TransactionalConfig{AppID: app, Config: kafkasink.Config{Brokers: k.Addrs(), Topic: "out", Dialer: vn.DialContext}}
		}

		a, err := kafkasink.NewTransactional(cfg("a")) // creates the marker topic
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		other, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs()...), kgo.Dialer(vn.DialContext), kgo.TransactionalID("other-writer"))
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if err := other.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := other.ProduceSync(ctx, &kgo.Record{Topic: "out" + kafkasink.MarkerTopicSuffix, Key: []byte("other"), Value: []byte("0")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := a.AddBatch(batch(0, "a0")); err != nil {
			t.Fatal(err)
		}
		a.Close()

		type opened struct {
			s   *kafkasink.Transactional
			err error
		}
		done := make(chan opened, 1)
		go func() {
			s, err := kafkasink.NewTransactional(cfg("a"))
			done <- opened{s, err}
		}()
		synctest.Wait()
		select {
		case o := <-done:
			if o.s != nil {
				o.s.Close()
			}
			t.Fatalf("the new instance opened while another transaction was open in the marker topic (last committed %d, err %v)", o.s.LastCommitted(), o.err)
		default:
		}
		if err := other.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
		o := <-done
		if o.err != nil {
			t.Fatal(o.err)
		}
		defer o.s.Close()
		if o.s.LastCommitted() != 0 {
			t.Fatalf("new instance found batch %d committed, want 0", o.s.LastCommitted())
		}
	})
}

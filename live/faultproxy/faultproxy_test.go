package faultproxy

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
)

// TestFaultProxyLosesAck: through the fault proxy, an armed drop loses
// the response of the next produce request after the broker appended it;
// the non-idempotent client retries and the log holds the record twice,
// at the end offset and just after it. Disarmed, a send is appended once.
// (kfake stands in for the broker: the proxy does not know which.)
func TestFaultProxyLosesAck(t *testing.T) {
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	fp := New()
	defer fp.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.ListenAddrs()...), kgo.Dialer(fp.Dial), kgo.DisableIdempotentWrite(),
		kgo.MaxProduceRequestsInflightPerBroker(1), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	send := func(v string) int64 {
		t.Helper()
		r := &kgo.Record{Topic: "t", Value: []byte(v)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		return r.Offset
	}
	if off := send("a"); off != 0 {
		t.Fatalf("first send at offset %d", off)
	}
	md, err := kadm.NewClient(cl).Metadata(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	disarm, err := fp.DropNext("t", md.Topics["t"].ID)
	if err != nil {
		t.Fatal(err)
	}
	off := send("b")
	if hits := disarm(); hits != 1 || off != 2 {
		t.Fatalf("armed send: %d responses dropped, acked at offset %d; want 1 and 2 (the lost-ack write at 1)", hits, off)
	}
	if off := send("c"); off != 3 {
		t.Fatalf("disarmed send at offset %d, want 3", off)
	}
	recs, err := kafkasource.ReadAll(ctx, []kgo.Opt{kgo.SeedBrokers(k.ListenAddrs()...)}, "t", true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Value))
	}
	if want := []string{"a", "b", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("log %q, want %q", got, want)
	}
}

// TestIsProduceResponse: the toxic's test of a response chunk, on the
// layouts of Produce v13 (topic id), v9-v12 (compact name) and v3-v8
// (int16 name), and on what it must let pass.
func TestIsProduceResponse(t *testing.T) {
	id := [16]byte{0xa1, 0xb5, 0xeb, 0x7b, 0x9b, 0x36, 0x19, 0xe6, 0x45, 0xe2, 0xf4, 0xcc, 0xa3, 0xc8, 1, 2}
	head := []byte{0, 0, 0, 0x3e, 0, 0, 0, 2}
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	for _, tc := range []struct {
		name string
		data []byte
		want bool
	}{
		{"v13 topic id", cat(head, []byte{0, 2}, id[:], []byte{2, 0, 0, 0, 0}), true},
		{"v13 other id", cat(head, []byte{0, 2}, make([]byte, 16)), false},
		{"v9 compact name", cat(head, []byte{0, 2, 2, 't', 2}), true},
		{"v9 other name", cat(head, []byte{0, 2, 2, 'u', 2}), false},
		{"v8 int16 name", cat(head, []byte{0, 0, 0, 1, 0, 1, 't'}), true},
		{"metadata (throttle time first)", cat(head, []byte{0, 0, 0, 0, 0, 2, 0, 0, 0, 1}), false},
		{"short", head[:6], false},
		{"empty", nil, false},
	} {
		if got := IsProduceResponse(tc.data, "t", id[:]); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if IsProduceResponse(cat(head, []byte{0, 2, 1}), "", nil) {
		t.Error("an empty topic name matched")
	}
}

// FuzzIsProduceResponse: any chunk from the broker is tested without a
// panic, and a match names the topic or its id.
func FuzzIsProduceResponse(f *testing.F) {
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 2, 0, 2, 2, 't', 2}, "t")
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 2, 0, 0, 0, 1, 0, 1, 't'}, "t")
	f.Add([]byte{}, "")
	f.Fuzz(func(t *testing.T, data []byte, topic string) {
		id := make([]byte, 16)
		if IsProduceResponse(data, topic, id) && !bytes.Contains(data, []byte(topic)) && !bytes.Contains(data, id) {
			t.Fatalf("%x matched %q without holding it", data, topic)
		}
	})
}

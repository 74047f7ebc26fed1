// Package faultproxy loses produce acknowledgements against a real Kafka
// broker: Shopify's toxiproxy, embedded, with one proxy per broker address
// that a producer dials instead of the broker (Dial as its kgo.Dialer),
// and a toxic of ours on the broker-to-client stream that, once armed,
// drops the next produce response for a topic (written only after the
// broker appended the batch) with its connection. A non-idempotent
// producer then retries on a new connection and the log really holds the
// batch twice (live's duplicate-append; kfake does the same with
// live.Kfake.DropProduceAck).
package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// dropAckToxic is the toxic type name.
const dropAckToxic = "dedupsim_drop_ack"

func init() { toxics.Register(dropAckToxic, new(dropAck)) }

// dropAck drops, with its connection, the next Count produce responses
// for Topic the broker sends; Hits counts them. One instance serves every
// connection of its proxy; other responses pass.
type dropAck struct {
	Topic   string `json:"topic"`
	TopicID []byte `json:"topicId"` // 16 bytes
	Count   int32  `json:"count"`
	Hits    int32  `json:"-"`
}

func (t *dropAck) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if IsProduceResponse(c.Data, t.Topic, t.TopicID) && atomic.AddInt32(&t.Count, -1) >= 0 {
				atomic.AddInt32(&t.Hits, 1)
				stub.Close() // the response is lost with its connection
				return
			}
			stub.Output <- c
		}
	}
}

// IsProduceResponse says whether data starts a Produce response whose
// first topic is topic (or, from Produce v13, the topic id id): after the
// size and the correlation id, a flexible response (v9+, what Kafka 4 and
// franz-go speak) has an empty tag buffer, the topics' compact array
// length and the first topic's compact string name (v9-v12) or its 16-byte
// id (v13+); an older one an int32 array length and an int16 string
// length. Other responses (Metadata starts with its throttle time, an
// int32 that is 0 unless throttled) do not match.
func IsProduceResponse(data []byte, topic string, id []byte) bool {
	n := len(topic)
	if len(data) < 10 || n == 0 || n > 126 {
		return false
	}
	if data[8] == 0 && data[9] >= 2 && data[9] < 0x80 {
		rest := data[10:]
		if len(id) == 16 && len(rest) >= 16 && bytes.Equal(rest[:16], id) {
			return true
		}
		if len(rest) >= 1+n && int(rest[0]) == n+1 && string(rest[1:1+n]) == topic {
			return true
		}
	}
	return len(data) >= 14+n && data[8] == 0 && data[9] == 0 && data[10] == 0 && data[11] >= 1 &&
		data[12] == 0 && int(data[13]) == n && string(data[14:14+n]) == topic
}

// Proxy is a set of toxiproxy proxies in this process, one per
// broker address, created as the client dials.
type Proxy struct {
	srv *toxiproxy.ApiServer

	mu      sync.Mutex
	proxies map[string]*toxiproxy.Proxy // broker address -> its proxy
	closed  bool
}

// New returns a Proxy with no broker yet.
func New() *Proxy {
	m := toxiproxy.NewMetricsContainer(prometheus.NewRegistry())
	return &Proxy{srv: toxiproxy.NewServer(m, zerolog.Nop()), proxies: map[string]*toxiproxy.Proxy{}}
}

// Dial is the client's kgo.Dialer: it connects to addr's proxy, started on
// a free 127.0.0.1 port at the first dial.
func (f *Proxy) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	p, err := f.proxyFor(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, network, p.Listen)
}

func (f *Proxy) proxyFor(addr string) (*toxiproxy.Proxy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, fmt.Errorf("faultproxy closed")
	}
	if p, ok := f.proxies[addr]; ok {
		return p, nil
	}
	p := toxiproxy.NewProxy(f.srv, fmt.Sprintf("broker-%d", len(f.proxies)), "127.0.0.1:0", addr)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("faultproxy for %s: %w", addr, err)
	}
	f.proxies[addr] = p
	return p, nil
}

// DropNext arms every proxy to drop the next produce response for topic
// (whose id is id) from its broker; disarm removes the toxics and says how
// many responses were dropped.
func (f *Proxy) DropNext(topic string, id [16]byte) (disarm func() int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var armed []*toxiproxy.Proxy
	var ts []*dropAck
	disarm = func() int {
		hits := 0
		for i, p := range armed {
			p.Toxics.RemoveToxic(context.Background(), dropAckToxic)
			hits += int(atomic.LoadInt32(&ts[i].Hits))
		}
		return hits
	}
	for _, p := range f.proxies {
		spec, _ := json.Marshal(map[string]any{"name": dropAckToxic, "type": dropAckToxic, "stream": "downstream",
			"attributes": map[string]any{"topic": topic, "topicId": id[:], "count": 1}})
		w, err := p.Toxics.AddToxicJson(bytes.NewReader(spec))
		if err != nil {
			disarm()
			return nil, fmt.Errorf("faultproxy: %w", err)
		}
		armed = append(armed, p)
		ts = append(ts, w.Toxic.(*dropAck))
	}
	return disarm, nil
}

// Close stops every proxy and closes its connections.
func (f *Proxy) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for _, p := range f.proxies {
		p.Stop()
	}
}

// Package live provides the Kafka clusters that dedupsim's live runs talk
// to over the Kafka wire protocol: the engine's Kafka source
// (engine/source/kafkasource) and sinks (engine/sink/kafkasink) are
// pointed at a Cluster's bootstrap addresses.
//
// This file holds the in-process provider, Kfake: franz-go's kfake fake
// cluster (one broker, transactions, read_committed, fault injection),
// fast enough for unit tests and simulator-style runs. local.go holds
// Local, a real Apache Kafka 4.x broker started as a JVM process from
// Maven-resolved jars (KRaft, single combined node), for runs whose answer
// must come from the real broker's transaction coordinator and log. An
// external cluster given only by its bootstrap addresses is planned on the
// same Cluster interface.
package live

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster is a running Kafka cluster.
type Cluster interface {
	// Addrs are the bootstrap addresses ("host:port").
	Addrs() []string
	// Close stops the cluster (or, for a cluster the provider did not
	// start, releases it).
	Close() error
}

// Kfake is an in-process kfake cluster with one broker.
type Kfake struct {
	c *kfake.Cluster
}

var _ Cluster = (*Kfake)(nil)

// StartKfake starts a one-broker kfake cluster listening on 127.0.0.1 with
// the given topics (name → partitions) created. More kfake options may be
// passed, for instance kfake.ListenFn(vn.Listen) to serve a
// kfake.VirtualNetwork inside a testing/synctest bubble (clients then dial
// with vn.DialContext) or kfake.BrokerConfigs. kfake's own defaults are
// otherwise kept: auto topic creation is off, so a misspelt topic fails.
func StartKfake(ctx context.Context, topics map[string]int32, opts ...kfake.Opt) (*Kfake, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	all := []kfake.Opt{kfake.NumBrokers(1)}
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		n := topics[name]
		if name == "" || n < 1 {
			return nil, fmt.Errorf("live: kfake topic %q with %d partitions", name, n)
		}
		all = append(all, kfake.SeedTopics(n, name))
	}
	c, err := kfake.NewCluster(append(all, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("live: start kfake: %w", err)
	}
	return &Kfake{c: c}, nil
}

// Addrs returns the broker's listen address.
func (k *Kfake) Addrs() []string { return k.c.ListenAddrs() }

// Close stops the cluster; clients still connected see their connections
// close.
func (k *Kfake) Close() error {
	k.c.Close()
	return nil
}

// Cluster is the kfake cluster itself, for anything this type does not
// wrap (topic moves, leader shuffles, Compact, SleepControl, ...).
func (k *Kfake) Cluster() *kfake.Cluster { return k.c }

// ControlKey runs fn on the next request with the given key; see
// kfake.Cluster.ControlKey. fn returns (response, nil, true) to answer,
// (nil, err, true) to close the client's connection, (nil, nil, true) to
// swallow the request, or (nil, nil, false) to let the broker (or the next
// control) handle it. A control that handles a request is dropped unless
// it calls k.Cluster().KeepControl().
func (k *Kfake) ControlKey(key kmsg.Key, fn func(kmsg.Request) (kmsg.Response, error, bool)) {
	k.c.ControlKey(int16(key), fn)
}

// Fault installs declarative faults; see kfake.Fault.
func (k *Kfake) Fault(fs ...kfake.Fault) *kfake.FaultHandle { return k.c.Fault(fs...) }

// DropProduceAck makes the broker lose the acknowledgement of the next n
// produce requests to topic (any partition): each request is appended to
// the log, then answered REQUEST_TIMED_OUT, which is what a client sees
// when the ack is lost after the write. franz-go retries the request. A
// non-idempotent producer (kgo.DisableIdempotentWrite) thereby writes its
// batch twice and the topic keeps both copies; an idempotent producer's
// retry carries the same sequence numbers and the broker keeps one. The
// handle's Wait and Hits report how many acks were dropped.
func (k *Kfake) DropProduceAck(topic string, n int) (*kfake.FaultHandle, error) {
	if topic == "" || n < 1 {
		return nil, errors.New("live: DropProduceAck needs a topic and n >= 1")
	}
	return k.c.Fault(kfake.Fault{
		Keys:  []kmsg.Key{kmsg.Produce},
		Topic: topic,
		Err:   kerr.RequestTimedOut,
		Count: n,
	}), nil
}

// StaleEnds makes the broker answer the next n requests for the latest
// offsets of topic (ListOffsets at timestamp -1, under either isolation
// level) with ends instead of what its log holds, as a broker that was
// cut off from the cluster answers a stale end for a while after the
// network partition heals. ends names the answer for every partition (one
// left out is answered UNKNOWN_TOPIC_OR_PARTITION); n < 0 answers every
// such request until Stop. Requests for other offsets (the log start) or
// naming another topic reach the broker as usual.
func (k *Kfake) StaleEnds(topic string, ends map[int32]int64, n int) (*StaleEnds, error) {
	if topic == "" || len(ends) == 0 || n == 0 {
		return nil, errors.New("live: StaleEnds needs a topic, the ends to answer and n != 0")
	}
	for p, o := range ends {
		if p < 0 || o < 0 {
			return nil, fmt.Errorf("live: StaleEnds: partition %d offset %d", p, o)
		}
	}
	se := &StaleEnds{ends: maps.Clone(ends), left: n}
	k.c.ControlKey(int16(kmsg.ListOffsets), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		se.mu.Lock()
		defer se.mu.Unlock()
		if se.stopped || se.left == 0 {
			k.c.DropControl()
			return nil, nil, false
		}
		req := kreq.(*kmsg.ListOffsetsRequest)
		if !latestOf(req, topic) {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.Timestamp, sp.LeaderEpoch = -1, -1
				if o, ok := se.ends[rp.Partition]; ok {
					sp.Offset = o
				} else {
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		se.answers++
		if se.left > 0 {
			se.left--
		}
		if se.left != 0 {
			k.c.KeepControl()
		}
		return resp, nil, true
	})
	return se, nil
}

// StaleEnds is a StaleEnds fault in place.
type StaleEnds struct {
	mu      sync.Mutex
	ends    map[int32]int64
	left    int // answers still to give; < 0: until Stop
	answers int
	stopped bool
}

// Answers is how many requests were answered with the stale ends so far.
func (s *StaleEnds) Answers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.answers
}

// Stop lets every later request reach the broker.
func (s *StaleEnds) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
}

// latestOf reports whether req asks only for latest offsets of topic.
func latestOf(req *kmsg.ListOffsetsRequest, topic string) bool {
	for _, rt := range req.Topics {
		if rt.Topic != topic {
			return false
		}
		for _, rp := range rt.Partitions {
			if rp.Timestamp != -1 {
				return false
			}
		}
	}
	return len(req.Topics) > 0
}

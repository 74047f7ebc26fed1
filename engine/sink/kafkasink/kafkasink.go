// Package kafkasink writes micro-batches to a Kafka topic, two ways:
//
//   - Plain produces every row of every delivery, like Spark's Kafka sink:
//     at-least-once. A batch the engine replays after a crash (same batch
//     id, same rows) is produced again, so its rows appear twice.
//   - Transactional writes each batch in one Kafka transaction together
//     with a commit marker (key: app id, value: batch id) in a marker
//     topic, and skips batches whose id is at or below the highest
//     committed marker for its app id: replays are idempotent, as with
//     Delta's txnAppId/txnVersion. Its transactional id is derived from
//     the app id, so a second instance with the same app id fences the
//     first (a zombie driver can no longer commit).
//
// Every produced row carries the header dedupsim.batchId (the batch id,
// decimal), for analysis; Spark's sink adds no such header.
package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/sink"
)

// HeaderBatchID is the header carrying the batch id on every produced row.
const HeaderBatchID = "dedupsim.batchId"

// DefaultTimeout bounds one AddBatch.
const DefaultTimeout = 30 * time.Second

// Config is what both sinks need.
type Config struct {
	// Brokers are the bootstrap addresses (required).
	Brokers []string
	// Topic receives the rows (required); it must exist.
	Topic string
	// Key gives a row's record key; nil produces keyless records.
	Key func(row.Row) []byte
	// Timeout bounds one AddBatch (default 30 s).
	Timeout time.Duration
	// Dialer replaces TCP, e.g. kfake.VirtualNetwork.DialContext.
	Dialer func(ctx context.Context, network, host string) (net.Conn, error)
	// ClientOpts are added to the sink's franz-go client.
	ClientOpts []kgo.Opt
}

func (c *Config) check(kind string) error {
	if len(c.Brokers) == 0 {
		return fmt.Errorf("kafkasink: %s: no brokers", kind)
	}
	if c.Topic == "" {
		return fmt.Errorf("kafkasink: %s: no topic", kind)
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return nil
}

func (c *Config) baseOpts() []kgo.Opt {
	// Metadata refreshed after 100 ms, not franz-go's 5 s, as the Java
	// producer's retry.backoff.ms (see kafkasource).
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.MetadataMinAge(100 * time.Millisecond)}
	if c.Dialer != nil {
		opts = append(opts, kgo.Dialer(c.Dialer))
	}
	return opts
}

func (c *Config) records(b sink.Batch) []*kgo.Record {
	id := []byte(strconv.FormatInt(b.ID, 10))
	recs := make([]*kgo.Record, len(b.Rows))
	for i, r := range b.Rows {
		rec := &kgo.Record{Topic: c.Topic, Value: r.Data, Headers: []kgo.RecordHeader{{Key: HeaderBatchID, Value: id}}}
		if c.Key != nil {
			rec.Key = c.Key(r)
		}
		recs[i] = rec
	}
	return recs
}

// PlainConfig configures a Plain sink.
type PlainConfig struct {
	Config
	// DisableIdempotentWrite produces without the idempotent producer (at
	// most one request in flight, no broker-side dedup of a retried
	// request): a produce retried after a lost acknowledgement can then
	// leave two copies.
	DisableIdempotentWrite bool
}

// Plain is the at-least-once sink.
type Plain struct {
	cfg PlainConfig
	cl  *kgo.Client
}

// NewPlain creates a Plain sink. It does not contact the cluster.
func NewPlain(cfg PlainConfig) (*Plain, error) {
	if err := cfg.check("plain"); err != nil {
		return nil, err
	}
	opts := cfg.baseOpts()
	if cfg.DisableIdempotentWrite {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(append(opts, cfg.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: %w", err)
	}
	return &Plain{cfg: cfg, cl: cl}, nil
}

func (s *Plain) Description() string { return "KafkaSink[" + s.cfg.Topic + "]" }

// AddBatch produces the batch's rows and waits for their acknowledgements.
func (s *Plain) AddBatch(b sink.Batch) error {
	if len(b.Rows) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	if err := s.cl.ProduceSync(ctx, s.cfg.records(b)...).FirstErr(); err != nil {
		return fmt.Errorf("kafkasink: batch %d to %s: %w", b.ID, s.cfg.Topic, err)
	}
	return nil
}

// Close releases the client.
func (s *Plain) Close() { s.cl.Close() }

var _ sink.Sink = (*Plain)(nil)

// errBroken wraps the error that left a Transactional sink unusable.
var errBroken = errors.New("kafkasink: transactional sink is unusable after a failed transaction; start a new instance, which re-reads the commit markers")

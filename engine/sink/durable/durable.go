// Package durable builds the sink of the engine process (`dedupsim engine
// --sink FLAG`), which must survive SIGKILL: a Pebble table in a folder
// (package pebblesink) or an output topic (package kafkasink). Which flags
// exist, which kind each realises and on which store is package sink's
// descriptors' business; this package only knows the two stores, so a new
// kind kept on an existing store needs no change here.
package durable

import (
	"fmt"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sink/kafkasink"
	"github.com/dedupsim/dedupsim/engine/sink/pebblesink"
	"github.com/dedupsim/dedupsim/internal/suggest"
)

// Config is where the sink writes.
type Config struct {
	// Brokers, Topic and Timeout: the output topic (Kafka store).
	Brokers []string
	Topic   string
	Timeout time.Duration
	// TableDir is the Pebble table's folder (Pebble store).
	TableDir string
	// AppID overrides the app id: the transactional sink's (empty: the
	// batch's query id) and the Pebble table's (empty: the query's
	// sink.app_id, else the query id).
	AppID string
}

// Sink is the engine process's sink with what a harness needs to know of
// each write.
type Sink struct {
	sink.Sink
	// Close releases the store.
	Close func() error
	// Kept reports how many of the n rows the last AddBatch delivered the
	// sink kept: 0 for a replay skipped as committed, fewer than n when a
	// MERGE matched some.
	Kept func(n int) int
	// Skipped counts the batches this instance skipped as already
	// committed (0 for a sink that skips none).
	Skipped func() int
}

// Open builds the sink an `engine --sink` value names, for query q.
func Open(flag string, q *query.Query, c Config) (*Sink, error) {
	d, x, ok := sink.LookupFlag(flag)
	if !ok {
		return nil, fmt.Errorf("sink %q: want %s", flag, suggest.OrList(sink.Flags()))
	}
	switch x.Store {
	case sink.Pebble:
		return openPebble(d.Kind, q, c)
	case sink.Kafka:
		return openKafka(d.Versioned, c)
	}
	return nil, fmt.Errorf("sink %q: unknown store %q", flag, x.Store)
}

// openPebble opens the Pebble table of kind (the flag's kind, whatever the
// query's sink section names) with the query's sink settings.
func openPebble(kind sink.Kind, q *query.Query, c Config) (*Sink, error) {
	qq := *q
	qq.Sink.Kind = kind
	if c.AppID != "" {
		qq.Sink.AppID = c.AppID
	}
	t, err := pebblesink.Open(c.TableDir, &qq)
	if err != nil {
		return nil, err
	}
	return &Sink{Sink: t, Close: t.Close, Kept: func(int) int { return t.LastKept() }, Skipped: func() int { return t.Skipped }}, nil
}

// openKafka opens the transactional sink for a versioned kind, the plain
// one otherwise.
func openKafka(versioned bool, c Config) (*Sink, error) {
	base := kafkasink.Config{Brokers: c.Brokers, Topic: c.Topic, Timeout: c.Timeout}
	if !versioned {
		p, err := kafkasink.NewPlain(kafkasink.PlainConfig{Config: base})
		if err != nil {
			return nil, err
		}
		return &Sink{Sink: p, Close: func() error { p.Close(); return nil }, Kept: func(n int) int { return n }, Skipped: func() int { return 0 }}, nil
	}
	txn, err := kafkasink.NewTransactional(kafkasink.TransactionalConfig{Config: base, AppID: c.AppID})
	if err != nil {
		return nil, err
	}
	skipped := 0
	return &Sink{Sink: txn, Close: func() error { txn.Close(); return nil }, Kept: func(n int) int {
		if txn.Skipped > skipped {
			skipped = txn.Skipped
			return 0
		}
		return n
	}, Skipped: func() int { return txn.Skipped }}, nil
}

package driver

import (
	"fmt"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sink/kafkasink"
	"github.com/dedupsim/dedupsim/engine/sink/pebblesink"
	"github.com/dedupsim/dedupsim/live/records"
)

// engineSink is the engine process's sink with what a harness needs to
// know of each write: how many rows it kept.
type engineSink struct {
	sink.Sink
	close func() error
	// kept reports how many of n delivered rows the last AddBatch kept.
	kept func(n int) int
}

// openEngineSink builds the --sink: a Kafka sink on outTopic, or a table or
// merge sink persisted with Pebble in tableDir.
func openEngineSink(kind string, q *query.Query, brokers []string, outTopic, appID, tableDir string, timeout time.Duration) (*engineSink, error) {
	base := kafkasink.Config{Brokers: brokers, Topic: outTopic, Timeout: timeout}
	switch kind {
	case "transactional":
		txn, err := kafkasink.NewTransactional(kafkasink.TransactionalConfig{Config: base, AppID: appID})
		if err != nil {
			return nil, err
		}
		skipped := 0
		return &engineSink{Sink: txn, close: func() error { txn.Close(); return nil }, kept: func(n int) int {
			if txn.Skipped > skipped {
				skipped = txn.Skipped
				return 0
			}
			return n
		}}, nil
	case "plain":
		p, err := kafkasink.NewPlain(kafkasink.PlainConfig{Config: base})
		if err != nil {
			return nil, err
		}
		return &engineSink{Sink: p, close: func() error { p.Close(); return nil }, kept: func(n int) int { return n }}, nil
	case "table", "merge":
		qq := *q
		qq.Sink.Kind = query.SinkKind(kind)
		if appID != "" {
			qq.Sink.AppID = appID
		}
		t, err := pebblesink.Open(tableDir, &qq)
		if err != nil {
			return nil, err
		}
		return &engineSink{Sink: t, close: t.Close, kept: func(int) int { return t.LastKept() }}, nil
	}
	return nil, fmt.Errorf("sink %q: want plain, transactional, table or merge", kind)
}

// skipped is the transactional or table sink's count of batches skipped
// as already committed in this run.
func (s *engineSink) skipped() int {
	switch v := s.Sink.(type) {
	case *kafkasink.Transactional:
		return v.Skipped
	case *pebblesink.Sink:
		return v.Skipped
	}
	return 0
}

// recordingSink appends a write record once the inner sink accepted a
// batch, before the engine goes on to the commit log.
type recordingSink struct {
	*engineSink
	p *process
}

func (s *recordingSink) AddBatch(b sink.Batch) error {
	if err := s.engineSink.AddBatch(b); err != nil {
		return err
	}
	kept := s.kept(len(b.Rows))
	return s.p.record(&records.Record{Kind: records.KindWrite, WallMs: time.Now().UnixMilli(), RunID: s.p.runID, BatchID: b.ID, Kept: kept})
}

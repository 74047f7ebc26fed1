package driver

import (
	"time"

	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sink/durable"
	"github.com/dedupsim/dedupsim/live/records"
)

// recordingSink appends a write record once the inner sink accepted a
// batch, before the engine goes on to the commit log.
type recordingSink struct {
	*durable.Sink
	p *process
}

func (s *recordingSink) AddBatch(b sink.Batch) error {
	if err := s.Sink.AddBatch(b); err != nil {
		return err
	}
	kept := s.Kept(len(b.Rows))
	return s.p.record(&records.Record{Kind: records.KindWrite, WallMs: time.Now().UnixMilli(), RunID: s.p.runID, BatchID: b.ID, Kept: kept})
}

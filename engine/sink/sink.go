// Package sink holds the outputs a micro-batch is written to. A replayed
// batch reaches its sink again with the same batch id (spark-semantics.md
// §9.3); whether that duplicates output is the sink's business, which is the
// point of the seed articles: foreachBatch and plain appends duplicate, the
// table sink keyed by (txnAppId, txnVersion) and the MERGE sink do not.
package sink

import (
	"encoding/json"
	"fmt"

	"github.com/dedupsim/dedupsim/engine/row"
)

// Batch is one delivery of a micro-batch.
type Batch struct {
	ID          int64
	Rows        []row.Row
	QueryID     string
	RunID       string
	TimestampMs int64 // batch timestamp (processing time) from the offset log
}

// Sink receives micro-batches.
type Sink interface {
	Description() string
	AddBatch(b Batch) error
}

// Delivery is one call of a foreachBatch function.
type Delivery struct {
	BatchID int64
	Rows    []json.RawMessage
}

// ForeachBatch records every delivery, replays included, like a
// foreachBatch function that appends what it is handed.
type ForeachBatch struct {
	// Desc is the progress's sink description; empty: "ForeachBatchSink".
	Desc       string
	Deliveries []Delivery
	// Forget keeps no deliveries, for a driver that records each batch
	// itself (engine.Config.OnBatch) and must not hold a whole run.
	Forget bool
}

func (s *ForeachBatch) Description() string {
	if s.Desc != "" {
		return s.Desc
	}
	return "ForeachBatchSink"
}

func (s *ForeachBatch) AddBatch(b Batch) error {
	if !s.Forget {
		s.Deliveries = append(s.Deliveries, Delivery{BatchID: b.ID, Rows: raw(b.Rows)})
	}
	return nil
}

// Append is a plain, non-idempotent append: a replayed batch is appended
// again.
type Append struct{ rows []json.RawMessage }

func (s *Append) Description() string { return "AppendSink" }

func (s *Append) AddBatch(b Batch) error {
	s.rows = append(s.rows, raw(b.Rows)...)
	return nil
}

// Table returns the table's content.
func (s *Append) Table() []json.RawMessage { return s.rows }

// Table is an idempotent append in the manner of Delta's txnAppId /
// txnVersion: each write carries (app id, batch id) and is skipped when the
// table already holds a version at least that high for the app id; rows and
// the version are committed together.
type Table struct {
	// AppID is the configured txnAppId; empty means the query id, which is
	// stable for the life of the checkpoint.
	AppID string
	// PerRun makes the app id the run id, generated at every start: the
	// seed article's mistake, which silently disables replay protection.
	PerRun   bool
	rows     []json.RawMessage
	versions map[string]int64
	txns     []Txn
	// Skipped counts writes ignored as already committed.
	Skipped int
}

// Txn is one committed write of the table sink: the (txnAppId,
// txnVersion) pair that Delta records as a txn action in the commit.
type Txn struct {
	AppID   string `json:"appId"`
	Version int64  `json:"version"`
}

func (s *Table) Description() string { return "TableSink[txnAppId=" + s.AppID + "]" }

func (s *Table) appID(b Batch) string {
	if s.PerRun {
		return b.RunID
	}
	if s.AppID != "" {
		return s.AppID
	}
	return b.QueryID
}

func (s *Table) AddBatch(b Batch) error {
	if s.versions == nil {
		s.versions = map[string]int64{}
	}
	app := s.appID(b)
	if v, ok := s.versions[app]; ok && b.ID <= v {
		s.Skipped++
		return nil
	}
	// One commit: rows and version together.
	s.rows = append(s.rows, raw(b.Rows)...)
	s.versions[app] = b.ID
	s.txns = append(s.txns, Txn{AppID: app, Version: b.ID})
	return nil
}

// Table returns the table's content.
func (s *Table) Table() []json.RawMessage { return s.rows }

// Txns lists the committed writes in commit order, one per commit, as
// Delta's log holds one txn action per commit of the sink.
func (s *Table) Txns() []Txn { return s.txns }

// Merge is the seed articles' MERGE INTO ... WHEN NOT MATCHED THEN INSERT:
// a row is inserted unless the table already holds its key, optionally only
// looking at table rows whose event time is within Lookback of the batch's
// processing time (t.event_ts >= now - lookback). The match condition is
// SQL's, as the seeds write it (t.k = s.k AND t.event_ts >= ...): a null
// never equals anything, so a row with a null match column is always
// inserted, and with a lookback a table row with a null event time never
// matches (spark-semantics.md §16.3).
type Merge struct {
	// Key encodes the match columns of a row; an error (a row without a
	// match column) fails the write: matching on anything else would
	// insert or drop rows silently.
	Key func(r row.Row) ([]byte, error)
	// HasLookback restricts matching to table rows with event time at or
	// after the batch timestamp minus LookbackMs.
	HasLookback bool
	LookbackMs  int64
	rows        []json.RawMessage
	index       map[string][]int64 // key -> event times (micros) of table rows that can match
}

func (s *Merge) Description() string { return "MergeSink" }

func (s *Merge) AddBatch(b Batch) error {
	if s.index == nil {
		s.index = map[string][]int64{}
	}
	if s.Key == nil {
		return fmt.Errorf("merge sink: no key")
	}
	cutoff := (b.TimestampMs - s.LookbackMs) * 1000
	// MERGE matches against the table as it was before this statement: two
	// copies inside one source batch are both inserted, as SQL MERGE does.
	type ins struct {
		key       string
		et        int64
		matchable bool
		raw       json.RawMessage
	}
	var out []ins
	for _, r := range b.Rows {
		kb, err := s.Key(r)
		if err != nil {
			return fmt.Errorf("merge sink: batch %d: %w", b.ID, err)
		}
		k := string(kb)
		matchable := !row.KeyHasNull(kb)
		if matchable && s.matched(k, cutoff) {
			continue
		}
		// A row that can never be matched later (a null match column, or a
		// null event time under a lookback) is not indexed.
		out = append(out, ins{k, r.EventTime, matchable && !(s.HasLookback && r.EventTimeNull), r.Data})
	}
	for _, x := range out {
		if x.matchable {
			s.index[x.key] = append(s.index[x.key], x.et)
		}
		s.rows = append(s.rows, x.raw)
	}
	return nil
}

func (s *Merge) matched(k string, cutoffMicros int64) bool {
	for _, et := range s.index[k] {
		if !s.HasLookback || et >= cutoffMicros {
			return true
		}
	}
	return false
}

// Table returns the table's content.
func (s *Merge) Table() []json.RawMessage { return s.rows }

// Tabled is a sink with a final table content.
type Tabled interface {
	Sink
	Table() []json.RawMessage
}

func raw(rows []row.Row) []json.RawMessage {
	out := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		out[i] = r.Data
	}
	return out
}

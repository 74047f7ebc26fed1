// Package pebblesink is a durable, Pebble-backed version of the in-memory
// table and merge sinks of package sink. The engine runs as an OS process
// that may be killed with SIGKILL at any moment and restarted; the sink's
// output, and the bookkeeping that makes a replayed batch a no-op, must
// survive that, and must never be half written.
//
// The rule that gives both: every AddBatch is ONE pebble batch applied with
// pebble.Sync. For the table sink that batch holds the rows and the new
// (txnAppId, txnVersion), which is what a Delta commit with txnAppId /
// txnVersion is: the data files and the SetTransaction action land in the
// same atomic log entry, so after a crash either the rows are there and the
// version says so (the replay is skipped), or neither is (the replay
// writes them). For the merge sink the batch holds the inserted rows and
// their key-index entries, so the index a replay matches against is exactly
// the table's content.
//
// Layout (all in one DB):
//
//	"m/kind"                             -> sink kind, checked on reopen
//	"r/" + be64(seq)                     -> row (insertion order)
//	"v/" + appID                         -> be64(last committed batch id)  (table)
//	"k/" + uvarint(len(key)) + key + et  -> empty                          (merge)
//
// where et is the row's event time (micros) as a big-endian uint64 with the
// sign bit flipped, so that index entries of one key sort by event time and
// a lookback match is a single seek. The length prefix keeps one key's
// entries from being a prefix range of another key's.
package pebblesink

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/internal/suggest"
)

const (
	kindKey   = "m/kind"
	rowPrefix = "r/"
	verPrefix = "v/"
	idxPrefix = "k/"
)

// Sink is a durable table or merge sink. It implements sink.Tabled. It is
// not safe for concurrent use.
type Sink struct {
	lastKept int
	db       *pebble.DB
	kind     sink.Kind

	// table
	appID  string
	perRun bool

	// merge
	key         func(r row.Row) ([]byte, error)
	hasLookback bool
	lookbackMs  int64

	// nextSeq is the sequence number of the next row.
	nextSeq uint64
	// rows mirrors the "r/" range, loaded at Open and appended after each
	// successful commit, so Table needs no I/O (and has no error to report).
	rows []json.RawMessage

	// Skipped counts table writes ignored as already committed, for the
	// lifetime of this Sink (not persisted).
	Skipped int
}

var _ sink.Tabled = (*Sink)(nil)

// Open opens or creates the sink's Pebble DB in dir. The kind and its
// settings come from q.Sink as for the memory sinks (q.SinkSettings); the
// durable kinds are those with a Pebble realisation in package sink's
// descriptors (table and merge), which this package implements.
func Open(dir string, q *query.Query) (*Sink, error) {
	set := q.SinkSettings()
	s := &Sink{kind: set.Kind}
	if d, ok := sink.Lookup(set.Kind); !ok || d.DurableOn(sink.Pebble).Store != sink.Pebble {
		return nil, fmt.Errorf("pebblesink: sink kind %q is not durable (want %s)", set.Kind, suggest.OrList(pebbleKinds()))
	}
	switch set.Kind {
	case sink.KindTable:
		s.appID, s.perRun = set.AppID, set.GenerateAppID
	case sink.KindMerge:
		s.hasLookback, s.lookbackMs = set.HasLookback, set.LookbackMs
		key := sink.MergeKey(set)
		s.key = func(r row.Row) ([]byte, error) {
			k, err := key(r)
			if err != nil {
				return nil, fmt.Errorf("pebblesink: merge: %w", err)
			}
			return k, nil
		}
	default:
		return nil, fmt.Errorf("pebblesink: sink kind %q has a Pebble realisation but no implementation here", set.Kind)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pebblesink: %w", err)
	}
	db, err := pebble.Open(dir, options(false))
	if err != nil {
		return nil, fmt.Errorf("pebblesink: open %s: %w", dir, err)
	}
	s.db = db
	if err := s.load(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// pebbleKinds lists the kinds kept in Pebble, for messages.
func pebbleKinds() []sink.Kind {
	var out []sink.Kind
	for _, d := range sink.Kinds() {
		if d.DurableOn(sink.Pebble).Store == sink.Pebble {
			out = append(out, d.Kind)
		}
	}
	return out
}

// load checks the stored kind (writing it on a fresh DB) and reads the rows.
func (s *Sink) load() error {
	v, closer, err := s.db.Get([]byte(kindKey))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if err := s.db.Set([]byte(kindKey), []byte(s.kind), pebble.Sync); err != nil {
			return fmt.Errorf("pebblesink: %w", err)
		}
	case err != nil:
		return fmt.Errorf("pebblesink: %w", err)
	default:
		stored := string(v)
		_ = closer.Close()
		if stored != string(s.kind) {
			return fmt.Errorf("pebblesink: DB holds a %s sink, query wants %s", stored, s.kind)
		}
	}
	rows, last, err := readRows(s.db)
	if err != nil {
		return err
	}
	s.rows = rows
	s.nextSeq = last + 1
	return nil
}

// Description names the sink like the memory sinks do.
func (s *Sink) Description() string {
	if s.kind == sink.KindTable {
		return "TableSink[txnAppId=" + s.appID + "]"
	}
	return "MergeSink"
}

// LastKept is how many rows the last AddBatch added to the table: 0 for a
// batch already committed, fewer than delivered when MERGE matched some.
func (s *Sink) LastKept() int { return s.lastKept }

// Table returns all rows in insertion order.
func (s *Sink) Table() []json.RawMessage {
	return append([]json.RawMessage(nil), s.rows...)
}

// AddBatch writes one micro-batch delivery, atomically and durably.
func (s *Sink) AddBatch(b sink.Batch) error {
	if s.db == nil {
		return errors.New("pebblesink: closed")
	}
	before := len(s.rows)
	defer func() { s.lastKept = len(s.rows) - before }()
	if s.kind == sink.KindTable {
		return s.addTable(b)
	}
	return s.addMerge(b)
}

// resolveAppID is sink.Table's: the run id under generate_app_id (a new id at
// every start, so replay protection is silently lost), else the configured
// app id, else the query id (stable for the checkpoint's life).
func (s *Sink) resolveAppID(b sink.Batch) string {
	if s.perRun {
		return b.RunID
	}
	if s.appID != "" {
		return s.appID
	}
	return b.QueryID
}

func (s *Sink) addTable(b sink.Batch) error {
	vk := append([]byte(verPrefix), s.resolveAppID(b)...)
	v, closer, err := s.db.Get(vk)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return fmt.Errorf("pebblesink: %w", err)
	default:
		if len(v) != 8 {
			_ = closer.Close()
			return fmt.Errorf("pebblesink: corrupt version for %q", vk[len(verPrefix):])
		}
		stored := int64(binary.BigEndian.Uint64(v))
		_ = closer.Close()
		if b.ID <= stored {
			// Delta: a txnVersion at or below the recorded one is an
			// already-committed write; the whole write is a no-op.
			s.Skipped++
			return nil
		}
	}
	pb := s.db.NewBatch()
	defer pb.Close()
	seq := s.nextSeq
	for _, r := range b.Rows {
		if err := pb.Set(rowKey(seq), r.Data, nil); err != nil {
			return fmt.Errorf("pebblesink: %w", err)
		}
		seq++
	}
	// The version goes in the same batch as the rows: Delta's data files
	// and SetTransaction(appId, version) share one commit.
	if err := pb.Set(vk, binary.BigEndian.AppendUint64(nil, uint64(b.ID)), nil); err != nil {
		return fmt.Errorf("pebblesink: %w", err)
	}
	if err := pb.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("pebblesink: commit: %w", err)
	}
	s.commit(seq, b.Rows)
	return nil
}

func (s *Sink) addMerge(b sink.Batch) error {
	cutoff := (b.TimestampMs - s.lookbackMs) * 1000
	// MERGE matches against the table as it was before this statement, so
	// lookups read the DB, not the pending batch: two copies inside one
	// source batch are both inserted, as in sink.Merge.
	pb := s.db.NewBatch()
	defer pb.Close()
	seq := s.nextSeq
	var inserted []row.Row
	for _, r := range b.Rows {
		k, err := s.key(r)
		if err != nil {
			return err
		}
		// SQL's condition, as sink.Merge: a null match column never
		// matches, and under a lookback neither does a null event time.
		matchable := !row.KeyHasNull(k)
		if matchable {
			m, err := s.matched(k, cutoff)
			if err != nil {
				return err
			}
			if m {
				continue
			}
		}
		if err := pb.Set(rowKey(seq), r.Data, nil); err != nil {
			return fmt.Errorf("pebblesink: %w", err)
		}
		if matchable && !(s.hasLookback && r.EventTimeNull) {
			if err := pb.Set(indexKey(k, r.EventTime), nil, nil); err != nil {
				return fmt.Errorf("pebblesink: %w", err)
			}
		}
		seq++
		inserted = append(inserted, r)
	}
	if len(inserted) == 0 {
		return nil
	}
	// Rows and their index entries in one synced commit: the index never
	// claims a row the table lacks, nor misses one it holds.
	if err := pb.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("pebblesink: commit: %w", err)
	}
	s.commit(seq, inserted)
	return nil
}

// matched reports whether the table holds a row with key k (with event
// time >= cutoffMicros when the sink has a lookback).
func (s *Sink) matched(k []byte, cutoffMicros int64) (bool, error) {
	p := indexPrefix(k)
	lower := p
	if s.hasLookback {
		lower = binary.BigEndian.AppendUint64(append([]byte(nil), p...), etBits(cutoffMicros))
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: successor(p)})
	if err != nil {
		return false, fmt.Errorf("pebblesink: %w", err)
	}
	found := it.First()
	if err := it.Close(); err != nil {
		return false, fmt.Errorf("pebblesink: %w", err)
	}
	return found, nil
}

func (s *Sink) commit(next uint64, rows []row.Row) {
	s.nextSeq = next
	for _, r := range rows {
		s.rows = append(s.rows, r.Data)
	}
}

// Close closes the DB. Every committed batch is already synced.
func (s *Sink) Close() error {
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

// ReadTable returns the rows of the sink DB in dir, in insertion order,
// opening it read-only (the WAL is replayed in memory, nothing is written),
// for a verifier reading the table after the engine process has exited.
func ReadTable(dir string) ([]json.RawMessage, error) {
	db, err := pebble.Open(dir, options(true))
	if err != nil {
		return nil, fmt.Errorf("pebblesink: open %s: %w", dir, err)
	}
	rows, _, err := readRows(db)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("pebblesink: %w", cerr)
	}
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// readRows returns the rows and the last sequence number (0 for none;
// sequence numbers start at 1).
func readRows(db *pebble.DB) ([]json.RawMessage, uint64, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte(rowPrefix), UpperBound: successor([]byte(rowPrefix))})
	if err != nil {
		return nil, 0, fmt.Errorf("pebblesink: %w", err)
	}
	var rows []json.RawMessage
	var last uint64
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != len(rowPrefix)+8 {
			_ = it.Close()
			return nil, 0, fmt.Errorf("pebblesink: bad row key %q", k)
		}
		last = binary.BigEndian.Uint64(k[len(rowPrefix):])
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return nil, 0, fmt.Errorf("pebblesink: %w", err)
		}
		rows = append(rows, append(json.RawMessage(nil), v...))
	}
	if err := it.Close(); err != nil {
		return nil, 0, fmt.Errorf("pebblesink: %w", err)
	}
	return rows, last, nil
}

func rowKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(rowPrefix), seq)
}

func indexPrefix(k []byte) []byte {
	p := binary.AppendUvarint([]byte(idxPrefix), uint64(len(k)))
	return append(p, k...)
}

func indexKey(k []byte, eventTime int64) []byte {
	return binary.BigEndian.AppendUint64(indexPrefix(k), etBits(eventTime))
}

// etBits maps an event time to a uint64 whose big-endian bytes sort like
// the signed value.
func etBits(et int64) uint64 { return uint64(et) ^ (1 << 63) }

// successor is the smallest key greater than every key with prefix p.
func successor(p []byte) []byte {
	s := append([]byte(nil), p...)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != 0xff {
			s[i]++
			return s[:i+1]
		}
	}
	return nil // all 0xff: no upper bound
}

func options(readOnly bool) *pebble.Options {
	return &pebble.Options{
		ReadOnly:           readOnly,
		ErrorIfNotExists:   readOnly,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quietLogger{},
	}
}

// quietLogger keeps Pebble's informational chatter off the engine's
// stderr; fatal errors still stop the process.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

// Package source is the engine's input seam, after Spark's Source: a source
// reports its latest offset and serves the rows between two offsets, the
// same rows every time it is asked (replay depends on it). Offsets are
// opaque JSON recorded in the offset log.
package source

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/dedupsim/dedupsim/engine/row"
)

// Source is one streaming input.
type Source interface {
	// Description names the source in progress records.
	Description() string
	// LatestOffset is the offset after the last available row; nil when the
	// source has never had a row.
	LatestOffset() (json.RawMessage, error)
	// Rows returns the raw rows after start (nil = from the beginning) up to
	// and including end. It must return the same rows for the same range.
	// Rows whose Decoded flag is set are taken as they are; the engine
	// decodes the others with the query's key and event-time columns.
	Rows(start, end json.RawMessage) ([]row.Row, error)
}

// Validator is implemented by sources that can check an offset read back
// from the checkpoint before the engine trusts it: the form of the offset
// (not whether the data is still there).
type Validator interface {
	ValidateOffset(o json.RawMessage) error
}

// OffsetError is a range a source cannot serve because of the offsets it
// was asked for: an end before the start, or beyond what the source has.
// When the offsets came from the checkpoint, the checkpoint and the input
// disagree.
type OffsetError struct{ Msg string }

func (e *OffsetError) Error() string { return e.Msg }

// Memory is an append-only in-memory source whose offset is the number of
// rows appended, like Spark's MemoryStream. The exec driver and the tests
// feed it. Rows stay available for a restart to replay until the driver
// trims them (Trim): rows up to the end of the last committed batch are
// never read again, so a driver that trims after every batch holds at
// most the rows of the batches not yet committed.
type Memory struct {
	name string
	base int // rows before rows[0], trimmed
	rows []row.Row
	// taken: rows is the array a caller gave (Take), not to be written.
	taken bool
}

// NewMemory creates an empty memory source.
func NewMemory(name string) *Memory { return &Memory{name: name} }

// Append adds rows at the end.
func (m *Memory) Append(rows ...row.Row) {
	if m.taken && len(rows) > 0 {
		m.taken = false // append copies: the rows are in an array of m's own
	}
	m.rows = append(m.rows, rows...)
}

// Take is Append of a slice the caller gives away: it neither reads nor
// changes rows afterwards. A source that holds no rows (every batch so far
// committed and trimmed, as in exec's runs) keeps the slice itself instead
// of a copy: a batch's rows are not copied once more on their way in.
func (m *Memory) Take(rows []row.Row) {
	if len(m.rows) == 0 {
		// A later Append copies (no capacity to spare); Trim never
		// clears it (the caller's array).
		m.rows, m.taken = rows[:len(rows):len(rows)], true
		return
	}
	m.Append(rows...)
}

// Len is the number of rows appended so far, trimmed ones included.
func (m *Memory) Len() int { return m.base + len(m.rows) }

// Trim forgets the rows up to offset o (nil: none); a later Rows may not
// start before it. An offset beyond the source trims everything.
func (m *Memory) Trim(o json.RawMessage) error {
	n, err := ParseOffset(o)
	if err != nil {
		return err
	}
	drop := min(n, m.Len()) - m.base
	if drop <= 0 {
		return nil
	}
	m.base += drop
	if m.taken {
		// Not cleared: the array is the caller's. Keeping the rest copies
		// it, so that the trimmed rows go with the array.
		m.rows, m.taken = append([]row.Row(nil), m.rows[drop:]...), false
		if len(m.rows) == 0 {
			m.rows = nil
		}
		return nil
	}
	clear(m.rows[:drop]) // let the trimmed rows go
	m.rows = m.rows[drop:]
	if cap(m.rows) > 2*len(m.rows)+1024 {
		m.rows = append([]row.Row(nil), m.rows...) // give the backing array back
	}
	return nil
}

func (m *Memory) Description() string { return "MemoryStream[" + m.name + "]" }

func (m *Memory) LatestOffset() (json.RawMessage, error) {
	if m.Len() == 0 {
		return nil, nil
	}
	return json.RawMessage(strconv.Itoa(m.Len())), nil
}

// ParseOffset reads a Memory offset (nil = 0): a row count written as
// LatestOffset writes it (no sign, no leading zeros).
func ParseOffset(o json.RawMessage) (int, error) {
	if o == nil {
		return 0, nil
	}
	n, err := strconv.Atoi(string(o))
	if err != nil || n < 0 || strconv.Itoa(n) != string(o) {
		return 0, fmt.Errorf("memory source offset %q is not a row count", string(o))
	}
	return n, nil
}

// ValidateOffset implements Validator.
func (m *Memory) ValidateOffset(o json.RawMessage) error {
	_, err := ParseOffset(o)
	return err
}

func (m *Memory) Rows(start, end json.RawMessage) ([]row.Row, error) {
	s, err := ParseOffset(start)
	if err != nil {
		return nil, err
	}
	e, err := ParseOffset(end)
	if err != nil {
		return nil, err
	}
	if s > e || e > m.Len() {
		return nil, &OffsetError{Msg: fmt.Sprintf("%s: rows (%d, %d] not available (source has %d rows)", m.Description(), s, e, m.Len())}
	}
	if s < m.base {
		return nil, fmt.Errorf("%s: rows (%d, %d] were trimmed (rows up to %d are gone)", m.Description(), s, e, m.base)
	}
	return m.rows[s-m.base : e-m.base], nil
}

// Available reports whether the source can serve rows up to end, so a
// driver can hold a replay until the history has caught up.
func (m *Memory) Available(end json.RawMessage) bool {
	e, err := ParseOffset(end)
	return err == nil && e <= m.Len()
}

var _ Validator = (*Memory)(nil)

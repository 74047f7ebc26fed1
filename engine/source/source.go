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

// Memory is an append-only in-memory source whose offset is the number of
// rows appended, like Spark's MemoryStream. The exec driver and the tests
// feed it; its whole history stays available so a restart can replay.
type Memory struct {
	name string
	rows []row.Row
}

// NewMemory creates an empty memory source.
func NewMemory(name string) *Memory { return &Memory{name: name} }

// Append adds rows at the end.
func (m *Memory) Append(rows ...row.Row) { m.rows = append(m.rows, rows...) }

// Len is the number of rows appended so far.
func (m *Memory) Len() int { return len(m.rows) }

func (m *Memory) Description() string { return "MemoryStream[" + m.name + "]" }

func (m *Memory) LatestOffset() (json.RawMessage, error) {
	if len(m.rows) == 0 {
		return nil, nil
	}
	return json.RawMessage(strconv.Itoa(len(m.rows))), nil
}

// ParseOffset reads a Memory offset (nil = 0).
func ParseOffset(o json.RawMessage) (int, error) {
	if o == nil {
		return 0, nil
	}
	n, err := strconv.Atoi(string(o))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("memory source offset %q is not a row count", string(o))
	}
	return n, nil
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
	if s > e || e > len(m.rows) {
		return nil, fmt.Errorf("%s: rows (%d, %d] not available (source has %d rows)", m.Description(), s, e, len(m.rows))
	}
	return m.rows[s:e], nil
}

// Available reports whether the source can serve rows up to end, so a
// driver can hold a replay until the history has caught up.
func (m *Memory) Available(end json.RawMessage) bool {
	e, err := ParseOffset(end)
	return err == nil && e <= len(m.rows)
}

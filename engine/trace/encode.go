package trace

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"

	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/sink"
)

// Encoder writes OUT.jsonl lines: the bytes json.Encoder (SetEscapeHTML
// false) writes for a Record and for the table line, without its
// reflection over every row. A row that is valid under the row scanner's
// grammar and has no insignificant space (row.ValidCompact: a steps file's
// rows, which the reader compacted) is appended as it is, any other goes through encoding/json, which compacts
// or refuses it; so does the progress, one per line.
type Encoder struct {
	w    io.Writer
	line []byte
	tmp  bytes.Buffer
	enc  *json.Encoder // writes to tmp
}

// NewEncoder writes lines to w, one Write per line.
func NewEncoder(w io.Writer) *Encoder {
	e := &Encoder{w: w}
	e.enc = json.NewEncoder(&e.tmp)
	e.enc.SetEscapeHTML(false)
	return e
}

// Record writes one batch record.
func (e *Encoder) Record(r *Record) error {
	b := append(e.line[:0], `{"batchId":`...)
	b = strconv.AppendInt(b, r.BatchID, 10)
	if r.Replay {
		b = append(b, `,"replay":true`...)
	}
	var err error
	if r.Crashed != "" {
		b = append(b, `,"crashed":`...)
		if b, err = e.appendValue(b, r.Crashed); err != nil {
			return err
		}
	}
	b = append(b, `,"rows":`...)
	if b, err = e.appendRows(b, r.Rows, r.rowsCompact); err != nil {
		return err
	}
	b = append(b, `,"progress":`...)
	if b, err = e.appendValue(b, &r.Progress); err != nil {
		return err
	}
	return e.write(append(b, "}\n"...))
}

// Table writes the final {"table": [...]} line.
func (e *Encoder) Table(rows []json.RawMessage) error {
	b, err := e.appendRows(append(e.line[:0], `{"table":`...), rows, false)
	if err != nil {
		return err
	}
	return e.write(append(b, "}\n"...))
}

// TableTxn writes the final line of a versioned sink (the table kind):
// {"table": [...], "txn": [{"appId": A, "version": N}, ...]}, the
// (txnAppId, txnVersion) of every committed write in commit order, what
// Delta's log holds as one txn action per commit.
func (e *Encoder) TableTxn(rows []json.RawMessage, txn []sink.Txn) error {
	b, err := e.appendRows(append(e.line[:0], `{"table":`...), rows, false)
	if err != nil {
		return err
	}
	if txn == nil {
		txn = []sink.Txn{}
	}
	b = append(b, `,"txn":`...)
	if b, err = e.appendValue(b, txn); err != nil {
		return err
	}
	return e.write(append(b, "}\n"...))
}

// WriteTable writes the final line of a run's result: TableTxn for a
// versioned sink, else Table.
func (e *Encoder) WriteTable(r *Result) error {
	if r.HasTxn {
		return e.TableTxn(r.Table, r.Txn)
	}
	return e.Table(r.Table)
}

func (e *Encoder) write(b []byte) error {
	e.line = b[:0]
	_, err := e.w.Write(b)
	return err
}

// appendRows appends a list of raw rows as encoding/json does: nil is
// null, a nil row null, a row compacted. compact says every row is
// row.ValidCompact already (Options.RowsCompact): each is copied unscanned.
func (e *Encoder) appendRows(b []byte, rows []json.RawMessage, compact bool) ([]byte, error) {
	if rows == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case r == nil:
			b = append(b, "null"...)
		case compact || row.ValidCompact(r):
			b = append(b, r...)
		default:
			var err error
			if b, err = e.appendValue(b, r); err != nil {
				return nil, err
			}
		}
	}
	return append(b, ']'), nil
}

// appendValue appends v as encoding/json writes it.
func (e *Encoder) appendValue(b []byte, v any) ([]byte, error) {
	e.tmp.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	out := e.tmp.Bytes()
	return append(b, out[:len(out)-1]...), nil // without Encode's newline
}

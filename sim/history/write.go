package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// Write saves h as JSON: the bytes json.NewEncoder(w).Encode(h) writes
// (one object and a newline), streamed. The header fields are encoded one
// by one and the long arrays (copies, batches, sink writes, the table)
// element by element through a buffer, so that writing a history holds
// one element's JSON at a time instead of the whole document: for 1 M
// copies the document is about 200 MB, which Encode built in memory (and
// kept in encoding/json's buffer pool after it returned).
//
// The field order and the omitempty rules are History's struct tags;
// TestWriteMatchesEncoder holds the two to the same bytes.
func (h *History) Write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	e := &streamer{w: bw}
	e.raw("{")
	e.field("version", h.Version)
	e.field("seed", h.Seed)
	e.field("query", h.Query)
	e.field("api", h.API)
	e.field("keys", h.Keys)
	e.field("delayMs", h.DelayMs)
	e.field("partitions", h.Partitions)
	e.field("sinkKind", h.SinkKind)
	e.field("eventTimeInKey", h.EventTimeInKey)
	e.field("healAtMs", h.HealAtMs)
	e.field("endMs", h.EndMs)
	e.field("arrivalRatePerSec", h.ArrivalRatePerSec)
	e.key("copies")
	e.copies(h.Copies)
	e.key("batches")
	array(e, h.Batches)
	e.field("crashes", h.Crashes)
	e.field("restarts", h.Restarts)
	e.key("sinkWrites")
	array(e, h.Writes)
	e.key("table")
	array(e, h.Table)
	e.field("hasTable", h.HasTable)
	e.field("faultsEnabled", h.Faults)
	e.field("coverage", h.Coverage)
	if len(h.FaultKnobs) > 0 {
		e.field("faultKnobs", h.FaultKnobs)
	}
	if h.InitialQuery != "" {
		e.field("initialQuery", h.InitialQuery)
	}
	if h.Live != nil {
		e.field("live", h.Live)
	}
	e.raw("}\n")
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

// streamer writes JSON to w and keeps the first error. Values go through
// one encoder into one reused buffer and the encoder's newline is
// dropped; the copies are appended to a buffer of their own (copies), so
// that writing one allocates nothing. A batch still allocates its
// outcomes' JSON (Outcomes.MarshalJSON), once per batch, not per row.
type streamer struct {
	w     *bufio.Writer
	err   error
	comma bool // a member was written: the next needs a comma
	buf   bytes.Buffer
	enc   *json.Encoder
	copy  []byte // one copy's JSON (copies)
}

// copies writes the copies as array does, each appended to one reused
// buffer by Copy.appendJSON instead of through the encoder (which calls
// MarshalJSON, allocating its result, and then re-scans it).
func (e *streamer) copies(s []Copy) {
	if s == nil {
		e.raw("null")
		return
	}
	e.raw("[")
	for i := range s {
		if e.err != nil {
			return
		}
		if i > 0 {
			e.raw(",")
		}
		e.copy, e.err = s[i].appendJSON(e.copy[:0])
		if e.err == nil {
			_, e.err = e.w.Write(e.copy)
		}
	}
	e.raw("]")
}

func (e *streamer) raw(s string) {
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *streamer) value(v any) {
	if e.err != nil {
		return
	}
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.buf)
	}
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		e.err = err
		return
	}
	b := e.buf.Bytes()
	_, e.err = e.w.Write(b[:len(b)-1]) // Encode ends the value with a newline
}

// key writes the member name (and the comma before it).
func (e *streamer) key(name string) {
	if e.comma {
		e.raw(",")
	}
	e.comma = true
	e.raw(`"` + name + `":`) // the names are Go literals: plain ASCII
}

func (e *streamer) field(name string, v any) {
	e.key(name)
	e.value(v)
}

// array writes s as encoding/json does: null for a nil slice, else its
// elements in order.
func array[T any](e *streamer, s []T) {
	if s == nil {
		e.raw("null")
		return
	}
	e.raw("[")
	for i := range s {
		if i > 0 {
			e.raw(",")
		}
		e.value(&s[i])
		if e.err != nil {
			return
		}
	}
	e.raw("]")
}

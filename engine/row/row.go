// Package row is what flows through the engine: a row as the source
// delivered it (raw JSON, passed to sinks unchanged) plus what the dedup
// operator needs of it, the encoded key and the event time in microseconds.
package row

import "encoding/json"

// Row is one input record. Its fields are ordered so that it packs into
// 80 bytes (the bools together at the end): the engine copies rows by
// value into a batch's input and output.
type Row struct {
	// Data is the row exactly as the source delivered it; sinks receive it
	// unchanged.
	Data json.RawMessage
	// Key is the canonical encoding of the dedup key columns: two rows are
	// copies of each other iff their Keys are equal bytes.
	Key []byte
	// EventTime is the event-time column in microseconds since the epoch;
	// meaningful only when the query has an event-time column.
	EventTime int64
	// Source is the index of the query source the row came from (set by
	// the engine). Partition and Offset say where a log source read it
	// (Positioned), so that a harness can tell byte-identical records
	// apart, as a broker that appended a send twice leaves them.
	Source    int
	Offset    int64
	Partition int32
	// EventTimeNull is set when the event-time column holds JSON null
	// (Spark: the late predicate is null, so the row is kept; the watermark
	// node reads it as 0).
	EventTimeNull bool
	// Decoded says Key and EventTime are filled. Sources that know the
	// query (the steps parser, the simulator) decode once up front; the
	// engine decodes rows that arrive without it.
	Decoded    bool
	Positioned bool
}

package sim

import (
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
)

// CopyColumn is the hidden column that maps a row back to the copy it is:
// its value is the copy's index in History.Copies. It is always the last
// field of the row and never a dedup key.
const CopyColumn = "_copy"

// rowEncoder writes simulated rows: flat JSON
// {"id":"e0-42","ts":1767225600.123456,"_copy":17} with the event time in
// seconds (microsecond fraction) or RFC 3339. Bytes are appended, never
// marshalled. The dedup key is not stored: it depends on the query that
// reads the row (a query-shape-change can change it), so the reading
// query's keyEncoder builds it.
type rowEncoder struct {
	head    []byte // {"id":"
	mid     []byte // ","ts":
	tail    []byte // ,"_copy":
	rfc3339 bool
}

// idOffset is where the id's opening quote sits in every row.
const idOffset = len(`{"id":`)

func newRowEncoder(eventCol string, rfc3339 bool) *rowEncoder {
	return &rowEncoder{
		head:    []byte(`{"id":"`),
		mid:     []byte(`","` + eventCol + `":`),
		tail:    []byte(`,"` + CopyColumn + `":`),
		rfc3339: rfc3339,
	}
}

// encode stores one row in a and returns its reference. id must need no
// JSON escaping (the workload's ids are [a-z0-9-]).
func (e *rowEncoder) encode(a *arena, id []byte, eventUs int64, copyIdx int) rowRef {
	need := len(e.head) + len(e.mid) + len(e.tail) + len(id) + 64
	b := a.reserve(need)
	room := cap(b)
	b = append(b, e.head...)
	b = append(b, id...)
	b = append(b, e.mid...)
	tsStart := len(b)
	b = e.appendTime(b, eventUs)
	tsLen := len(b) - tsStart
	b = append(b, e.tail...)
	b = strconv.AppendInt(b, int64(copyIdx), 10)
	b = append(b, '}')
	if cap(b) != room || len(id) > 255 || tsLen > 255 {
		panic(fmt.Sprintf("sim: row %q outgrew its reservation of %d bytes", b, need))
	}
	chunk, off := a.commit(b)
	return rowRef{eventUs: eventUs, copyIdx: int32(copyIdx), chunk: chunk, off: off, dataLen: int32(len(b)), idLen: uint8(len(id)), tsOff: uint8(len(e.mid)), tsLen: uint8(tsLen)}
}

// keyEncoder builds a query's dedup key for a stored row exactly as
// row.Decoder would from the row's JSON, so the engine can skip decoding
// (Decoded = true).
type keyEncoder struct {
	parts []keyPart
	// wm: the rows' event-time column is the query's watermark column: the
	// row's EventTime is set and, as a key, encoded by its microseconds.
	wm bool
}

type keyPart uint8

const (
	keyID keyPart = iota
	keyTime
)

func newKeyEncoder(q *query.Query, eventCol string) *keyEncoder {
	k := &keyEncoder{wm: q.EventTimeColumn() == eventCol}
	for _, c := range q.Keys {
		if c == "id" {
			k.parts = append(k.parts, keyID)
		} else {
			k.parts = append(k.parts, keyTime)
		}
	}
	return k
}

// appendKey appends the key of the stored row data (described by r).
func (k *keyEncoder) appendKey(dst, data []byte, r rowRef) []byte {
	for _, p := range k.parts {
		switch {
		case p == keyID:
			dst = row.AppendKeyValue(dst, data[idOffset:idOffset+int(r.idLen)+2])
		case k.wm:
			dst = row.AppendKeyEventTime(dst, r.eventUs, false)
		default:
			ts := idOffset + int(r.idLen) + 1 + int(r.tsOff)
			dst = row.AppendKeyValue(dst, data[ts:ts+int(r.tsLen)])
		}
	}
	return dst
}

// appendTime writes an event time: seconds with exactly six fractional
// digits (read back exactly by the engine), or a quoted RFC 3339 string
// with microseconds.
func (e *rowEncoder) appendTime(b []byte, us int64) []byte {
	if e.rfc3339 {
		b = append(b, '"')
		b = time.UnixMicro(us).UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
		return append(b, '"')
	}
	return appendSeconds(b, us)
}

// appendSeconds writes microseconds as decimal seconds with six fractional
// digits; negative values keep the sign in front (the engine truncates
// toward zero, so "-1.500000" is exactly -1500000 µs).
func appendSeconds(b []byte, us int64) []byte {
	u := uint64(us)
	if us < 0 {
		b = append(b, '-')
		u = uint64(-us)
	}
	b = strconv.AppendUint(b, u/1e6, 10)
	frac := u % 1e6
	var d [7]byte
	d[0] = '.'
	for i := 6; i >= 1; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(b, d[:]...)
}

// copyIndex reads the _copy value at the end of a simulated row.
func copyIndex(data []byte) int {
	i := len(data) - 2 // before the closing brace
	n, mul := 0, 1
	for ; i >= 0 && data[i] >= '0' && data[i] <= '9'; i-- {
		n += int(data[i]-'0') * mul
		mul *= 10
	}
	if i < 0 || data[i] != ':' || mul == 1 {
		panic(fmt.Sprintf("sim: row %q has no trailing %s", data, CopyColumn))
	}
	return n
}

// unsafeBytes views a string's bytes without copying; they must not be
// written.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

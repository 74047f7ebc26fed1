package sim

import (
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/sim/record"
)

// rowEncoder writes simulated rows, flat JSON in the layout's column
// order, {"id":"e0-42","ts":1767225600.123456,"_copy":17} for the default
// layout, with the event time in seconds (microsecond fraction) or RFC
// 3339. Bytes are appended, never marshalled. The dedup key is not stored:
// it depends on the query that reads the row (a query-shape-change can
// change it), so the reading query's keyEncoder builds it.
type rowEncoder struct {
	head    []byte   // {"id":"
	mid     []byte   // ","ts":
	tail    []byte   // ,"_copy":
	keys    [][]byte // ,"<key column>":"<key column>:   (then the id and `"`)
	keyCols []string
	payload []payloadCol
	rfc3339 bool
	extra   int // bytes of the key and payload columns beyond the ids
}

// payloadCol is one payload column: its `,"name":` and how to fill it.
type payloadCol struct {
	head []byte
	seed uint64 // FNV-1a of the name: the column's part of each value's hash
	typ  string
	n    int // string bytes
}

// newRowEncoder encodes rows with the default layout: "id", the event-time
// column, _copy.
func newRowEncoder(eventCol string, rfc3339 bool) *rowEncoder {
	return newLayoutEncoder(&rowLayout{idCol: "id", eventCol: eventCol}, rfc3339)
}

func newLayoutEncoder(l *rowLayout, rfc3339 bool) *rowEncoder {
	e := &rowEncoder{
		head:    []byte(`{"` + l.idCol + `":"`),
		mid:     []byte(`","` + l.eventCol + `":`),
		tail:    []byte(`,"` + record.CopyColumn + `":`),
		rfc3339: rfc3339,
	}
	for _, k := range l.keyCols {
		e.keys = append(e.keys, []byte(`,"`+k+`":"`+k+`:`))
		e.keyCols = append(e.keyCols, k)
		e.extra += 2*len(k) + 8
	}
	for _, c := range l.payload {
		pc := payloadCol{head: []byte(`,"` + c.Name + `":`), seed: uint64(fnv32a(c.Name)), typ: c.Type, n: c.Bytes}
		e.payload = append(e.payload, pc)
		e.extra += len(pc.head) + max(c.Bytes+2, 24)
	}
	return e
}

// maxIDLen bounds an event id (rowRef keeps its length in a byte).
const maxIDLen = 255

// encode stores one row in a and returns its reference. id must need no
// JSON escaping (the workload's ids are [a-z0-9-]).
func (e *rowEncoder) encode(a *arena, id []byte, eventUs int64, copyIdx int) rowRef {
	b := a.reserve(e.maxLen(id))
	room := cap(b)
	b, r := e.appendRef(b, id, eventUs, copyIdx)
	if cap(b) != room {
		panic(fmt.Sprintf("sim: row %q outgrew its reservation of %d bytes", b, room))
	}
	r.chunk, r.off = a.commit(b)
	return r
}

// maxLen bounds the bytes of a row of id.
func (e *rowEncoder) maxLen(id []byte) int {
	return len(e.head) + len(e.mid) + len(e.tail) + len(id) + 64 + e.extra + len(e.keys)*len(id)
}

// appendRef appends one row to b and returns where its parts sit: off is
// the row's start in b (chunk 0), for the key encoder. id must need no
// JSON escaping (the workload's ids are [a-z0-9-]).
func (e *rowEncoder) appendRef(b, id []byte, eventUs int64, copyIdx int) ([]byte, rowRef) {
	start := len(b)
	b = append(b, e.head...)
	b = append(b, id...)
	b = append(b, e.mid...)
	tsStart := len(b)
	b = e.appendTime(b, eventUs)
	tsLen := len(b) - tsStart
	b = e.appendExtra(b, id)
	b = append(b, e.tail...)
	b = strconv.AppendInt(b, int64(copyIdx), 10)
	b = append(b, '}')
	if len(id) > maxIDLen || tsLen > 255 || len(e.mid) > 255 {
		panic(fmt.Sprintf("sim: row %q: id, event time or column name too long for a rowRef", b[start:]))
	}
	return b, rowRef{eventUs: eventUs, copyIdx: int32(copyIdx), off: int32(start), dataLen: int32(len(b) - start), idLen: uint8(len(id)), tsOff: uint8(len(e.mid)), tsLen: uint8(tsLen)}
}

// appendExtra writes the further key columns and the payload columns of
// the event id (plain: no escaping needed).
func (e *rowEncoder) appendExtra(b, id []byte) []byte {
	for _, k := range e.keys {
		b = append(b, k...)
		b = append(b, id...)
		b = append(b, '"')
	}
	return e.appendPayload(b, id)
}

// appendPayload writes the payload columns of the event id.
func (e *rowEncoder) appendPayload(b, id []byte) []byte {
	if len(e.payload) == 0 {
		return b
	}
	h := fnv64a(id)
	for _, c := range e.payload {
		b = append(b, c.head...)
		b = c.appendValue(b, h)
	}
	return b
}

// appendValue writes the column's value for an event whose id hashes to h:
// the same for every copy of the event, different between columns.
func (c *payloadCol) appendValue(b []byte, h uint64) []byte {
	x := splitmix64(h ^ c.seed)
	switch c.typ {
	case ColumnLong:
		return strconv.AppendUint(b, x>>11, 10) // < 2^53: exact as a double too
	case ColumnDouble:
		cents := x % 100_000
		b = strconv.AppendUint(b, cents/100, 10)
		return append(b, '.', byte('0'+cents/10%10), byte('0'+cents%10))
	case ColumnBoolean:
		if x&1 == 1 {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b = append(b, '"')
	for i := 0; i < c.n; i++ {
		if i%8 == 0 && i > 0 {
			x = splitmix64(x)
		}
		b = append(b, alphabet[(x>>(8*(i%8)))%uint64(len(alphabet))])
	}
	return append(b, '"')
}

// splitmix64 is one step of SplitMix64: a cheap, well-mixed function of x.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// fnv64a is FNV-1a over an event id, the payload values' seed.
func fnv64a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// keyEncoder builds a query's dedup key for a stored row exactly as
// row.Decoder would from the row's JSON, so the engine can skip decoding
// (Decoded = true).
type keyEncoder struct {
	parts []keyPart
	// prefixes[i], for a keyDerived part i: `"<column>:`, the start of its
	// value "<column>:<id>".
	prefixes [][]byte
	// idOffset is where the id's opening quote sits in every row; 0 means
	// the default layout's, len(`{"id":`).
	idOffset int
	// wm: the rows' event-time column is the query's watermark column: the
	// row's EventTime is set and, as a key, encoded by its microseconds.
	wm      bool
	scratch []byte
}

// keyPart is one key column: the id, the event time, or a further key
// column whose value is made from the id.
type keyPart uint8

const (
	keyID keyPart = iota
	keyTime
	keyDerived
)

// defaultIDOffset is idOffset in the default layout.
const defaultIDOffset = len(`{"id":`)

// newKeyEncoder is the key encoder of the default layout ("id", eventCol).
func newKeyEncoder(q *query.Query, eventCol string) *keyEncoder {
	return newLayoutKeyEncoder(q, &rowLayout{idCol: "id", eventCol: eventCol})
}

func newLayoutKeyEncoder(q *query.Query, l *rowLayout) *keyEncoder {
	k := &keyEncoder{wm: q.EventTimeColumn() == l.eventCol, idOffset: len(`{"` + l.idCol + `":`)}
	for _, c := range q.Keys {
		switch c {
		case l.idCol:
			k.parts, k.prefixes = append(k.parts, keyID), append(k.prefixes, nil)
		case l.eventCol:
			k.parts, k.prefixes = append(k.parts, keyTime), append(k.prefixes, nil)
		default:
			k.parts, k.prefixes = append(k.parts, keyDerived), append(k.prefixes, []byte(`"`+c+`:`))
		}
	}
	return k
}

// appendKey appends the key of the stored row data (described by r).
func (k *keyEncoder) appendKey(dst, data []byte, r rowRef) []byte {
	off := k.idOffset
	if off == 0 {
		off = defaultIDOffset
	}
	for i, p := range k.parts {
		switch {
		case p == keyID:
			dst = row.AppendKeyValue(dst, data[off:off+int(r.idLen)+2])
		case p == keyDerived:
			id := data[off+1 : off+1+int(r.idLen)]
			k.scratch = append(append(append(k.scratch[:0], k.prefixes[i]...), id...), '"')
			dst = row.AppendKeyValue(dst, k.scratch)
		case k.wm:
			dst = row.AppendKeyEventTime(dst, r.eventUs, false)
		default:
			ts := off + int(r.idLen) + 1 + int(r.tsOff)
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

// copyIndex is the row's _copy value (record.CopyIndex: -1 for none).
func copyIndex(data []byte) int { return record.CopyIndex(data) }

// unsafeBytes views a string's bytes without copying; they must not be
// written.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

package row

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
)

// Key encoding. A key is the concatenation, over the key columns in order,
// of one self-delimiting item per value:
//
//	'n'                      null
//	't' / 'f'                true / false
//	's' uvarint(len) bytes   string, by its decoded UTF-8 bytes
//	'd' uvarint(len) bytes   number, canonical text (see canonicalNumber)
//	'j' uvarint(len) bytes   object or array, compacted JSON
//	'T' 8 bytes              the event-time column: microseconds, big-endian
//	'x' uvarint(len) bytes   not a JSON value (EncodeKeyValues only)
//
// The tag keeps types apart ("1" the string is not 1 the number, "null" is
// not null), and the length prefix makes the concatenation injective.
const (
	tagNull    = 'n'
	tagTrue    = 't'
	tagFalse   = 'f'
	tagString  = 's'
	tagNumber  = 'd'
	tagJSON    = 'j'
	tagTime    = 'T'
	tagInvalid = 'x'
)

func appendItem(dst []byte, tag byte, payload []byte) []byte {
	dst = append(dst, tag)
	dst = binary.AppendUvarint(dst, uint64(len(payload)))
	return append(dst, payload...)
}

// EncodeKeyValues is the canonical key of a row whose key columns hold vals,
// in key order: what Decode stores in Row.Key, except that Decode encodes
// the event-time column by its microseconds (so 10 and
// "1970-01-01T00:00:10Z" are one key). For a key that includes the
// event-time column build it with AppendKeyValue and AppendKeyEventTime.
func EncodeKeyValues(vals []json.RawMessage) []byte {
	n := 0
	for _, v := range vals {
		n += len(v) + 2
	}
	key := make([]byte, 0, n)
	for _, v := range vals {
		key = AppendKeyValue(key, v)
	}
	return key
}

// AppendKeyValue appends the key item of one JSON value. A value that is
// not exactly one JSON value (surrounding space allowed) gets its own tag,
// so it never equals a valid value's item.
func AppendKeyValue(dst []byte, v json.RawMessage) []byte {
	s := scanner{data: v}
	s.skipSpace()
	start := s.pos
	kind, esc, err := s.value(0)
	end := s.pos
	s.skipSpace()
	if err != nil || s.pos != len(v) {
		return appendItem(dst, tagInvalid, v)
	}
	return appendValue(dst, v[start:end], kind, esc)
}

// AppendKeyEventTime appends the key item Decode uses for the event-time
// column when it is a key column.
func AppendKeyEventTime(dst []byte, micros int64, isNull bool) []byte {
	if isNull {
		return append(dst, tagNull)
	}
	dst = append(dst, tagTime)
	return binary.BigEndian.AppendUint64(dst, uint64(micros))
}

// appendValue appends the item of a scanned, valid value.
func appendValue(dst, raw []byte, kind valueKind, esc bool) []byte {
	switch kind {
	case kindNull:
		return append(dst, tagNull)
	case kindTrue:
		return append(dst, tagTrue)
	case kindFalse:
		return append(dst, tagFalse)
	case kindString:
		if !esc {
			return appendItem(dst, tagString, raw[1:len(raw)-1])
		}
		return appendItem(dst, tagString, unquote(raw))
	case kindNumber:
		var buf [32]byte
		return appendItem(dst, tagNumber, canonicalNumber(buf[:0], raw))
	default: // object or array
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			// Unreachable: the scanner validated raw. Keep the key total.
			return appendItem(dst, tagInvalid, raw)
		}
		return appendItem(dst, tagJSON, b.Bytes())
	}
}

// unquote decodes a JSON string literal the way encoding/json does
// (escapes resolved, invalid UTF-8 and lone surrogates become U+FFFD), so a
// key agrees with what any encoding/json-based oracle sees.
func unquote(raw []byte) []byte {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		// Unreachable for scanned strings; fall back to the raw bytes.
		return raw
	}
	return []byte(s)
}

// plainName returns a field name's decoded bytes, without copying when it
// has no escapes and is valid UTF-8 (the common case; the scanner reports
// invalid UTF-8 as an escape).
func plainName(raw []byte, esc bool) []byte {
	if !esc {
		return raw
	}
	q := make([]byte, 0, len(raw)+2)
	q = append(q, '"')
	q = append(q, raw...)
	q = append(q, '"')
	return unquote(q)
}

// canonicalNumber appends the canonical text of a valid JSON number, so
// that numerically equal literals share a key:
//   - an integer literal keeps its digits exactly ("-0" becomes "0"), so
//     integers beyond float64 precision stay distinct, as Spark's LongType
//     and DecimalType keep them;
//   - a literal with a fraction or exponent is a double, as Spark infers
//     it: parsed as float64 and, when integral and below 1e21, written as
//     its exact integer digits (10.0 and 1e1 equal 10), else in strconv's
//     shortest 'g' form (0.1 and 0.10000000000000001 are one double).
func canonicalNumber(dst, raw []byte) []byte {
	if !bytes.ContainsAny(raw, ".eE") {
		if len(raw) == 2 && raw[0] == '-' && raw[1] == '0' {
			return append(dst, '0')
		}
		return append(dst, raw...)
	}
	// ParseFloat reports ErrRange for overflow (±Inf) and underflow (0);
	// both values are what a double column would hold, so keep them.
	f, _ := strconv.ParseFloat(string(raw), 64)
	switch {
	case f == 0:
		return append(dst, '0')
	case f == math.Trunc(f) && math.Abs(f) < 1e21:
		return strconv.AppendFloat(dst, f, 'f', 0, 64)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// KeyHasNull reports whether a key built by Decode or EncodeKeyValues holds
// a null item: a key column that is null (or absent) in the row. SQL's =
// never matches such a key (the merge sink's condition). The walk stops
// at the first malformed item (not a key Decode made), reporting false.
func KeyHasNull(key []byte) bool {
	for i := 0; i < len(key); {
		switch key[i] {
		case tagNull:
			return true
		case tagTrue, tagFalse:
			i++
		case tagTime:
			i += 9
		default:
			n, w := binary.Uvarint(key[i+1:])
			if w <= 0 || uint64(len(key)-i-1-w) < n {
				return false
			}
			i += 1 + w + int(n)
		}
	}
	return false
}

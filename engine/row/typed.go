package row

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/engine/schema"
)

// NewTypedDecoder makes a decoder that reads rows under schema s, as
// Spark's JSON reader does in its default PERMISSIVE mode
// (JacksonParser): a column absent from a row is null, and a value that
// does not fit its column's type is null (the rest of the row is kept).
// keys are the state key columns in state order, every one a column of s
// (the all-columns key lists them all). With s nil it is NewDecoder.
//
// Per column type, what a JSON value becomes (anything else is null):
//
//	STRING     a string as it is; a number, true/false, an object or an
//	           array as the text Jackson writes for it (1 -> "1",
//	           1.0 -> "1.0", 1e400 -> "\"Infinity\"", objects compact)
//	BIGINT/INT an integer literal within the type's range
//	DECIMAL    a number, or a string in Java's BigDecimal form (commas
//	           removed), rounded half up to the scale, of at most the
//	           precision in digits
//	DOUBLE     any number (beyond range: ±Infinity), or one of the strings
//	           NaN, Infinity, +Infinity, -Infinity, +INF, -INF
//	BOOLEAN    true or false
//	TIMESTAMP  an integer literal (seconds since the epoch) or an RFC 3339
//	           string with an offset; "" is null, other strings are
//	           refused (not modelled: Spark's parser reads more forms)
//	STRUCT     an object: its fields by exact name (others ignored, a
//	           missing one null, one that does not fit null)
//	ARRAY      an array whose every element fits (else the array is null)
//	MAP        an object whose every value fits (else the map is null),
//	           its entries in the object's order
//
// Values are compared as Spark's streaming operators compare the key's
// UnsafeRow, field by field under the type (nested.go).
func NewTypedDecoder(keys []string, eventTimeColumn string, s *schema.Schema) (*Decoder, error) {
	if s == nil {
		return NewDecoder(keys, eventTimeColumn), nil
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("a typed decoder needs the key columns")
	}
	d := NewDecoder(keys, eventTimeColumn)
	d.types = make([]schema.Type, len(d.names))
	d.readers = make([]*reader, len(d.names))
	for i, n := range d.names {
		j := s.Index(n)
		if j < 0 {
			return nil, fmt.Errorf("column %q is not in the schema (%s)", n, s)
		}
		d.types[i] = s.Fields[j].Type
		d.readers[i] = newReader(d.types[i])
	}
	return d, nil
}

// NormalizedFloats is d with DOUBLE key values normalised as Spark's
// optimizer normalises the grouping keys of an aggregate
// (NormalizeFloatingNumbers: -0.0 becomes 0.0, every NaN one NaN, which
// the key encoding already makes one): the plan of batchDropDuplicates,
// which ReplaceDeduplicateWithAggregate turns into an aggregate. The
// streaming dedup operators compare the key's UnsafeRow bytes, where
// -0.0 and 0.0 differ, and must not use it. d itself is unchanged.
func (d *Decoder) NormalizedFloats() *Decoder {
	c := *d
	c.normFloats = true
	return &c
}

// Typed reports whether the decoder reads rows under a schema.
func (d *Decoder) Typed() bool { return d.types != nil }

// typedEventTime is the event time of a typed row: a TIMESTAMP column as
// Spark's JSON reader reads it, any other type as exec reads an event time
// (a number of seconds, read exactly, or an RFC 3339 string).
func typedEventTime(raw []byte, kind valueKind, esc bool, t schema.Type) (int64, bool, error) {
	if t.Kind != schema.Timestamp {
		return eventTime(raw, kind, esc)
	}
	return timestampValue(raw, kind, esc)
}

// timestampValue reads a JSON value in a TIMESTAMP column.
func timestampValue(raw []byte, kind valueKind, esc bool) (int64, bool, error) {
	switch kind {
	case kindNumber:
		if !isIntegerLiteral(raw) {
			return 0, true, nil // Spark: only VALUE_NUMBER_INT is seconds
		}
		secs, ok := parseInt64(raw)
		if !ok || secs < MinEventTimeMicros/1000_000 || secs > MaxEventTimeMicros/1000_000 {
			return 0, false, secondsOutOfRange(raw)
		}
		return secs * 1000_000, false, nil
	case kindString:
		text := raw[1 : len(raw)-1]
		if esc {
			text = unquote(raw)
		}
		if len(text) == 0 {
			return 0, true, nil // Spark: an empty string is null (EmptyJsonFieldValueException)
		}
		if len(text) > 10 && (text[10] == 't' || bytes.IndexByte(text, 'z') >= 0) {
			return 0, false, fmt.Errorf("timestamp %q: lower-case t or z is not modelled under a TIMESTAMP column (write 2024-01-02T03:04:05Z)", text)
		}
		micros, err := parseRFC3339(text)
		if err != nil {
			return 0, false, fmt.Errorf("%v; under a TIMESTAMP column dedupsim reads only RFC 3339 with an offset (Spark's parser reads more forms, and makes the rest null)", err)
		}
		return micros, false, nil
	}
	return 0, true, nil // null, and booleans, objects, arrays (Spark: null)
}

// appendTyped appends the key item of a value read under type t (r its
// compiled reader when t is nested, else nil), as JacksonParser converts
// it. ok is false when the value does not fit t: the caller makes it null
// (a column, a struct field) or fails its container (an array, a map),
// and dst's appended bytes are then garbage to cut. An error is a value
// dedupsim refuses (not modelled).
func appendTyped(dst, raw []byte, kind valueKind, esc bool, t schema.Type, r *reader, normFloats bool) ([]byte, bool, error) {
	if kind == kindNull {
		return append(dst, tagNull), true, nil
	}
	switch t.Kind {
	case schema.String, schema.Null:
		switch kind {
		case kindString:
			return appendValue(dst, raw, kind, esc), true, nil
		case kindTrue:
			return appendItem(dst, tagString, []byte("true")), true, nil
		case kindFalse:
			return appendItem(dst, tagString, []byte("false")), true, nil
		case kindNumber:
			var buf [32]byte
			return appendItem(dst, tagString, jacksonNumber(buf[:0], raw)), true, nil
		}
		txt, err := jacksonCompact(raw)
		if err != nil {
			return nil, false, err
		}
		return appendItem(dst, tagString, txt), true, nil
	case schema.Long, schema.Integer:
		if kind != kindNumber || !isIntegerLiteral(raw) || !fitsInteger(raw, t) {
			return dst, false, nil
		}
		var buf [48]byte
		return appendItem(dst, tagNumber, canonicalNumber(buf[:0], raw)), true, nil
	case schema.Decimal:
		unscaled, ok := decimalValue(raw, kind, esc, t)
		if !ok {
			return dst, false, nil
		}
		return appendItem(dst, tagNumber, unscaled), true, nil
	case schema.Double:
		var f float64
		switch kind {
		case kindNumber:
			f, _ = strconv.ParseFloat(string(raw), 64) // ErrRange: ±Inf or 0, as Java reads it
			if f == 0 && isIntegerLiteral(raw) {
				// Jackson reads -0 as the integer 0 (VALUE_NUMBER_INT), and
				// getDoubleValue of it is +0.0; only -0.0 (a float
				// literal) is the negative zero.
				f = 0
			}
		case kindString:
			var ok bool
			if f, ok = nonNumericDouble(raw); !ok {
				return dst, false, nil
			}
		default:
			return dst, false, nil
		}
		if normFloats && f == 0 {
			f = 0 // NormalizeFloatingNumbers: -0.0 is 0.0
		}
		var buf [32]byte
		return appendItem(dst, tagNumber, doubleKey(buf[:0], f)), true, nil
	case schema.Boolean:
		switch kind {
		case kindTrue:
			return append(dst, tagTrue), true, nil
		case kindFalse:
			return append(dst, tagFalse), true, nil
		}
		return dst, false, nil
	case schema.Timestamp:
		micros, isNull, err := timestampValue(raw, kind, esc)
		if err != nil || isNull {
			return dst, false, err
		}
		return AppendKeyEventTime(dst, micros, false), true, nil
	case schema.Struct:
		if kind != kindObject {
			return dst, false, nil
		}
		return r.appendStruct(dst, raw, normFloats)
	case schema.Array:
		if kind != kindArray {
			return dst, false, nil
		}
		return r.appendArray(dst, raw, normFloats)
	case schema.Map:
		if kind != kindObject {
			return dst, false, nil
		}
		return r.appendMap(dst, raw, normFloats)
	}
	return nil, false, fmt.Errorf("type %s is not modelled", t.DDL())
}

// fitsInteger reports whether an integer literal fits an integer type.
func fitsInteger(raw []byte, t schema.Type) bool {
	switch t.Kind {
	case schema.Integer:
		v, ok := parseInt64(raw)
		return ok && v >= math.MinInt32 && v <= math.MaxInt32
	}
	_, ok := parseInt64(raw)
	return ok
}

// nonNumericDouble reads the strings Spark's JSON reader takes for a
// DOUBLE column (allowNonNumericNumbers, on by default).
func nonNumericDouble(raw []byte) (float64, bool) {
	switch string(raw[1 : len(raw)-1]) {
	case "NaN":
		return math.NaN(), true
	case "Infinity", "+Infinity", "+INF":
		return math.Inf(1), true
	case "-Infinity", "-INF":
		return math.Inf(-1), true
	}
	return 0, false
}

// doubleKey is the canonical text of a double key: integral values below
// 1e21 as their digits, others in shortest form; -0 stays apart from 0,
// as Spark's binary key comparison keeps them apart.
func doubleKey(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "+Inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-Inf"...)
	case f == 0 && math.Signbit(f):
		return append(dst, "-0"...)
	case f == math.Trunc(f) && math.Abs(f) < 1e21:
		return strconv.AppendFloat(dst, f, 'f', 0, 64)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// jacksonNumber is the text Jackson's copyCurrentStructure writes for a
// number, which is what Spark reads into a STRING column: an integer
// literal as its digits (-0 as 0), any other as Java's Double.toString of
// the double, non-finite values as the quoted strings "Infinity" and
// "-Infinity".
func jacksonNumber(dst, raw []byte) []byte {
	if isIntegerLiteral(raw) {
		if string(raw) == "-0" {
			return append(dst, '0')
		}
		return append(dst, raw...)
	}
	f, _ := strconv.ParseFloat(string(raw), 64)
	return javaDouble(dst, f)
}

// javaDouble formats f as java.lang.Double.toString does (JDK 19+, the
// shortest digits that read back as f): plain decimal with at least one
// fraction digit for 1e-3 <= |f| < 1e7, else d.dddE±n.
func javaDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±xx
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	if f >= 1e-3 && f < 1e7 {
		point := exp + 1 // digits before the point
		switch {
		case point <= 0:
			dst = append(dst, "0."...)
			dst = append(dst, strings.Repeat("0", -point)...)
			return append(dst, digits...)
		case point >= len(digits):
			dst = append(dst, digits...)
			dst = append(dst, strings.Repeat("0", point-len(digits))...)
			return append(dst, ".0"...)
		}
		dst = append(dst, digits[:point]...)
		dst = append(dst, '.')
		return append(dst, digits[point:]...)
	}
	dst = append(dst, digits[0], '.')
	if len(digits) == 1 {
		dst = append(dst, '0')
	} else {
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'E')
	return strconv.AppendInt(dst, int64(exp), 10)
}

// jacksonCompact re-writes an object or array as Jackson's generator
// writes it when Spark reads it into a STRING column: compact, strings
// with only ", \ and control characters escaped (\b \t \n \f \r short,
// the rest as \u00XX), numbers as jacksonNumber writes them. raw was
// validated by the scanner.
func jacksonCompact(raw []byte) ([]byte, error) {
	s := scanner{data: raw}
	out, err := jacksonValue(nil, &s)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func jacksonValue(out []byte, s *scanner) ([]byte, error) {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return nil, s.errorf("want a value")
	}
	switch open := s.data[s.pos]; open {
	case '{', '[':
		closer := byte('}')
		if open == '[' {
			closer = ']'
		}
		s.pos++
		out = append(out, open)
		s.skipSpace()
		if s.pos < len(s.data) && s.data[s.pos] == closer {
			s.pos++
			return append(out, closer), nil
		}
		for {
			var err error
			if open == '{' {
				s.skipSpace()
				ks := s.pos
				if _, err = s.str(); err != nil {
					return nil, err
				}
				out = jacksonString(out, string(unquote(s.data[ks:s.pos])))
				s.skipSpace()
				s.pos++ // ':'
				out = append(out, ':')
			}
			if out, err = jacksonValue(out, s); err != nil {
				return nil, err
			}
			s.skipSpace()
			if s.pos >= len(s.data) {
				return nil, s.errorf("unterminated value")
			}
			c := s.data[s.pos]
			s.pos++
			if c == closer {
				return append(out, closer), nil
			}
			out = append(out, ',')
		}
	}
	start := s.pos
	kind, _, err := s.value(0)
	if err != nil {
		return nil, err
	}
	raw := s.data[start:s.pos]
	switch kind {
	case kindString:
		return jacksonString(out, string(unquote(raw))), nil
	case kindNumber:
		return jacksonNumber(out, raw), nil
	}
	return append(out, raw...), nil
}

func jacksonString(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

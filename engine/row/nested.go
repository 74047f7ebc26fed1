package row

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"

	"github.com/dedupsim/dedupsim/engine/schema"
)

// Nested key values (spark-semantics.md §15.6). Spark's streaming dedup
// operators compare the key's UnsafeRow byte for byte, and a nested value
// is laid out inside it under its type: a struct as a row of its fields in
// the type's order, an array as its elements in order, a map as its keys
// then its values in the order the JSON object gave them. So two values
// are one key when they are equal field by field under the type: the
// order of an object's fields does not matter, an absent field equals an
// explicit null, 1 and 1.0 are one value under a double field, while the
// order of a map's entries matters, and -0.0 and 0.0 are two doubles
// (batch dedup normalises them, Decoder.NormalizedFloats).
//
// The key item of a nested value, after the tags of key.go:
//
//	'{' item...               a struct: one item per field, in type order
//	'[' u32(n) item...        an array of n elements
//	'm' u32(n) (s-item item)… a map of n entries, key then value
//
// The field count is fixed by the type and every item delimits itself, so
// the encoding stays injective for a given type.
const (
	tagStruct = '{'
	tagArray  = '['
	tagMap    = 'm'
)

// reader reads one nested type: the type and, for a struct, its fields'
// readers and where a JSON name finds its field.
type reader struct {
	t      schema.Type
	fields []*reader
	// index maps a field name to its position, for a struct of many
	// fields; small structs are searched in order.
	index map[string]int
	elem  *reader // an array's element, a map's value
}

// newReader compiles t's reader; nil for an atomic type, which
// appendTyped reads from the type alone.
func newReader(t schema.Type) *reader {
	r := &reader{t: t}
	switch t.Kind {
	case schema.Struct:
		r.fields = make([]*reader, len(t.Fields))
		for i, f := range t.Fields {
			r.fields[i] = newReader(f.Type)
		}
		if len(t.Fields) > linearMax {
			r.index = make(map[string]int, len(t.Fields))
			for i, f := range t.Fields {
				r.index[f.Name] = i
			}
		}
	case schema.Array, schema.Map:
		r.elem = newReader(*t.Elem)
	default:
		return nil
	}
	return r
}

// field is the position of the struct field named name (JacksonParser
// matches names exactly: StructType.getFieldIndex), -1 when none.
func (r *reader) field(name []byte) int {
	if r.index != nil {
		if i, ok := r.index[string(name)]; ok {
			return i
		}
		return -1
	}
	for i, f := range r.t.Fields {
		if f.Name == string(name) {
			return i
		}
	}
	return -1
}

// appendStruct appends the item of an object read under r's struct type
// (JacksonParser.convertObject, with partial results): each field the
// object names is read under its type, a field it lacks is null, and a
// field whose value does not fit is null while the others are kept. A
// name given twice is refused (which copy Spark keeps depends on which
// fits; not modelled).
func (r *reader) appendStruct(dst, raw []byte, norm bool) ([]byte, bool, error) {
	var buf [linearMax]slot
	var slots []slot
	if n := len(r.t.Fields); n <= len(buf) {
		slots = buf[:n]
	} else {
		slots = make([]slot, n)
	}
	var it objectIter
	if err := it.begin(raw); err != nil {
		return nil, false, err
	}
	for {
		m, ok, err := it.next()
		if err != nil {
			return nil, false, err
		}
		if !ok {
			break
		}
		i := r.field(plainName(m.name, m.nameEsc))
		if i < 0 {
			continue
		}
		if slots[i].kind != kindNone {
			return nil, false, fmt.Errorf("field %q appears twice in an object (not modelled: which copy Spark keeps depends on the values)", r.t.Fields[i].Name)
		}
		slots[i] = slot{start: m.start, end: m.end, kind: m.kind, esc: m.valEsc}
	}
	dst = append(dst, tagStruct)
	for i, s := range slots {
		if s.kind == kindNone {
			dst = append(dst, tagNull)
			continue
		}
		mark := len(dst)
		var ok bool
		var err error
		if dst, ok, err = appendTyped(dst, raw[s.start:s.end], s.kind, s.esc, r.t.Fields[i].Type, r.fields[i], norm); err != nil {
			return nil, false, fmt.Errorf("field %q: %w", r.t.Fields[i].Name, err)
		}
		if !ok {
			dst = append(dst[:mark], tagNull)
		}
	}
	return dst, true, nil
}

// appendArray appends the item of an array read under r's array type
// (JacksonParser.convertArray): every element is read under the element
// type; one that does not fit makes the whole array not fit (Spark 4.1
// reads [1,"x"] as ARRAY<BIGINT> as null), while a struct element with a
// field that does not fit is kept with that field null.
func (r *reader) appendArray(dst, raw []byte, norm bool) ([]byte, bool, error) {
	dst = append(dst, tagArray, 0, 0, 0, 0)
	at := len(dst) - 4
	n := uint32(0)
	err := Elements(raw, func(elem []byte) error {
		s := scanner{data: elem}
		kind, esc, err := s.value(1)
		if err != nil {
			return err
		}
		var ok bool
		if dst, ok, err = appendTyped(dst, elem, kind, esc, *r.t.Elem, r.elem, norm); err != nil {
			return fmt.Errorf("element %d: %w", n, err)
		}
		if !ok {
			return errNoFit
		}
		n++
		return nil
	})
	if err == errNoFit {
		return dst, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	binary.BigEndian.PutUint32(dst[at:], n)
	return dst, true, nil
}

// errNoFit ends the walk of an array or map one of whose values does not
// fit its type.
var errNoFit = errors.New("a value does not fit its type")

// appendMap appends the item of an object read under r's map type
// (JacksonParser.convertMap; the key type is STRING, the only one Spark's
// JSON reader takes): every entry in the object's order, a name given
// twice kept twice, as Spark keeps both entries; one value that does not
// fit makes the whole map not fit.
func (r *reader) appendMap(dst, raw []byte, norm bool) ([]byte, bool, error) {
	dst = append(dst, tagMap, 0, 0, 0, 0)
	at := len(dst) - 4
	n := uint32(0)
	var it objectIter
	if err := it.begin(raw); err != nil {
		return nil, false, err
	}
	for {
		m, ok, err := it.next()
		if err != nil {
			return nil, false, err
		}
		if !ok {
			break
		}
		dst = appendItem(dst, tagString, plainName(m.name, m.nameEsc))
		if dst, ok, err = appendTyped(dst, raw[m.start:m.end], m.kind, m.valEsc, *r.t.Elem, r.elem, norm); err != nil {
			return nil, false, fmt.Errorf("map value %q: %w", plainName(m.name, m.nameEsc), err)
		}
		if !ok {
			return dst, false, nil
		}
		n++
	}
	binary.BigEndian.PutUint32(dst[at:], n)
	return dst, true, nil
}

// decimalValue reads a value under DECIMAL(p,s) as JacksonParser does: a
// number (integer or not, with or without an exponent: getDecimalValue)
// or a non-empty string (Java's BigDecimal of it, commas removed: the
// parser of ExprUtils.getDecimalParser for the default locale), rounded
// half up to s digits after the point (Decimal.set: setScale(s,
// ROUND_HALF_UP)); it fits when the result has at most p digits. The key
// text is the unscaled value's digits (the scale is the type's).
func decimalValue(raw []byte, kind valueKind, esc bool, t schema.Type) ([]byte, bool) {
	var text []byte
	switch kind {
	case kindNumber:
		text = raw
	case kindString:
		text = raw[1 : len(raw)-1]
		if esc {
			text = unquote(raw)
		}
		if len(text) == 0 {
			return nil, false
		}
		clean := make([]byte, 0, len(text))
		for _, c := range text {
			if c != ',' {
				clean = append(clean, c)
			}
		}
		text = clean
	default:
		return nil, false
	}
	neg, digits, exp, ok := parseBigDecimal(text)
	if !ok {
		return nil, false
	}
	// The value is digits × 10^exp; the unscaled value at scale s is
	// digits × 10^(exp+s), rounded half up (away from zero) when that
	// divides.
	shift := exp + int64(t.Scale)
	u := new(big.Int)
	u.SetString(string(digits), 10)
	switch {
	case u.Sign() == 0:
	case shift >= 0:
		if int64(len(digits))+shift > int64(t.Precision) {
			return nil, false // too many digits, and 10^shift may be huge
		}
		u.Mul(u, new(big.Int).Exp(big.NewInt(10), big.NewInt(shift), nil))
	case -shift > int64(len(digits)):
		u.SetInt64(0) // below half of the last place: rounds to 0
	default:
		div := new(big.Int).Exp(big.NewInt(10), big.NewInt(-shift), nil)
		var rem big.Int
		u.QuoRem(u, div, &rem)
		if rem.Lsh(&rem, 1).Cmp(div) >= 0 {
			u.Add(u, big.NewInt(1))
		}
	}
	out := u.String()
	if len(out) > t.Precision { // BigDecimal.precision: 0 has one digit
		return nil, false
	}
	if neg && out != "0" {
		out = "-" + out
	}
	return []byte(out), true
}

// parseBigDecimal reads java.math.BigDecimal's string form: an optional
// sign, digits with an optional point (at least one digit in all), an
// optional exponent (e or E, an optional sign, digits; within an int).
// digits are the significant digits without the point, exp the power of
// ten they are scaled by.
func parseBigDecimal(b []byte) (neg bool, digits []byte, exp int64, ok bool) {
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	var frac int64
	seenPoint, any := false, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case '0' <= c && c <= '9':
			any = true
			if len(digits) > 0 || c != '0' {
				digits = append(digits, c)
			}
			if seenPoint {
				frac++
			}
		case c == '.' && !seenPoint:
			seenPoint = true
		default:
			goto exponent
		}
	}
exponent:
	if !any {
		return false, nil, 0, false
	}
	if i < len(b) {
		if b[i] != 'e' && b[i] != 'E' {
			return false, nil, 0, false
		}
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		if i == len(b) {
			return false, nil, 0, false
		}
		for ; i < len(b); i++ {
			c := b[i]
			if c < '0' || c > '9' {
				return false, nil, 0, false
			}
			exp = exp*10 + int64(c-'0')
			if exp > 1<<31 {
				return false, nil, 0, false // Java: the exponent must fit an int
			}
		}
		if eneg {
			exp = -exp
		}
	}
	if len(digits) == 0 {
		digits = []byte{'0'}
	}
	return neg, digits, exp - frac, true
}

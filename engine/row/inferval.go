package row

import (
	"fmt"
	"slices"

	"github.com/dedupsim/dedupsim/engine/schema"
)

// The type of one JSON value as JsonInferSchema.inferField infers it, and
// its merge into a column's type so far (spark-semantics.md §15.1, §15.6).

// inferScalar is the type of a value that is not an object or an array: a
// null or the empty string (Spark: "" is null for inference, so that a
// column of "" and numbers is a number column) is null; true/false
// boolean; any other string string; an integer literal bigint, or
// decimal(p,0) beyond bigint (p its digits), or double beyond 38 digits;
// a literal with a fraction or an exponent double.
func inferScalar(raw []byte, kind valueKind) schema.Type {
	switch kind {
	case kindNull:
		return schema.Type{Kind: schema.Null}
	case kindTrue, kindFalse:
		return schema.Type{Kind: schema.Boolean}
	case kindString:
		if len(raw) == 2 { // ""
			return schema.Type{Kind: schema.Null}
		}
		return schema.Type{Kind: schema.String}
	}
	if !isIntegerLiteral(raw) {
		return schema.Type{Kind: schema.Double}
	}
	if _, ok := parseInt64(raw); ok {
		return schema.Type{Kind: schema.Long}
	}
	digits := len(raw)
	if raw[0] == '-' {
		digits--
	}
	if digits > schema.MaxDecimalPrecision {
		return schema.Type{Kind: schema.Double}
	}
	return schema.DecimalOf(digits, 0)
}

// mergeValue merges the type of the valid JSON value raw (of kind) into t,
// the column's type so far: schema.Merge(t, type of raw). changed reports
// whether the result differs from t. A value whose type t already covers
// (the usual case once a column has been seen) is checked without
// allocating.
func mergeValue(t schema.Type, raw []byte, kind valueKind) (out schema.Type, changed bool, err error) {
	if kind != kindObject && kind != kindArray {
		v := inferScalar(raw, kind)
		if covers(t, v) {
			return t, false, nil
		}
		m := schema.Merge(t, v)
		return m, !m.Equal(t), nil
	}
	if t.Kind == schema.String {
		return t, false, nil // any object or array merges into a string column
	}
	s := scanner{data: raw}
	if ok, err := s.fits(t, 1); err != nil {
		return t, false, err
	} else if ok {
		return t, false, nil
	}
	s = scanner{data: raw}
	v, err := s.inferType(1)
	if err != nil {
		return t, false, err
	}
	m := schema.Merge(t, v)
	if m.Equal(t) {
		return t, false, nil
	}
	if err := schema.CheckNames(m); err != nil {
		return t, false, err
	}
	return m, true, nil
}

// covers reports, for the common cases and without copying types, whether
// Merge(t, v) is t for the atomic type v: v is null, or the same atomic
// type, or t is a string (which every atomic type merges into), or a
// double that a bigint merges into. false when unsure (Merge decides).
func covers(t, v schema.Type) bool {
	switch {
	case v.Kind == schema.Null:
		return true
	case t.Kind == v.Kind:
		return t.Kind != schema.Decimal || t.Precision == v.Precision && t.Scale == v.Scale
	case t.Kind == schema.String:
		return true
	}
	return t.Kind == schema.Double && v.Kind == schema.Long
}

// inferType scans the value at s.pos (valid JSON, no leading space) and
// returns its type; depth is the type's nesting so far (1 for a column's
// value), refused beyond schema.MaxNesting. Struct fields are sorted by
// name (schema.CompareJava), as inferField sorts them; a name given twice
// in one object is refused (dedupsim does not model which copy Spark's
// reader keeps; its inference refuses the struct, COLUMN_ALREADY_EXISTS,
// unless the column merges into a string).
func (s *scanner) inferType(depth int) (schema.Type, error) {
	if depth > schema.MaxNesting {
		return schema.Type{}, s.errorf("a value nested more than %d levels deep (not modelled: Jackson's reader in Spark stops at 1000)", schema.MaxNesting)
	}
	switch s.data[s.pos] {
	case '{':
		s.pos++
		s.skipSpace()
		var fields []schema.Field
		for s.data[s.pos] != '}' {
			start := s.pos + 1
			esc, err := s.str()
			if err != nil {
				return schema.Type{}, err
			}
			name := string(plainName(s.data[start:s.pos-1], esc))
			s.skipSpace()
			s.pos++ // ':'
			s.skipSpace()
			t, err := s.inferType(depth + 1)
			if err != nil {
				return schema.Type{}, err
			}
			fields = append(fields, schema.Field{Name: name, Type: t})
			s.skipSpace()
			if s.data[s.pos] == ',' {
				s.pos++
				s.skipSpace()
			}
		}
		s.pos++
		if len(fields) > schema.MaxFields {
			return schema.Type{}, fmt.Errorf("an object of %d fields: at most %d", len(fields), schema.MaxFields)
		}
		slices.SortStableFunc(fields, func(a, b schema.Field) int { return schema.CompareJava(a.Name, b.Name) })
		for i := 1; i < len(fields); i++ {
			if fields[i].Name == fields[i-1].Name {
				return schema.Type{}, fmt.Errorf("field %q appears twice in an object (not modelled)", fields[i].Name)
			}
		}
		return schema.StructOf(fields...), nil
	case '[':
		s.pos++
		s.skipSpace()
		elem := schema.Type{Kind: schema.Null}
		for s.data[s.pos] != ']' {
			t, err := s.inferType(depth + 1)
			if err != nil {
				return schema.Type{}, err
			}
			elem = schema.Merge(elem, t)
			s.skipSpace()
			if s.data[s.pos] == ',' {
				s.pos++
				s.skipSpace()
			}
		}
		s.pos++
		return schema.ArrayOf(elem), nil
	}
	start := s.pos
	kind, _, err := s.value(depth)
	if err != nil {
		return schema.Type{}, err
	}
	return inferScalar(s.data[start:s.pos], kind), nil
}

// fits scans the value at s.pos (valid JSON) and reports whether t covers
// its type: Merge(t, its type) is t, and it holds no name twice in one
// object. It never allocates; false is also the answer for a struct of
// more than 64 fields (the caller then infers the type in full).
func (s *scanner) fits(t schema.Type, depth int) (bool, error) {
	switch c := s.data[s.pos]; {
	case t.Kind == schema.String:
		_, _, err := s.value(depth)
		return true, err
	case c == '{':
		if t.Kind != schema.Struct || len(t.Fields) > 64 {
			return false, nil
		}
		s.pos++
		s.skipSpace()
		var seen uint64
		next := 0 // where the previous field was found, plus one
		for s.data[s.pos] != '}' {
			start := s.pos + 1
			esc, err := s.str()
			if err != nil {
				return false, err
			}
			if esc {
				return false, nil // a name with escapes: the slow path decodes it
			}
			i := fieldIndex(t.Fields, s.data[start:s.pos-1], next)
			if i < 0 || seen&(1<<i) != 0 {
				return false, nil
			}
			next = i + 1
			seen |= 1 << i
			s.skipSpace()
			s.pos++ // ':'
			s.skipSpace()
			if ok, err := s.fits(t.Fields[i].Type, depth+1); !ok || err != nil {
				return false, err
			}
			s.skipSpace()
			if s.data[s.pos] == ',' {
				s.pos++
				s.skipSpace()
			}
		}
		s.pos++
		return true, nil
	case c == '[':
		if t.Kind != schema.Array {
			return false, nil
		}
		s.pos++
		s.skipSpace()
		for s.data[s.pos] != ']' {
			if ok, err := s.fits(*t.Elem, depth+1); !ok || err != nil {
				return false, err
			}
			s.skipSpace()
			if s.data[s.pos] == ',' {
				s.pos++
				s.skipSpace()
			}
		}
		s.pos++
		return true, nil
	}
	start := s.pos
	kind, _, err := s.value(depth)
	if err != nil {
		return false, err
	}
	v := inferScalar(s.data[start:s.pos], kind)
	return covers(t, v) || schema.Merge(t, v).Equal(t), nil
}

// fieldIndex finds the field named name (exactly) among fields, trying
// from position from first (rows tend to give the fields in one order);
// -1 when none.
func fieldIndex(fields []schema.Field, name []byte, from int) int {
	for i := from; i < len(fields); i++ {
		if fields[i].Name == string(name) {
			return i
		}
	}
	for i := 0; i < from && i < len(fields); i++ {
		if fields[i].Name == string(name) {
			return i
		}
	}
	return -1
}

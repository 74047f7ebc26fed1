// Package schema is the typed view of a stream's rows: the column types of
// Spark SQL that dedupsim models, a stream's schema (declared in Spark's DDL
// form or inferred from JSON rows as Spark's JSON source infers it), and the
// type names Spark writes in a state schema file.
//
// A stream in Spark has one schema: every row is read under it, an absent
// field is null and a value that does not fit its column is null (the JSON
// reader's default PERMISSIVE mode). docs/spark-semantics.md §15 lists the
// rules and what is not modelled.
package schema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Kind is a Spark SQL data type, without parameters.
type Kind uint8

// The kinds dedupsim models. Null is the type of a column whose every
// inferred value is null before canonicalisation (Spark then makes it
// string). Struct, Array and Map are nested types: their values are read
// and compared field by field under the full type (spark-semantics.md
// §15.6).
const (
	Null Kind = iota
	String
	Long
	Integer
	Double
	Boolean
	Timestamp
	Decimal
	Struct
	Array
	Map
)

// Type is one column type. Every part of it is nullable (struct fields,
// array elements, map values), as Spark's file sources and from_json read
// every schema (DataType.asNullable): a declared NOT NULL has no effect.
// Types hold slices, so compare them with Equal.
type Type struct {
	Kind Kind
	// Precision and Scale are decimal(Precision, Scale)'s; 0 for other
	// kinds.
	Precision, Scale int
	// Fields are a struct's fields, in order.
	Fields []Field
	// Elem is an array's element type or a map's value type; Key is a
	// map's key type.
	Elem, Key *Type
}

// ArrayOf is ARRAY<elem>.
func ArrayOf(elem Type) Type { return Type{Kind: Array, Elem: &elem} }

// MapOf is MAP<key, value>.
func MapOf(key, value Type) Type { return Type{Kind: Map, Key: &key, Elem: &value} }

// StructOf is STRUCT<fields>.
func StructOf(fields ...Field) Type {
	if fields == nil {
		fields = []Field{}
	}
	return Type{Kind: Struct, Fields: fields}
}

// DecimalOf is DECIMAL(precision, scale).
func DecimalOf(precision, scale int) Type {
	return Type{Kind: Decimal, Precision: precision, Scale: scale}
}

// Equal reports whether t and o are the same type: the same kind and
// parameters, and for a struct the same field names (exactly) and types in
// the same order.
func (t Type) Equal(o Type) bool {
	if t.Kind != o.Kind || t.Precision != o.Precision || t.Scale != o.Scale || len(t.Fields) != len(o.Fields) {
		return false
	}
	for i := range t.Fields {
		if t.Fields[i].Name != o.Fields[i].Name || !t.Fields[i].Type.Equal(o.Fields[i].Type) {
			return false
		}
	}
	return equalRef(t.Elem, o.Elem) && equalRef(t.Key, o.Key)
}

func equalRef(a, b *Type) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// Nested reports whether t is a struct, an array or a map.
func (t Type) Nested() bool { return t.Kind == Struct || t.Kind == Array || t.Kind == Map }

// HasMap reports whether t is or holds a map (DataType.existsRecursively,
// as CheckAnalysis looks for one in a dedup key).
func (t Type) HasMap() bool {
	switch t.Kind {
	case Map:
		return true
	case Array:
		return t.Elem.HasMap()
	case Struct:
		for _, f := range t.Fields {
			if f.Type.HasMap() {
				return true
			}
		}
	}
	return false
}

// Depth is how deeply t nests: 0 for an atomic type, 1 for a struct of
// atomic fields or an array of an atomic type, and so on.
func (t Type) Depth() int {
	d := 0
	switch t.Kind {
	case Array:
		d = t.Elem.Depth()
	case Map:
		d = max(t.Key.Depth(), t.Elem.Depth())
	case Struct:
		for _, f := range t.Fields {
			d = max(d, f.Type.Depth())
		}
	default:
		return 0
	}
	return d + 1
}

// MaxDecimalPrecision is Spark's DecimalType.MAX_PRECISION.
const MaxDecimalPrecision = 38

// MaxNesting bounds how deeply a column type nests (Depth), declared or
// inferred, so that a hostile file cannot build an unbounded type.
const MaxNesting = 64

// longPrecision is DecimalType.forType(LongType): a bigint widens to
// decimal(20, 0).
const longPrecision = 20

// SparkName is an atomic type's name as Spark writes it in a schema's JSON
// form (DataType.typeName): string, long, integer, double, boolean,
// timestamp, decimal(p,s); struct, array and map for the nested kinds,
// whose JSON form is an object (checkpoint.FromType writes it).
func (t Type) SparkName() string {
	switch t.Kind {
	case Null:
		return "void"
	case String:
		return "string"
	case Long:
		return "long"
	case Integer:
		return "integer"
	case Double:
		return "double"
	case Boolean:
		return "boolean"
	case Timestamp:
		return "timestamp"
	case Decimal:
		return "decimal(" + strconv.Itoa(t.Precision) + "," + strconv.Itoa(t.Scale) + ")"
	case Struct:
		return "struct"
	case Array:
		return "array"
	case Map:
		return "map"
	}
	return "unknown"
}

// DDL is the type as Spark's DDL (and DataType.sql, which error messages
// quote) writes it: STRING, BIGINT, INT, DOUBLE, BOOLEAN, TIMESTAMP,
// DECIMAL(p,s), STRUCT<a: BIGINT, `b c`: STRING>, ARRAY<BIGINT>,
// MAP<STRING, BIGINT>.
func (t Type) DDL() string {
	return string(t.appendDDL(nil))
}

func (t Type) appendDDL(b []byte) []byte {
	switch t.Kind {
	case Long:
		return append(b, "BIGINT"...)
	case Integer:
		return append(b, "INT"...)
	case Null:
		return append(b, "VOID"...)
	case Decimal:
		return append(b, strings.ToUpper(t.SparkName())...)
	case Array:
		b = append(b, "ARRAY<"...)
		return append(t.Elem.appendDDL(b), '>')
	case Map:
		b = append(b, "MAP<"...)
		b = t.Key.appendDDL(b)
		b = append(b, ", "...)
		return append(t.Elem.appendDDL(b), '>')
	case Struct:
		b = append(b, "STRUCT<"...)
		for i, f := range t.Fields {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = append(b, quoteName(f.Name)...)
			b = append(b, ": "...)
			b = f.Type.appendDDL(b)
		}
		return append(b, '>')
	}
	return append(b, strings.ToUpper(t.SparkName())...)
}

// Field is one column.
type Field struct {
	Name string
	Type Type
}

// Schema is a stream's columns in order. Spark's file sources read every
// column as nullable, so there is no nullability here.
type Schema struct {
	Fields []Field
}

// Index is the position of the column named name, -1 when absent. Names
// match exactly (see spark-semantics.md §14.3 on case).
func (s *Schema) Index(name string) int {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return i
		}
	}
	return -1
}

// Equal reports whether s and o have the same columns, in the same order,
// of the same types (nil is equal only to nil).
func (s *Schema) Equal(o *Schema) bool {
	if s == nil || o == nil {
		return s == o
	}
	return slices.EqualFunc(s.Fields, o.Fields, func(a, b Field) bool { return a.Name == b.Name && a.Type.Equal(b.Type) })
}

// Names lists the column names in order.
func (s *Schema) Names() []string {
	out := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		out[i] = f.Name
	}
	return out
}

// String renders the schema in DDL form, names quoted with backticks
// where Spark's parser needs them.
func (s *Schema) String() string {
	parts := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		parts[i] = quoteName(f.Name) + " " + f.Type.DDL()
	}
	return strings.Join(parts, ", ")
}

// quoteName writes a column name as DDL: bare when it is an identifier,
// else in backticks with backticks doubled.
func quoteName(n string) string {
	plain := n != ""
	for i, c := range n {
		if !(c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || (i > 0 && '0' <= c && c <= '9')) {
			plain = false
		}
	}
	if plain {
		return n
	}
	return "`" + strings.ReplaceAll(n, "`", "``") + "`"
}

// Merge is JsonInferSchema.compatibleType, which merges the types of one
// column over the rows: equal types stay; null gives way to anything;
// bigint and double make double; decimals widen to cover both (a bigint
// counts as decimal(20,0)), past 38 digits, or with a double, double;
// two structs merge their fields by name (both sorted by name, as
// inference sorts them; a field in one only is kept, one in both merges its
// types); two arrays merge their element types; anything else (a string
// with a number, a boolean with a number, a struct with an array) makes
// string.
//
// Spark first tries TypeCoercion.findTightestCommonType, which also
// merges two structs of as many fields whose names are equal ignoring
// case, keeping the first struct's names; inference refuses such names
// (CheckNames), so the field-by-name merge is the whole rule here.
func Merge(a, b Type) Type {
	switch {
	case a.Kind == Null:
		return b
	case b.Kind == Null:
		return a
	case a.Equal(b):
		return a
	}
	if a.Kind > b.Kind {
		a, b = b, a
	}
	switch {
	case a.Kind == Long && b.Kind == Double:
		return Type{Kind: Double}
	case a.Kind == Long && b.Kind == Decimal:
		return widerDecimal(DecimalOf(longPrecision, 0), b)
	case a.Kind == Double && b.Kind == Decimal:
		return Type{Kind: Double}
	case a.Kind == Decimal && b.Kind == Decimal:
		return widerDecimal(a, b)
	case a.Kind == Struct && b.Kind == Struct:
		return mergeStructs(a.Fields, b.Fields)
	case a.Kind == Array && b.Kind == Array:
		return ArrayOf(Merge(*a.Elem, *b.Elem))
	}
	return Type{Kind: String}
}

// widerDecimal is compatibleType of two decimals: the larger scale and the
// larger count of integer digits, or double beyond 38 digits.
func widerDecimal(a, b Type) Type {
	scale := max(a.Scale, b.Scale)
	whole := max(a.Precision-a.Scale, b.Precision-b.Scale)
	if whole+scale > MaxDecimalPrecision {
		return Type{Kind: Double}
	}
	return DecimalOf(whole+scale, scale)
}

// mergeStructs merges two field lists sorted by name (CompareJava) into
// one sorted list.
func mergeStructs(a, b []Field) Type {
	out := make([]Field, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := CompareJava(a[i].Name, b[j].Name); {
		case c == 0:
			out = append(out, Field{Name: a[i].Name, Type: Merge(a[i].Type, b[j].Type)})
			i++
			j++
		case c < 0:
			out = append(out, a[i])
			i++
		default:
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	out = append(out, b[j:]...)
	return StructOf(out...)
}

// Canonical is JsonInferSchema.canonicalizeType: a null type (a column,
// field or element seen only as null, "" or an empty array) is string;
// fields with an empty name are dropped, and so is a struct left with no
// field (SPARK-8093), and an array of one. ok is false when t itself is
// dropped: the column is not in the schema.
func Canonical(t Type) (Type, bool) {
	switch t.Kind {
	case Null:
		return Type{Kind: String}, true
	case Array:
		e, ok := Canonical(*t.Elem)
		if !ok {
			return Type{}, false
		}
		return ArrayOf(e), true
	case Struct:
		var fields []Field
		for _, f := range t.Fields {
			if f.Name == "" {
				continue
			}
			if ft, ok := Canonical(f.Type); ok {
				fields = append(fields, Field{Name: f.Name, Type: ft})
			}
		}
		if len(fields) == 0 {
			return Type{}, false
		}
		return StructOf(fields...), true
	}
	return t, true
}

// CheckNames refuses a type holding a struct with two fields whose names
// are equal, or equal ignoring case: Spark's file source refuses such a
// schema (SchemaUtils.checkSchemaColumnNameDuplication, recursive since
// Spark 3.4: COLUMN_ALREADY_EXISTS), and its inference merges such fields
// from different rows in an order that depends on the rows (see Merge).
func CheckNames(t Type) error {
	switch t.Kind {
	case Array:
		return CheckNames(*t.Elem)
	case Map:
		if err := CheckNames(*t.Key); err != nil {
			return err
		}
		return CheckNames(*t.Elem)
	case Struct:
		seen := make(map[string]string, len(t.Fields))
		for _, f := range t.Fields {
			low := LowerRoot(f.Name)
			if other, dup := seen[low]; dup {
				if other == f.Name {
					return fmt.Errorf("[COLUMN_ALREADY_EXISTS] struct field %q is given twice", f.Name)
				}
				return fmt.Errorf("[COLUMN_ALREADY_EXISTS] struct fields %q and %q differ only in case: Spark's file source refuses them", other, f.Name)
			}
			seen[low] = f.Name
			if err := CheckNames(f.Type); err != nil {
				return err
			}
		}
	}
	return nil
}

// Error is a problem with a schema: where (a byte offset into a DDL
// string, or a list item) and what.
type Error struct {
	// Item is the list item (0-based) for a schema given as a list; -1
	// for a DDL string.
	Item int
	// Offset is the byte offset in the DDL text.
	Offset int
	Msg    string
}

func (e *Error) Error() string {
	if e.Item >= 0 {
		return fmt.Sprintf("item %d: %s", e.Item, e.Msg)
	}
	return fmt.Sprintf("at character %d: %s", e.Offset+1, e.Msg)
}

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
	"strconv"
	"strings"
)

// Kind is a Spark SQL data type, without parameters.
type Kind uint8

// The kinds dedupsim models. Null is the type of a column whose every
// inferred value is null before canonicalisation (Spark then makes it
// string); Struct and Array are nested values, compared as compact JSON.
const (
	Null Kind = iota
	String
	Long
	Integer
	Double
	Boolean
	Timestamp
	Decimal // decimal(p, 0): inferred for integers beyond bigint
	Struct
	Array
)

// Type is one column type.
type Type struct {
	Kind Kind
	// Precision is decimal(Precision, 0)'s precision; 0 for other kinds.
	Precision int
}

// MaxDecimalPrecision is Spark's DecimalType.MAX_PRECISION.
const MaxDecimalPrecision = 38

// longPrecision is DecimalType.forType(LongType): a bigint widens to
// decimal(20, 0).
const longPrecision = 20

// SparkName is the type's name as Spark writes it in a schema's JSON form
// (DataType.typeName, what the state schema file holds): string, long,
// integer, double, boolean, timestamp, decimal(p,0). Nested types are
// written as their kind (struct, array) without their element types.
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
		return "decimal(" + strconv.Itoa(t.Precision) + ",0)"
	case Struct:
		return "struct"
	case Array:
		return "array"
	}
	return "unknown"
}

// DDL is the type as Spark's DDL (and simpleString) writes it: STRING,
// BIGINT, INT, DOUBLE, BOOLEAN, TIMESTAMP, DECIMAL(p,0).
func (t Type) DDL() string {
	switch t.Kind {
	case Long:
		return "BIGINT"
	case Integer:
		return "INT"
	case Null:
		return "VOID"
	}
	return strings.ToUpper(t.SparkName())
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

// Merge is JsonInferSchema.compatibleType restricted to the kinds
// modelled: equal types stay; null gives way to anything; bigint and
// double make double; decimal(p,0) with bigint widens to decimal(max(p,20),0),
// with double makes double; anything else (a string with a number, a
// boolean with a number, a struct with an array) makes string.
func Merge(a, b Type) Type {
	switch {
	case a == b:
		return a
	case a.Kind == Null:
		return b
	case b.Kind == Null:
		return a
	}
	if a.Kind > b.Kind {
		a, b = b, a
	}
	switch {
	case a.Kind == Long && b.Kind == Double:
		return Type{Kind: Double}
	case a.Kind == Long && b.Kind == Decimal:
		return Type{Kind: Decimal, Precision: max(b.Precision, longPrecision)}
	case a.Kind == Double && b.Kind == Decimal:
		return Type{Kind: Double}
	case a.Kind == Decimal && b.Kind == Decimal:
		return Type{Kind: Decimal, Precision: max(a.Precision, b.Precision)}
	}
	return Type{Kind: String}
}

// Canonical is JsonInferSchema.canonicalizeType for a top-level column: a
// column that held only nulls (or was seen only as null) is a string.
func Canonical(t Type) Type {
	if t.Kind == Null {
		return Type{Kind: String}
	}
	return t
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

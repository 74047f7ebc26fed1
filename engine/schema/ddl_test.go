package schema

import (
	"strings"
	"testing"
)

func TestParseDDL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"event_id STRING, event_ts TIMESTAMP, amount DOUBLE", "event_id STRING, event_ts TIMESTAMP, amount DOUBLE"},
		{"a bigint,b long, c int ,d Integer,e boolean, f timestamp_ltz", "a BIGINT, b BIGINT, c INT, d INT, e BOOLEAN, f TIMESTAMP"},
		{"`my col` STRING NOT NULL, `a``b` STRING COMMENT 'x, y', c STRING NOT NULL COMMENT \"z\"", "`my col` STRING, `a``b` STRING, c STRING"},
		{"  1x STRING  ", "`1x` STRING"},
		{"`é` STRING", "`é` STRING"},
		{"s STRUCT<a: BIGINT, b STRING NOT NULL COMMENT 'c', `c d`:array<double>>", "s STRUCT<a: BIGINT, b: STRING, `c d`: ARRAY<DOUBLE>>"},
		{"m map < string , struct<x:int> >, e STRUCT<>", "m MAP<STRING, STRUCT<x: INT>>, e STRUCT<>"},
		{"d DECIMAL, e dec(5), f NUMERIC(38, 38), g decimal(1,0)", "d DECIMAL(10,0), e DECIMAL(5,0), f DECIMAL(38,38), g DECIMAL(1,0)"},
		{"a ARRAY<ARRAY<STRUCT<a: MAP<STRING, BIGINT>>>>", "a ARRAY<ARRAY<STRUCT<a: MAP<STRING, BIGINT>>>>"},
	} {
		s, err := ParseDDL(c.in)
		if err != nil {
			t.Errorf("ParseDDL(%q): %v", c.in, err)
			continue
		}
		if got := s.String(); got != c.want {
			t.Errorf("ParseDDL(%q) = %q, want %q", c.in, got, c.want)
		}
		// What String writes parses back to the same schema.
		again, err := ParseDDL(s.String())
		if err != nil || again.String() != s.String() {
			t.Errorf("ParseDDL(%q) does not read back: %v %v", s.String(), again, err)
		}
	}
}

func TestParseDDLErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "at character 1: empty schema"},
		{"a", "at character 2: want a type (STRING, BIGINT, INT, DOUBLE, BOOLEAN, TIMESTAMP, DECIMAL(p,s), STRUCT<...>, ARRAY<...>, MAP<STRING, ...>), got the end"},
		{"a STRNG", `at character 3: unknown type "STRNG" (did you mean STRING?)`},
		{"a blob", `at character 3: unknown type "blob" (want STRING`},
		{"a FLOAT", "at character 3: type FLOAT is not modelled by dedupsim"},
		{"a DECIMAL(0)", "DECIMAL precision 0: want 1 to 38"},
		{"a DECIMAL(39,0)", "DECIMAL precision 39"},
		{"a DECIMAL(5,6)", "DECIMAL scale 6 is greater than its precision 5"},
		{"a DECIMAL(5", "want ')' to close DECIMAL("},
		{"a DECIMAL(x)", "want a precision (a whole number)"},
		{"a STRUCT<a INT", "want '>' to close STRUCT<...>, got the end"},
		{"a STRUCT<a INT, a STRING>", `struct field "a" given twice`},
		{"a STRUCT<a INT, A STRING>", `struct fields "a" and "A" differ only in case`},
		{"a ARRAY", "want '<' after ARRAY"},
		{"a MAP<STRING>", "want ',' between a MAP's key and value types"},
		{"a ARRAY<STRNG>", `unknown type "STRNG" (did you mean STRING?)`},
		{"a " + strings.Repeat("ARRAY<", 70) + "INT" + strings.Repeat(">", 70), "type nested more than 64 levels deep"},
		{"a STRING, a BIGINT", `column "a" given twice`},
		{"a STRING, A BIGINT", `columns "a" and "A" differ only in case`},
		{"a STRING b BIGINT", "at character 10: want ',' or the end of the schema, got 'b'"},
		{"a: STRING", "without a colon"},
		{"`a STRING", "at character 1: unterminated backquoted name"},
		{"`` STRING", "empty column name"},
		{"a STRING NOT", "want NULL after NOT"},
		{"a STRING COMMENT 'x", "unterminated comment"},
		{"a STRING,", "at character 10: want a column name, got the end"},
		{"a STRING, -b INT", "want a column name, got '-'"},
	} {
		_, err := ParseDDL(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseDDL(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

func TestMerge(t *testing.T) {
	l, d, s, b, n := Type{Kind: Long}, Type{Kind: Double}, Type{Kind: String}, Type{Kind: Boolean}, Type{Kind: Null}
	dec := func(p int) Type { return DecimalOf(p, 0) }
	f := func(name string, t Type) Field { return Field{Name: name, Type: t} }
	st := StructOf(f("a", l))
	ar := ArrayOf(l)
	for _, c := range []struct{ a, b, want Type }{
		{l, l, l}, {l, d, d}, {d, l, d}, {l, s, s}, {b, l, s}, {n, l, l}, {b, n, b}, {n, n, n},
		{dec(21), l, dec(21)}, {dec(5), l, dec(20)}, {dec(21), d, d}, {dec(21), dec(25), dec(25)},
		{DecimalOf(10, 2), DecimalOf(30, 0), DecimalOf(32, 2)}, {DecimalOf(38, 2), DecimalOf(38, 0), d},
		{st, s, s}, {st, ar, s}, {st, st, st}, {b, b, b}, {n, st, st}, {ar, n, ar},
		{StructOf(f("a", l), f("c", b)), StructOf(f("a", d), f("b", s)), StructOf(f("a", d), f("b", s), f("c", b))},
		{StructOf(f("b", l)), StructOf(f("a", l)), StructOf(f("a", l), f("b", l))},
		{ArrayOf(l), ArrayOf(d), ArrayOf(d)}, {ArrayOf(n), ArrayOf(st), ArrayOf(st)}, {ArrayOf(l), ArrayOf(st), ArrayOf(s)},
		{StructOf(f("a", ArrayOf(n))), StructOf(f("a", ArrayOf(l))), StructOf(f("a", ArrayOf(l)))},
	} {
		if got := Merge(c.a, c.b); !got.Equal(c.want) {
			t.Errorf("Merge(%s, %s) = %s, want %s", c.a.DDL(), c.b.DDL(), got.DDL(), c.want.DDL())
		}
	}
	for _, c := range []struct {
		in, want Type
		ok       bool
	}{
		{n, s, true}, {l, l, true}, {ArrayOf(n), ArrayOf(s), true}, {StructOf(), Type{}, false},
		{StructOf(f("", l), f("b", n)), StructOf(f("b", s)), true}, {StructOf(f("", l)), Type{}, false},
		{ArrayOf(StructOf()), Type{}, false}, {StructOf(f("a", StructOf()), f("b", l)), StructOf(f("b", l)), true},
	} {
		got, ok := Canonical(c.in)
		if ok != c.ok || (ok && !got.Equal(c.want)) {
			t.Errorf("Canonical(%s) = %s %v, want %s %v", c.in.DDL(), got.DDL(), ok, c.want.DDL(), c.ok)
		}
	}
}

func TestTypeHelpers(t *testing.T) {
	m := MapOf(Type{Kind: String}, ArrayOf(Type{Kind: Long}))
	st := StructOf(Field{Name: "x", Type: ArrayOf(m)})
	if !st.HasMap() || ArrayOf(st).Depth() != 5 || (Type{Kind: Long}).Depth() != 0 || StructOf().Depth() != 1 {
		t.Errorf("HasMap %v, Depth %d", st.HasMap(), ArrayOf(st).Depth())
	}
	if StructOf(Field{Name: "a", Type: Type{Kind: Long}}).HasMap() {
		t.Error("a struct of a bigint has no map")
	}
	if st.Equal(StructOf(Field{Name: "X", Type: ArrayOf(m)})) || !st.Equal(StructOf(Field{Name: "x", Type: ArrayOf(m)})) {
		t.Error("Equal compares field names exactly")
	}
	if DecimalOf(10, 2).Equal(DecimalOf(10, 0)) {
		t.Error("Equal compares the scale")
	}
	if err := CheckNames(ArrayOf(StructOf(Field{Name: "a", Type: Type{Kind: Long}}, Field{Name: "A", Type: Type{Kind: Long}}))); err == nil || !strings.Contains(err.Error(), "COLUMN_ALREADY_EXISTS") {
		t.Errorf("CheckNames: %v", err)
	}
	if err := CheckNames(MapOf(Type{Kind: String}, StructOf(Field{Name: "İd", Type: Type{Kind: Long}}, Field{Name: "id", Type: Type{Kind: Long}}))); err != nil {
		t.Errorf("İd and id lower-case apart (Locale.ROOT): %v", err)
	}
}

func TestSparkNames(t *testing.T) {
	for _, c := range []struct {
		t          Type
		spark, ddl string
	}{
		{Type{Kind: String}, "string", "STRING"}, {Type{Kind: Long}, "long", "BIGINT"},
		{Type{Kind: Integer}, "integer", "INT"}, {Type{Kind: Double}, "double", "DOUBLE"},
		{Type{Kind: Boolean}, "boolean", "BOOLEAN"}, {Type{Kind: Timestamp}, "timestamp", "TIMESTAMP"},
		{Type{Kind: Decimal, Precision: 21}, "decimal(21,0)", "DECIMAL(21,0)"},
		{DecimalOf(10, 2), "decimal(10,2)", "DECIMAL(10,2)"},
		{StructOf(Field{Name: "a b", Type: MapOf(Type{Kind: String}, ArrayOf(Type{Kind: Integer}))}), "struct", "STRUCT<`a b`: MAP<STRING, ARRAY<INT>>>"},
	} {
		if c.t.SparkName() != c.spark || c.t.DDL() != c.ddl {
			t.Errorf("%v: %s %s, want %s %s", c.t, c.t.SparkName(), c.t.DDL(), c.spark, c.ddl)
		}
	}
}

// FuzzParseDDL: the parser is total, and what it accepts it writes back
// in a form it reads as the same schema.
func FuzzParseDDL(f *testing.F) {
	for _, s := range []string{"a STRING", "event_id STRING, event_ts TIMESTAMP, amount DOUBLE", "`x``y` BIGINT NOT NULL COMMENT 'c'",
		"a STRING, A INT", "a DECIMAL(1,0)", "`", "a STRING COMMENT '\\'", "a\tboolean ,\n b int",
		"s STRUCT<a: BIGINT, `b``c` ARRAY<MAP<STRING, DECIMAL(5,2)>> NOT NULL>", "e STRUCT<>", "a DEC(38, 38)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseDDL(in)
		if err != nil {
			if s != nil {
				t.Fatal("a schema with an error")
			}
			var se *Error
			if !asError(err, &se) || se.Offset < 0 || se.Offset > len(in) {
				t.Fatalf("error %v: want a *Error with an offset in [0, %d]", err, len(in))
			}
			return
		}
		if len(s.Fields) == 0 {
			t.Fatal("accepted an empty schema")
		}
		again, err := ParseDDL(s.String())
		if err != nil || again.String() != s.String() {
			t.Fatalf("%q -> %q does not read back: %v", in, s.String(), err)
		}
	})
}

func asError(err error, target **Error) bool {
	e, ok := err.(*Error)
	*target = e
	return ok
}

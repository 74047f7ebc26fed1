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
		{"a", "at character 2: want a type (STRING, BIGINT, INT, DOUBLE, BOOLEAN, TIMESTAMP), got the end"},
		{"a STRNG", `at character 3: unknown type "STRNG" (did you mean STRING?)`},
		{"a blob", `at character 3: unknown type "blob" (want STRING`},
		{"a DECIMAL(10,2)", "at character 3: type DECIMAL is not modelled by dedupsim"},
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
	dec := func(p int) Type { return Type{Kind: Decimal, Precision: p} }
	st, ar := Type{Kind: Struct}, Type{Kind: Array}
	for _, c := range []struct{ a, b, want Type }{
		{l, l, l}, {l, d, d}, {d, l, d}, {l, s, s}, {b, l, s}, {n, l, l}, {b, n, b}, {n, n, n},
		{dec(21), l, dec(21)}, {dec(5), l, dec(20)}, {dec(21), d, d}, {dec(21), dec(25), dec(25)},
		{st, s, s}, {st, ar, s}, {st, st, st}, {b, b, b},
	} {
		if got := Merge(c.a, c.b); got != c.want {
			t.Errorf("Merge(%s, %s) = %s, want %s", c.a.DDL(), c.b.DDL(), got.DDL(), c.want.DDL())
		}
	}
	if Canonical(n) != s || Canonical(l) != l {
		t.Error("Canonical: a null column is a string, others unchanged")
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
		"a STRING, A INT", "a DECIMAL(1,0)", "`", "a STRING COMMENT '\\'", "a\tboolean ,\n b int"} {
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

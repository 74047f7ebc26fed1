package row

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/schema"
)

// TestTypedValues: what each JSON value becomes under each column type,
// as pyspark 4.1.1's from_json read them (measured 2026-12-01): want is
// the value Spark returned, written as the JSON of an equal value of the
// column, or "null".
func TestTypedValues(t *testing.T) {
	for _, c := range []struct {
		ddl  string
		in   string
		want string
	}{
		{"STRING", `"1"`, `"1"`}, {"STRING", `1`, `"1"`}, {"STRING", `1.0`, `"1.0"`},
		{"STRING", `1.5e3`, `"1500.0"`}, {"STRING", `true`, `"true"`}, {"STRING", `-0`, `"0"`},
		{"STRING", `{"a":1, "b":"\u00e9"}`, `"{\"a\":1,\"b\":\"é\"}"`}, {"STRING", `[1, 2]`, `"[1,2]"`},
		{"STRING", `100000000000000000000`, `"100000000000000000000"`}, {"STRING", `1e400`, `"\"Infinity\""`},
		{"STRING", `0.1`, `"0.1"`}, {"STRING", `1.25`, `"1.25"`}, {"STRING", `12345678901234567890.5`, `"1.2345678901234567E19"`},
		{"STRING", `1e-5`, `"1.0E-5"`}, {"STRING", `12345678.9`, `"1.23456789E7"`}, {"STRING", `0.001`, `"0.001"`},
		{"STRING", `null`, `null`},
		{"BIGINT", `"1"`, `null`}, {"BIGINT", `1`, `1`}, {"BIGINT", `1.0`, `null`}, {"BIGINT", `true`, `null`},
		{"BIGINT", `-0`, `0`}, {"BIGINT", `100000000000000000000`, `null`}, {"BIGINT", `9223372036854775807`, `9223372036854775807`},
		{"BIGINT", `-9223372036854775808`, `-9223372036854775808`}, {"BIGINT", `9223372036854775808`, `null`},
		{"INT", `1`, `1`}, {"INT", `2147483648`, `null`}, {"INT", `-2147483648`, `-2147483648`},
		{"DOUBLE", `"1"`, `null`}, {"DOUBLE", `1`, `1.0`}, {"DOUBLE", `1.0`, `1`}, {"DOUBLE", `1.5e3`, `1500`},
		{"DOUBLE", `true`, `null`}, {"DOUBLE", `1e400`, `"Infinity"`}, {"DOUBLE", `"NaN"`, `"NaN"`},
		{"DOUBLE", `"+INF"`, `"Infinity"`}, {"DOUBLE", `"-INF"`, `"-Infinity"`}, {"DOUBLE", `"+Infinity"`, `"Infinity"`},
		{"DOUBLE", `"1.5"`, `null`}, {"DOUBLE", `"abc"`, `null`}, {"DOUBLE", `""`, `null`},
		{"BOOLEAN", `true`, `true`}, {"BOOLEAN", `false`, `false`}, {"BOOLEAN", `"true"`, `null`}, {"BOOLEAN", `1`, `null`},
		{"TIMESTAMP", `1`, `1`}, {"TIMESTAMP", `5.5`, `null`}, {"TIMESTAMP", `true`, `null`},
		{"TIMESTAMP", `"2024-01-02T03:04:05Z"`, `"2024-01-02T03:04:05.000000Z"`},
		{"TIMESTAMP", `"2024-01-02T03:04:05.123456789Z"`, `"2024-01-02T03:04:05.123456Z"`},
		{"TIMESTAMP", `"2024-01-02T03:04:05+02:00"`, `"2024-01-02T01:04:05Z"`},
		// Measured 2026-12-06 (issue 27): numbers under each type.
		{"BIGINT", `1e2`, `null`}, {"BIGINT", `""`, `null`}, {"INT", `1e2`, `null`},
		{"DOUBLE", `-0e0`, `-0.0`}, {"DOUBLE", `4.9e-325`, `0.0`}, {"DOUBLE", `-0`, `0.0`},
		{"DOUBLE", `123456789012345678901234567890`, `1.2345678901234568e+29`}, {"DOUBLE", `"-0"`, `null`},
		{"DOUBLE", `"Inf"`, `null`}, {"DOUBLE", `-1e400`, `"-Infinity"`}, {"TIMESTAMP", `""`, `null`},
		{"STRING", `1E2`, `"100.0"`}, {"STRING", `12345678901234567890123`, `"12345678901234567890123"`},
		{"STRING", `1e7`, `"1.0E7"`}, {"STRING", `-0.0`, `"-0.0"`}, {"STRING", `""`, `""`},
		{"DECIMAL(20,0)", `1e2`, `100`}, {"DECIMAL(20,0)", `1.5`, `2`}, {"DECIMAL(20,0)", `2.5`, `3`},
		{"DECIMAL(20,0)", `-0`, `0`}, {"DECIMAL(20,0)", `"12"`, `12`}, {"DECIMAL(20,0)", `123456789012345678901`, `null`},
		{"DECIMAL(20,0)", `1e25`, `null`}, {"DECIMAL(20,0)", `1.5e1`, `15`}, {"DECIMAL(20,0)", `""`, `null`},
		{"DECIMAL(10,2)", `1.005`, `1.01`}, {"DECIMAL(10,2)", `1e-3`, `0`}, {"DECIMAL(10,2)", `"1.239"`, `1.24`},
		{"DECIMAL(10,2)", `12345678.9`, `12345678.90`}, {"DECIMAL(10,2)", `123456789.1`, `null`},
		{"DECIMAL(10,2)", `"1,234"`, `1234`}, {"DECIMAL(10,2)", `" 12"`, `null`}, {"DECIMAL(10,2)", `"+5"`, `5`},
		{"DECIMAL(10,2)", `".5"`, `0.5`}, {"DECIMAL(10,2)", `"5."`, `5`}, {"DECIMAL(10,2)", `"1e2"`, `100`},
		{"DECIMAL(10,2)", `"NaN"`, `null`}, {"DECIMAL(10,2)", `-0.001`, `0`}, {"DECIMAL(10,2)", `"-0.005"`, `-0.01`},
		{"DECIMAL(10,2)", `0.005`, `0.01`}, {"DECIMAL(10,2)", `-1.005`, `-1.01`}, {"DECIMAL(10,2)", `1E-400`, `0`},
		{"DECIMAL(10,2)", `true`, `null`}, {"DECIMAL(38,38)", `0.5`, `0.50000000000000000000000000000000000000`},
		{"DECIMAL(38,38)", `1`, `null`}, {"DECIMAL", `12345678901`, `null`}, {"DECIMAL", `1234567890`, `1234567890`},
		{"DECIMAL", `1.5`, `2`}, {"DECIMAL(38,0)", `123456789012345678901234567890123456789`, `null`},
		{"DECIMAL(38,0)", `99999999999999999999999999999999999999`, `99999999999999999999999999999999999999`},
		// Nested values, measured the same way (to_json(from_json(...))).
		{"ARRAY<BIGINT>", `[1,"x",3]`, `null`}, {"ARRAY<BIGINT>", `[1,null]`, `[1,null]`},
		{"ARRAY<BIGINT>", `{"x":1}`, `null`}, {"ARRAY<BIGINT>", `1`, `null`}, {"ARRAY<BIGINT>", `[1.5]`, `null`},
		{"ARRAY<BIGINT>", `[]`, `[]`},
		{"STRUCT<a: BIGINT, b: STRING>", `{"a":"x","b":"y"}`, `{"b":"y"}`},
		{"STRUCT<a: BIGINT, b: STRING>", `[1]`, `null`},
		{"STRUCT<a: BIGINT, b: STRING>", `{"b":1,"a":2,"c":3}`, `{"a":2,"b":"1"}`},
		{"STRUCT<a: BIGINT, b: STRING>", `{"A":1}`, `{}`},
		{"MAP<STRING, BIGINT>", `{"a":1,"b":"x"}`, `null`}, {"MAP<STRING, BIGINT>", `[1]`, `null`},
		{"MAP<STRING, BIGINT>", `{}`, `{}`},
		{"STRING", `{"b":1,"a":[1.0,-0,1e2]}`, `"{\"b\":1,\"a\":[1.0,0,100.0]}"`},
		{"ARRAY<STRUCT<x: BIGINT>>", `[{"x":1},{"x":"q"},3]`, `null`},
		{"ARRAY<STRUCT<x: BIGINT, y: BIGINT>>", `[{"x":"q","y":1}]`, `[{"y":1}]`},
		{"ARRAY<STRUCT<x: BIGINT, y: BIGINT>>", `[{"x":1,"y":2},{"x":"q"}]`, `[{"x":1,"y":2},{}]`},
		{"MAP<STRING, STRUCT<x: BIGINT, y: BIGINT>>", `{"k":{"x":"q","y":1}}`, `{"k":{"y":1}}`},
		{"STRUCT<t: STRUCT<x: BIGINT, z: BIGINT>, y: BIGINT>", `{"t":{"x":"q","z":3},"y":1}`, `{"t":{"z":3},"y":1}`},
		{"STRUCT<t: STRUCT<x: BIGINT, z: BIGINT>, y: BIGINT>", `{"t":[1],"y":1}`, `{"y":1}`},
		{"STRUCT<a: STRING>", `{"a":{"x":1.0,"y":[-0,1e2,"q"]}}`, `{"a":"{\"x\":1.0,\"y\":[0,100.0,\"q\"]}"}`},
		{"STRUCT<a: STRING>", `{"a":-0.0}`, `{"a":"-0.0"}`},
		{"STRUCT<t: TIMESTAMP>", `{"t":10}`, `{"t":"1970-01-01T00:00:10.000Z"}`},
		{"STRUCT<t: TIMESTAMP>", `{"t":1.5}`, `{}`}, {"STRUCT<t: TIMESTAMP>", `{"t":""}`, `{}`},
		{"STRUCT<>", `{}`, `{}`}, {"STRUCT<>", `{"a":1}`, `{}`}, {"STRUCT<>", `1`, `null`},
		{"STRUCT<a: BIGINT>", `{"\u0061":1}`, `{"a":1}`},
		{"ARRAY<DOUBLE>", `[-0,-0.0,"NaN"]`, `[0.0,-0.0,"NaN"]`},
		{"ARRAY<STRING>", `[1,1.0,true,{"b":1},null]`, `["1","1.0","true","{\"b\":1}",null]`},
		{"MAP<STRING, STRING>", `{"a":1,"b":{"c":1.0}}`, `{"a":"1","b":"{\"c\":1.0}"}`},
		// A struct inferred from the rows: field order, an absent field,
		// an integer under a double field (the streaming cases of §15.6).
		{"STRUCT<a: DOUBLE, b: BIGINT>", `{"b":2,"a":1}`, `{"a":1.0,"b":2}`},
		{"STRUCT<a: DOUBLE, b: BIGINT>", `{"a":1}`, `{"a":1.0,"b":null}`},
	} {
		s, err := schema.ParseDDL("k " + c.ddl)
		if err != nil {
			t.Fatal(err)
		}
		d, err := NewTypedDecoder([]string{"k"}, "", s)
		if err != nil {
			t.Fatal(err)
		}
		var got, want Row
		if err := d.Decode([]byte(`{"k":`+c.in+`}`), &got); err != nil {
			t.Errorf("%s %s: %v", c.ddl, c.in, err)
			continue
		}
		if err := d.Decode([]byte(`{"k":`+c.want+`}`), &want); err != nil {
			t.Fatalf("%s %s: want %s: %v", c.ddl, c.in, c.want, err)
		}
		if !bytes.Equal(got.Key, want.Key) {
			t.Errorf("%s %s: key %q, want the key of %s, %q", c.ddl, c.in, got.Key, c.want, want.Key)
		}
	}
}

// TestTypedRefused: values dedupsim does not model under a TIMESTAMP
// column are refused, naming the column, instead of read wrongly.
func TestTypedRefused(t *testing.T) {
	s, _ := schema.ParseDDL("k TIMESTAMP, ts TIMESTAMP")
	d, err := NewTypedDecoder([]string{"k"}, "ts", s)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		`{"k":"2024-01-02"}`:                      `column "k": invalid RFC 3339 timestamp`,
		`{"k":"2024-01-02t03:04:05z"}`:            `column "k": timestamp "2024-01-02t03:04:05z": lower-case`,
		`{"k":1,"ts":"soon"}`:                     `event-time column "ts": invalid RFC 3339`,
		`{"k":1,"ts":99999999999999}`:             `event-time column "ts": event time 99999999999999 seconds is out of range`,
		`{"k":1,"ts":1,"ts":2}`:                   `column "ts" appears twice`,
		`{"k":"2024-01-02T03:04:05Z","ts":"bad"}`: `event-time column "ts"`,
	} {
		var r Row
		err := d.Decode([]byte(in), &r)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	if _, err := NewTypedDecoder([]string{"x"}, "", s); err == nil || !strings.Contains(err.Error(), `column "x" is not in the schema`) {
		t.Errorf("a key column outside the schema: %v", err)
	}
}

// TestTypedAbsent: an absent column is null, an absent event time too.
func TestTypedAbsent(t *testing.T) {
	s, _ := schema.ParseDDL("a STRING, b BIGINT, ts TIMESTAMP")
	d, _ := NewTypedDecoder([]string{"a", "b"}, "ts", s)
	var absent, null Row
	if err := d.Decode([]byte(`{"a":"x"}`), &absent); err != nil {
		t.Fatal(err)
	}
	if err := d.Decode([]byte(`{"a":"x","b":null,"ts":null,"other":[1]}`), &null); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(absent.Key, null.Key) || !absent.EventTimeNull || !null.EventTimeNull {
		t.Errorf("absent %q/%v, null %q/%v: want one key and a null event time", absent.Key, absent.EventTimeNull, null.Key, null.EventTimeNull)
	}
}

// TestInfer: Spark's inference over the same rows, as pyspark 4.1.1's
// spark.read.json inferred them (its simpleString, in DDL case).
func TestInfer(t *testing.T) {
	for _, c := range []struct {
		rows []string
		want string
	}{
		{[]string{`{"a":1}`, `{"a":"x"}`}, "a STRING"},
		{[]string{`{"a":1}`, `{"a":1.5}`}, "a DOUBLE"},
		{[]string{`{"a":null}`}, "a STRING"},
		{[]string{`{"a":true}`, `{"a":1}`}, "a STRING"},
		{[]string{`{"b":1,"a":2}`, `{"c":3}`}, "a BIGINT, b BIGINT, c BIGINT"},
		{[]string{`{"a":100000000000000000000}`}, "a DECIMAL(21,0)"},
		{[]string{`{"a":100000000000000000000}`, `{"a":1}`}, "a DECIMAL(21,0)"},
		{[]string{`{"a":100000000000000000000}`, `{"a":1.5}`}, "a DOUBLE"},
		{[]string{`{"a":{"x":1}}`, `{"a":"s"}`}, "a STRING"},
		{[]string{`{"a":[1]}`}, "a ARRAY<BIGINT>"},
		// Nested values (spark-semantics.md §15.6), measured the same way.
		{[]string{`{"s":{"a":1,"b":2}}`, `{"s":{"b":2,"a":1}}`}, "s STRUCT<a: BIGINT, b: BIGINT>"},
		{[]string{`{"s":{"a":1}}`, `{"s":{"a":1.0}}`}, "s STRUCT<a: DOUBLE>"},
		{[]string{`{"s":{}}`}, ""},
		{[]string{`{"s":{}}`, `{"s":{"a":1}}`}, "s STRUCT<a: BIGINT>"},
		{[]string{`{"s":{},"k":1}`}, "k BIGINT"},
		{[]string{`{"a":[]}`}, "a ARRAY<STRING>"},
		{[]string{`{"a":[1,"x"]}`}, "a ARRAY<STRING>"},
		{[]string{`{"a":[1,2.5]}`}, "a ARRAY<DOUBLE>"},
		{[]string{`{"a":[[1],[2]]}`}, "a ARRAY<ARRAY<BIGINT>>"},
		{[]string{`{"a":[{"x":1},{"y":2}]}`}, "a ARRAY<STRUCT<x: BIGINT, y: BIGINT>>"},
		{[]string{`{"a":[1]}`, `{"a":1}`}, "a STRING"},
		{[]string{`{"a":[null]}`}, "a ARRAY<STRING>"},
		{[]string{`{"a":{"x":1}}`, `{"a":[1]}`}, "a STRING"},
		{[]string{`{"s":{"":1,"b":2}}`}, "s STRUCT<b: BIGINT>"},
		{[]string{`{"s":{"a":12345678901234567890}}`}, "s STRUCT<a: DECIMAL(20,0)>"},
		{[]string{`{"s":null}`, `{"s":{"a":1}}`}, "s STRUCT<a: BIGINT>"},
		{[]string{`{"s":{"a":null}}`}, "s STRUCT<a: STRING>"},
		{[]string{`{"s":{"a":[1]}}`, `{"s":{"a":[1.5],"b":true}}`}, "s STRUCT<a: ARRAY<DOUBLE>, b: BOOLEAN>"},
		{[]string{`{"s":{"a":1}}`, `{"s":"x"}`}, "s STRING"},
		{[]string{`{"a":[{"x":1}]}`, `{"a":[{"x":"q","y":[1]}]}`}, "a ARRAY<STRUCT<x: STRING, y: ARRAY<BIGINT>>>"},
		{[]string{`{"a":[[]]}`}, "a ARRAY<ARRAY<STRING>>"},
		{[]string{`{"a":[{}]}`}, ""},
		{[]string{`{"s":{"b":{}}}`}, ""},
		{[]string{`{"s":{"a":""}}`, `{"s":{"a":1}}`}, "s STRUCT<a: BIGINT>"},
		{[]string{`{"a":[""]}`}, "a ARRAY<STRING>"},
		{[]string{`{"k":[{"a":1},[1]]}`}, "k ARRAY<STRING>"},
		{[]string{`{"k":[1,[1]]}`}, "k ARRAY<STRING>"},
		// "" is null for inference: it gives way to any other type.
		{[]string{`{"k":""}`}, "k STRING"},
		{[]string{`{"k":""}`, `{"k":1}`}, "k BIGINT"},
		{[]string{`{"k":""}`, `{"k":1.5}`}, "k DOUBLE"},
		{[]string{`{"k":""}`, `{"k":true}`}, "k BOOLEAN"},
		{[]string{`{"k":""}`, `{"k":{"a":1}}`}, "k STRUCT<a: BIGINT>"},
		{[]string{`{"k":""}`, `{"k":[1]}`}, "k ARRAY<BIGINT>"},
		{[]string{`{"k":[""]}`, `{"k":[1]}`}, "k ARRAY<BIGINT>"},
		// Numbers: exponents are doubles, -0 an integer, 38 digits decimal.
		{[]string{`{"k":1e2}`}, "k DOUBLE"},
		{[]string{`{"k":-0}`}, "k BIGINT"},
		{[]string{`{"k":123456789012345678901234567890123456789}`}, "k DOUBLE"},
		{[]string{`{"k":12345678901234567890123456789012345678}`}, "k DECIMAL(38,0)"},
		{[]string{`{"k":1E400}`}, "k DOUBLE"},
		{[]string{`{"a":"2024-01-02T03:04:05Z"}`}, "a STRING"},
		{[]string{`{"B":1,"a":2,"_":3,"Z":4}`}, "B BIGINT, Z BIGINT, _ BIGINT, a BIGINT"},
		{[]string{`{"a":null}`, `{"a":true}`}, "a BOOLEAN"},
	} {
		in := NewInferrer()
		for _, r := range c.rows {
			if err := in.Add([]byte(r)); err != nil {
				t.Fatal(err)
			}
		}
		if got := in.Schema().String(); got != c.want {
			t.Errorf("%v: %s, want %s", c.rows, got, c.want)
		}
	}
	in := NewInferrer()
	if in.Schema() != nil {
		t.Error("no rows: want no schema")
	}
	_ = in.Add([]byte(`{"a":1}`))
	if err := in.Add([]byte(`{"A":1}`)); err == nil || !strings.Contains(err.Error(), "differ only in case") {
		t.Errorf("a and A: %v", err)
	}
	if err := in.Add([]byte(`{"b":1,"b":2}`)); err == nil {
		t.Error("a repeated name accepted")
	}
	// Nested names: Spark refuses a struct with a name twice, or two names
	// equal ignoring case (COLUMN_ALREADY_EXISTS); names that differ in
	// case in different rows it merges depending on their order, which
	// dedupsim refuses too.
	for _, rows := range [][]string{
		{`{"s":{"a":1,"A":2}}`}, {`{"s":{"a":1}}`, `{"s":{"A":2}}`}, {`{"s":{"a":1,"a":"x"}}`},
		{`{"s":[{"a":1},{"A":2}]}`}, {`{"s":{"t":{"a":1,"a":2}}}`},
	} {
		in := NewInferrer()
		var err error
		for _, r := range rows {
			if err = in.Add([]byte(r)); err != nil {
				break
			}
		}
		if err == nil {
			t.Errorf("%v: accepted", rows)
		}
	}
}

// FuzzTypedDecode: inference and typed decoding are total on any input;
// a row the inferrer accepts decodes under the schema it inferred (every
// value fits, or is read as null) unless a TIMESTAMP rule refuses it; and
// decoding is deterministic.
func FuzzTypedDecode(f *testing.F) {
	for _, s := range []string{`{"k":"1","n":1,"d":1.5,"b":true,"o":{"x":[1]},"z":null}`, `{"k":1}`, `{"k":1e400}`,
		`{"k":100000000000000000000}`, `{"k":"\u00e9\n"}`, `{}`, `[1]`, `{"k":1,"k":2}`, `{"k":[1,{"a":"\\"}]}`} {
		f.Add([]byte(s), "k STRING, n BIGINT, d DOUBLE, b BOOLEAN, t TIMESTAMP")
	}
	for _, s := range []string{`{"k":{"a":1,"b":[1.5,null]},"m":{"x":{"y":"1"}}}`, `{"k":[{"a":"1"},{"b":2}],"m":{}}`,
		`{"k":{"a":{"a":{}}},"m":{"x":null,"x":{"y":1e400}}}`, `{"k":[[],[[1]],"x"],"d":"1,5"}`} {
		f.Add([]byte(s), "k STRUCT<a: BIGINT, b: ARRAY<DOUBLE>>, m MAP<STRING, STRUCT<y: DECIMAL(5,2)>>, d DECIMAL(3,1)")
		f.Add([]byte(s), "k ARRAY<ARRAY<ARRAY<STRING>>>, m MAP<STRING, STRING>")
	}
	f.Fuzz(func(t *testing.T, data []byte, ddl string) {
		in := NewInferrer()
		if err := in.Add(data); err == nil {
			s := in.Schema()
			names := s.Names()
			if len(names) > 0 {
				d, err := NewTypedDecoder(names, "", s)
				if err != nil {
					t.Fatalf("inferred schema %s: %v", s, err)
				}
				var r Row
				if err := d.Decode(data, &r); err != nil {
					t.Fatalf("%s does not decode under its own inferred schema %s: %v", data, s, err)
				}
			}
		}
		s, err := schema.ParseDDL(ddl)
		if err != nil {
			return
		}
		d, err := NewTypedDecoder(s.Names(), "", s)
		if err != nil {
			t.Fatal(err)
		}
		var r1, r2 Row
		err1 := d.Decode(data, &r1)
		err2 := d.Decode(data, &r2)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(r1.Key, r2.Key) {
			t.Fatalf("not deterministic: %v %v", err1, err2)
		}
	})
}

// TestNestedKeys: which nested values are one key, as the streaming
// operators compare the key's UnsafeRow (measured with pyspark 4.1.1's
// dropDuplicates and dropDuplicatesWithinWatermark, issue 27), and as
// batch dedup's aggregate compares them after NormalizeFloatingNumbers.
func TestNestedKeys(t *testing.T) {
	for _, c := range []struct {
		ddl, a, b   string
		same, batch bool // one key for the streaming operators, for batch dedup
	}{
		{"STRUCT<a: DOUBLE>", `{"a":0.0}`, `{"a":-0.0}`, false, true},
		{"STRUCT<a: DOUBLE>", `{"a":"NaN"}`, `{"a":"NaN"}`, true, true},
		{"STRUCT<a: DOUBLE>", `{"a":-0}`, `{"a":0.0}`, true, true},
		{"ARRAY<DOUBLE>", `[0.0]`, `[-0.0]`, false, true},
		{"ARRAY<STRUCT<a: DOUBLE>>", `[{"a":0.0}]`, `[{"a":-0.0}]`, false, true},
		{"MAP<STRING, BIGINT>", `{"a":1,"b":2}`, `{"b":2,"a":1}`, false, false},
		{"MAP<STRING, BIGINT>", `{"a":1,"a":2}`, `{"a":2}`, false, false},
		{"MAP<STRING, BIGINT>", `{"a":1,"b":"x"}`, `null`, true, true},
		{"MAP<STRING, BIGINT>", `{}`, `null`, false, false},
		{"STRUCT<a: BIGINT>", `null`, `{"a":null}`, false, false},
		{"STRUCT<a: BIGINT>", `{}`, `{"a":null}`, true, true},
		{"ARRAY<BIGINT>", `[]`, `null`, false, false},
		{"ARRAY<BIGINT>", `[null]`, `[]`, false, false},
		{"ARRAY<BIGINT>", `[1,2]`, `[2,1]`, false, false},
		{"ARRAY<ARRAY<BIGINT>>", `[[1],[2]]`, `[[1,2]]`, false, false},
		{"STRUCT<a: STRING, b: STRING>", `{"a":"xy","b":""}`, `{"a":"x","b":"y"}`, false, false},
		{"MAP<STRING, STRING>", `{"a":"b"}`, `{"ab":""}`, false, false},
	} {
		s, err := schema.ParseDDL("k " + c.ddl)
		if err != nil {
			t.Fatal(err)
		}
		d, err := NewTypedDecoder([]string{"k"}, "", s)
		if err != nil {
			t.Fatal(err)
		}
		for _, dec := range []*Decoder{d, d.NormalizedFloats()} {
			var a, b Row
			if err := dec.Decode([]byte(`{"k":`+c.a+`}`), &a); err != nil {
				t.Fatalf("%s %s: %v", c.ddl, c.a, err)
			}
			if err := dec.Decode([]byte(`{"k":`+c.b+`}`), &b); err != nil {
				t.Fatalf("%s %s: %v", c.ddl, c.b, err)
			}
			want := c.same
			if dec != d {
				want = c.batch
			}
			if got := bytes.Equal(a.Key, b.Key); got != want {
				t.Errorf("%s: %s and %s one key (normalised %v): %v, want %v", c.ddl, c.a, c.b, dec != d, got, want)
			}
		}
	}
	// A name twice in a struct value is refused, naming the column.
	s, _ := schema.ParseDDL("k STRUCT<a: BIGINT>")
	d, _ := NewTypedDecoder([]string{"k"}, "", s)
	var r Row
	if err := d.Decode([]byte(`{"k":{"a":1,"a":2}}`), &r); err == nil || !strings.Contains(err.Error(), `column "k": field "a" appears twice`) {
		t.Errorf("a field twice: %v", err)
	}
}

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
		{[]string{`{"a":[1]}`}, "a ARRAY"},
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
}

func TestCompareJava(t *testing.T) {
	// U+FF5E sorts before U+1F600 by bytes, after it by UTF-16 code units.
	if CompareJava("\uff5e", "\U0001F600") <= 0 || bytes.Compare([]byte("\uff5e"), []byte("\U0001F600")) >= 0 {
		t.Error("Java order is by UTF-16 code units")
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

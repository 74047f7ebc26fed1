package row

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
	"unsafe"

	"pgregory.net/rapid"
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func TestParseEventTime(t *testing.T) {
	ok := []struct {
		in     string
		micros int64
		null   bool
	}{
		{`0`, 0, false},
		{`10`, 10_000_000, false},
		{`-10`, -10_000_000, false},
		{`-0`, 0, false},
		{`1.5`, 1_500_000, false},
		{`1.000001`, 1_000_001, false},
		{`1.0000019`, 1_000_001, false},   // truncated, not rounded
		{`-1.0000019`, -1_000_001, false}, // toward zero
		{`0.0000009`, 0, false},
		{`-0.0000009`, 0, false},
		{`1.5e3`, 1_500_000_000, false},
		{`15E2`, 1_500_000_000, false},
		{`1e-6`, 1, false},
		{`1e-7`, 0, false},
		{`123456789e-3`, 123_456_789_000, false},
		{`1e0`, 1_000_000, false},
		{`0e999999999999999999999`, 0, false},
		{`5e-99999999999999999999`, 0, false},
		{`1700000000.123456`, 1_700_000_000_123_456, false},
		{`1700000000.1234567`, 1_700_000_000_123_456, false},
		{`0.000000000000000000000000000001`, 0, false},
		{`253402300799.999999`, MaxEventTimeMicros, false},
		{`-62167219200`, MinEventTimeMicros, false},
		{`100000000000000000000e-10`, 10_000_000_000 * 1_000_000, false},
		{` 10 `, 10_000_000, false},
		{`null`, 0, true},
		{`"1970-01-01T00:00:10Z"`, 10_000_000, false},
		{`"1970-01-01T00:00:10.5Z"`, 10_500_000, false},
		{`"1970-01-01T00:00:10.123456789Z"`, 10_123_456, false},
		{`"1970-01-01T00:00:10.1234567891234Z"`, 10_123_456, false},
		{`"1970-01-01T01:00:00+01:00"`, 0, false},
		{`"1969-12-31T23:00:00-01:00"`, 0, false},
		{`"1969-12-31T23:59:59.9999999Z"`, -1, false}, // floor of nanos
		{`"1969-12-31T23:59:59.999Z"`, -1000, false},
		{`"2024-02-29T12:00:00Z"`, 1709208000_000_000, false},
		{`"2024-02-29t12:00:00z"`, 1709208000_000_000, false},
		{`"2024-02-29 12:00:00Z"`, 1709208000_000_000, false},
		{`"0000-01-01T00:00:00Z"`, MinEventTimeMicros, false},
		{`"9999-12-31T23:59:59.999999Z"`, MaxEventTimeMicros, false},
		{`"\u0031970-01-01T00:00:10Z"`, 10_000_000, false},
	}
	for _, tc := range ok {
		micros, null, err := ParseEventTime(raw(tc.in))
		if err != nil {
			t.Errorf("ParseEventTime(%s): %v", tc.in, err)
			continue
		}
		if micros != tc.micros || null != tc.null {
			t.Errorf("ParseEventTime(%s) = %d, %v; want %d, %v", tc.in, micros, null, tc.micros, tc.null)
		}
	}
	bad := []struct{ in, want string }{
		{``, "want a value"},
		{`true`, "got true"},
		{`false`, "got false"},
		{`{}`, "got an object"},
		{`[1]`, "got an array"},
		{`01`, "data after the value"},
		{`1.`, "decimal point"},
		{`.5`, "want a value"},
		{`+1`, "want a value"},
		{`1e`, "exponent"},
		{`NaN`, "want a value"},
		{`10 11`, "data after the value"},
		{`253402300800`, "out of range"},
		{`-62167219200.000001`, "out of range"},
		{`1e19`, "out of range"},
		{`1e999999999999`, "out of range"},
		{`99999999999999999999999`, "out of range"},
		{`"2024-01-01"`, "too short"},
		{`"2024-01-01T00:00:00"`, "too short"},
		{`"2024-01-01T00:00:00.5"`, "want an offset"},
		{`"2024-01-01T00:00:00+0100"`, "want an offset"},
		{`"2024-01-01T00:00:00+24:00"`, "offset out of range"},
		{`"2024-13-01T00:00:00Z"`, "month out of range"},
		{`"2023-02-29T00:00:00Z"`, "day out of range"},
		{`"2024-01-01T24:00:00Z"`, "time out of range"},
		{`"2024-01-01T00:00:60Z"`, "time out of range"},
		{`"2024-01-01T00:00:00.Z"`, "digits after the decimal point"},
		{`"2024-01-01X00:00:00Z"`, "want T"},
		{`"2024/01/01T00:00:00Z"`, "YYYY-MM-DD"},
		{`"0000-01-01T00:00:00+00:01"`, "out of range"},
		{`"9999-12-31T23:59:59-00:01"`, "out of range"},
		{`"2024-01-01T0:00:00.5Z"`, "time must be HH:MM:SS"}, // time.Parse accepts one-digit hours
		{`"2024-01-01T00:00:00,5Z"`, "want an offset"},       // and a comma before the fraction
		{`"yesterday"`, "too short"},
		{`"10"`, "too short"},
	}
	for _, tc := range bad {
		micros, null, err := ParseEventTime(raw(tc.in))
		if err == nil {
			t.Errorf("ParseEventTime(%s) = %d, %v; want error containing %q", tc.in, micros, null, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseEventTime(%s) error %q, want it to contain %q", tc.in, err, tc.want)
		}
	}
}

func TestFormatTimestampMs(t *testing.T) {
	for _, tc := range []struct {
		ms   int64
		want string
	}{
		{0, "1970-01-01T00:00:00.000Z"},
		{1000, "1970-01-01T00:00:01.000Z"},
		{15000, "1970-01-01T00:00:15.000Z"},
		{-1, "1969-12-31T23:59:59.999Z"},
		{-1000, "1969-12-31T23:59:59.000Z"},
		{1709208000123, "2024-02-29T12:00:00.123Z"},
		{MaxEventTimeMicros / 1000, "9999-12-31T23:59:59.999Z"},
		{MinEventTimeMicros / 1000, "0000-01-01T00:00:00.000Z"},
	} {
		if got := FormatTimestampMs(tc.ms); got != tc.want {
			t.Errorf("FormatTimestampMs(%d) = %s, want %s", tc.ms, got, tc.want)
		}
	}
	// Extremes must not panic.
	_ = FormatTimestampMs(math.MinInt64)
	_ = FormatTimestampMs(math.MaxInt64)
}

func key(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestEncodeKeyValues(t *testing.T) {
	same := [][2]string{
		{`"a"`, `"\u0061"`},
		{`"a/b"`, `"a\/b"`},
		{`10`, `10.0`},
		{`10`, `1e1`},
		{`10`, `1.0E+1`},
		{`10`, ` 10 `},
		{`0`, `-0`},
		{`0`, `-0.0`},
		{`0`, `0e5`},
		{`0.1`, `0.10000000000000001`},
		{`1e21`, `1E21`},
		{`100000000000000000000`, `1e20`},
		{`1152921504606846976`, `1152921504606846976.0`},
		{`1e400`, `2e400`}, // both +Inf as doubles
		{`{"a": 1}`, `{"a":1}`},
		{`[1, 2]`, `[1,2]`},
		{`"\ufffd"`, "\"\xef\xbf\xbd\""},           // an escaped and a literal U+FFFD are one string
		{`"\ud83d\ude00"`, "\"\xf0\x9f\x98\x80\""}, // a surrogate pair is its character
	}
	for _, p := range same {
		a, b := EncodeKeyValues([]json.RawMessage{raw(p[0])}), EncodeKeyValues([]json.RawMessage{raw(p[1])})
		if !bytes.Equal(a, b) {
			t.Errorf("keys of %s and %s differ: %q vs %q", p[0], p[1], a, b)
		}
	}
	different := [][2]string{
		// encoding/json decodes a lone surrogate and an invalid byte to
		// U+FFFD; they are not that character (and not valid input: the
		// decoder refuses them; here they are tagged as invalid values).
		{`"\ud800"`, `"\ufffd"`},
		{`"\udfff"`, `"\ud800"`},
		{"\"\xff\"", `"\ufffd"`},
		{"\"\xff\"", "\"\xfe\""},
		{`"1"`, `1`},
		{`"null"`, `null`},
		{`"true"`, `true`},
		{`true`, `false`},
		{`null`, `false`},
		{`1`, `1.5`},
		{`9007199254740993`, `9007199254740992`}, // integer literals stay exact
		{`"a"`, `"A"`},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`},
		{`[1]`, `"[1]"`},
		{`1`, `not json`},
		{`""`, `null`},
	}
	for _, p := range different {
		a, b := EncodeKeyValues([]json.RawMessage{raw(p[0])}), EncodeKeyValues([]json.RawMessage{raw(p[1])})
		if bytes.Equal(a, b) {
			t.Errorf("keys of %s and %s are equal: %q", p[0], p[1], a)
		}
	}
	// Injective across column boundaries: ("ab","c") != ("a","bc").
	if bytes.Equal(EncodeKeyValues([]json.RawMessage{raw(`"ab"`), raw(`"c"`)}), EncodeKeyValues([]json.RawMessage{raw(`"a"`), raw(`"bc"`)})) {
		t.Error("key encoding is not length-prefixed")
	}
	if got := EncodeKeyValues(nil); len(got) != 0 {
		t.Errorf("EncodeKeyValues(nil) = %q", got)
	}
}

func TestDecode(t *testing.T) {
	type want struct {
		key   []byte
		et    int64
		etNil bool
	}
	kv := func(vals ...string) []byte {
		rs := make([]json.RawMessage, len(vals))
		for i, v := range vals {
			rs[i] = raw(v)
		}
		return EncodeKeyValues(rs)
	}
	et := func(micros int64) []byte { return AppendKeyEventTime(nil, micros, false) }
	tests := []struct {
		name  string
		keys  []string
		event string
		row   string
		want  want
	}{
		{"one key", []string{"id"}, "", `{"id":1,"x":"y"}`, want{key: kv(`1`)}},
		{"key order is declared order", []string{"b", "a"}, "", `{"a":1,"b":2}`, want{key: kv(`2`, `1`)}},
		{"escaped field name", []string{"id"}, "", `{"\u0069d":"v"}`, want{key: kv(`"v"`)}},
		{"space everywhere", []string{"id"}, "", " \n{ \"id\" : 7 , \"t\" : [ 1 , { } ] }\t", want{key: kv(`7`)}},
		{"event time not a key", []string{"id"}, "ts", `{"id":"a","ts":10}`, want{key: kv(`"a"`), et: 10_000_000}},
		{"event time is a key", []string{"value", "ts"}, "ts", `{"value":10,"ts":"1970-01-01T00:00:10Z"}`, want{key: key(kv(`10`), et(10_000_000)), et: 10_000_000}},
		{"event time null", []string{"id"}, "ts", `{"id":1,"ts":null}`, want{key: kv(`1`), etNil: true}},
		{"event time null key", []string{"ts"}, "ts", `{"ts":null}`, want{key: AppendKeyEventTime(nil, 0, true), etNil: true}},
		{"all columns sorted by name", nil, "", `{"b":2,"a":"x","c":null}`, want{key: kv(`"x"`, `2`, `null`)}},
		{"all columns with event time", nil, "ts", `{"ts":10.5,"id":1}`, want{key: key(kv(`1`), et(10_500_000)), et: 10_500_000}},
		{"all columns empty row", nil, "", `{}`, want{key: []byte{}}},
		{"key repeated in list", []string{"id", "id"}, "", `{"id":1}`, want{key: kv(`1`, `1`)}},
		{"unrelated duplicate ignored", []string{"id"}, "", `{"id":1,"x":1,"x":2}`, want{key: kv(`1`)}},
		{"many keys use the map", []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, "", `{"i":9,"h":8,"g":7,"f":6,"e":5,"d":4,"c":3,"b":2,"a":1}`,
			want{key: kv(`1`, `2`, `3`, `4`, `5`, `6`, `7`, `8`, `9`)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(tc.keys, tc.event)
			var r Row
			data := []byte(tc.row)
			if err := d.Decode(data, &r); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !bytes.Equal(r.Data, data) {
				t.Errorf("Data = %s", r.Data)
			}
			if !bytes.Equal(r.Key, tc.want.key) {
				t.Errorf("Key = %q, want %q", r.Key, tc.want.key)
			}
			if r.EventTime != tc.want.et || r.EventTimeNull != tc.want.etNil {
				t.Errorf("EventTime = %d null %v, want %d null %v", r.EventTime, r.EventTimeNull, tc.want.et, tc.want.etNil)
			}
		})
	}
}

func TestDecodeKeyEquality(t *testing.T) {
	d := NewDecoder([]string{"id", "ts"}, "ts")
	var a, b Row
	if err := d.Decode([]byte(`{"id":"x","ts":10,"other":1}`), &a); err != nil {
		t.Fatal(err)
	}
	if err := d.Decode([]byte(`{"other":2,"ts":"1970-01-01T01:00:10+01:00","id":"\u0078"}`), &b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Key, b.Key) {
		t.Errorf("equal rows have different keys: %q vs %q", a.Key, b.Key)
	}
	if err := d.Decode([]byte(`{"id":"x","ts":10.000001}`), &b); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Key, b.Key) {
		t.Error("event times 1 µs apart share a key")
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		keys  []string
		event string
		row   string
		want  string
	}{
		{[]string{"id"}, "", `{"x":1}`, `missing key column "id"`},
		{[]string{"id"}, "ts", `{"id":1}`, `missing event-time column "ts"`},
		{nil, "ts", `{"id":1}`, `missing event-time column "ts"`},
		{[]string{"id"}, "ts", `{"id":1,"ts":true}`, `event-time column "ts": want a number (seconds since the epoch) or an RFC 3339 string, got true`},
		{[]string{"id"}, "ts", `{"id":1,"ts":"noon"}`, `event-time column "ts": invalid RFC 3339 timestamp "noon"`},
		{nil, "ts", `{"id":1,"ts":"noon"}`, `event-time column "ts": invalid RFC 3339`},
		{[]string{"id"}, "ts", `{"id":1,"ts":1e30}`, `event-time column "ts": event time 1e30 seconds is out of range`},
		{[]string{"id"}, "", `{"id":1,"id":2}`, `column "id" appears twice in the row`},
		{[]string{"id"}, "", `{"id":1,"\u0069d":2}`, `column "id" appears twice in the row`},
		{nil, "", `{"a":1,"a":2}`, `column "a" appears twice in the row`},
		{[]string{"id"}, "", `[{"id":1}]`, `row is an array, want a JSON object`},
		{[]string{"id"}, "", `"id"`, `row is a string, want a JSON object`},
		{[]string{"id"}, "", ``, `row is empty, want a JSON object`},
		{[]string{"id"}, "", `   `, `row is empty, want a JSON object`},
		{[]string{"id"}, "", `{"id":1`, `unterminated object`},
		{[]string{"id"}, "", `{"id":1,}`, `want a field name`},
		{[]string{"id"}, "", `{"id" 1}`, `want ':'`},
		{[]string{"id"}, "", `{"id":01}`, `want ',' or '}'`},
		{[]string{"id"}, "", `{"id":1} {}`, `data after the row object`},
		{[]string{"id"}, "", `{"id":"a` + "\x01" + `"}`, `control character`},
		{[]string{"id"}, "", `{"id":"\x"}`, `invalid escape`},
		{[]string{"id"}, "", `{"id":"\u12"}`, `invalid \u escape`},
		{[]string{"id"}, "", `{"id":tru}`, `want true`},
		{[]string{"id"}, "", `{"id":[1,]}`, `want a value`},
		{[]string{"id"}, "", `{"id":{"a"}}`, `want ':'`},
		{[]string{"id"}, "", `{"id":1,"x":` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + `}`, `nested too deeply`},
		{[]string{"id"}, "", `{"id":-}`, `want a digit`},
	}
	for _, tc := range tests {
		d := NewDecoder(tc.keys, tc.event)
		var r Row
		err := d.Decode([]byte(tc.row), &r)
		if err == nil {
			t.Errorf("Decode(%q) with keys %v: no error, want %q", tc.row, tc.keys, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%.60q): error %q, want it to contain %q", tc.row, err, tc.want)
		}
		if json.Valid([]byte(tc.row)) && strings.HasPrefix(strings.TrimSpace(tc.row), "{") && strings.Contains(tc.want, "invalid JSON") {
			t.Errorf("Decode(%q) calls valid JSON invalid", tc.row)
		}
	}
}

func TestFieldNames(t *testing.T) {
	got, err := FieldNames([]byte(`{"b":1,"\u0061":[1,{"c":2}],"c":null}`))
	if err != nil || strings.Join(got, ",") != "b,a,c" {
		t.Errorf("FieldNames = %v, %v", got, err)
	}
	if _, err := FieldNames([]byte(`{"a":1,"a":2}`)); err == nil || !strings.Contains(err.Error(), `column "a" appears twice`) {
		t.Errorf("FieldNames of a duplicate: %v", err)
	}
	if _, err := FieldNames([]byte(`[1]`)); err == nil {
		t.Error("FieldNames of an array succeeded")
	}
	if got, err := FieldNames([]byte(`{}`)); err != nil || len(got) != 0 {
		t.Errorf("FieldNames({}) = %v, %v", got, err)
	}
}

// The scanner must accept exactly what encoding/json accepts for objects,
// except strings that are not Unicode text (invalid UTF-8, lone
// surrogates), which encoding/json replaces by U+FFFD and the scanner
// refuses.
func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	scan := func(s string) error {
		var it objectIter
		err := it.begin([]byte(s))
		for err == nil {
			var ok bool
			if _, ok, err = it.next(); !ok {
				break
			}
		}
		return err
	}
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"a":"\ud83d\ude00"}`, `{"a":1e5,"b":-0.5E-3}`, `{"a":[[],{}]}`,
		`{"a":1,}`, `{"a":01}`, `{"a":.5}`, `{"a":"\u00"}`, `{"a" : 1 }`, `{"a":"\ufffd"}`, "{\"a\":\"\xef\xbf\xbd\"}",
		`{"a":1}x`, `{"a":nul}`, `{"a":[1 2]}`, `{"a":{"b":1,}}`, `{"a":"\/"}`, "{\"a\":\"\t\"}", `{"a":"\u0000"}`,
	} {
		if err := scan(s); (err == nil) != json.Valid([]byte(s)) {
			t.Errorf("%q: scanner error %v, json.Valid %v", s, err, json.Valid([]byte(s)))
		}
	}
	for _, s := range []string{
		`{"a":"` + "\xff" + `"}`, "{\"\xfe\":1}", `{"a":["x` + "\xc3" + `"]}`, `{"a":{"b":"` + "\xed\xa0\x80" + `"}}`, // invalid UTF-8 (the last a UTF-8-encoded surrogate)
		`{"a":"\ud800"}`, `{"a":"\udfff"}`, `{"a":"\ud800x"}`, `{"a":"\ud800\u0041"}`, `{"a":"\ude00\ud83d"}`, `{"\ud800":1}`, `{"a":[{"b":"\udbff"}]}`,
	} {
		if !json.Valid([]byte(s)) {
			t.Fatalf("%q: not valid to encoding/json; the case tests nothing", s)
		}
		if err := scan(s); err == nil {
			t.Errorf("%q: accepted; it is not Unicode text", s)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	cases := []struct {
		name  string
		keys  []string
		event string
		row   string
	}{
		{"id+numeric-ts", []string{"id"}, "event_time", `{"id":"7f3c9a2e-payment-000123","amount":1299,"currency":"EUR","event_time":1700000000.123456,"user":{"id":42,"country":"DE"}}`},
		{"id+rfc3339-ts", []string{"id"}, "event_time", `{"id":"7f3c9a2e-payment-000123","amount":1299,"currency":"EUR","event_time":"2023-11-14T22:13:20.123456Z"}`},
		{"value+ts-key", []string{"value", "event_time"}, "event_time", `{"value":10,"event_time":10}`},
		{"all-columns", nil, "event_time", `{"id":"a1","amount":12.5,"event_time":1700000000,"ok":true}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			d := NewDecoder(c.keys, c.event)
			data := []byte(c.row)
			var r Row
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := d.Decode(data, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestFormatMatchesTimeForSampleYears(t *testing.T) {
	for _, y := range []int{0, 1, 1582, 1969, 1970, 2000, 2024, 9999} {
		ms := time.Date(y, 7, 15, 1, 2, 3, 4_000_000, time.UTC).UnixMilli()
		if got, want := FormatTimestampMs(ms), time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z"); got != want {
			t.Errorf("year %d: %s, want %s", y, got, want)
		}
	}
}

// The engine copies rows by value: Row stays packed in 80 bytes.
func TestRowSize(t *testing.T) {
	if n := unsafe.Sizeof(Row{}); n > 80 {
		t.Fatalf("row.Row is %d bytes, want at most 80 (keep the bools together at the end)", n)
	}
}

// secondsToMicros's one-pass path for plain numbers answers as the general
// one does, value and error, on both sides of its limits (12 integer
// digits, the range, exponents).
func TestPlainSecondsToMicros(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var b []byte
		if rapid.Bool().Draw(t, "neg") {
			b = append(b, '-')
		}
		if n := rapid.IntRange(0, 14).Draw(t, "int digits"); n == 0 {
			b = append(b, '0')
		} else {
			b = append(b, byte('1'+rapid.IntRange(0, 8).Draw(t, "lead")))
			for range n - 1 {
				b = append(b, byte('0'+rapid.IntRange(0, 9).Draw(t, "digit")))
			}
		}
		if n := rapid.IntRange(0, 10).Draw(t, "frac digits"); n > 0 {
			b = append(b, '.')
			for range n {
				b = append(b, byte('0'+rapid.IntRange(0, 9).Draw(t, "digit")))
			}
		}
		if rapid.IntRange(0, 3).Draw(t, "exp") == 0 {
			b = append(b, 'e')
			b = append(b, rapid.SampledFrom([]string{"", "+", "-"}).Draw(t, "exp sign")...)
			b = append(b, byte('0'+rapid.IntRange(0, 9).Draw(t, "exp digit")))
		}
		got, gerr := secondsToMicros(b)
		want, werr := anySecondsToMicros(b)
		if got != want || (gerr == nil) != (werr == nil) {
			t.Fatalf("secondsToMicros(%s) = %d, %v; the general path says %d, %v", b, got, gerr, want, werr)
		}
	})
}

package row

import (
	"bytes"
	"encoding/json"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func FuzzParseEventTime(f *testing.F) {
	for _, s := range []string{
		`10`, `-1.0000019`, `1.5e3`, `1e-7`, `null`, `true`, `"1970-01-01T00:00:10Z"`,
		`"2024-02-29T12:00:00.123456789+05:30"`, `"1969-12-31T23:59:59.9999999Z"`, `253402300800`,
		`"0000-01-01T00:00:00Z"`, `"2024-01-01 00:00:00z"`, `0e99999999999999999999`,
		`1700000000.000100`, `-0.0`, `253402300799.9999999`, `-62167219200.0000001`, `999999999999.5`, `1000000000000`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		micros, isNull, err := ParseEventTime(data)
		if err != nil {
			if micros != 0 || isNull {
				t.Fatalf("error %v with micros %d null %v", err, micros, isNull)
			}
			checkRejectionAgrees(t, data)
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		if isNull {
			if micros != 0 || strings.TrimSpace(string(data)) != "null" {
				t.Fatalf("null result %d for %q", micros, data)
			}
			return
		}
		if micros < MinEventTimeMicros || micros > MaxEventTimeMicros {
			t.Fatalf("%q: %d out of range", data, micros)
		}
		switch v := jsonValue(t, data).(type) {
		case json.Number:
			if want, ok := exactMicros(string(v)); ok && want != micros {
				t.Fatalf("%s: got %d µs, exact arithmetic says %d", v, micros, want)
			}
		case string:
			if g, gerr := time.Parse(time.RFC3339Nano, v); gerr == nil && g.UnixMicro() != micros {
				t.Fatalf("%q: got %d µs, time.Parse says %d", v, micros, g.UnixMicro())
			}
		default:
			t.Fatalf("%q accepted as %T", data, v)
		}
		// Round trip through the progress format, at millisecond precision.
		ms := micros / 1000
		if micros < 0 && micros%1000 != 0 {
			ms-- // floor
		}
		text := FormatTimestampMs(ms)
		if want := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z"); text != want {
			t.Fatalf("FormatTimestampMs(%d) = %s, want %s", ms, text, want)
		}
		back, err := parseRFC3339([]byte(text))
		if err != nil || back != ms*1000 {
			t.Fatalf("FormatTimestampMs(%d) = %s parses back to %d, %v", ms, text, back, err)
		}
	})
}

// checkRejectionAgrees fails when ParseEventTime rejected a value that an
// independent reading accepts and puts within years 0000-9999.
func checkRejectionAgrees(t *testing.T, data []byte) {
	if !json.Valid(data) {
		return
	}
	switch v := jsonValue(t, data).(type) {
	case json.Number:
		if m, ok := exactMicros(string(v)); ok && m >= MinEventTimeMicros && m <= MaxEventTimeMicros {
			t.Fatalf("rejected %s, exact arithmetic gives %d µs", v, m)
		}
	case string:
		g, err := time.Parse(time.RFC3339Nano, v)
		// time.Parse is laxer than RFC 3339 (one-digit hours, a comma
		// before the fraction), so only strictly shaped strings count.
		if err == nil && strictRFC3339.MatchString(v) {
			if m := g.UnixMicro(); m >= MinEventTimeMicros && m <= MaxEventTimeMicros {
				t.Fatalf("rejected %q, time.Parse gives %v", v, g)
			}
		}
	}
}

// strictRFC3339 is the RFC 3339 date-time grammar (upper-case T and Z).
var strictRFC3339 = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)

func jsonValue(t *testing.T, data []byte) any {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("encoding/json rejects %q: %v", data, err)
	}
	return v
}

// exactMicros is seconds × 10^6 truncated toward zero, by rational
// arithmetic; ok is false when the number is too large to compute cheaply.
func exactMicros(num string) (int64, bool) {
	if len(num) > 200 {
		return 0, false
	}
	if i := strings.IndexAny(num, "eE"); i >= 0 {
		var e big.Int
		if _, ok := e.SetString(strings.TrimPrefix(num[i+1:], "+"), 10); !ok || !e.IsInt64() || e.Int64() > 400 || e.Int64() < -400 {
			return 0, false
		}
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, false
	}
	r.Mul(r, big.NewRat(1000_000, 1))
	q := new(big.Int).Quo(r.Num(), r.Denom()) // truncates toward zero
	if !q.IsInt64() {
		return 0, false
	}
	return q.Int64(), true
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"ts":10}`,
		`{"value":10,"event_time":"1970-01-01T00:00:10Z"}`,
		`{"id":"\u0061","ts":null,"x":[1,{"y":2}]}`,
		`{"id":1.0,"ts":1e1}`,
		`{"id":1,"id":2,"ts":1}`,
		`[{"id":1}]`,
		`{"id":"` + "\xff" + `","ts":"2024-01-01T00:00:00+01:00"}`,
		`{"id":"\ud800","ts":1}`,
		`{"id":"\ud83d\ude00","ts":1}`,
		` { "ts" : -0.5 , "id" : { } } `,
	} {
		for mode := range uint8(4) {
			f.Add([]byte(s), mode)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		var keys []string
		event := "ts"
		switch mode % 4 {
		case 0:
			keys = []string{"id"}
		case 1:
			keys = []string{"id", "ts"}
		case 2: // all columns
		case 3:
			keys, event = []string{"ts", "id"}, ""
		}
		d := NewDecoder(keys, event)
		var r Row
		err := d.Decode(data, &r)
		if err != nil {
			// encoding/json accepts strings that are not Unicode text
			// (invalid UTF-8, lone surrogates); the decoder refuses them.
			notText := !utf8.Valid(data) || strings.Contains(err.Error(), "surrogate")
			if json.Valid(data) && strings.HasPrefix(err.Error(), "invalid JSON") && !notText {
				t.Fatalf("valid JSON %q called invalid: %v", data, err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		if !bytes.Equal(r.Data, data) {
			t.Fatalf("Data changed")
		}
		// Decoding is a function of the bytes.
		var again Row
		if err := d.Decode(bytes.Clone(data), &again); err != nil || !bytes.Equal(again.Key, r.Key) || again.EventTime != r.EventTime || again.EventTimeNull != r.EventTimeNull {
			t.Fatalf("second decode differs: %v %q vs %q", err, again.Key, r.Key)
		}
		// Whitespace does not matter.
		var compact bytes.Buffer
		if err := json.Compact(&compact, data); err != nil {
			t.Fatal(err)
		}
		var c Row
		if err := d.Decode(compact.Bytes(), &c); err != nil || !bytes.Equal(c.Key, r.Key) {
			t.Fatalf("compacted row decodes differently: %v %q vs %q", err, c.Key, r.Key)
		}
		// An independent reading with encoding/json gives the same key.
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("encoding/json cannot read an accepted row: %v", err)
		}
		cols := keys
		if cols == nil {
			for name := range m {
				cols = append(cols, name)
			}
			sortStrings(cols)
		}
		var want []byte
		for _, col := range cols {
			v, ok := m[col]
			if !ok {
				t.Fatalf("key column %q missing but Decode succeeded", col)
			}
			if col == event {
				micros, null, err := ParseEventTime(v)
				if err != nil {
					t.Fatalf("ParseEventTime(%s): %v", v, err)
				}
				want = AppendKeyEventTime(want, micros, null)
				continue
			}
			want = AppendKeyValue(want, v)
		}
		if !bytes.Equal(want, r.Key) {
			t.Fatalf("key %q, oracle %q", r.Key, want)
		}
		if event != "" {
			micros, null, _ := ParseEventTime(m[event])
			if micros != r.EventTime || null != r.EventTimeNull {
				t.Fatalf("event time %d/%v, oracle %d/%v", r.EventTime, r.EventTimeNull, micros, null)
			}
		}
	})
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j-1] > s[j]; j-- {
			s[j-1], s[j] = s[j], s[j-1]
		}
	}
}

package analyze

import (
	"errors"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTimeUnits: the same trace in seconds, epoch milliseconds and epoch
// microseconds (and RFC 3339 strings, which carry their own unit) gives
// the same figures; epoch milliseconds read as seconds are refused with a
// hint.
func TestTimeUnits(t *testing.T) {
	type ev struct {
		id string
		us int64
	}
	evs := []ev{{"a", 1_717_200_000_000_000}, {"b", 1_717_200_000_250_000}, {"a", 1_717_200_060_000_000},
		{"c", 1_717_200_061_000_001}, {"b", 1_717_200_000_250_000}, {"c", 1_717_200_090_500_000}}
	write := func(f func(us int64) string, arrival bool) string {
		var b strings.Builder
		for i, e := range evs {
			b.WriteString(`{"id":"` + e.id + `","ts":` + f(e.us))
			if arrival {
				b.WriteString(`,"at":` + f(1_717_200_100_000_000+int64(i)*1000))
			}
			b.WriteString("}\n")
		}
		return b.String()
	}
	sec := func(us int64) string {
		return strconv.FormatInt(us/1e6, 10) + "." + strconv.FormatInt(1e6+us%1e6, 10)[1:]
	}
	msText := func(us int64) string {
		s := strconv.FormatInt(us/1000, 10)
		if us%1000 != 0 {
			s += "." + strconv.FormatInt(1000+us%1000, 10)[1:]
		}
		return s
	}
	usText := func(us int64) string { return strconv.FormatInt(us, 10) }
	rfc := func(us int64) string { return `"` + time.UnixMicro(us).UTC().Format(time.RFC3339Nano) + `"` }
	for _, arrival := range []bool{false, true} {
		opt := Options{Margin: DefaultMargin}
		if arrival {
			opt.Arrival = "at"
		}
		want := analyzeText(t, opt, write(sec, arrival))
		if want.EventTimeGapMs.Max != 60000 || want.DistinctKeys != 3 {
			t.Fatalf("seconds: %+v", want)
		}
		for _, c := range []struct {
			unit TimeUnit
			f    func(int64) string
		}{{Milliseconds, msText}, {Microseconds, usText}, {Milliseconds, rfc}, {Microseconds, rfc}} {
			o := opt
			o.TimeUnit = c.unit
			got := analyzeText(t, o, write(c.f, arrival))
			if !equalJSON(t, got, want) {
				t.Fatalf("unit %s, arrival %v: figures differ from seconds", c.unit, arrival)
			}
		}
	}
	// The event-time column among the keys: 1717200000000 ms and its RFC
	// 3339 form are one key, as in seconds.
	in := "{\"id\":\"a\",\"ts\":1717200000000}\n{\"id\":\"a\",\"ts\":\"2024-06-01T00:00:00Z\"}\n{\"id\":\"a\",\"ts\":1717200000001}\n"
	r := analyzeText(t, Options{Keys: []string{"id", "ts"}, TimeUnit: Milliseconds}, in)
	if r.DistinctKeys != 2 || r.ExtraCopies != 1 {
		t.Fatalf("event time in the keys: %d keys, %d extra", r.DistinctKeys, r.ExtraCopies)
	}

	// Epoch milliseconds read as seconds: the hint. Out of range in ms too.
	for _, c := range []struct {
		unit      TimeUnit
		line, err string
	}{
		{Seconds, `{"id":"a","ts":1717200000000}`, "x.jsonl:1: ts: event time 1717200000000 seconds is out of range (years 0000-9999); epoch milliseconds or microseconds? give --time-unit ms or us"},
		{Milliseconds, `{"id":"a","ts":1717200000000000000}`, "x.jsonl:1: ts: event time 1717200000000000000 milliseconds is out of range (years 0000-9999)"},
		{Milliseconds, `{"id":"a","ts":1e400}`, "x.jsonl:1: ts: event time > 1.8e308 milliseconds is out of range"},
		{Microseconds, `{"id":"a","ts":-62167219200000001}`, "x.jsonl:1: ts: event time -62167219200000001 microseconds is out of range"},
		{Milliseconds, `{"id":"a","ts":true}`, "x.jsonl:1: ts: want a number (milliseconds since the epoch) or an RFC 3339 string, got true"},
		{Milliseconds, `{"id":"a","ts":[1]}`, "x.jsonl:1: ts: want a number (milliseconds since the epoch) or an RFC 3339 string, got an object or array"},
		{Milliseconds, `{"id":"a","ts":null}`, "x.jsonl:1: ts: event time is null"},
		{Milliseconds, `{"id":"a","ts":"soon"}`, `x.jsonl:1: ts: invalid RFC 3339 timestamp "soon"`},
		{Milliseconds, `{"id":"a"}`, "x.jsonl:1: ts: missing"},
		{Milliseconds, `{"ts":1}`, "x.jsonl:1: id: missing"},
		{Milliseconds, `{"id":"a","ts":1,"ts":2}`, "x.jsonl:1: ts: appears twice in the row"},
		{Milliseconds, `{"id":"a","ts":1,"at":null}`, "x.jsonl:1: at: arrival time is null"},
		{Microseconds, `{"id":"a","ts":1,"at":"x"}`, `x.jsonl:1: at: invalid RFC 3339 timestamp "x"`},
		{Milliseconds, `[1]`, "x.jsonl:1: row is an array"},
	} {
		opt := Options{File: "x.jsonl", Keys: []string{"id"}, Time: "ts", TimeUnit: c.unit}
		if strings.Contains(c.line, `"at"`) {
			opt.Arrival = "at"
		}
		_, err := Run(strings.NewReader(c.line+"\n"), opt)
		var le *LineError
		if !errors.As(err, &le) || !strings.HasPrefix(err.Error(), c.err) {
			t.Errorf("%s (%s): %v, want %q", c.line, c.unit, err, c.err)
		}
	}
}

func TestParseTimeUnit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want TimeUnit
		err  string
	}{
		{"s", Seconds, ""}, {"ms", Milliseconds, ""}, {"us", Microseconds, ""}, {"µs", Microseconds, ""},
		{"mss", 0, "did you mean ms?"}, {"milliseconds", 0, "did you mean ms?"}, {"millisecond", 0, "did you mean ms?"},
		{"seconds", 0, "did you mean s?"}, {"ns", 0, "did you mean"}, {"", 0, "want s, ms or us"}, {"hours", 0, "want s, ms or us"},
	} {
		got, err := ParseTimeUnit(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseTimeUnit(%q) = %v, %v", c.in, got, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseTimeUnit(%q): %v, want %q", c.in, err, c.err)
		}
	}
}

// FuzzParseTimeUnit: no input panics; an accepted unit writes back as
// itself (µs as us).
func FuzzParseTimeUnit(f *testing.F) {
	for _, s := range []string{"s", "ms", "us", "µs", "mss", "", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseTimeUnit(s)
		if err != nil {
			return
		}
		if back, err := ParseTimeUnit(u.String()); err != nil || back != u {
			t.Fatalf("%q -> %s -> %v %v", s, u, back, err)
		}
	})
}

// FuzzEpochNumber: an event time given as a JSON integer in any unit is
// read exactly (checked with big integers), or refused exactly when it is
// outside years 0000-9999; no value panics the unit path.
func FuzzEpochNumber(f *testing.F) {
	for _, s := range []string{"1717200000000", "-1", "0", "00", "253402300799999", "253402300800000", "1.5e+12", "1e-7",
		"9223372036854775807999", "-0", `"2024-06-01T00:00:00Z"`, "1E400", "true"} {
		f.Add(s, uint8(1))
	}
	integer := regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	f.Fuzz(func(t *testing.T, text string, unit uint8) {
		u := TimeUnit(unit%2 + 1)
		a, err := New(Options{File: "f", Keys: []string{"id"}, Time: "ts", TimeUnit: u})
		if err != nil {
			t.Fatal(err)
		}
		_, us, _, err := a.parse([]byte(`{"id":"a","ts":` + text + `}`))
		var le *LineError
		if err != nil && !errors.As(err, &le) {
			t.Fatalf("%s: %v is not a line error", text, err)
		}
		if !integer.MatchString(text) {
			return
		}
		n, _ := new(big.Int).SetString(text, 10)
		exact := new(big.Int).Mul(n, big.NewInt([]int64{1e6, 1e3, 1}[u]))
		lo, hi := big.NewInt(-62167219200*1000_000), big.NewInt(253402300800*1000_000-1)
		in := exact.Cmp(lo) >= 0 && exact.Cmp(hi) <= 0
		if in != (err == nil) || in && exact.Int64() != us {
			t.Fatalf("%s %s: %d, %v; exact %s", text, u, us, err, exact)
		}
	})
}

// FuzzParseDuration: no input panics; an accepted duration is in its
// range, whatever Spark interval or Go duration was given.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"1m", "1 minute", "24h", "25h", "0s", "-1s", "106751 days", "9223372036854775807 microseconds", "interval 1 day", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration("rate-window", s, MinRateWindow, MaxRateWindow, RateWindowRange)
		if err == nil && (d < MinRateWindow || d > MaxRateWindow) {
			t.Fatalf("%q accepted as %v", s, d)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "--rate-window") {
			t.Fatalf("%q: %v", s, err)
		}
	})
}

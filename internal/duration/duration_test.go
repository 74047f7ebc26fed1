package duration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestParse: whole milliseconds with a unit; nothing below 1ms silently
// becomes 0, nothing overflows. (Moved from package sim with Parse.)
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"30s", 30 * time.Second}, {"250ms", 250 * time.Millisecond}, {"2d", 48 * time.Hour}, {"1d12h", 36 * time.Hour},
		{"10 minutes", 10 * time.Minute}, {"1 day 3 hours", 27 * time.Hour}, {"0s", 0}, {"366d", 366 * 24 * time.Hour},
		{"1500000us", 1500 * time.Millisecond},
		// One grammar with Interval: case-insensitive, any whitespace
		// makes a Spark interval.
		{"10S", 10 * time.Second}, {"2D", 48 * time.Hour}, {"INTERVAL '10' SECOND", 10 * time.Second}, {"10\nminutes", 10 * time.Minute},
		{"0d", 0}, {"+5s", 5 * time.Second},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", "empty: want a duration such as 30s, 10 minutes or 2d"},
		{"30", `"30" has no unit`},
		{"1.5", `"1.5" has no unit`},
		{"1ns", `"1ns" is not a whole number of milliseconds (the simulator's clock ticks in ms)`},
		{"1500us", "whole number of milliseconds"},
		{"-1s", `"-1s" is negative: want a duration of 0 or more`},
		{"-0s", "is negative"},
		{"1d-1h", "is negative"},
		{"-2d", `"-2d": want a duration between 0 and 106751d`},
		{"500 microseconds", `"500 microseconds" is below 1ms`},
		{"-5 seconds", `"-5 seconds" is not a duration (want 30s, 10 minutes or 2d): delay threshold (-5 seconds) should not be negative`},
		{"soon", `"soon" is not a duration (want 30s, 10 minutes or 2d)`},
		{"100000000000000000d", "between 0 and 106751d"},
		{"106752d", "between 0 and 106751d"},
		{"9999999999h", `"9999999999h" is not a duration`}, // time.ParseDuration: overflow
		{"1e400s", "between 0 and 106751d"},
		{"10x", "between 0 and 106751d"}, // time.ParseDuration: unknown unit
	} {
		d, err := Parse(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, %v; want an error containing %q", tc.in, d, err, tc.want)
		}
	}
}

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", time.Millisecond: "1ms", 24 * time.Hour: "1d", 90 * time.Minute: "1h30m",
		366 * 24 * time.Hour: "366d", 1500 * time.Millisecond: "1s500ms", -36 * time.Hour: "-1d12h", 1500 * time.Nanosecond: "1µs500ns"} {
		if got := Format(d); got != want {
			t.Errorf("Format(%v) = %s, want %s", time.Duration(d), got, want)
		}
	}
}

// TestIntervalDays: the Go form takes a leading day count in every
// grammar's user, the query's delays included.
func TestIntervalDays(t *testing.T) {
	const day = int64(86_400_000_000)
	for in, want := range map[string]int64{"2d": 2 * day, "1d12h": day + day/2, "1D": day, "-1d": -day, "1d-1h": day - day/24, "0d": 0} {
		if got, err := Interval(in); err != nil || got != want {
			t.Errorf("Interval(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"d", "1.5d", "1dd", "99999999999999d"} {
		if got, err := Interval(in); err == nil {
			t.Errorf("Interval(%q) = %d", in, got)
		}
	}
	if _, err := Delay("-1d"); err == nil || err.Error() != "delay threshold (-1d) should not be negative" {
		t.Errorf("Delay(-1d): %v", err)
	}
}

// FuzzParse: no input panics; an accepted duration is whole milliseconds,
// not negative, and Format writes it back in a form Parse reads as itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"30s", "1d12h", "10 minutes", "-1s", "1ns", "9999999999h", "interval '1' day", "0d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			return
		}
		if d < 0 || d%time.Millisecond != 0 {
			t.Fatalf("Parse(%q) = %v", s, d)
		}
		back, err := Parse(Format(d))
		if err != nil || back != d {
			t.Fatalf("Parse(%q) = %v, Format %q parses to %v, %v", s, d, Format(d), back, err)
		}
	})
}

// FuzzInterval: no input panics, and a Go-form interval agrees with Parse
// where both accept it.
func FuzzInterval(f *testing.F) {
	for _, s := range []string{"10 seconds", "1d12h", "INTERVAL '1 day 2 hours'", "-10s", "1 year", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		micros, err := Interval(s)
		if err != nil {
			return
		}
		if d, err := Parse(s); err == nil && int64(d/time.Microsecond) != micros {
			t.Fatalf("Interval(%q) = %dµs, Parse = %v", s, micros, d)
		}
		_ = fmt.Sprint(micros)
	})
}

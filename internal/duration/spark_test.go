package duration

import (
	"fmt"
	"strings"
	"testing"
)

func TestDelay(t *testing.T) {
	const (
		sec  = int64(1000)
		min  = 60 * sec
		hour = 60 * min
		day  = 24 * hour
	)
	ok := []struct {
		in   string
		want int64
	}{
		// Spark unit strings.
		{"10 seconds", 10 * sec},
		{"1 second", sec},
		{"0 seconds", 0},
		{"2 hours", 2 * hour},
		{"1 hour", hour},
		{"1 day 3 minutes", day + 3*min},
		{"500 milliseconds", 500},
		{"1 millisecond", 1},
		{"100 microseconds", 0},
		{"1500 microseconds", 1},
		{"1999 microseconds", 1},
		{"1 week", 7 * day},
		{"2 weeks", 14 * day},
		{"1 month", 31 * day},
		{"1 year", 372 * day},
		{"1 year 1 month", 13 * 31 * day},
		{"1.5 seconds", 1500},
		{"0.0015 seconds", 1},
		{".5 seconds", 500},
		{"5. seconds", 5 * sec},
		{"1.999999999 seconds", 1999},
		{"+10 seconds", 10 * sec},
		{"1 day -1 hour", 23 * hour},
		{"1 minute -500 milliseconds", 59500},
		{"10 SECONDS", 10 * sec},
		{"10 Seconds", 10 * sec},
		{"  10   seconds  ", 10 * sec},
		{"10\tseconds", 10 * sec},
		{"1 day 2 hours 3 minutes 4 seconds", day + 2*hour + 3*min + 4*sec},
		{"7 days", 7 * day},
		// Spark's "interval" prefix (string form and SQL forms).
		{"interval 10 seconds", 10 * sec},
		{"INTERVAL 10 SECONDS", 10 * sec},
		{"Interval 1 day 3 minutes", day + 3*min},
		{"INTERVAL '10' SECOND", 10 * sec},
		{"INTERVAL '10' SECONDS", 10 * sec},
		{"INTERVAL '1.5' SECOND", 1500},
		{"INTERVAL '2' HOUR", 2 * hour},
		{"INTERVAL '1' MONTH", 31 * day},
		{"INTERVAL '1' YEAR", 372 * day},
		{"INTERVAL '1 day 2 hours'", day + 2*hour},
		{"INTERVAL '10 seconds'", 10 * sec},
		{"interval '-1' hour 2 hours", hour},
		{"interval -'1' hour 2 hours", hour},
		{"interval - '-1' hour", hour},
		{"interval 1 day '3' minutes", day + 3*min},
		// Go durations.
		{"10s", 10 * sec},
		{"2h", 2 * hour},
		{"1h30m", hour + 30*min},
		{"250ms", 250},
		{"1.5s", 1500},
		{"1500us", 1},
		{"1500µs", 1},
		{"999999ns", 0},
		{"0", 0},
		{"10S", 10 * sec},
	}
	for _, tc := range ok {
		got, err := Delay(tc.in)
		if err != nil {
			t.Errorf("Delay(%q): unexpected error %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Delay(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}

	bad := []struct {
		in      string
		wantErr string
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"-10 seconds", "delay threshold (-10 seconds) should not be negative"},
		{"-1 month", "should not be negative"},
		{"1 hour -2 hours", "should not be negative"},
		{"-500 microseconds", "should not be negative"},
		{"-10s", "should not be negative"},
		{"interval '-10' second", "should not be negative"},
		{"10", "Go duration"},
		{"ten seconds", "unrecognized number"},
		{"10 secs", "invalid unit"},
		{"10 sec", "invalid unit"},
		{"10 secondss", "invalid unit"},
		{"10 fortnights", "invalid unit"},
		{"10 seconds extra", "unrecognized number"},
		{"10 seconds 5", "expect a unit name"},
		{"1.5 hours", "fractional"},
		{"1.5 days", "fractional"},
		{"1.1234567891 seconds", "nanosecond precision"},
		{"10 nanoseconds", "invalid unit"},
		{"interval", "empty"},
		{"interval10 seconds", "prefix"},
		{"interval '10 seconds", "unterminated"},
		{"INTERVAL '1 2:03' DAY TO MINUTE", "not supported"},
		{"INTERVAL '1 day' second", "invalid interval value"},
		{"INTERVAL ''", "empty"},
		{"interval 10", "value/unit"},
		{"interval 10 secs", "invalid unit"},
		{"99999999999999999999 seconds", "out of range"},
		{"9223372036854775807 hours", "out of range"},
		{"3000000000 days", "out of range"},
		{"300000000 years", "out of range"},
		{"100000000 months", "too long"},
		{"10x", "Go duration"},
		{"1h30", "Go duration"},
		{". seconds", "invalid value"},
		{"10 seconds,", "invalid unit"},
		{"--10 seconds", "invalid value"},
	}
	for _, tc := range bad {
		got, err := Delay(tc.in)
		if err == nil {
			t.Errorf("Delay(%q) = %d, want error containing %q", tc.in, got, tc.wantErr)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Delay(%q) error %q, want it to contain %q", tc.in, err, tc.wantErr)
		}
	}
}
func FuzzDelay(f *testing.F) {
	for _, s := range []string{"10 seconds", "1 day -1 hour", "INTERVAL '10' SECOND", "1h30m", "-1 second", "1.5 seconds", "interval '1 day'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := Delay(s)
		if err != nil {
			return
		}
		if ms < 0 {
			t.Fatalf("Delay(%q) = %d < 0", s, ms)
		}
		// A parsed delay written back as milliseconds parses to itself.
		back, err := Delay(fmt.Sprintf("%d milliseconds", ms))
		if err != nil || back != ms {
			t.Fatalf("Delay(%q) = %d, but %d milliseconds parses to %d, %v", s, ms, ms, back, err)
		}
	})
}

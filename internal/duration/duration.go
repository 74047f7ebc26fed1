// Package duration is dedupsim's one grammar of durations and its one
// formatter. Every duration a user writes (a query's watermark delay,
// lookback and drop_future_events; a scenario's phases, intervals and fault
// knobs; the flags of analyze and size) is either
//
//   - a Spark interval string, as withWatermark takes it ("10 minutes",
//     "1 day 3 hours", "INTERVAL '10' SECOND"), or
//   - a Go duration ("250ms", "1h30m") with an optional leading day count
//     ("2d", "1d12h"): the form for a string without whitespace, since Spark
//     needs a space between a value and its unit,
//
// case-insensitive. Interval reads that grammar; Delay adds the watermark
// delay's rules (Spark's: not negative, truncated to ms) and Parse a
// configuration duration's (the simulator's: a unit, whole milliseconds,
// not negative). Format writes a duration back in the Go form.
//
// The package imports nothing of the project, so that engine/query, sim,
// faults and scenarios can all share it.
package duration

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MaxDays keeps a day count's nanoseconds within int64: the longest
// duration Parse accepts is MaxDays days.
const MaxDays = math.MaxInt64 / int64(24*time.Hour)

// Parse reads a configuration duration: a Go duration ("250ms", "1h30m"),
// days ("2d", "1d12h") or a Spark interval ("10 minutes", "1 day 3 hours",
// truncated to the millisecond as Spark's delays are). A bare number is
// refused (milliseconds or seconds? the file should say), and so is a
// negative duration, one that overflows, and one that is not a whole number
// of milliseconds: the simulator's clock ticks in milliseconds, and "1ns"
// must not silently become 0 (the default).
func Parse(text string) (time.Duration, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return 0, errors.New("empty: want a duration such as 30s, 10 minutes or 2d")
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("%q has no unit: want a duration such as 30s, 10 minutes or 2d", s)
	}
	if strings.IndexFunc(s, isSpaceRune) >= 0 {
		return parseSpark(s)
	}
	days, rest, d, err := goDuration(strings.ToLower(s))
	if days < 0 || days > MaxDays {
		return 0, fmt.Errorf("%q: want a duration between 0 and %dd", s, MaxDays)
	}
	if err != nil {
		if strings.Contains(err.Error(), "invalid duration") {
			return 0, fmt.Errorf("%q is not a duration (want 30s, 10 minutes or 2d)", s)
		}
		return 0, fmt.Errorf("%q: want a duration between 0 and %dd", s, MaxDays)
	}
	if d < 0 || strings.HasPrefix(rest, "-") {
		return 0, fmt.Errorf("%q is negative: want a duration of 0 or more", s)
	}
	day := int64(24 * time.Hour)
	if days > (math.MaxInt64-int64(d))/day {
		return 0, fmt.Errorf("%q: want a duration between 0 and %dd", s, MaxDays)
	}
	total := time.Duration(days*day) + d
	if total%time.Millisecond != 0 {
		return 0, fmt.Errorf("%q is not a whole number of milliseconds (the simulator's clock ticks in ms)", s)
	}
	return total, nil
}

// parseSpark is Parse of a Spark interval string.
func parseSpark(s string) (time.Duration, error) {
	ms, err := Delay(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (want 30s, 10 minutes or 2d): %v", s, err)
	}
	if ms == 0 && strings.ContainsAny(s, "123456789") {
		return 0, fmt.Errorf("%q is below 1ms (the simulator's clock ticks in ms)", s)
	}
	if ms > int64(math.MaxInt64/time.Millisecond) {
		return 0, fmt.Errorf("%q: want a duration between 0 and %dd", s, MaxDays)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Format writes d in the units a person reads, in the Go form Parse reads
// back: "250ms", "30s", "10m", "1h30m", "366d", "1d12h", "0s".
func Format(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	neg := d < 0
	if neg {
		d = -d
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	units := []struct {
		n    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "µs"}, {1, "ns"}}
	for _, u := range units {
		if q := d / u.n; q > 0 {
			b.WriteString(strconv.FormatInt(int64(q), 10))
			b.WriteString(u.name)
			d -= q * u.n
		}
	}
	return b.String()
}

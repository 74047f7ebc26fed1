package duration

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The one way dedupsim writes a span of time or an instant for a person
// to read (reports, diagnose, analyze, size, inspect, shrink, the
// checker's findings); docs/output.md, "Durations and timestamps", states
// the rule. Spans are written in Spark's interval words, as Spark writes
// a trigger or a watermark delay ("10 seconds", "2 hours"): whole days,
// hours and minutes, then seconds with their fraction, each unit
// singular for 1 ("1 hour 30 minutes", "2 minutes 0.5 seconds"); a span
// under a second is in milliseconds ("250 milliseconds", "0.5
// milliseconds"). Instants are UTC in the layout of Spark's progress
// timestamps, 2024-01-01T00:00:00.000Z, with microseconds only when the
// instant has them. Format stays the compact Go-like form for values
// echoed back in configuration errors.

// Words writes an exact span of ms milliseconds (fractions of a
// millisecond kept to the microsecond): "0 seconds", "250 milliseconds",
// "1.5 seconds", "2 hours 5 minutes 3 seconds", "1 day 1 minute". A
// negative span starts with "-".
func Words(ms float64) string {
	if math.IsNaN(ms) || math.Abs(ms) >= 9e15 {
		// Beyond what int64 microseconds hold (about 285,000 years): days.
		return strconv.FormatFloat(math.Round(ms/86_400_000), 'f', -1, 64) + " days"
	}
	us := int64(math.Round(ms * 1000))
	if us == 0 {
		return "0 seconds"
	}
	neg := ""
	if us < 0 {
		neg, us = "-", -us
	}
	if us < 1_000_000 {
		return neg + unit(strconv.FormatFloat(float64(us)/1000, 'f', -1, 64), "millisecond")
	}
	var parts []string
	for _, u := range []struct {
		us   int64
		name string
	}{{86_400_000_000, "day"}, {3_600_000_000, "hour"}, {60_000_000, "minute"}} {
		if q := us / u.us; q > 0 {
			parts = append(parts, unit(strconv.FormatInt(q, 10), u.name))
			us -= q * u.us
		}
	}
	if us > 0 {
		parts = append(parts, unit(strconv.FormatFloat(float64(us)/1e6, 'f', -1, 64), "second"))
	}
	return neg + strings.Join(parts, " ")
}

// About writes an estimated span of ms milliseconds in the same words,
// rounded to its two largest units: "250 milliseconds", "1.5 seconds"
// (under a minute, one decimal), "3 minutes 20 seconds", "2 hours 5
// minutes", "4 days 2 hours".
func About(ms float64) string {
	switch a := math.Abs(ms); {
	case math.IsNaN(ms) || a >= 9e15:
		return Words(ms)
	case a < 1000:
		return Words(math.Round(ms*1000) / 1000)
	case a < 60e3:
		return Words(math.Round(ms/100) * 100)
	}
	s := int64(math.Round(ms / 1e3))
	neg := int64(1)
	if s < 0 {
		neg, s = -1, -s
	}
	switch {
	case s < 3600:
	case s < 86400:
		s -= s % 60
	default:
		s -= s % 3600
	}
	return Words(float64(neg) * float64(s) * 1000)
}

// unit writes "1 hour" or "2 hours".
func unit(n, name string) string {
	if n == "1" {
		return n + " " + name
	}
	return n + " " + name + "s"
}

// Stamp writes the instant ms milliseconds after the Unix epoch, UTC:
// 2024-01-01T00:00:00.000Z.
func Stamp(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

// StampMicros writes the instant us microseconds after the Unix epoch as
// Stamp does, with six digits of fraction when it falls inside a
// millisecond: 2024-01-01T00:00:00.000250Z.
func StampMicros(us int64) string {
	if us%1000 == 0 {
		return Stamp(us / 1000)
	}
	return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000Z")
}

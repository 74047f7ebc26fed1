package duration

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Units of Spark's interval arithmetic (DateTimeConstants).
const (
	microsPerMilli  = int64(1000)
	microsPerSecond = int64(1000_000)
	microsPerMinute = 60 * microsPerSecond
	microsPerHour   = 60 * microsPerMinute
	microsPerDay    = 24 * microsPerHour
	// daysPerMonth is getDuration's default: Structured Streaming counts a
	// month as 31 days so that no month's events are dropped early.
	daysPerMonth = 31
)

// Delay converts a watermark delay to Spark's delayMs.
//
// Accepted forms (the grammar of Interval):
//   - Spark interval strings, as withWatermark takes them
//     (IntervalUtils.fromIntervalString): "10 seconds", "1 second",
//     "1 day 3 minutes", "1.5 seconds", "500 milliseconds",
//     "100 microseconds", "1 week", "1 month" (31 days), "1 year" (12
//     months), signed parts ("1 day -1 hour"), case-insensitive units,
//     singular or plural;
//   - the same with an "interval" prefix, which Spark hands to its SQL
//     parser: "interval 10 seconds", "INTERVAL '10' SECOND",
//     "INTERVAL '1 day 2 hours'", "interval '-1' hour 2 hours";
//   - Go durations: "10s", "2h", "1h30m", "250ms", with an optional leading
//     day count: "2d", "1d12h".
//
// The result is Spark's getDuration in milliseconds: the interval's total
// microseconds (months as 31 days) divided by 1000, truncated. A negative
// interval is rejected as Spark's withWatermark rejects it; the check is made
// on microseconds, as Spark's IntervalUtils.isNegative does, so "-500
// microseconds" is negative even though it truncates to 0 ms.
func Delay(s string) (ms int64, err error) {
	micros, err := Interval(s)
	if err != nil {
		return 0, err
	}
	if micros < 0 {
		// Spark: "delay threshold ($delayThreshold) should not be negative."
		return 0, fmt.Errorf("delay threshold (%s) should not be negative", s)
	}
	return micros / microsPerMilli, nil
}

// Interval returns the signed length of an interval string in
// microseconds, months counted as 31 days: a Spark interval (see Delay), or,
// for a string without whitespace (Spark needs a space between a value and
// its unit), a Go duration with an optional leading day count (goDuration),
// truncated to microseconds as Spark's durationToMicros does. It is
// case-insensitive.
func Interval(input string) (int64, error) {
	s := strings.ToLower(trimAll(input))
	var months, days int32
	var micros int64
	var err error
	switch {
	case s == "":
		return 0, fmt.Errorf("invalid interval %q: empty (want e.g. \"10 seconds\" or \"10s\")", input)
	case strings.HasPrefix(s, "interval"):
		months, days, micros, err = sqlInterval(s)
	case strings.IndexFunc(s, isSpaceRune) < 0:
		n, _, d, gerr := goDuration(s)
		if gerr != nil {
			return 0, fmt.Errorf("invalid interval %q: want a Spark interval such as \"10 seconds\" or a Go duration such as \"10s\"", input)
		}
		nd, ok1 := mulExact(n, microsPerDay)
		total, ok2 := addExact(nd, int64(d/time.Microsecond))
		if !ok1 || !ok2 {
			return 0, fmt.Errorf("invalid interval %q: too long (overflows 64-bit microseconds)", input)
		}
		return total, nil
	default:
		months, days, micros, err = stringToInterval(s)
	}
	if err != nil {
		return 0, fmt.Errorf("invalid interval %q: %w", input, err)
	}
	total, ok := duration(months, days, micros)
	if !ok {
		return 0, fmt.Errorf("invalid interval %q: too long (overflows 64-bit microseconds)", input)
	}
	return total, nil
}

// goDuration reads the form every duration takes besides Spark's interval
// strings: a Go duration ("250ms", "1h30m", "-10s") with an optional
// leading whole number of days ("2d", "1d12h"). days is returned whenever
// the leading count parsed, even when the rest did not, so that a caller
// can judge the count first; rest is the Go duration after the count; err
// is time.ParseDuration's.
func goDuration(s string) (days int64, rest string, d time.Duration, err error) {
	rest = s
	if i := strings.IndexByte(s, 'd'); i > 0 {
		if n, err := strconv.ParseInt(s[:i], 10, 64); err == nil {
			days, rest = n, s[i+1:]
		}
	}
	if rest != "" {
		d, err = time.ParseDuration(rest)
	}
	return days, rest, d, err
}

// duration is IntervalUtils.getDuration in microseconds, with Spark's
// overflow checks (multiplyExact/addExact) reported as !ok.
func duration(months, days int32, micros int64) (int64, bool) {
	m, ok1 := mulExact(daysPerMonth*microsPerDay, int64(months))
	d, ok2 := mulExact(microsPerDay, int64(days))
	md, ok3 := addExact(d, m)
	total, ok4 := addExact(micros, md)
	return total, ok1 && ok2 && ok3 && ok4
}

func addExact(a, b int64) (int64, bool) {
	c := a + b
	if (c > a) != (b > 0) {
		return 0, false
	}
	return c, true
}

func mulExact(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	if c/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return c, true
}

func toInt32(v int64) (int32, bool) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, false
	}
	return int32(v), true
}

// isSpace is Java's Character.isWhitespace on a byte, which Spark's parser
// uses to separate values and units.
func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r' || (b >= 0x1c && b <= 0x1f)
}

func isSpaceRune(r rune) bool { return r < 0x80 && isSpace(byte(r)) }

// trimAll is UTF8String.trimAll: strip whitespace and control bytes at both
// ends.
func trimAll(s string) string {
	i, j := 0, len(s)
	for i < j && (s[i] <= ' ' || s[i] == 0x7f) {
		i++
	}
	for j > i && (s[j-1] <= ' ' || s[j-1] == 0x7f) {
		j--
	}
	return s[i:j]
}

var errOverflow = errors.New("value out of range")

// stringToInterval ports Spark's SparkIntervalUtils.stringToInterval, the
// parser behind withWatermark("col", "10 seconds"). s is trimmed and
// lower-case. It returns Spark's CalendarInterval (months, days, micros).
func stringToInterval(s string) (months, days int32, micros int64, err error) {
	const (
		statePrefix = iota
		stateTrimBeforeSign
		stateSign
		stateTrimBeforeValue
		stateValue
		stateFraction
		stateTrimBeforeUnit
		stateUnitBegin
		stateUnitSuffix
		stateUnitEnd
	)
	const initialFractionScale = 100_000_000 // nanos per second / 10
	if s == "" {
		return 0, 0, 0, errors.New("interval string cannot be empty")
	}
	state := statePrefix
	var (
		value         int64
		negative      bool
		fraction      int64 // nanoseconds, then microseconds
		fractionScale int64
		pointPrefixed bool
	)
	// word is the whitespace-delimited word at byte i, for messages.
	word := func(i int) string {
		a, b := i, i
		for a > 0 && !isSpace(s[a-1]) {
			a--
		}
		for b < len(s) && !isSpace(s[b]) {
			b++
		}
		return s[a:b]
	}
	fail := func(i int, format string) (int32, int32, int64, error) {
		return 0, 0, 0, fmt.Errorf(format, word(min(i, len(s)-1)))
	}
	i := 0
	for i < len(s) {
		b := s[i]
		switch state {
		case statePrefix:
			if strings.HasPrefix(s, "interval") {
				if len(s) == len("interval") {
					return 0, 0, 0, errors.New("interval string cannot be empty")
				}
				if !isSpace(s[len("interval")]) {
					return fail(0, "invalid interval prefix %q")
				}
				i += len("interval") + 1
			}
			state = stateTrimBeforeSign
		case stateTrimBeforeSign:
			if isSpace(b) {
				i++
			} else {
				state = stateSign
			}
		case stateSign:
			value, fraction = 0, 0
			state = stateTrimBeforeValue
			fractionScale = -1 // no fraction seen
			pointPrefixed = false
			switch {
			case b == '-':
				negative = true
				i++
			case b == '+':
				negative = false
				i++
			case '0' <= b && b <= '9':
				negative = false
			case b == '.':
				negative = false
				fractionScale = initialFractionScale
				pointPrefixed = true
				i++
				state = stateFraction
			default:
				return fail(i, "unrecognized number %q")
			}
		case stateTrimBeforeValue:
			if isSpace(b) {
				i++
			} else {
				state = stateValue
			}
		case stateValue:
			switch {
			case '0' <= b && b <= '9':
				v, ok := mulExact(10, value)
				if ok {
					v, ok = addExact(v, int64(b-'0'))
				}
				if !ok {
					return fail(i, "value %q out of range")
				}
				value = v
			case isSpace(b):
				state = stateTrimBeforeUnit
			case b == '.':
				fractionScale = initialFractionScale
				state = stateFraction
			default:
				return fail(i, "invalid value %q")
			}
			i++
		case stateFraction:
			switch {
			case '0' <= b && b <= '9' && fractionScale > 0:
				fraction += int64(b-'0') * fractionScale
				fractionScale /= 10
			case isSpace(b) && (!pointPrefixed || fractionScale < initialFractionScale):
				fraction /= 1000 // nanos to micros, truncating
				state = stateTrimBeforeUnit
			case '0' <= b && b <= '9':
				return fail(i, "interval can only support nanosecond precision, %q is out of range")
			default:
				return fail(i, "invalid value %q")
			}
			i++
		case stateTrimBeforeUnit:
			if isSpace(b) {
				i++
			} else {
				state = stateUnitBegin
			}
		case stateUnitBegin:
			// Only seconds can have a fractional part.
			if b != 's' && fractionScale >= 0 {
				return fail(i, "unit %q cannot have a fractional value (only seconds can)")
			}
			if negative {
				value, fraction = -value, -fraction
			}
			n, err := addUnit(s[i:], value, fraction, &months, &days, &micros)
			if err == errUnknownUnit {
				return fail(i, "invalid unit %q: "+unitsAccepted)
			}
			if err != nil {
				return fail(i, "%q: "+err.Error())
			}
			i += n
			state = stateUnitSuffix
		case stateUnitSuffix:
			switch {
			case b == 's':
				state = stateUnitEnd
			case isSpace(b):
				state = stateTrimBeforeSign
			default:
				return fail(i, "invalid unit %q: "+unitsAccepted)
			}
			i++
		case stateUnitEnd:
			if !isSpace(b) {
				return fail(i, "invalid unit %q: "+unitsAccepted)
			}
			i++
			state = stateTrimBeforeSign
		}
	}
	switch state {
	case stateUnitSuffix, stateUnitEnd, stateTrimBeforeSign:
		return months, days, micros, nil
	case stateTrimBeforeValue:
		return fail(len(s)-1, "expect a number after %q but hit EOL")
	case stateValue, stateFraction:
		return fail(len(s)-1, "expect a unit name after %q but hit EOL")
	}
	return fail(len(s)-1, "unknown error when parsing %q")
}

var errUnknownUnit = errors.New("unknown unit")

// unitsAccepted lists what an interval's unit may be, as Spark's
// IntervalUtils reads them: full words only ("10 mins" and "10 min" are
// refused by Spark too).
const unitsAccepted = "the units are year, month, week, day, hour, minute, second, millisecond and microsecond, singular or plural (\"10 minutes\"), or write a Go duration (\"10m\")"

// addUnit matches the unit at the start of rest (Spark's matchAt: a prefix
// match of the singular name; the plural 's' is consumed by the caller),
// adds value of it to the interval and returns the unit's length.
func addUnit(rest string, value, fraction int64, months, days *int32, micros *int64) (int, error) {
	addMicros := func(v int64, ok bool) error {
		if ok {
			v, ok = addExact(*micros, v)
		}
		if !ok {
			return errOverflow
		}
		*micros = v
		return nil
	}
	addDays := func(v int64, ok bool) error {
		if ok {
			v, ok = addExact(int64(*days), v)
		}
		var d int32
		if ok {
			d, ok = toInt32(v)
		}
		if !ok {
			return errOverflow
		}
		*days = d
		return nil
	}
	addMonths := func(v int64, ok bool) error {
		if ok {
			v, ok = addExact(int64(*months), v)
		}
		var m int32
		if ok {
			m, ok = toInt32(v)
		}
		if !ok {
			return errOverflow
		}
		*months = m
		return nil
	}
	switch {
	case strings.HasPrefix(rest, "year"):
		v, ok := mulExact(12, value)
		return len("year"), addMonths(v, ok)
	case strings.HasPrefix(rest, "week"):
		v, ok := mulExact(7, value)
		return len("week"), addDays(v, ok)
	case strings.HasPrefix(rest, "day"):
		// Spark: days + toIntExact(value), so the value itself must fit.
		_, ok := toInt32(value)
		return len("day"), addDays(value, ok)
	case strings.HasPrefix(rest, "hour"):
		v, ok := mulExact(value, microsPerHour)
		return len("hour"), addMicros(v, ok)
	case strings.HasPrefix(rest, "second"):
		v, ok := mulExact(value, microsPerSecond)
		if ok {
			v, ok = addExact(v, fraction)
		}
		return len("second"), addMicros(v, ok)
	case strings.HasPrefix(rest, "month"):
		_, ok := toInt32(value)
		return len("month"), addMonths(value, ok)
	case strings.HasPrefix(rest, "minute"):
		v, ok := mulExact(value, microsPerMinute)
		return len("minute"), addMicros(v, ok)
	case strings.HasPrefix(rest, "millisecond"):
		v, ok := mulExact(value, microsPerMilli)
		return len("millisecond"), addMicros(v, ok)
	case strings.HasPrefix(rest, "microsecond"):
		return len("microsecond"), addMicros(value, true)
	}
	return 0, errUnknownUnit
}

// sqlUnits are the unit keywords of Spark's SQL interval grammar
// (unitInMultiUnits) that stringToInterval can evaluate.
var sqlUnits = map[string]bool{
	"year": true, "years": true, "month": true, "months": true,
	"week": true, "weeks": true, "day": true, "days": true,
	"hour": true, "hours": true, "minute": true, "minutes": true,
	"second": true, "seconds": true, "millisecond": true, "milliseconds": true,
	"microsecond": true, "microseconds": true,
}

// sqlInterval handles the "interval ..." forms, which Spark's
// fromIntervalString hands to the SQL parser: a typed literal
// (INTERVAL '1 day 2 hours'), or a list of value/unit pairs whose values may
// be quoted (INTERVAL '10' SECOND, interval 1 day 3 minutes). Spark evaluates
// both through stringToInterval; the ANSI year-month and day-time literal
// types it may produce have the same length in milliseconds. The unit-to-unit
// form (INTERVAL '1 2:03' DAY TO MINUTE) is not supported.
func sqlInterval(s string) (months, days int32, micros int64, err error) {
	rest := strings.TrimPrefix(s, "interval")
	if rest != "" && !isSpace(rest[0]) && rest[0] != '\'' && rest[0] != '"' {
		return 0, 0, 0, fmt.Errorf("invalid interval prefix")
	}
	toks, err := sqlTokens(rest)
	if err != nil {
		return 0, 0, 0, err
	}
	if len(toks) == 0 {
		return 0, 0, 0, errors.New("interval string cannot be empty")
	}
	if len(toks) == 1 && toks[0].quoted {
		return stringToInterval(trimAll(toks[0].text))
	}
	for _, t := range toks {
		if !t.quoted && t.text == "to" {
			return 0, 0, 0, errors.New("unit-to-unit intervals (... TO ...) are not supported; write the parts out, e.g. '1 day 2 hours'")
		}
	}
	// value unit pairs; a value is [sign] (number | 'quoted number').
	var b strings.Builder
	for i := 0; i < len(toks); {
		minus := false
		for i < len(toks) && !toks[i].quoted && (toks[i].text == "-" || toks[i].text == "+") {
			minus = minus != (toks[i].text == "-")
			i++
		}
		if i+1 >= len(toks) {
			return 0, 0, 0, errors.New("want value/unit pairs such as '10' second")
		}
		v, u := toks[i], toks[i+1]
		i += 2
		if u.quoted || !sqlUnits[u.text] {
			return 0, 0, 0, fmt.Errorf("invalid unit %q: "+unitsAccepted, u.text)
		}
		val := v.text
		if v.quoted {
			// SPARK-32840: a quoted value must not smuggle in units.
			if strings.IndexFunc(val, func(r rune) bool { return r >= 'a' && r <= 'z' }) >= 0 {
				return 0, 0, 0, fmt.Errorf("invalid interval value %q", val)
			}
			val = trimAll(val)
		}
		if minus {
			if strings.HasPrefix(val, "-") {
				val = val[1:]
			} else {
				val = "-" + val
			}
		}
		b.WriteString(" " + val + " " + u.text)
	}
	return stringToInterval(trimAll(b.String()))
}

type sqlToken struct {
	text   string
	quoted bool
}

// sqlTokens splits on whitespace, keeping quoted strings ('...' or "...")
// whole and signs as their own tokens.
func sqlTokens(s string) ([]sqlToken, error) {
	var toks []sqlToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isSpace(c):
			i++
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, errors.New("unterminated quoted value")
			}
			toks = append(toks, sqlToken{text: s[i+1 : i+1+j], quoted: true})
			i += j + 2
		case c == '-' || c == '+':
			toks = append(toks, sqlToken{text: s[i : i+1]})
			i++
		default:
			j := i
			for j < len(s) && !isSpace(s[j]) && s[j] != '\'' && s[j] != '"' {
				j++
			}
			toks = append(toks, sqlToken{text: s[i:j]})
			i = j
		}
	}
	return toks, nil
}

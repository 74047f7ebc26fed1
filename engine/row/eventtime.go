package row

import (
	"encoding/json"
	"fmt"
	"time"
)

// Event times are kept to years 0000-9999 UTC: the range RFC 3339 can write
// and Spark's timestamp type supports. Outside it a value is almost surely a
// unit mistake (milliseconds given as seconds), and keeping it out means
// event time + delay cannot overflow downstream.
const (
	// MinEventTimeMicros is 0000-01-01T00:00:00Z.
	MinEventTimeMicros int64 = -62167219200 * 1000_000
	// MaxEventTimeMicros is 9999-12-31T23:59:59.999999Z.
	MaxEventTimeMicros int64 = 253402300800*1000_000 - 1
)

// ParseEventTime reads an event-time value:
//   - a JSON number is seconds since the Unix epoch; the decimal text is
//     read exactly (1.000001 is 1000001 µs, no float rounding), digits
//     beyond the microsecond truncated toward zero as Spark's cast from a
//     number to a timestamp truncates; exponents are allowed (1.5e3);
//   - a JSON string is an RFC 3339 timestamp with an offset (Z or ±hh:mm),
//     fractional seconds optional; the date/time separator may also be 't'
//     or a space and Z may be 'z' (RFC 3339 §5.6). Sub-microsecond digits
//     are dropped, which is the floor since the fraction is positive;
//   - null gives isNull (Spark keeps such a row: its late predicate is null).
//
// Anything else, or a time outside years 0000-9999, is an error.
func ParseEventTime(v json.RawMessage) (micros int64, isNull bool, err error) {
	s := scanner{data: v}
	s.skipSpace()
	start := s.pos
	kind, esc, err := s.value(0)
	if err != nil {
		return 0, false, err
	}
	end := s.pos
	s.skipSpace()
	if s.pos != len(v) {
		return 0, false, s.errorf("data after the value")
	}
	return eventTime(v[start:end], kind, esc)
}

// eventTime converts a scanned value.
func eventTime(raw []byte, kind valueKind, esc bool) (int64, bool, error) {
	switch kind {
	case kindNull:
		return 0, true, nil
	case kindNumber:
		micros, err := secondsToMicros(raw)
		return micros, false, err
	case kindString:
		text := raw[1 : len(raw)-1]
		if esc {
			text = unquote(raw)
		}
		micros, err := parseRFC3339(text)
		return micros, false, err
	}
	return 0, false, fmt.Errorf("want a number (seconds since the epoch) or an RFC 3339 string, got %s", kind)
}

// secondsToMicros converts a valid JSON number of seconds to microseconds
// exactly, truncating toward zero.
func secondsToMicros(raw []byte) (int64, error) {
	if u, ok := plainSecondsToMicros(raw); ok {
		return u, nil
	}
	return anySecondsToMicros(raw)
}

// plainSecondsToMicros is secondsToMicros of the common form, one pass:
// at most 12 integer digits (so the microseconds fit in an int64), a
// fraction, no exponent, a time in range. ok is false for anything else,
// which anySecondsToMicros answers (its error included).
func plainSecondsToMicros(raw []byte) (u int64, ok bool) {
	i := 0
	neg := raw[0] == '-'
	if neg {
		i++
	}
	start := i
	for ; i < len(raw); i++ {
		c := raw[i]
		if c < '0' || c > '9' {
			break
		}
		u = u*10 + int64(c-'0')
	}
	if i-start > 12 {
		return 0, false
	}
	u *= 1000_000
	if i < len(raw) && raw[i] == '.' {
		i++
		for scale := int64(100_000); i < len(raw); i++ {
			c := raw[i]
			if c < '0' || c > '9' {
				break
			}
			u += int64(c-'0') * scale // digits past the 6th: scale 0, truncated
			scale /= 10
		}
	}
	if i != len(raw) { // an exponent
		return 0, false
	}
	if neg {
		u = -u
	}
	if u < MinEventTimeMicros || u > MaxEventTimeMicros {
		return 0, false
	}
	return u, true
}

// anySecondsToMicros is secondsToMicros of any valid JSON number.
func anySecondsToMicros(raw []byte) (int64, error) {
	i := 0
	neg := raw[0] == '-'
	if neg {
		i++
	}
	intStart := i
	for i < len(raw) && isDigit(raw[i]) {
		i++
	}
	intPart := raw[intStart:i]
	var frac []byte
	if i < len(raw) && raw[i] == '.' {
		i++
		fs := i
		for i < len(raw) && isDigit(raw[i]) {
			i++
		}
		frac = raw[fs:i]
	}
	var exp int64
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		expNeg := false
		if raw[i] == '+' || raw[i] == '-' {
			expNeg = raw[i] == '-'
			i++
		}
		for ; i < len(raw); i++ {
			// Saturate: beyond 2^40 the answer (0 or out of range) no
			// longer depends on the exact exponent for any input that fits
			// in memory.
			if exp < 1<<40 {
				exp = exp*10 + int64(raw[i]-'0')
			}
		}
		if expNeg {
			exp = -exp
		}
	}
	// The value is D × 10^shift µs, D the digits of intPart and frac read
	// as one integer.
	shift := exp - int64(len(frac)) + 6
	n := len(intPart) + len(frac)
	digit := func(k int) byte {
		if k < len(intPart) {
			return intPart[k]
		}
		return frac[k-len(intPart)]
	}
	first := 0
	for first < n && digit(first) == '0' {
		first++
	}
	if first == n {
		return 0, nil
	}
	// keep is how many of the significant digits survive truncation.
	sig := int64(n - first)
	keep := sig
	if shift < 0 {
		keep = sig + shift
		if keep <= 0 {
			return 0, nil // |value| < 1 µs truncates to 0
		}
		shift = 0
	}
	if keep+shift > 18 {
		return 0, secondsOutOfRange(raw) // ≥ 10^18 µs, far beyond year 9999
	}
	var u int64
	for k := 0; k < int(keep); k++ {
		u = u*10 + int64(digit(first+k)-'0')
	}
	for ; shift > 0; shift-- {
		u *= 10
	}
	if neg {
		u = -u
	}
	if u < MinEventTimeMicros || u > MaxEventTimeMicros {
		return 0, secondsOutOfRange(raw)
	}
	return u, nil
}

func secondsOutOfRange(raw []byte) error {
	return fmt.Errorf("event time %s seconds is out of range (years 0000-9999)", raw)
}

// parseRFC3339 parses YYYY-MM-DD(T|t| )HH:MM:SS[.frac](Z|z|±HH:MM) to
// microseconds since the epoch, proleptic Gregorian calendar.
func parseRFC3339(b []byte) (int64, error) {
	bad := func(why string) (int64, error) {
		return 0, fmt.Errorf("invalid RFC 3339 timestamp %q: %s (want e.g. 2024-01-02T03:04:05.678Z)", b, why)
	}
	num := func(p []byte) (int64, bool) {
		var v int64
		for _, c := range p {
			if !isDigit(c) {
				return 0, false
			}
			v = v*10 + int64(c-'0')
		}
		return v, true
	}
	if len(b) < len("2006-01-02T15:04:05Z") {
		return bad("too short")
	}
	year, ok1 := num(b[0:4])
	month, ok2 := num(b[5:7])
	day, ok3 := num(b[8:10])
	if !ok1 || !ok2 || !ok3 || b[4] != '-' || b[7] != '-' {
		return bad("date must be YYYY-MM-DD")
	}
	if sep := b[10]; sep != 'T' && sep != 't' && sep != ' ' {
		return bad("want T between date and time")
	}
	hour, ok1 := num(b[11:13])
	minute, ok2 := num(b[14:16])
	sec, ok3 := num(b[17:19])
	if !ok1 || !ok2 || !ok3 || b[13] != ':' || b[16] != ':' {
		return bad("time must be HH:MM:SS")
	}
	if month < 1 || month > 12 {
		return bad("month out of range")
	}
	if day < 1 || day > daysIn(year, month) {
		return bad("day out of range")
	}
	if hour > 23 || minute > 59 || sec > 59 {
		return bad("time out of range")
	}
	rest := b[19:]
	var fracMicros int64
	if len(rest) > 0 && rest[0] == '.' {
		j := 1
		for j < len(rest) && isDigit(rest[j]) {
			if j <= 6 {
				fracMicros = fracMicros*10 + int64(rest[j]-'0')
			}
			j++
		}
		if j == 1 {
			return bad("want digits after the decimal point")
		}
		for k := j; k <= 6; k++ { // fewer than 6 digits: scale up
			fracMicros *= 10
		}
		rest = rest[j:]
	}
	var offset int64 // seconds east of UTC
	switch {
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := num(rest[1:3])
		om, ok2 := num(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return bad("offset out of range")
		}
		offset = oh*3600 + om*60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return bad("want an offset: Z or ±hh:mm")
	}
	secs := daysFromCivil(year, month, day)*86400 + hour*3600 + minute*60 + sec - offset
	micros := secs*1000_000 + fracMicros
	if micros < MinEventTimeMicros || micros > MaxEventTimeMicros {
		return 0, fmt.Errorf("event time %q is out of range (years 0000-9999 UTC)", b)
	}
	return micros, nil
}

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is days since 1970-01-01 of a proleptic Gregorian date
// (Howard Hinnant's algorithm), for years 0-9999.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400                     // [0, 399]
	doy := (153*((m+9)%12)+2)/5 + d - 1    // [0, 365], March-based
	doe := yoe*365 + yoe/4 - yoe/100 + doy // [0, 146096]
	return era*146097 + doe - 719468
}

// FormatTimestampMs formats epoch milliseconds the way Spark's progress
// reports event times and watermarks: yyyy-MM-dd'T'HH:mm:ss.SSS'Z' in UTC.
// Negative values format as times before 1970 (floor, not truncation:
// -1 is 1969-12-31T23:59:59.999Z).
//
// The calendar is proleptic Gregorian. Spark formats with
// java.text.SimpleDateFormat, whose calendar is Julian before 1582-10-15
// and which writes years <= 0 as years of the BC era, so the two differ for
// event times before 1582-10-15; watermarks never go below 1970.
func FormatTimestampMs(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

package analyze

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/sizing"
)

// TimeUnit is the unit of epoch numbers in the event-time and arrival
// columns (--time-unit). RFC 3339 strings carry their own.
type TimeUnit int

const (
	Seconds      TimeUnit = iota // s: row.ParseEventTime's exact decimal reading
	Milliseconds                 // ms
	Microseconds                 // us
)

var unitNames = []string{"s", "ms", "us"}

func (u TimeUnit) String() string { return unitNames[u] }

func (u TimeUnit) long() string {
	return [...]string{"seconds", "milliseconds", "microseconds"}[u]
}

// exponent is the power of ten from the unit to seconds.
func (u TimeUnit) exponent() int { return [...]int{0, -3, -6}[u] }

// ParseTimeUnit reads --time-unit: s, ms or us (µs too), with a "did you
// mean" for a misspelt one.
func ParseTimeUnit(s string) (TimeUnit, error) {
	switch s {
	case "s":
		return Seconds, nil
	case "ms":
		return Milliseconds, nil
	case "us", "µs":
		return Microseconds, nil
	}
	hint := ""
	long := []string{"seconds", "milliseconds", "microseconds"}
	if m := sizing.Suggest(s, append(unitNames, long...)); m != "" {
		for i, l := range long {
			if m == l {
				m = unitNames[i]
			}
		}
		hint = fmt.Sprintf(" (did you mean %s?)", m)
	}
	return 0, fmt.Errorf("--time-unit %q: unknown unit%s; want s, ms or us (of epoch numbers)", s, hint)
}

// epochNumber converts the canonical text of a JSON number (as row's key
// encoding writes it: an integer's exact digits, else Go's shortest 'g'
// form of the double) in unit u to microseconds, exactly for integers, by
// shifting its decimal exponent and reading it as seconds with
// row.ParseEventTime (which also checks years 0000-9999). A fraction of a
// unit is read as the double Spark would infer for it.
func epochNumber(text []byte, u TimeUnit) (int64, error) {
	mant, exp := string(text), 0
	if i := strings.IndexAny(mant, "eE"); i >= 0 {
		e, err := strconv.Atoi(mant[i+1:])
		if err != nil {
			return 0, fmt.Errorf("event time %s %s is not a number", text, u.long())
		}
		mant, exp = mant[:i], e
	}
	us, _, err := row.ParseEventTime(json.RawMessage(mant + "e" + strconv.Itoa(exp+u.exponent())))
	if err != nil {
		shown := string(text)
		switch shown { // a literal beyond a double's range reads as ±Inf
		case "+Inf":
			shown = "> 1.8e308"
		case "-Inf":
			shown = "< -1.8e308"
		}
		return 0, fmt.Errorf("event time %s %s is out of range (years 0000-9999)", shown, u.long())
	}
	return us, nil
}

// keyItem splits the first item off an encoded key (row's key encoding:
// a tag byte, then for s, d, j and x a uvarint length and that many bytes,
// for T 8 bytes, for n, t and f nothing).
func keyItem(b []byte) (tag byte, payload, item, rest []byte, err error) {
	if len(b) == 0 {
		return 0, nil, nil, nil, errors.New("key: no item")
	}
	tag = b[0]
	switch tag {
	case 'n', 't', 'f':
		return tag, nil, b[:1], b[1:], nil
	case 'T':
		if len(b) < 9 {
			return 0, nil, nil, nil, errors.New("key: short time item")
		}
		return tag, b[1:9], b[:9], b[9:], nil
	case 's', 'd', 'j', 'x':
		n, k := binary.Uvarint(b[1:])
		if k <= 0 || n > uint64(len(b)-1-k) {
			return 0, nil, nil, nil, errors.New("key: bad length")
		}
		end := 1 + k + int(n)
		return tag, b[1+k : end], b[:end], b[end:], nil
	}
	return 0, nil, nil, nil, fmt.Errorf("key: unknown tag %q", tag)
}

// unitTime reads an event-time or arrival value from its key item when
// the unit is not seconds.
func unitTime(tag byte, payload []byte, u TimeUnit) (us int64, null bool, err error) {
	switch tag {
	case 'n':
		return 0, true, nil
	case 'd':
		us, err := epochNumber(payload, u)
		return us, false, err
	case 's':
		q, _ := json.Marshal(string(payload))
		us, _, err := row.ParseEventTime(q)
		return us, false, err
	case 't', 'f':
		return 0, false, fmt.Errorf("want a number (%s since the epoch) or an RFC 3339 string, got %s", u.long(), map[byte]string{'t': "true", 'f': "false"}[tag])
	}
	return 0, false, fmt.Errorf("want a number (%s since the epoch) or an RFC 3339 string, got an object or array", u.long())
}

// Ranges of the options, as error messages give them.
const (
	PercentileRange      = "(0, 100]"
	MarginRange          = "[0, 10]"
	MaxMargin            = 10
	MaxKeysRange         = "[1, 2,147,483,647]"
	RateWindowRange      = "[1s, 24h]"
	FutureToleranceRange = "[1ms, 365d]"
	MinRateWindow        = time.Second
	MaxRateWindow        = 24 * time.Hour
	MinFutureTolerance   = time.Millisecond
	MaxFutureTolerance   = 365 * 24 * time.Hour
)

// ParseDuration reads a duration flag as Spark reads an interval ("1
// minute", "90 seconds") or as a Go duration ("1m"), and checks it against
// [lo, hi] before it becomes a time.Duration, so no value overflows. rng
// is the range as the error gives it.
func ParseDuration(flag, s string, lo, hi time.Duration, rng string) (time.Duration, error) {
	ms, err := query.ParseDelay(s)
	if err != nil && strings.HasPrefix(err.Error(), "delay threshold") { // negative
		return 0, sizing.RangeError(flag, strconv.Quote(s), rng)
	}
	if err != nil {
		return 0, fmt.Errorf("--%s: %v", flag, err)
	}
	if ms < lo.Milliseconds() || ms > hi.Milliseconds() {
		return 0, sizing.RangeError(flag, strconv.Quote(s), rng)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

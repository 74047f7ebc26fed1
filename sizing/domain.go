package sizing

import (
	"fmt"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/internal/suggest"
)

// The domain of every figure size and analyze accept. A value outside it is
// refused (exit 2) with the range in human units, never clamped: a rate of
// NaN or a delay of 300 years is a typo or a unit mistake, and an estimate
// built on it would be silently wrong.
const (
	// MaxRatePerSec: a billion distinct keys per second, far above any
	// Kafka cluster's throughput.
	MaxRatePerSec = 1e9
	// MaxDelay is the longest watermark delay sized or recommended. A key
	// lives up to twice the delay, so a year of delay is two years of
	// every key: beyond it the copies are too far apart for a watermark
	// and belong to the sink (a MERGE on the id, seed 000).
	MaxDelay = 365 * 24 * time.Hour
	// MaxPartitions bounds spark.sql.shuffle.partitions.
	MaxPartitions = 1_000_000
	// MinBytesPerKey and MaxBytesPerKey bound the state bytes per key.
	MinBytesPerKey = 1
	MaxBytesPerKey = 1e6
	// MaxMemoryBytes bounds --memory: a petabyte.
	MaxMemoryBytes = 1e15
	// MaxExecutors bounds --executors.
	MaxExecutors = 100_000
)

// Ranges as the error messages give them.
const (
	RateRange        = "(0, 1 billion] keys/s"
	DelayRange       = "[0s, 365d]"
	PartitionsRange  = "[1, 1,000,000]"
	BytesPerKeyRange = "[1 B, 1 MB]"
	MemoryRange      = "(0 B, 1 PB]"
	ExecutorsRange   = "[1, 100,000]"
	FractionRange    = "(0, 1]"
)

// RangeError is a flag value outside its domain: "--rate NaN: want (0, 1
// billion] keys/s".
func RangeError(flag, value, rng string) error {
	return fmt.Errorf("--%s %s: out of range, want %s", flag, value, rng)
}

// Num writes a float flag value as the user would have typed it: NaN, +Inf,
// 1e+09, 0.25.
func Num(v float64) string { return fmt.Sprint(v) }

// CheckRate, CheckDelay, ... check one figure each; the error names the
// flag and gives the range.
func CheckRate(flag string, v float64) error {
	if !(v > 0 && v <= MaxRatePerSec) {
		return RangeError(flag, Num(v), RateRange)
	}
	return nil
}

func CheckDelay(flag string, d time.Duration) error {
	if d < 0 || d > MaxDelay {
		return RangeError(flag, d.String(), DelayRange)
	}
	return nil
}

func CheckPartitions(flag string, n int) error {
	if n < 1 || n > MaxPartitions {
		return RangeError(flag, fmt.Sprint(n), PartitionsRange)
	}
	return nil
}

func CheckBytesPerKey(flag string, v float64) error {
	if !(v >= MinBytesPerKey && v <= MaxBytesPerKey) {
		return RangeError(flag, Num(v), BytesPerKeyRange)
	}
	return nil
}

// Check says whether p is in the domain Compute accepts.
func (p Params) Check() error {
	if err := CheckRate("rate", p.RatePerSec); err != nil {
		return err
	}
	if err := CheckDelay("delay", p.Delay); err != nil {
		return err
	}
	if _, err := ParseAPI(string(p.API)); err != nil {
		return err
	}
	if err := CheckPartitions("partitions", p.Partitions); err != nil {
		return err
	}
	if err := CheckBytesPerKey("bytes-per-key", p.BytesPerKey); err != nil {
		return err
	}
	if p.MemoryBytes != 0 && !(p.MemoryBytes > 0 && p.MemoryBytes <= MaxMemoryBytes) {
		return RangeError("memory", Bytes(p.MemoryBytes), MemoryRange)
	}
	return nil
}

// APIs are the dedup calls size knows, in the order the help lists them.
var APIs = []query.API{query.DropDuplicatesWithinWatermark, query.DropDuplicates, query.BatchDropDuplicates}

// ParseAPI reads --api: Spark's method name, exactly (Spark's names are
// case-sensitive), with a "did you mean" for a misspelt one.
func ParseAPI(s string) (query.API, error) {
	names := make([]string, len(APIs))
	for i, a := range APIs {
		if string(a) == s {
			return a, nil
		}
		names[i] = string(a)
	}
	hint := ""
	if m := Suggest(s, names); m != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", m)
	}
	return "", fmt.Errorf("--api %q: unknown API%s; want %s", s, hint, suggest.OrList(names))
}

// Suggest returns the known word to suggest for a misspelt one, or ""
// (internal/suggest.Best).
func Suggest(word string, known []string) string { return suggest.Best(word, known) }

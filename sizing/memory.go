package sizing

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Spark's JVM memory strings (spark.executor.memory, spark-submit's
// --executor-memory), as JavaUtils.byteStringAs reads them: the text is
// lower-cased and trimmed, then must be whole digits and an optional
// suffix; every suffix is binary (k = KiB). A bare number is MiB, the unit
// of spark.executor.memory. Fractions are refused, as Spark refuses them
// ("Fractional values are not supported"): 1.5t is written 1536g.
var memorySuffixes = map[string]int64{
	"b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50,
}

// The executor memory size accepts.
const (
	// ReservedMemory is the heap Spark's UnifiedMemoryManager sets aside
	// before anything else (RESERVED_SYSTEM_MEMORY_BYTES).
	ReservedMemory = 300 << 20
	// MinExecutorMemory is Spark's own floor: an executor below 1.5 x the
	// reserved memory fails at start ("Executor memory ... must be at
	// least 471859200").
	MinExecutorMemory = ReservedMemory * 3 / 2
	// MaxExecutorMemory: 16 TiB, beyond any JVM heap in use.
	MaxExecutorMemory   = 16 << 40
	ExecutorMemoryRange = "[450m, 16t]"
	// SparkMemoryFraction is spark.memory.fraction's default: the share of
	// (heap - reserved) that Spark's unified execution and storage memory
	// takes. The rest is "user memory", which Spark does not manage.
	SparkMemoryFraction = 0.6
)

// ParseMemoryString reads a JVM memory string to bytes.
func ParseMemoryString(s string) (int64, error) {
	t := strings.ToLower(strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })) // Java's trim
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	digits, suffix := t[:i], t[i:]
	if digits == "" {
		return 0, fmt.Errorf("%q is not a JVM memory string such as 512m, 8g or 1t", s)
	}
	if strings.HasPrefix(suffix, ".") {
		return 0, fmt.Errorf("%q: Spark's memory strings take whole numbers (JavaUtils.byteStringAs refuses fractions)%s", s, fractionHint(t))
	}
	unit := int64(1 << 20)
	if suffix != "" {
		u, ok := memorySuffixes[suffix]
		if !ok {
			hint := ""
			if m := Suggest(suffix, []string{"k", "m", "g", "t", "p", "kb", "mb", "gb", "tb", "pb"}); m != "" {
				hint = fmt.Sprintf(" (did you mean %s%s?)", digits, m)
			}
			return 0, fmt.Errorf("%q: unknown suffix %q%s; want b, k, m, g, t or p (binary: 1k = 1024 bytes; no suffix: MiB)", s, suffix, hint)
		}
		unit = u
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is too large", s)
	}
	hi, lo := bits.Mul64(uint64(v), uint64(unit))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(lo), nil
}

// fractionHint suggests the whole number in the next smaller unit:
// "1.5t" -> "; write 1536g".
func fractionHint(t string) string {
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	v, err := strconv.ParseFloat(t[:i], 64)
	unit, ok := memorySuffixes[t[i:]]
	if t[i:] == "" {
		unit, ok = 1<<20, true
	}
	if err != nil || !ok || unit == 1 {
		return ""
	}
	for _, s := range []string{"p", "t", "g", "m", "k", "b"} {
		u := memorySuffixes[s]
		if u >= unit {
			continue
		}
		if w := v * float64(unit) / float64(u); w == math.Trunc(w) && w < 1e15 {
			return fmt.Sprintf("; write %d%s", int64(w), s)
		}
	}
	return ""
}

// ParseExecutorMemory reads --executor-memory and checks it against
// [MinExecutorMemory, MaxExecutorMemory].
func ParseExecutorMemory(s string) (int64, error) {
	v, err := ParseMemoryString(s)
	if err != nil {
		return 0, fmt.Errorf("--executor-memory %v", err)
	}
	if v < MinExecutorMemory || v > MaxExecutorMemory {
		return 0, fmt.Errorf("--executor-memory %q (%s): out of range, want %s (Spark refuses an executor below 450m: 1.5 x its 300 MiB reserved memory)", s, BinaryBytes(float64(v)), ExecutorMemoryRange)
	}
	return v, nil
}

// MemoryString writes bytes as the shortest exact JVM memory string:
// 8589934592 -> "8g", 1536 MiB -> "1536m".
func MemoryString(b int64) string {
	for _, s := range []string{"p", "t", "g", "m", "k"} {
		if u := memorySuffixes[s]; b >= u && b%u == 0 {
			return strconv.FormatInt(b/u, 10) + s
		}
	}
	return strconv.FormatInt(b, 10) + "b"
}

// ParseBytes reads --memory: a number with a decimal (KB, MB, GB, TB, PB)
// or binary (KiB, MiB, GiB, TiB, PiB) unit, or B, or none (bytes); the
// value must be finite and in (0 B, 1 PB].
func ParseBytes(s string) (float64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"PiB", 1 << 50},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"PB", 1e15}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	// ParseFloat also reads NaN, Inf and hex floats: only plain decimals.
	if err != nil || strings.ContainsAny(strings.ToLower(t), "nix_p") {
		return 0, fmt.Errorf("--memory %q is not a size such as 64GB or 512MiB", s)
	}
	b := v * mult
	if !(b > 0 && b <= MaxMemoryBytes) {
		return 0, RangeError("memory", s, MemoryRange)
	}
	return b, nil
}

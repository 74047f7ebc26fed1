package sizing

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
)

func TestParseMemoryString(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  string // fragment; "" for success
	}{
		{"8g", 8 << 30, ""},
		{"8G", 8 << 30, ""},
		{" 8gb ", 8 << 30, ""},
		{"512m", 512 << 20, ""},
		{"512MB", 512 << 20, ""},
		{"1t", 1 << 40, ""},
		{"2k", 2048, ""},
		{"100b", 100, ""},
		{"1p", 1 << 50, ""},
		{"8192", 8192 << 20, ""}, // a bare number is MiB, as spark.executor.memory reads it
		{"0", 0, ""},
		{"1.5t", 0, "write 1536g"},
		{"0.5g", 0, "write 512m"},
		{"1.5", 0, "whole numbers"},
		{"8 g", 0, "did you mean 8g?"},
		{"8gib", 0, `unknown suffix "gib"`},
		{"8x", 0, `unknown suffix "x"`},
		{"", 0, "not a JVM memory string"},
		{"g", 0, "not a JVM memory string"},
		{"-1g", 0, "not a JVM memory string"},
		{"+1g", 0, "not a JVM memory string"},
		{"NaNg", 0, "not a JVM memory string"},
		{"99999999999999999999", 0, "too large"},
		{"8589934592g", 0, "too large"},
		{"8388608t", 0, "too large"},
	} {
		got, err := ParseMemoryString(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseMemoryString(%q) = %d, %v; want %d", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseMemoryString(%q) = %d, %v; want an error with %q", c.in, got, err, c.err)
		}
	}
	for _, c := range []struct {
		in, err string
	}{{"8g", ""}, {"450m", ""}, {"16t", ""}, {"449m", "[450m, 16t]"}, {"17t", "[450m, 16t]"}, {"0", "[450m, 16t]"}, {"1.5t", "write 1536g"}} {
		_, err := ParseExecutorMemory(c.in)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("ParseExecutorMemory(%q): %v, want %q", c.in, err, c.err)
		}
	}
	for _, c := range []struct {
		b    int64
		want string
	}{{8 << 30, "8g"}, {1536 << 20, "1536m"}, {100, "100b"}, {3 << 40, "3t"}, {1025, "1025b"}} {
		if got := MemoryString(c.b); got != c.want {
			t.Errorf("MemoryString(%d) = %q, want %q", c.b, got, c.want)
		}
	}
}

// FuzzParseMemoryString: no input panics; an accepted value is
// non-negative and written back by MemoryString to the same bytes.
func FuzzParseMemoryString(f *testing.F) {
	for _, s := range []string{"8g", "512m", "1.5t", "8192", " 1TB ", "9223372036854775807b", "8388607t", "1\u212a", "8 g", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseMemoryString(s)
		if err != nil {
			if v != 0 || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: %d, %q", s, v, err)
			}
			return
		}
		if v < 0 {
			t.Fatalf("%q: negative %d", s, v)
		}
		back, err := ParseMemoryString(MemoryString(v))
		if err != nil || back != v {
			t.Fatalf("%q = %d, written %q, read back %d, %v", s, v, MemoryString(v), back, err)
		}
	})
}

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		err  string
	}{
		{"64GB", 64e9, ""},
		{"512MiB", 512 << 20, ""},
		{"1e9", 1e9, ""},
		{"1.5 TB", 1.5e12, ""},
		{"1PB", 1e15, ""},
		{"100B", 100, ""},
		{"NaNGB", 0, "not a size"},
		{"InfGB", 0, "not a size"},
		{"+Inf", 0, "not a size"},
		{"0x10GB", 0, "not a size"},
		{"1_000GB", 0, "not a size"},
		{"-1GB", 0, "(0 B, 1 PB]"},
		{"0", 0, "(0 B, 1 PB]"},
		{"2PB", 0, "(0 B, 1 PB]"},
		{"1e400", 0, "not a size"},
		{"64gb", 0, "not a size"},
	} {
		got, err := ParseBytes(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseBytes(%q) = %v, %v; want %v", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseBytes(%q) = %v, %v; want an error with %q", c.in, got, err, c.err)
		}
	}
}

// FuzzParseBytes: no input panics, and an accepted size is finite and in
// its range.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"64GB", "512MiB", "NaNGB", "1e15", "0x1p3", "1PiB", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseBytes(s)
		if err == nil && !(v > 0 && v <= MaxMemoryBytes) {
			t.Fatalf("%q accepted as %v", s, v)
		}
	})
}

func TestParseAPIAndStore(t *testing.T) {
	for _, c := range []struct{ in, err string }{
		{"dropDuplicates", ""},
		{"dropDuplicatesWithinWatermark", ""},
		{"batchDropDuplicates", ""},
		{"dropDuplicate", "did you mean dropDuplicates?"},
		{"dropduplicates", "did you mean dropDuplicates?"},
		{"dropDuplicatesWithinWatermrk", "did you mean dropDuplicatesWithinWatermark?"},
		{"dropDuplicatesWithWatermark", "did you mean dropDuplicatesWithinWatermark?"},
		{"distinct", "want dropDuplicatesWithinWatermark, dropDuplicates or batchDropDuplicates"},
		{"", "unknown API"},
	} {
		_, err := ParseAPI(c.in)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("ParseAPI(%q): %v, want %q", c.in, err, c.err)
		}
		if c.in == "distinct" && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("ParseAPI(%q) suggests: %v", c.in, err)
		}
	}
	for _, c := range []struct{ in, err string }{
		{"memory", ""}, {"pebble", ""}, {"pebbel", "did you mean pebble?"}, {"rocksdb", "did you mean pebble, dedupsim's RocksDB?"},
		{"hdfs", "did you mean memory"}, {"disk", "want memory or pebble"},
	} {
		_, err := ParseStore(c.in)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("ParseStore(%q): %v, want %q", c.in, err, c.err)
		}
	}
}

// TestCheck: every figure out of its domain is refused with the flag and
// the range in human units.
func TestCheck(t *testing.T) {
	good := Params{RatePerSec: 1000, Delay: time.Hour, API: query.DropDuplicatesWithinWatermark, Partitions: 200, BytesPerKey: 100}
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mut  func(*Params)
		want string
	}{
		{func(p *Params) { p.RatePerSec = math.NaN() }, "--rate NaN: out of range, want (0, 1 billion] keys/s"},
		{func(p *Params) { p.RatePerSec = math.Inf(1) }, "--rate +Inf: out of range, want (0, 1 billion] keys/s"},
		{func(p *Params) { p.RatePerSec = 0 }, "--rate 0: out of range"},
		{func(p *Params) { p.RatePerSec = -5 }, "--rate -5: out of range"},
		{func(p *Params) { p.RatePerSec = 2e9 }, "--rate 2e+09: out of range"},
		{func(p *Params) { p.Delay = -time.Second }, "--delay -1s: out of range, want [0s, 365d]"},
		{func(p *Params) { p.Delay = MaxDelay + time.Millisecond }, "want [0s, 365d]"},
		{func(p *Params) { p.API = "dropDuplicate" }, "did you mean dropDuplicates?"},
		{func(p *Params) { p.Partitions = 0 }, "--partitions 0: out of range, want [1, 1,000,000]"},
		{func(p *Params) { p.Partitions = 1_000_001 }, "want [1, 1,000,000]"},
		{func(p *Params) { p.BytesPerKey = math.NaN() }, "--bytes-per-key NaN: out of range, want [1 B, 1 MB]"},
		{func(p *Params) { p.BytesPerKey = 0.5 }, "want [1 B, 1 MB]"},
		{func(p *Params) { p.BytesPerKey = 2e6 }, "want [1 B, 1 MB]"},
		{func(p *Params) { p.MemoryBytes = math.NaN() }, "want (0 B, 1 PB]"},
		{func(p *Params) { p.MemoryBytes = -1 }, "want (0 B, 1 PB]"},
	} {
		p := good
		c.mut(&p)
		err := p.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", p, err, c.want)
		}
		if _, err := Compute(p); err == nil {
			t.Errorf("Compute accepted %+v", p)
		}
	}
	// The extremes of the domain compute finite figures.
	p := Params{RatePerSec: MaxRatePerSec, Delay: MaxDelay, API: query.DropDuplicatesWithinWatermark, Partitions: 1, BytesPerKey: MaxBytesPerKey}
	e, err := Compute(p)
	if err != nil || math.IsInf(e.TotalBytes, 0) || math.IsNaN(e.TotalBytes) {
		t.Fatalf("%+v: %v", e, err)
	}
}

// TestFitDoneWhen is issue 11's check: 20,000 keys/s, a 1 h delay,
// dropDuplicatesWithinWatermark, 64 partitions over 10 executors of 8g:
// 144 million keys; the busiest executor holds 7 partitions of 2.25
// million keys, 15.75 million keys x 100 B = 1.575 GB against a quarter of
// 8 GiB (2.147 GB): it fits.
func TestFitDoneWhen(t *testing.T) {
	e, err := Compute(Params{RatePerSec: 20000, Delay: time.Hour, API: query.DropDuplicatesWithinWatermark, Partitions: 64, BytesPerKey: 100})
	if err != nil {
		t.Fatal(err)
	}
	if e.Keys != 144e6 {
		t.Fatalf("keys %v", e.Keys)
	}
	f, err := e.FitOn(Cluster{Executors: 10, ExecutorMemory: 8 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if f.PartitionsPerExecutor != 7 || f.ExecutorsWithState != 10 || f.KeysPerPartition != 2.25e6 || f.KeysPerExecutor != 15.75e6 ||
		f.BytesPerExecutor != 1.575e9 || f.BudgetBytes != 0.25*(8<<30) || !f.Fits || f.ExecutorsNeeded != 0 || f.MemoryNeeded != 0 {
		t.Fatalf("%+v", f)
	}
	if math.Abs(f.UserMemoryBytes-0.4*float64(8<<30-300<<20)) > 1 || math.Abs(f.Share-1.575e9/f.BudgetBytes) > 1e-12 {
		t.Fatalf("user memory %v share %v", f.UserMemoryBytes, f.Share)
	}

	// At 300 B per key (nearer a JVM heap's figure) it does not fit: 7 x
	// 675 MB = 4.725 GB per executor. 3 partitions (2.025 GB) fit in the
	// 2.147 GB budget, so 22 executors would do; or a heap of
	// ceil(4.725 GB / 0.25) = 18 GiB.
	e.Params.BytesPerKey = 300
	e2, _ := Compute(e.Params)
	f, err = e2.FitOn(Cluster{Executors: 10, ExecutorMemory: 8 << 30})
	if err != nil || f.Fits || f.ExecutorsNeeded != 22 || f.MemoryNeeded != 18<<30 {
		t.Fatalf("%+v %v", f, err)
	}
	// One partition alone over the budget: no number of executors fits.
	f, _ = e2.FitOn(Cluster{Executors: 10, ExecutorMemory: 1 << 30})
	if f.Fits || f.ExecutorsNeeded != 0 || f.MemoryNeeded != 18<<30 {
		t.Fatalf("%+v", f)
	}
	// More executors than partitions: one partition each, 64 with state.
	f, _ = e.FitOn(Cluster{Executors: 100})
	if f.PartitionsPerExecutor != 1 || f.ExecutorsWithState != 64 || f.BudgetBytes != 0 {
		t.Fatalf("%+v", f)
	}
	for _, c := range []struct {
		c    Cluster
		want string
	}{
		{Cluster{Executors: 0}, "--executors 0: out of range, want [1, 100,000]"},
		{Cluster{Executors: 100_001}, "want [1, 100,000]"},
		{Cluster{Executors: 1, MemoryFraction: math.NaN()}, "--memory-fraction NaN: out of range, want (0, 1]"},
		{Cluster{Executors: 1, MemoryFraction: 1.5}, "want (0, 1]"},
		{Cluster{Executors: 1, MemoryFraction: -0.1}, "want (0, 1]"},
		{Cluster{Executors: 1, ExecutorMemory: 100 << 20}, "want [450m, 16t]"},
	} {
		if _, err := e.FitOn(c.c); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.c, err, c.want)
		}
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Bytes(72e9), "72 GB"}, {Bytes(360e6), "360 MB"}, {Bytes(749_999.9), "750 KB"}, {Bytes(999_999), "1 MB"},
		{Bytes(100), "100 B"}, {Bytes(1.5e24), "1500000 EB"},
		{BinaryBytes(8 << 30), "8 GiB"}, {BinaryBytes(1.575e9), "1.47 GiB"}, {BinaryBytes(2 << 30), "2 GiB"},
		{Seconds(0), "0 seconds"}, {Seconds(0.35), "350 milliseconds"}, {Seconds(6000), "1 hour 40 minutes"},
		{Seconds(7200), "2 hours"}, {Seconds(2 * 365 * 86400), "730 days"}, {Seconds(75), "1 minute 15 seconds"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

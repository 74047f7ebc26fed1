package analyze

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/sizing"
)

// twoCopies is a trace of one key sent twice, gap seconds apart; the
// arrival column (the later time for both) keeps the far copy from being
// taken for a future timestamp.
func twoCopies(gapSec int64) string {
	t1, t2 := int64(1000), 1000+gapSec
	at := strconv.FormatInt(t2, 10)
	return `{"id":"a","ts":` + strconv.FormatInt(t1, 10) + `,"at":` + at + "}\n" +
		`{"id":"a","ts":` + strconv.FormatInt(t2, 10) + `,"at":` + at + "}\n"
}

// TestRecommendOverflow is issue 10's "1s for copies 100,076 days apart":
// no arithmetic may wrap. A gap of at least a year gets no delay (and says
// why); a gap x (1 + margin) beyond a year saturates at a year, still above
// the gap; the delay is never below the gap.
func TestRecommendOverflow(t *testing.T) {
	day := int64(86400)
	for _, c := range []struct {
		name      string
		gap       int64 // seconds
		margin    float64
		delayMs   int64 // 0: no delay
		saturated bool
	}{
		{"100,076 days", 100_076 * day, DefaultMargin, 0, false},
		{"8,000 years", 8000 * 365 * day, 0, 0, false},
		{"exactly a year (not covered: the gap must be below the delay)", 365 * day, 0, 0, false},
		{"300 days x 1.25 saturates", 300 * day, DefaultMargin, 365 * day * 1000, true},
		{"200 days x 11 saturates", 200 * day, MaxMargin, 365 * day * 1000, true},
		{"364 days, no margin", 364 * day, 0, 364 * day * 1000, false},
		{"1 hour", 3600, DefaultMargin, 75 * 60 * 1000, false},
	} {
		r := analyzeText(t, Options{Arrival: "at", Margin: c.margin}, twoCopies(c.gap))
		rec := r.Recommendation
		if rec == nil || rec.DelayMs != c.delayMs || rec.Saturated != c.saturated || (c.delayMs == 0) != (rec.NoDelay != "") {
			t.Errorf("%s: %+v", c.name, rec)
			continue
		}
		if rec.DelayMs != 0 && rec.DelayMs*1000 < c.gap*1_000_000 {
			t.Errorf("%s: delay %d ms below the gap", c.name, rec.DelayMs)
		}
		var out bytes.Buffer
		r.WriteText(&out)
		txt := out.String()
		switch {
		case c.delayMs == 0:
			if !strings.Contains(txt, "recommended delay      none: the event-time gap at p99.99") || len(rec.State) != 0 || strings.Contains(txt, "withWatermark") {
				t.Errorf("%s:\n%s", c.name, txt)
			}
		case c.saturated:
			if !strings.Contains(txt, "capped at 365 days") || !strings.Contains(strings.Join(r.Notes, "\n"), "less margin than --margin asks") || len(rec.State) != 2 {
				t.Errorf("%s:\n%s", c.name, txt)
			}
		}
	}

	// Random gaps from a second to 8,000 years and margins in [0, 10]:
	// never a delay below the gap, above a year or below 1 s.
	rng := rand.New(rand.NewPCG(10, 4))
	for range 300 {
		gap := int64(math.Exp(rng.Float64() * math.Log(8000*365*float64(day))))
		margin := rng.Float64() * MaxMargin
		rec := analyzeText(t, Options{Arrival: "at", Margin: margin}, twoCopies(gap)).Recommendation
		switch {
		case rec.NoDelay != "":
			if gap < 365*day {
				t.Fatalf("gap %d s, margin %v: no delay", gap, margin)
			}
		case rec.DelayMs*1000 < gap*1_000_000, rec.DelayMs > sizing.MaxDelay.Milliseconds(), rec.DelayMs < MinDelay.Milliseconds():
			t.Fatalf("gap %d s, margin %v: delay %d ms", gap, margin, rec.DelayMs)
		}
	}
}

// TestRateBeyondDomain: 2,000 keys within a microsecond of event time
// measure a rate of 2 billion keys/s: no state estimate, and why.
func TestRateBeyondDomain(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		b.WriteString(`{"id":"k` + strconv.Itoa(i) + `","ts":1.00000` + strconv.Itoa(i%2) + "}\n")
	}
	b.WriteString(`{"id":"k0","ts":1.000001}` + "\n")
	r := analyzeText(t, Options{}, b.String())
	if rec := r.Recommendation; rec == nil || len(rec.State) != 0 || !strings.Contains(rec.StateNote, "a key rate of 2,000,000,000 keys/s is beyond a billion") {
		t.Fatalf("%v %+v", r.SizingRatePerSec, r.Recommendation)
	}
}

// TestOptionRanges: every option out of its domain is refused, naming the
// flag and its range in human units.
func TestOptionRanges(t *testing.T) {
	base := func() Options { return Options{Keys: []string{"id"}, Time: "ts"} }
	for _, c := range []struct {
		mut  func(*Options)
		want string
	}{
		{func(o *Options) { o.Margin = math.NaN() }, "analyze: --margin NaN: out of range, want [0, 10]"},
		{func(o *Options) { o.Margin = math.Inf(1) }, "analyze: --margin +Inf: out of range, want [0, 10]"},
		{func(o *Options) { o.Margin = 1e9 }, "analyze: --margin 1e+09: out of range, want [0, 10]"},
		{func(o *Options) { o.Margin = -0.5 }, "analyze: --margin -0.5: out of range"},
		{func(o *Options) { o.Percentile = math.NaN() }, "analyze: --percentile NaN: out of range, want (0, 100]"},
		{func(o *Options) { o.Percentile = 101 }, "analyze: --percentile 101: out of range, want (0, 100]"},
		{func(o *Options) { o.Percentile = -1 }, "want (0, 100]"},
		{func(o *Options) { o.RatePercentile = math.Inf(-1) }, "analyze: --rate-percentile -Inf: out of range, want (0, 100]"},
		{func(o *Options) { o.RateWindow = time.Millisecond }, "analyze: --rate-window 1ms: out of range, want [1s, 24h]"},
		{func(o *Options) { o.RateWindow = 25 * time.Hour }, "want [1s, 24h]"},
		{func(o *Options) { o.Rate = math.NaN() }, "analyze: --rate NaN: out of range, want (0, 1 billion] keys/s"},
		{func(o *Options) { o.Rate = -1 }, "want (0, 1 billion] keys/s"},
		{func(o *Options) { o.BytesPerKey = math.NaN() }, "analyze: --bytes-per-key NaN: out of range, want [1 B, 1 MB]"},
		{func(o *Options) { o.Partitions = -1 }, "analyze: --partitions -1: out of range, want [1, 1,000,000]"},
		{func(o *Options) { o.MaxKeys = -1 }, "analyze: --max-keys -1: out of range, want [1, 2,147,483,647]"},
		{func(o *Options) { o.FutureTolerance = -time.Second }, "analyze: --future-tolerance -1s: out of range, want [1ms, 365d]"},
		{func(o *Options) { o.FutureTolerance = 400 * 24 * time.Hour }, "want [1ms, 365d]"},
		{func(o *Options) { o.TimeUnit = 7 }, "--time-unit 7: want s, ms or us"},
		{func(o *Options) { o.Keys = nil }, "--key names no column"},
		{func(o *Options) { o.Keys = []string{"id", "acct", "id"} }, `--key names "id" twice`},
		{func(o *Options) { o.Time = "" }, "--time names no column"},
	} {
		o := base()
		c.mut(&o)
		_, err := New(o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", o, err, c.want)
		}
	}
	for _, c := range []struct {
		in, err string
		want    time.Duration
	}{
		{"1m", "", time.Minute}, {"1 minute", "", time.Minute}, {"24h", "", 24 * time.Hour}, {"1s", "", time.Second},
		{"999ms", `--rate-window "999ms": out of range, want [1s, 24h]`, 0},
		{"25 hours", "want [1s, 24h]", 0},
		{"-1m", `--rate-window "-1m": out of range`, 0},
		{"106751 days", "want [1s, 24h]", 0},
		{"soon", "--rate-window: invalid interval", 0},
	} {
		got, err := ParseDuration("rate-window", c.in, MinRateWindow, MaxRateWindow, RateWindowRange)
		if c.err == "" && (err != nil || got != c.want) || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v %q", c.in, got, err, c.want, c.err)
		}
	}
}

// zeros is /dev/zero.
type zeros struct{ read int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.read += int64(len(p))
	return len(p), nil
}

// TestLineCap: a line over MaxLineBytes fails with its line number, with
// or without --skip-bad, after reading little more than the cap; so does
// an endless input without newlines.
func TestLineCap(t *testing.T) {
	ok := "{\"id\":\"a\",\"ts\":1}\n"
	huge := `{"id":"a","ts":1,"pad":"` + strings.Repeat("x", MaxLineBytes) + "\"}\n"
	for _, skip := range []bool{false, true} {
		_, err := Run(strings.NewReader(ok+huge+ok), Options{File: "x.jsonl", Keys: []string{"id"}, Time: "ts", SkipBad: skip})
		var le *LineError
		if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), "x.jsonl:2: line longer than 16 MiB, the limit of one event") {
			t.Fatalf("skip %v: %v", skip, err)
		}
	}
	z := &zeros{}
	_, err := Run(z, Options{File: "/dev/zero", Keys: []string{"id"}, Time: "ts"})
	if err == nil || !strings.HasPrefix(err.Error(), "/dev/zero:1: line longer than 16 MiB") || z.read > MaxLineBytes+2<<20 {
		t.Fatalf("%v after %d bytes", err, z.read)
	}
	// Line itself refuses it too.
	a, _ := New(Options{File: "f", Keys: []string{"id"}, Time: "ts"})
	if err := a.Line([]byte(huge)); err == nil || !strings.HasPrefix(err.Error(), "f:1: line longer") {
		t.Fatal(err)
	}
	// Just under the cap is fine, and so is a last line without a newline.
	under := `{"id":"a","ts":2,"pad":"` + strings.Repeat("x", MaxLineBytes-40) + `"}`
	r, err := Run(io.MultiReader(strings.NewReader(ok), strings.NewReader(under)), Options{Keys: []string{"id"}, Time: "ts"})
	if err != nil || r.Events != 2 || r.ExtraCopies != 1 {
		t.Fatalf("%v %+v", err, r)
	}
}

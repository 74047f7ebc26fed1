package analyze

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/internal/duration"
)

// TestSizingRateFromPeak is issue 11's done-when check: the mean over the
// whole span (the burst and 6 hours of sparse retries) is a few keys a
// second, but the state is sized from p99 of the per-minute rate, which is
// the burst's 1,000 keys/s.
func TestSizingRateFromPeak(t *testing.T) {
	a, err := New(Options{Keys: []string{"id"}, Time: "ts", Margin: DefaultMargin})
	if err != nil {
		t.Fatal(err)
	}
	if err := RetriedBurst().Each(a.Line); err != nil {
		t.Fatal(err)
	}
	r := a.Finish()
	t.Logf("sizing rate %.1f keys/s (%s); mean %.2f keys/s over %s; %d windows, p50 %.2f/s, max %.1f/s",
		r.SizingRatePerSec, r.SizingRateBasis, r.KeyRatePerSec, duration.About(r.SpanSec*1e3), r.RateWindows.Windows, r.RateWindows.P50, r.RateWindows.Max)
	if r.SizingRatePerSec < 800 || r.SizingRatePerSec > 1250 {
		t.Fatalf("sizing rate %.1f keys/s, want 800 to 1,250", r.SizingRatePerSec)
	}
	if !strings.HasPrefix(r.SizingRateBasis, "p99 of the distinct keys per 1 minute window") {
		t.Fatalf("basis %q", r.SizingRateBasis)
	}
	// The mean is what sizing used before: far below the peak.
	if r.KeyRatePerSec > 100 || r.KeyRatePerSec <= 0 {
		t.Fatalf("mean %v", r.KeyRatePerSec)
	}
	// About 5 full windows of the burst and ~360 of retries.
	if r.RateWindows.Windows < 300 || r.RateWindows.Windows > 370 || r.RateWindows.Late != 0 {
		t.Fatalf("windows %+v", r.RateWindows)
	}
	// The state estimate uses the sizing rate: within-watermark keys =
	// rate x 2 x delay.
	rec := r.Recommendation
	if rec == nil || len(rec.State) != 2 {
		t.Fatalf("%+v", rec)
	}
	dw := rec.State[1]
	if want := r.SizingRatePerSec * 2 * float64(rec.DelayMs) / 1e3; dw.KeysInState < want*0.999 || dw.KeysInState > want*1.001 {
		t.Fatalf("keys in state %v, want %v", dw.KeysInState, want)
	}
	var out bytes.Buffer
	r.WriteText(&out)
	for _, s := range []string{"key rate               per 1 minute window of event time", "mean ", "sizing rate", "p99 of the distinct keys per 1 minute window"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, out.String())
		}
	}

	// --rate overrides it.
	a, _ = New(Options{Keys: []string{"id"}, Time: "ts", Rate: 5000})
	RetriedBurst().Each(a.Line)
	if r := a.Finish(); r.SizingRatePerSec != 5000 || r.SizingRateBasis != "--rate" {
		t.Fatalf("--rate: %v %q", r.SizingRatePerSec, r.SizingRateBasis)
	}
	// p50 of the 1-minute windows is the sparse tail, below the mean: the
	// state is never sized below the mean.
	a, _ = New(Options{Keys: []string{"id"}, Time: "ts", RatePercentile: 50})
	RetriedBurst().Each(a.Line)
	if r := a.Finish(); r.SizingRatePerSec != r.KeyRatePerSec || !strings.HasPrefix(r.SizingRateBasis, "the mean, above p50") {
		t.Fatalf("p50: %v (mean %v) %q", r.SizingRatePerSec, r.KeyRatePerSec, r.SizingRateBasis)
	}
}

// TestRateWindowsAgainstReference: random traces in arrival order with
// disorder, every key with at most three copies, against exact sets of
// keys per window; the per-window counts (small, so exact in the
// histogram) agree at every percentile.
func TestRateWindowsAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 7))
	for trial := range 100 {
		width := []time.Duration{time.Second, 10 * time.Second, time.Minute}[trial%3]
		n := 1 + rng.IntN(2000)
		sets := map[int64]map[string]bool{}
		copies := map[string]int{}
		var in strings.Builder
		base := int64(1_700_000_000)
		for i := range n {
			k := "k" + strconv.Itoa(rng.IntN(n))
			if copies[k] == 3 {
				continue
			}
			copies[k]++
			// Roughly in order (one event a second), up to 5 minutes late.
			sec := base + int64(i) - rng.Int64N(300)
			ms := rng.Int64N(1000)
			in.WriteString(`{"id":"` + k + `","ts":` + strconv.FormatInt(sec, 10) + "." + strconv.FormatInt(1000+ms, 10)[1:] + "}\n")
			w := (sec*1e6 + ms*1e3) / width.Microseconds()
			if sets[w] == nil {
				sets[w] = map[string]bool{}
			}
			sets[w][k] = true
		}
		a, err := New(Options{Keys: []string{"id"}, Time: "ts", RateWindow: width})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Read(strings.NewReader(in.String())); err != nil {
			t.Fatal(err)
		}
		r := a.Finish()
		var counts []int64
		for _, s := range sets {
			counts = append(counts, int64(len(s)))
		}
		slices.Sort(counts)
		h := &a.rate.counts
		if h.Count() != int64(len(counts)) || r.RateWindows.Windows != int64(len(counts)) || r.RateWindows.Late != 0 {
			t.Fatalf("trial %d: %d windows, want %d", trial, h.Count(), len(counts))
		}
		for _, p := range []float64{1, 25, 50, 90, 99, 100} {
			if got, want := h.Quantile(p), float64(counts[Rank(p, int64(len(counts)))-1]); got != want {
				t.Fatalf("trial %d (%v windows): p%v %v, want %v", trial, width, p, got, want)
			}
		}
		if r.RateWindows.Max != float64(counts[len(counts)-1])/width.Seconds() {
			t.Fatalf("trial %d: max %v", trial, r.RateWindows.Max)
		}
	}
}

// TestRateWindowsClose: a window more than a day behind the newest event
// time is closed; a copy that comes for it is late and left out, and the
// ring never holds more than a day of windows.
func TestRateWindowsClose(t *testing.T) {
	in := `{"id":"a","ts":100000}
{"id":"b","ts":100010}
{"id":"c","ts":190000}
{"id":"d","ts":100020}
{"id":"a","ts":190001}
{"id":"e","ts":190060}
`
	// 25 h between the first and the third: a 48 h future tolerance keeps
	// the third in.
	a, err := New(Options{Keys: []string{"id"}, Time: "ts", FutureTolerance: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	r := a.Finish()
	// Windows: 1666 (100000, 100010: a, b), 3166 (190000, 190001: c, a),
	// 3167 (190060: e); d's window 1666 had closed when it came.
	w := r.RateWindows
	if w.Windows != 3 || w.Late != 1 || w.Max != 2.0/60 || w.P50 != 2.0/60 || len(a.rate.ring) != 1441 {
		t.Fatalf("%+v, ring %d", w, len(a.rate.ring))
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "1 copy came more than 1 day of event time behind the newest") {
		t.Fatal(r.Notes)
	}
	// A jump of years closes everything at once, in bounded time.
	rw := newRateWindows(time.Second)
	rw.add(5)
	rw.add(5)
	rw.add(1 << 40)
	rw.add(1<<40 - 3)
	rw.finish()
	// Windows 5 (twice), 2^40 and 2^40-3 (a little late, still open).
	if rw.counts.Count() != 3 || rw.counts.Max() != 2 || rw.counts.Quantile(50) != 1 || rw.late != 0 {
		t.Fatalf("%d windows, max %d, late %d", rw.counts.Count(), rw.counts.Max(), rw.late)
	}
}

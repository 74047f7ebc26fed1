package sim

import (
	"math"
	"slices"
	"testing"
	"time"
)

// The generators' distributions, over fixed seeds: deterministic, no
// timing.

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func within(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*math.Abs(want) {
		t.Errorf("%s = %.4g, want %.4g ± %.0f%%", name, got, want, 100*tol)
	}
}

const draws = 10_000

func TestDistributions(t *testing.T) {
	ms := func(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }
	sample := func(d Dist) []float64 {
		r := Stream(1, "test")
		out := make([]float64, draws)
		for i := range out {
			out[i] = float64(d.sampleUs(r)) / 1000 // ms
		}
		return out
	}
	fixed := sample(Dist{Kind: DistFixed, Mean: ms(250)})
	if slices.Min(fixed) != 250 || slices.Max(fixed) != 250 {
		t.Errorf("fixed: range [%v, %v], want 250", slices.Min(fixed), slices.Max(fixed))
	}
	exp := sample(Dist{Kind: DistExponential, Mean: ms(2000)})
	within(t, "exponential mean", mean(exp), 2000, 0.03)
	within(t, "exponential median", median(exp), 2000*math.Ln2, 0.05)
	ln := sample(Dist{Kind: DistLogNormal, Mean: ms(1000), Sigma: 1})
	within(t, "log-normal median", median(ln), 1000, 0.05)
	within(t, "log-normal mean", mean(ln), 1000*math.Exp(0.5), 0.06)
	uni := sample(Dist{Kind: DistUniform, Mean: ms(100), Max: ms(300)})
	within(t, "uniform mean", mean(uni), 200, 0.02)
	if slices.Min(uni) < 100 || slices.Max(uni) > 300 {
		t.Errorf("uniform: range [%v, %v], want within [100, 300]", slices.Min(uni), slices.Max(uni))
	}
}

func TestRetryGaps(t *testing.T) {
	gaps := func(m retryModel) ([]float64, int) {
		m.r = Stream(2, "test")
		out := make([]float64, draws)
		offline := 0
		for i := range out {
			g, off := m.drawGapUs()
			out[i] = float64(g) / 1000
			if off {
				offline++
			}
		}
		return out, offline
	}
	fixed, _ := gaps(retryModel{gap: "fixed", gapUs: 5e6})
	if slices.Min(fixed) != 5000 || slices.Max(fixed) != 5000 {
		t.Errorf("fixed gap: [%v, %v]", slices.Min(fixed), slices.Max(fixed))
	}
	exp, _ := gaps(retryModel{gap: "exponential", gapUs: 2e6})
	within(t, "exponential gap mean", mean(exp), 2000, 0.03)
	ln, _ := gaps(retryModel{gap: "lognormal", gapUs: 1e6, sigma: 0.5})
	within(t, "log-normal gap median", median(ln), 1000, 0.05)
	// An offline tail: 10% of gaps log-uniform in [1h, 4h].
	tail, offline := gaps(retryModel{gap: "exponential", gapUs: 2e6, offlineFrac: 0.1, offlineMinUs: 3600e6, offlineMaxUs: 4 * 3600e6})
	within(t, "offline share", float64(offline)/draws, 0.1, 0.1)
	long := 0
	for _, g := range tail {
		if g >= 3600e3 {
			long++
			if g > 4*3600e3 {
				t.Fatalf("offline gap %v ms beyond 4h", g)
			}
		}
	}
	if long != offline {
		t.Errorf("%d gaps of an hour or more, %d offline draws", long, offline)
	}
}

// arrivals counts a source's events per second over a window.
func arrivals(t *testing.T, rate Rate, seconds int) []int {
	t.Helper()
	sc := SourceConfig{Name: "s", Rate: rate}
	sc.fill()
	if err := sc.validate(); err != nil {
		t.Fatal(err)
	}
	g := &sourceGen{cfg: sc, rArr: Stream(3, "a"), rBurst: Stream(3, "b"), perUs: sc.Rate.PerSec / 1e6}
	if rate.Profile == RateBursts {
		g.burstStart = int64(g.rBurst.ExpFloat64() * float64(sc.Rate.BurstEvery.Ms()) * 1e3)
		g.burstEnd = g.burstStart + sc.Rate.BurstLength.Ms()*1e3
	}
	counts := make([]int, seconds)
	for x := g.next(0); x < int64(seconds)*1e6; x = g.next(x) {
		counts[x/1e6]++
	}
	return counts
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

func TestRateProfiles(t *testing.T) {
	constant := arrivals(t, Rate{Profile: RateConstant, PerSec: 100}, 1000)
	within(t, "constant events", float64(sum(constant)), 100_000, 0.01)

	period := Duration(1000 * time.Second)
	diurnal := arrivals(t, Rate{Profile: RateDiurnal, PerSec: 100, Amplitude: 0.8, Period: period}, 1000)
	within(t, "diurnal events", float64(sum(diurnal)), 100_000, 0.02)
	// The sine rises first: the first half-period holds (1 + 2A/π) of the
	// mean, the second (1 - 2A/π).
	within(t, "diurnal first half", float64(sum(diurnal[:500])), 50_000*(1+1.6/math.Pi), 0.03)
	within(t, "diurnal second half", float64(sum(diurnal[500:])), 50_000*(1-1.6/math.Pi), 0.03)
	within(t, "diurnal peak second (250 s)", float64(sum(diurnal[240:260]))/20, 180, 0.1)

	bursts := Rate{Profile: RateBursts, PerSec: 100, BurstFactor: 10, BurstEvery: Duration(60 * time.Second), BurstLength: Duration(20 * time.Second)}
	b := arrivals(t, bursts, 20_000)
	within(t, "bursts mean rate", float64(sum(b))/20_000, bursts.meanRate(), 0.05)
	hot := 0
	for _, c := range b {
		if c > 500 {
			hot++
		}
	}
	within(t, "share of seconds in a burst", float64(hot)/20_000, 20.0/80, 0.1)
}

// TestKeySpaces: fresh ids never repeat; bounded ids stay in the space and
// repeat.
func TestKeySpaces(t *testing.T) {
	for _, kind := range []string{KeysFresh, KeysBounded} {
		cfg := Defaults()
		cfg.FaultPhase, cfg.HealPhase = Duration(30*time.Second), Duration(30*time.Second)
		cfg.Sources = []SourceConfig{{Name: "default", Keys: KeySpace{Kind: kind, Size: 50}}}
		cfg.Query = "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: table}\n"
		h := run(t, cfg, 1)
		seen := map[string]int{}
		for _, c := range h.Copies {
			seen[c.Event]++
		}
		switch kind {
		case KeysFresh:
			if len(seen) != len(h.Copies) {
				t.Errorf("fresh: %d ids for %d copies", len(seen), len(h.Copies))
			}
		case KeysBounded:
			if len(seen) != 50 {
				t.Errorf("bounded: %d distinct ids, want 50", len(seen))
			}
			// dropDuplicates without a watermark keeps each device once.
			if len(h.Table) != 50 {
				t.Errorf("bounded: table holds %d rows, want 50", len(h.Table))
			}
		}
	}
}

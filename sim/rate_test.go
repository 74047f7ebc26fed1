package sim

import (
	"math"
	"testing"
	"time"
)

// TestTinyRatesRun: every rate in the documented range (0, 1e7] runs, for
// every profile. A rate of 1e-14 per second used to draw an inter-arrival
// time beyond int64 microseconds, which wrapped to the past and panicked
// in the send queue (issue 10, item 14).
func TestTinyRatesRun(t *testing.T) {
	for _, profile := range []string{RateConstant, RateDiurnal, RateBursts} {
		for _, perSec := range []float64{5e-324, 1e-300, 1e-14, 1e-6, 0.01} {
			cfg := testConfig(tableQuery, nil)
			cfg.FaultPhase, cfg.HealPhase = Duration(30*time.Second), Duration(30*time.Second)
			cfg.Sources[0].Rate = Rate{Profile: profile, PerSec: perSec}
			if profile == RateBursts {
				cfg.Sources[0].Rate.BurstEvery, cfg.Sources[0].Rate.BurstLength = Duration(366*24*time.Hour), Duration(time.Millisecond)
			}
			h, err := Run(cfg, 1)
			if err != nil {
				t.Fatalf("%s at %g/s: %v", profile, perSec, err)
			}
			if perSec < 1e-6 && len(h.Copies) != 0 {
				t.Errorf("%s at %g/s: %d copies in a minute", profile, perSec, len(h.Copies))
			}
			if _, err := Schedule(cfg, 1); err != nil {
				t.Fatalf("%s at %g/s: schedule: %v", profile, perSec, err)
			}
		}
	}
}

// TestNextNeverGoesBack: an arrival is never before the time it follows,
// whatever the rate: one beyond the horizon is never, not a wrapped time.
func TestNextNeverGoesBack(t *testing.T) {
	for _, profile := range []string{RateConstant, RateDiurnal, RateBursts} {
		for _, perSec := range []float64{5e-324, 1e-14, 1, 1e7} {
			sc := SourceConfig{Name: "s", Rate: Rate{Profile: profile, PerSec: perSec}}
			sc.fill()
			g := &sourceGen{cfg: sc, rArr: Stream(1, "a"), rBurst: Stream(1, "b"), perUs: sc.Rate.PerSec / 1e6}
			g.burstStart, g.burstEnd = 0, sc.Rate.BurstLength.Ms()*1e3
			start := int64(1_767_225_600_000_000)
			for i, t0 := 0, start; i < 1000; i++ {
				next := g.next(t0)
				if next < t0 {
					t.Fatalf("%s at %g/s: next(%d) = %d, before it", profile, perSec, t0, next)
				}
				if next >= start+int64(maxGapUs) { // beyond any run: generation stops here
					if perSec >= 1 {
						t.Fatalf("%s at %g/s: no arrival within a year", profile, perSec)
					}
					break
				}
				t0 = next
			}
		}
	}
	if never != math.MaxInt64 {
		t.Fatal("never must compare above every time")
	}
}

package duration

import "testing"

// TestWords: the one way a span is written for a reader (docs/output.md,
// "Durations and timestamps"): Spark's interval words, exact.
func TestWords(t *testing.T) {
	for _, tc := range []struct {
		ms   float64
		want string
	}{
		{0, "0 seconds"}, {0.25, "0.25 milliseconds"}, {1, "1 millisecond"}, {250, "250 milliseconds"},
		{1000, "1 second"}, {1500, "1.5 seconds"}, {10_000, "10 seconds"}, {60_000, "1 minute"},
		{102_904, "1 minute 42.904 seconds"}, {3_600_000, "1 hour"}, {7_200_000, "2 hours"},
		{7_500_000, "2 hours 5 minutes"}, {3_600_001, "1 hour 0.001 seconds"},
		{86_400_000 + 60_000, "1 day 1 minute"}, {365 * 86_400_000, "365 days"},
		{-1500, "-1.5 seconds"}, {-250, "-250 milliseconds"}, {1e18, "11574074074 days"},
	} {
		if got := Words(tc.ms); got != tc.want {
			t.Errorf("Words(%v) = %q, want %q", tc.ms, got, tc.want)
		}
	}
}

// TestAbout: an estimate in the same words, rounded to two units (the
// examples of docs/output.md among them).
func TestAbout(t *testing.T) {
	for _, tc := range []struct {
		ms   float64
		want string
	}{
		{0, "0 seconds"}, {0.25, "0.25 milliseconds"}, {350, "350 milliseconds"}, {999.9999, "1 second"},
		{1500, "1.5 seconds"}, {12_549, "12.5 seconds"}, {102_904, "1 minute 43 seconds"}, {60_000, "1 minute"}, {2_398_000, "39 minutes 58 seconds"},
		{3_600_000, "1 hour"}, {7_500_000, "2 hours 5 minutes"}, {7_529_000, "2 hours 5 minutes"},
		{86_400_000 + 3_600_000, "1 day 1 hour"}, {2 * 365 * 86_400_000, "730 days"}, {-90_000, "-1 minute 30 seconds"},
		{1e22, "115740740740741 days"},
	} {
		if got := About(tc.ms); got != tc.want {
			t.Errorf("About(%v) = %q, want %q", tc.ms, got, tc.want)
		}
	}
}

func TestStamp(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{Stamp(0), "1970-01-01T00:00:00.000Z"},
		{Stamp(1_767_225_600_500), "2026-01-01T00:00:00.500Z"},
		{Stamp(-1), "1969-12-31T23:59:59.999Z"},
		{StampMicros(1_767_225_600_500_000), "2026-01-01T00:00:00.500Z"},
		{StampMicros(1_767_225_600_000_250), "2026-01-01T00:00:00.000250Z"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

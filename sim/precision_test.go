package sim

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dedupsim/dedupsim/faults"
)

// timestamp_precision truncates every event time, originals and re-stamped
// retries alike, to a multiple of the precision; without it the workload is
// unchanged.
func TestTimestampPrecision(t *testing.T) {
	plan := map[string]faults.Knobs{faults.ProducerRetryRestamped: {"probability": 0.1}}
	cfg := testConfig(tableQuery, plan)
	cfg.Sources[0].TimestampPrecision = Duration(time.Second)
	h := run(t, cfg, 3)
	times := map[int64]int{}
	restamped := 0
	for i, c := range h.Copies {
		if c.EventTimeUs%1_000_000 != 0 {
			t.Fatalf("copy %d: event time %dµs is not a whole second", i, c.EventTimeUs)
		}
		if c.Fault.String() == faults.ProducerRetryRestamped {
			restamped++
		}
		times[c.EventTimeUs]++
	}
	if restamped == 0 {
		t.Fatal("no re-stamped retry: the test proves nothing about them")
	}
	// 50 events/s over whole seconds: dozens share each event time.
	if per := float64(len(h.Copies)) / float64(len(times)); per < 20 {
		t.Errorf("%.1f copies per distinct event time, want many (>= 20)", per)
	}

	// Truncation changes event times only: same events, same append
	// times, each event time within one precision of the untruncated one.
	base := run(t, testConfig(tableQuery, plan), 3)
	if len(base.Copies) != len(h.Copies) {
		t.Fatalf("%d copies with the precision, %d without", len(h.Copies), len(base.Copies))
	}
	fine := 0
	for i := range base.Copies {
		a, b := base.Copies[i], h.Copies[i]
		if a.Event != b.Event || a.AppendedAtMs != b.AppendedAtMs {
			t.Fatalf("copy %d: %s@%d without the precision, %s@%d with it", i, a.Event, a.AppendedAtMs, b.Event, b.AppendedAtMs)
		}
		if d := a.EventTimeUs - b.EventTimeUs; d < 0 || d >= 1_000_000 {
			t.Fatalf("copy %d: %dµs truncated to %dµs", i, a.EventTimeUs, b.EventTimeUs)
		}
		if a.EventTimeUs%1000 != 0 {
			fine++
		}
	}
	if fine == 0 {
		t.Error("without timestamp_precision every event time is a whole millisecond: the default must keep microseconds")
	}
}

func TestTimestampPrecisionTruncate(t *testing.T) {
	g := &sourceGen{cfg: SourceConfig{TimestampPrecision: Duration(time.Second)}}
	for in, want := range map[int64]int64{0: 0, 999_999: 0, 1_000_000: 1_000_000, 1_767_225_600_123_456: 1_767_225_600_000_000, -1: -1_000_000, -1_000_000: -1_000_000} {
		if got := g.truncate(in); got != want {
			t.Errorf("truncate(%d) = %d, want %d", in, got, want)
		}
	}
	g.cfg.TimestampPrecision = 0
	if got := g.truncate(123_456_789); got != 123_456_789 {
		t.Errorf("no precision: truncate changed %d to %d", 123_456_789, got)
	}
}

func TestTimestampPrecisionConfig(t *testing.T) {
	var s SourceConfig
	if err := yaml.Unmarshal([]byte("name: default\ntimestamp_precision: 1 second\n"), &s); err != nil {
		t.Fatal(err)
	}
	if time.Duration(s.TimestampPrecision) != time.Second {
		t.Fatalf("timestamp_precision: 1 second read as %v", s.TimestampPrecision)
	}
	for _, bad := range []Duration{Duration(-time.Millisecond), Duration(2 * time.Hour)} {
		cfg := testConfig(tableQuery, nil)
		cfg.Sources[0].TimestampPrecision = bad
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "timestamp_precision") {
			t.Errorf("timestamp_precision %v: got %v, want an error naming the field", bad, err)
		}
	}
}

package sizing

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
)

// Seed 000's worked example: 50,000 events/s, 2-hour delay,
// dropDuplicatesWithinWatermark, 200 partitions, 100 bytes per key.
func TestWorkedExample(t *testing.T) {
	e, err := Compute(Params{RatePerSec: 50000, Delay: 2 * time.Hour, API: query.DropDuplicatesWithinWatermark, Partitions: 200, BytesPerKey: 100, MemoryBytes: 64e9})
	if err != nil {
		t.Fatal(err)
	}
	if e.Keys != 720e6 || e.TotalBytes != 72e9 || e.PerPartition != 360e6 {
		t.Fatalf("keys %v total %v per partition %v", e.Keys, e.TotalBytes, e.PerPartition)
	}
	if Bytes(e.TotalBytes) != "72 GB" || Bytes(e.PerPartition) != "360 MB" {
		t.Fatalf("formatting %s %s", Bytes(e.TotalBytes), Bytes(e.PerPartition))
	}
	if e.Store != "pebble" || !strings.Contains(e.Formula, "2 x delay") {
		t.Fatalf("store %q formula %q", e.Store, e.Formula)
	}
}

func TestRetentionAndStoreChoice(t *testing.T) {
	tests := []struct {
		api       query.API
		etInKey   bool
		ret       float64
		unbounded bool
	}{
		{query.DropDuplicatesWithinWatermark, false, 7200, false},
		{query.DropDuplicates, true, 3600, false},
		{query.DropDuplicates, false, math.Inf(1), true},
		{query.BatchDropDuplicates, false, 0, false},
	}
	for _, tc := range tests {
		ret, unb := Retention(tc.api, time.Hour, tc.etInKey)
		if ret != tc.ret || unb != tc.unbounded {
			t.Errorf("%s (event time in key %v): retention %v unbounded %v", tc.api, tc.etInKey, ret, unb)
		}
	}
	small, _ := Compute(Params{RatePerSec: 100, Delay: time.Minute, API: query.DropDuplicates, EventTimeInKey: true, Partitions: 4, BytesPerKey: 100, MemoryBytes: 1e9})
	if small.Store != "memory" {
		t.Fatalf("6,000 keys should fit in 1 GB: %+v", small)
	}
	unb, _ := Compute(Params{RatePerSec: 100, Delay: time.Minute, API: query.DropDuplicates, Partitions: 4, BytesPerKey: 100})
	if !unb.Unbounded {
		t.Fatal("dropDuplicates without the event time in the keys is unbounded")
	}
	if _, err := Compute(Params{RatePerSec: 0, Delay: time.Minute, Partitions: 1, BytesPerKey: 1}); err == nil {
		t.Fatal("rate 0 accepted")
	}
}

// The measured plateau of a scaled-down simulation agrees with
// rate x retention.
func TestMeasure(t *testing.T) {
	for _, store := range []string{"memory", "pebble"} {
		m, err := Measure(Params{RatePerSec: 1000, Delay: 10 * time.Minute, API: query.DropDuplicatesWithinWatermark, Partitions: 8, BytesPerKey: 100}, store, 1)
		if err != nil {
			t.Fatal(err)
		}
		if m.Ratio < 0.85 || m.Ratio > 1.2 {
			t.Fatalf("%s: plateau %v vs predicted %v (ratio %.2f)", store, m.MeasuredPlateau, m.PredictedPlateau, m.Ratio)
		}
		if m.MemoryPerKey <= 0 || (store == "pebble" && m.DiskPerKey <= 0) {
			t.Fatalf("%s: bytes per key %+v", store, m)
		}
	}
}

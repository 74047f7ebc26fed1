package sim

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/faults"
)

// measured1M is the peak RSS /usr/bin/time -v gave for `dedupsim run` of
// the 1 M-copy configuration below (1000 events/s for 1000 s, no faults),
// on this commit, under the soft memory limit run sets from the
// prediction (scenarios.SoftLimit): the largest of two runs (282,092 and
// 283,020 KiB).
const measured1M = 283_020 * 1024

// TestPredictMatchesMeasurement pins the memory model to the measurement:
// the prediction for the measured run is within 1.5x of what it used, and
// not below it.
func TestPredictMatchesMeasurement(t *testing.T) {
	cfg := Defaults()
	cfg.Query = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 30 seconds}\nshuffle_partitions: 4\nsink: {kind: table}\n"
	cfg.FaultPhase, cfg.HealPhase = Duration(500*time.Second), Duration(500*time.Second)
	cfg.Sources = []SourceConfig{{Name: "default", Rate: Rate{PerSec: 1000}}}
	p, err := cfg.Predict()
	if err != nil {
		t.Fatal(err)
	}
	if p.Copies != 1e6 || p.CopyFactor != 1 || p.Events != 1e6 {
		t.Fatalf("prediction %+v: want 1 M events and copies", p)
	}
	if r := p.PeakBytes / measured1M; r < 1 || r > 1.5 {
		t.Fatalf("predicted %.0f bytes, measured %d: ratio %.2f, want [1, 1.5]", p.PeakBytes, measured1M, r)
	}
	if p.PeakBytes != p.FixedBytes+p.Copies*p.BytesPerCopy {
		t.Fatalf("peak %v is not fixed + copies x bytes per copy (%+v)", p.PeakBytes, p)
	}
	// The run's live heap peaked at 184 MiB (GODEBUG=gctrace=1): the soft
	// limit is above it with room, and below the predicted peak.
	if h := p.LimitBytes / (184 << 20); h < 1.15 || p.LimitBytes >= p.PeakBytes {
		t.Fatalf("soft limit %.0f MiB: %.2fx the live peak, want >= 1.15, and under the peak %.0f MiB", p.LimitBytes/(1<<20), h, p.PeakBytes/(1<<20))
	}
}

// TestPredictMatchesMeasurements: the model against each configuration
// measured on this commit (the peak RSS of `dedupsim run`, the largest of
// the runs made), within [1, 1.5]x: the measurements the comment on
// BytesPerCopyMeasured lists.
func TestPredictMatchesMeasurements(t *testing.T) {
	const within = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 30 seconds}\nshuffle_partitions: 4\nsink: {kind: table}\n"
	const merge = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 30 seconds}\nshuffle_partitions: 4\nsink: {kind: merge}\n"
	for _, tc := range []struct {
		name     string
		query    string
		rate     float64
		plan     map[string]faults.Knobs
		columns  []Column
		copies   float64 // predicted, within 5%
		measured float64 // KiB
		live     float64 // MiB: the live heap's peak (GODEBUG=gctrace=1, the largest of 2 runs)
	}{
		// Under the floor of the soft limit (MinLimitBytes): the heap
		// grows to it.
		{"0.35 M", within, 350, nil, nil, 0.35e6, 165_264, 66},
		{"0.5 M", within, 500, nil, nil, 0.5e6, 165_080, 91},
		{"2 M", within, 2000, nil, nil, 2e6, 530_736, 333},
		{"retries and duplicate appends", within, 500, map[string]faults.Knobs{
			faults.ProducerRetry: {"probability": 0.5, "copies_max": 1, "gap_ms": "1s"}, faults.DuplicateAppend: {"probability": 0.2}}, nil, 0.7e6, 201_624, 105},
		{"no watermark", "dedup: {api: dropDuplicates, keys: [id]}\nshuffle_partitions: 4\nsink: {kind: table}\n", 1000, nil, nil, 1e6, 534_016, 401},
		{"200-byte column", within, 1000, nil, []Column{{Name: "note", Bytes: 200}}, 1e6, 310_568, 175},
		{"merge sink", merge, 1000, nil, nil, 1e6, 437_616, 338},
		{"merge sink, 200-byte column", merge, 1000, nil, []Column{{Name: "note", Bytes: 200}}, 1e6, 684_012, 536},
	} {
		cfg := Defaults()
		cfg.Query = QueryText(tc.query)
		cfg.FaultPhase, cfg.HealPhase = Duration(500*time.Second), Duration(500*time.Second)
		cfg.Sources = []SourceConfig{{Name: "default", Rate: Rate{PerSec: tc.rate}}}
		cfg.Plan = faults.Plan{Faults: tc.plan}
		cfg.Columns = tc.columns
		p, err := cfg.Predict()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if math.Abs(p.Copies-tc.copies)/tc.copies > 0.05 {
			t.Errorf("%s: %.0f copies predicted, the run appended about %.0f", tc.name, p.Copies, tc.copies)
		}
		r := p.PeakBytes / (tc.measured * 1024)
		t.Logf("%s: %.0f copies, predicted %.0f MiB, measured %.0f MiB: %.2fx", tc.name, p.Copies, p.PeakBytes/(1<<20), tc.measured/1024, r)
		if r < 1 || r > 1.5 {
			t.Errorf("%s: predicted %.0f bytes, measured %.0f KiB: ratio %.2f, want [1, 1.5]", tc.name, p.PeakBytes, tc.measured, r)
		}
		// The soft limit leaves the live heap room: the collector must not
		// run all the time to hold it.
		if h := p.LimitBytes / (tc.live * (1 << 20)); h < 1.15 {
			t.Errorf("%s: soft limit %.0f MiB, only %.2fx the live peak of %.0f MiB", tc.name, p.LimitBytes/(1<<20), h, tc.live)
		}
	}
}

// TestPredictCopies: the predicted copies are what runs append, within a
// few percent, for retries and duplicate appends; swarm mode predicts an
// upper bound; rows with payload cost more.
func TestPredictCopies(t *testing.T) {
	plan := map[string]faults.Knobs{
		faults.ProducerRetry:          {"probability": 0.3, "copies_max": 3, "gap_ms": "1s"},
		faults.ProducerRetryRestamped: {"probability": 0.1},
		faults.DuplicateAppend:        {"probability": 0.2},
	}
	cfg := testConfig(tableQuery, plan)
	cfg.HealPhase = Duration(30 * time.Second)
	cfg.Sources[0].Rate.PerSec = 200
	p, err := cfg.Predict()
	if err != nil {
		t.Fatal(err)
	}
	var got float64
	for seed := uint64(1); seed <= 3; seed++ {
		h, err := Run(cfg, seed)
		if err != nil {
			t.Fatal(err)
		}
		got += float64(len(h.Copies)) / 3
	}
	if math.Abs(got-p.Copies)/got > 0.05 {
		t.Fatalf("predicted %.0f copies (factor %.3f), runs appended %.0f", p.Copies, p.CopyFactor, got)
	}
	// Swarm: every unpinned knob at the top of its range.
	swarm := cfg
	swarm.Plan = faults.Plan{Swarm: true}
	ps, err := swarm.Predict()
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 5; seed++ {
		h, err := Run(swarm, seed)
		if err != nil {
			t.Fatal(err)
		}
		if float64(len(h.Copies)) > ps.Copies {
			t.Fatalf("swarm seed %d appended %d copies, above the predicted bound %.0f", seed, len(h.Copies), ps.Copies)
		}
	}
	// A 200-byte payload column costs little in a table sink, which keeps
	// only each row's copy index (the row is rendered for its batch and
	// collected: measured 28 bytes more per copy), and about 300 more per
	// event in a merge sink, which keeps its rows (measured 254).
	cols := cfg
	cols.Columns = []Column{{Name: "note", Bytes: 200}}
	pc, err := cols.Predict()
	if err != nil {
		t.Fatal(err)
	}
	if d := pc.BytesPerCopy - p.BytesPerCopy; d < 25 || d > 100 {
		t.Fatalf("a 200-byte column adds %.0f bytes per copy in a table sink", d)
	}
	merged := func(c Config) Config {
		c.Query = QueryText(strings.Replace(string(c.Query), "kind: table", "kind: merge", 1))
		return c
	}
	pm, err := merged(cfg).Predict()
	if err != nil {
		t.Fatal(err)
	}
	pmc, err := merged(cols).Predict()
	if err != nil {
		t.Fatal(err)
	}
	if d := (pmc.BytesPerCopy - pm.BytesPerCopy) * pm.CopyFactor; d < 200 || d > 500 {
		t.Fatalf("a 200-byte column adds %.0f bytes per event in a merge sink", d)
	}
	// A bounded key space holds its ids.
	bounded := cfg
	bounded.Sources = []SourceConfig{{Name: "default", Rate: Rate{PerSec: 200}, Keys: KeySpace{Kind: KeysBounded, Size: 10_000_000}}}
	pb, err := bounded.Predict()
	if err != nil {
		t.Fatal(err)
	}
	if pb.FixedBytes < 10_000_000*40 {
		t.Fatalf("fixed %.0f bytes for 10 M bounded ids", pb.FixedBytes)
	}
}

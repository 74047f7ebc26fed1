package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim/history"
)

// Small runs for tests: 2 minutes of faults, 1 of heal, 50 events/s.
func testConfig(query string, plan map[string]faults.Knobs) Config {
	cfg := Defaults()
	cfg.Query = QueryText(query)
	cfg.FaultPhase = Duration(2 * time.Minute)
	cfg.HealPhase = Duration(1 * time.Minute)
	cfg.Downtime = Duration(5 * time.Second)
	cfg.Sources = []SourceConfig{{Name: "default", Rate: Rate{PerSec: 50}}}
	cfg.Plan = faults.Plan{Faults: plan}
	return cfg
}

const (
	tableQuery  = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 3\nsink: {kind: table}\n"
	appendQuery = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 3\nsink: {kind: append}\n"
	mergeQuery  = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 3\nsink: {kind: merge}\n"
	twoSources  = `sources:
  - name: web
    watermark: {column: ts, delay: 10 seconds}
  - name: mobile
    watermark: {column: ts, delay: 10 seconds}
dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}
shuffle_partitions: 2
sink: {kind: table}
`
)

func twoSourceConfig(plan map[string]faults.Knobs) Config {
	cfg := testConfig(twoSources, plan)
	cfg.Sources = []SourceConfig{{Name: "web", Rate: Rate{PerSec: 40}}, {Name: "mobile", Rate: Rate{PerSec: 20}}}
	return cfg
}

func run(t *testing.T, cfg Config, seed uint64) *history.History {
	t.Helper()
	h, err := Run(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	if k := h.FaultKnobs[faults.QueryShapeChange]; k == nil || k["starting_offsets"] != "latest" {
		checkConsumedAll(t, h)
	}
	return h
}

func hashHistory(t *testing.T, h *history.History) string {
	t.Helper()
	s := sha256.New()
	if err := h.Write(s); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(s.Sum(nil))
}

// checkConsumedAll: the run converged: every copy was read by some batch.
func checkConsumedAll(t *testing.T, h *history.History) {
	t.Helper()
	read := make([]bool, len(h.Copies))
	for _, b := range h.Batches {
		for _, i := range b.Input {
			read[i] = true
		}
	}
	for i, ok := range read {
		if !ok {
			t.Fatalf("copy %d (%+v) was never read; the run ended at %d", i, h.Copies[i], h.EndMs)
		}
	}
}

// tableCounts counts each event's rows in the final table.
func tableCounts(h *history.History) map[string]int {
	n := map[string]int{}
	for _, i := range h.Table {
		n[h.Copies[i].Event]++
	}
	return n
}

// checkExactlyOnce: every event some batch emitted is in the table once,
// and an event that is not was only ever dropped as late.
func checkExactlyOnce(t *testing.T, h *history.History) {
	t.Helper()
	counts := tableCounts(h)
	emitted := map[string]bool{}
	for _, b := range h.Batches {
		for j, i := range b.Input {
			if b.Outcomes[j] != history.Late {
				emitted[h.Copies[i].Event] = true
			}
		}
	}
	for e := range emitted {
		if counts[e] != 1 {
			t.Fatalf("event %s is in the table %d times", e, counts[e])
		}
	}
	for e, n := range counts {
		if !emitted[e] {
			t.Fatalf("event %s is in the table %d times but was only ever late", e, n)
		}
	}
}

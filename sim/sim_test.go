package sim

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim/history"
)

// swarmConfig is a two-source run in swarm mode over the whole catalogue:
// every fault can be drawn.
func swarmConfig() Config {
	cfg := twoSourceConfig(nil)
	cfg.Plan.Swarm = true
	return cfg
}

// TestDeterminism: the same seed gives a byte-identical history, on a
// sample of seeds whose swarm draws cover the whole catalogue; and, as a
// sweep must, every fault the sample enabled fired somewhere.
func TestDeterminism(t *testing.T) {
	cfg := swarmConfig()
	enabled := map[string]bool{}
	coverage := faults.Coverage{}
	for seed := uint64(1); seed <= 16; seed++ {
		a, b := run(t, cfg, seed), run(t, cfg, seed)
		ha, hb := hashHistory(t, a), hashHistory(t, b)
		if ha != hb {
			t.Fatalf("seed %d: history hashes differ: %s vs %s", seed, ha, hb)
		}
		for _, f := range a.Faults {
			enabled[f] = true
		}
		coverage.Merge(a.Coverage)
	}
	var requested []string
	for _, f := range faults.Names() {
		if ff, _ := faults.Lookup(f); ff.LiveOnly {
			continue
		}
		if !enabled[f] {
			t.Errorf("no seed of the sample enabled %s", f)
		}
		requested = append(requested, f)
	}
	if missing := faults.Missing(requested, coverage); len(missing) > 0 {
		t.Errorf("the sweep never fired %v", missing)
	}
}

// TestEngineFaultsLeaveWorkloadAlone: faults that do not touch the workload
// (crashes, the disk, a query shape change) do not change a single copy.
func TestEngineFaultsLeaveWorkloadAlone(t *testing.T) {
	workload := map[string]faults.Knobs{faults.ProducerRetry: nil, faults.DuplicateAppend: {"probability": 0.05}, faults.ClockSkew: nil}
	all := map[string]faults.Knobs{}
	for k, v := range workload {
		all[k] = v
	}
	for _, f := range faults.Catalogue() {
		if !f.Workload && !f.LiveOnly {
			all[f.Name] = nil
		}
	}
	a := run(t, testConfig(tableQuery, workload), 7)
	b := run(t, testConfig(tableQuery, all), 7)
	if len(b.Crashes) == 0 || b.Coverage[faults.QueryShapeChange] == 0 {
		t.Fatalf("the engine faults did not fire: %v", b.Coverage)
	}
	if !reflect.DeepEqual(a.Copies, b.Copies) {
		t.Fatalf("copies differ: %d vs %d", len(a.Copies), len(b.Copies))
	}
}

// TestOriginalsIndependentOfProducerFaults: retries and duplicate appends
// add copies; the original sends stay the same events at the same times.
func TestOriginalsIndependentOfProducerFaults(t *testing.T) {
	type orig struct {
		event    string
		src, prt int
		et, at   int64
	}
	originals := func(h *history.History) []orig {
		var out []orig
		for _, c := range h.Copies {
			if c.Fault == history.NoFault && c.CopyNo == 0 {
				out = append(out, orig{c.Event, int(c.Source), int(c.Partition), c.EventTimeUs, c.AppendedAtMs})
			}
		}
		return out
	}
	plain := run(t, testConfig(tableQuery, nil), 3)
	noisy := run(t, testConfig(tableQuery, map[string]faults.Knobs{
		faults.ProducerRetry: {"probability": 0.2}, faults.ProducerRetryRestamped: {"probability": 0.2}, faults.DuplicateAppend: {"probability": 0.2},
	}), 3)
	if len(noisy.Copies) <= len(plain.Copies) {
		t.Fatal("the producer faults added no copies")
	}
	if !reflect.DeepEqual(originals(plain), originals(noisy)) {
		t.Fatal("the original sends changed")
	}
}

// TestCrashPointsMatchEngine: every engine crash point is a fault.
func TestCrashPointsMatchEngine(t *testing.T) {
	for _, cp := range crashpoint.All() {
		if _, ok := faults.Lookup(faults.CrashAt(string(cp))); !ok {
			t.Errorf("no fault for crash point %s", cp)
		}
	}
}

// TestNoFaults: a clean run emits every event exactly once, has no late
// rows, and its history describes the query.
func TestNoFaults(t *testing.T) {
	h := run(t, testConfig(tableQuery, nil), 1)
	checkExactlyOnce(t, h)
	if len(tableCounts(h)) != len(h.Copies) {
		t.Fatalf("table has %d events, log %d copies", len(tableCounts(h)), len(h.Copies))
	}
	if h.API != "dropDuplicatesWithinWatermark" || !slices.Equal(h.Keys, []string{"id"}) || h.DelayMs != 10_000 ||
		h.Partitions != 3 || h.SinkKind != "table" || !h.HasTable || h.EventTimeInKey || h.ArrivalRatePerSec != 50 {
		t.Fatalf("query fields: %+v", h)
	}
	if h.HealAtMs != 1767225600000+120_000 || h.EndMs < h.HealAtMs+60_000 {
		t.Fatalf("phases: heal %d end %d", h.HealAtMs, h.EndMs)
	}
	if len(h.Crashes) != 0 || len(h.Restarts) != 0 || len(h.Faults) != 0 {
		t.Fatalf("crashes %v restarts %v faults %v", h.Crashes, h.Restarts, h.Faults)
	}
	// One batch per trigger, at most: batch ids increase with time.
	for i := 1; i < len(h.Batches); i++ {
		if h.Batches[i].BatchID != h.Batches[i-1].BatchID+1 || h.Batches[i].AtMs <= h.Batches[i-1].AtMs {
			t.Fatalf("batches %d and %d: %+v %+v", i-1, i, h.Batches[i-1].BatchID, h.Batches[i].BatchID)
		}
	}
	// The history round-trips.
	var buf bytes.Buffer
	if err := h.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if hashHistory(t, back) != hashHistory(t, h) {
		t.Fatal("history does not round-trip")
	}
}

// TestConfigYAML: a scenario-shaped YAML document decodes onto Defaults,
// with the query as a nested mapping and durations with units.
func TestConfigYAML(t *testing.T) {
	doc := `
query:
  dedup: {api: dropDuplicates, keys: [id, ts]}
  watermark: {column: ts, delay: 30 seconds}
  sink: {kind: merge}
trigger_interval: 5s
fault_phase: 10 minutes
heal_phase: 1d
sources:
  - name: default
    partitions: 8
    rate: {profile: bursts, per_sec: 20, burst_factor: 5}
    keys: {kind: bounded, size: 500}
    send_delay: {kind: lognormal, mean: 200ms, sigma: 0.5}
faults:
  producer-retry: {probability: 0.1, gap: lognormal, gap_ms: 30s}
  crash-after-sink-write: {}
swarm: false
`
	cfg := Defaults()
	if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg.Query), "dropDuplicates") || time.Duration(cfg.TriggerInterval) != 5*time.Second ||
		time.Duration(cfg.FaultPhase) != 10*time.Minute || time.Duration(cfg.HealPhase) != 24*time.Hour || cfg.Downtime != Defaults().Downtime {
		t.Fatalf("decoded %+v", cfg)
	}
	if cfg.Sources[0].Partitions != 8 || cfg.Sources[0].Rate.BurstFactor != 5 || cfg.Sources[0].Keys.Size != 500 ||
		time.Duration(cfg.Sources[0].SendDelay.Mean) != 200*time.Millisecond {
		t.Fatalf("decoded source %+v", cfg.Sources[0])
	}
	s, err := cfg.Plan.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if s.Choice(faults.ProducerRetry, "gap") != "lognormal" || s.Ms(faults.ProducerRetry, "gap_ms") != 30_000 || !s.On(faults.CrashAfterSinkWrite) {
		t.Fatalf("plan %v", s.Knobs())
	}
	// And back: the marshalled config decodes to the same value.
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	again := Defaults()
	if err := yaml.Unmarshal(out, &again); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !reflect.DeepEqual(cfg, again) {
		t.Fatalf("round trip:\n%s", out)
	}
}

func TestValidate(t *testing.T) {
	bad := map[string]func(c *Config){
		"every-column key": func(c *Config) { c.Query = "dedup: {api: dropDuplicates}\n" },
		// Any column can be a key (issue 11: the user's own columns), but
		// not the hidden copy column nor a payload column.
		"hidden column key": func(c *Config) { c.Query = "dedup: {api: dropDuplicates, keys: [_copy]}\n" },
		"payload column key": func(c *Config) {
			c.Query = "dedup: {api: dropDuplicates, keys: [user]}\n"
			c.Columns = []Column{{Name: "user"}}
		},
		"unknown source":    func(c *Config) { c.Sources = append(c.Sources, SourceConfig{Name: "nope"}) },
		"bad rate":          func(c *Config) { c.Sources[0].Rate.PerSec = -1 },
		"bad profile":       func(c *Config) { c.Sources[0].Rate.Profile = "weekly" },
		"unknown fault":     func(c *Config) { c.Plan.Faults = map[string]faults.Knobs{"meteor": nil} },
		"knob out of range": func(c *Config) { c.Plan.Faults = map[string]faults.Knobs{faults.ProducerRetry: {"probability": 2}} },
		"missing requirement": func(c *Config) {
			c.Plan.Faults = map[string]faults.Knobs{faults.TornWrite: nil}
		},
		"lag on one source": func(c *Config) { c.Plan.Faults = map[string]faults.Knobs{faults.LaggingInput: nil} },
		"shape change with another sink": func(c *Config) {
			c.ShapeChangeQuery = "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: append}\n"
		},
		"too many events": func(c *Config) { c.MaxCopies = 10 },
		"bad topic":       func(c *Config) { c.Sources[0].Topic = "a topic" },
	}
	for name, mutate := range bad {
		cfg := testConfig(tableQuery, nil)
		mutate(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := testConfig(tableQuery, nil).Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("the zero config (all defaults): %v", err)
	}
}

// TestSwarmVaries: different seeds draw different fault mixes, and a
// seed's mix is recorded with its knobs so it can be replayed as a plan.
func TestSwarmVaries(t *testing.T) {
	cfg := swarmConfig()
	mixes := map[string]bool{}
	for seed := uint64(1); seed <= 4; seed++ {
		h := run(t, cfg, seed)
		mixes[strings.Join(h.Faults, ",")] = true
		var buf bytes.Buffer
		if err := h.Write(&buf); err != nil {
			t.Fatal(err)
		}
		if back, err := history.Read(&buf); err != nil || hashHistory(t, back) != hashHistory(t, h) {
			t.Fatalf("seed %d: history does not round-trip: %v", seed, err)
		}
		if len(h.Faults) == 0 || len(h.FaultKnobs) != len(h.Faults) {
			t.Fatalf("seed %d: faults %v knobs %v", seed, h.Faults, h.FaultKnobs)
		}
		// Replaying the drawn mix as an explicit plan gives the same run.
		replay := cfg
		replay.Plan = faults.Plan{Faults: map[string]faults.Knobs{}}
		for f, k := range h.FaultKnobs {
			replay.Plan.Faults[f] = k
		}
		r := run(t, replay, seed)
		if !reflect.DeepEqual(r.Copies, h.Copies) || len(r.Crashes) != len(h.Crashes) || !reflect.DeepEqual(r.Coverage, h.Coverage) {
			t.Fatalf("seed %d: the explicit replay of %v differs", seed, h.Faults)
		}
	}
	if len(mixes) < 3 {
		t.Fatalf("4 seeds drew %d mixes: %v", len(mixes), mixes)
	}
}

// TestDocExample: the YAML in Config's documentation is a valid config.
func TestDocExample(t *testing.T) {
	doc := `
query:
  dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}
  watermark: {column: ts, delay: 2 minutes}
  sink: {kind: table}
trigger_interval: 10s
fault_phase: 30m
heal_phase: 10m
downtime: 20s
sources:
  - name: default
    rate: {profile: diurnal, per_sec: 200, amplitude: 0.8, period: 1h}
    keys: {kind: fresh}
    send_delay: {kind: lognormal, mean: 150ms, sigma: 1}
faults:
  producer-retry: {probability: 0.02, gap: lognormal, gap_ms: 5s, offline_fraction: 0.01}
  crash-after-sink-write: {rate: 0.02}
  crash-random: {}
  torn-write: {}
swarm: false
`
	cfg := Defaults()
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestLiveOnlyRefused: a fault that needs a real broker is refused by the
// simulator with an error that says where it runs, and swarm never draws it.
func TestLiveOnlyRefused(t *testing.T) {
	for _, f := range faults.Catalogue() {
		if !f.LiveOnly {
			continue
		}
		_, err := Run(testConfig(tableQuery, map[string]faults.Knobs{f.Name: nil}), 1)
		if err == nil || !strings.Contains(err.Error(), "--kafka local") {
			t.Errorf("%s: sim.Run error %v, want a refusal naming --kafka local", f.Name, err)
		}
	}
}

// TestHistoryWriteIsTheEncoding: the streamed history of swarm runs (every
// fault of the catalogue over the seeds, shape changes and crashes
// included) is byte for byte what encoding the whole struct gives, so that
// histories written before the writer streamed read and hash the same.
func TestHistoryWriteIsTheEncoding(t *testing.T) {
	cfg := swarmConfig()
	for seed := uint64(1); seed <= 6; seed++ {
		h := run(t, cfg, seed)
		var streamed, whole bytes.Buffer
		if err := h.Write(&streamed); err != nil {
			t.Fatal(err)
		}
		if err := json.NewEncoder(&whole).Encode(h); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(streamed.Bytes(), whole.Bytes()) {
			t.Fatalf("seed %d: the streamed history (%d bytes) differs from its encoding (%d bytes)", seed, streamed.Len(), whole.Len())
		}
	}
}

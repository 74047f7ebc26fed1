package sim

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/faults"
)

// Config is one simulated run, apart from the seed. The zero value of a
// field means its default (see Defaults), so a scenario file only writes
// what it changes. yaml tags are the scenario format, for example:
//
//	query:
//	  dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}
//	  watermark: {column: ts, delay: 2 minutes}
//	  sink: {kind: table}
//	trigger_interval: 10s
//	fault_phase: 30m
//	heal_phase: 10m
//	downtime: 20s
//	sources:
//	  - name: default
//	    rate: {profile: diurnal, per_sec: 200, amplitude: 0.8, period: 1h}
//	    keys: {kind: fresh}
//	    send_delay: {kind: lognormal, mean: 150ms, sigma: 1}
//	    timestamp_precision: 1s    # optional: whole-second event times (default: microseconds)
//	faults:
//	  producer-retry: {probability: 0.02, gap: lognormal, gap_ms: 5s, offline_fraction: 0.01}
//	  crash-after-sink-write: {rate: 0.02}
//	  crash-random: {}
//	  torn-write: {}
//	swarm: false   # true: switch the listed faults (or all) on and off per seed
//
// Fault names and knobs are those of the faults package catalogue.
type Config struct {
	// Query is the query YAML (the QUERY.yaml format of `dedupsim exec`),
	// written in a scenario either as a block string or as a nested mapping.
	// Its keys must be drawn from "id" (the logical event id) and the
	// event-time column; rows carry no other columns but the hidden _copy.
	Query QueryText `yaml:"query"`
	// ShapeChangeQuery is the query the query-shape-change fault restarts
	// with, on an empty checkpoint. Empty: the query with
	// shuffle_partitions doubled (an operator wanting more state
	// partitions starts a new checkpoint). It must read the same sources
	// and write the same kind of sink.
	ShapeChangeQuery QueryText `yaml:"shape_change_query,omitempty"`
	// Start is the processing time the run starts at, RFC 3339 (default
	// 2026-01-01T00:00:00Z).
	Start string `yaml:"start,omitempty"`
	// TriggerInterval is the processing-time trigger (default 1s): one
	// batch (data or no-data) per trigger, as Spark's ProcessingTime.
	TriggerInterval Duration `yaml:"trigger_interval,omitempty"`
	// FaultPhase is how long faults are active (default 5m).
	FaultPhase Duration `yaml:"fault_phase,omitempty"`
	// HealPhase follows it (default 5m): faults off, silent and lagging
	// sources resume, no crashes. Producers stop at its end and the driver
	// keeps triggering until the query has consumed everything.
	HealPhase Duration `yaml:"heal_phase,omitempty"`
	// Downtime is how long the driver stays dead after a crash, and how
	// long a query-shape-change redeploy takes (default 10s).
	Downtime Duration `yaml:"downtime,omitempty"`
	// Sources is the workload per query source, matched by name. A query
	// source without an entry gets DefaultSource.
	Sources []SourceConfig `yaml:"sources,omitempty"`
	// Plan: which faults are on and their knobs, or swarm mode
	// (`faults:` and `swarm:` at the top level of the scenario).
	Plan faults.Plan `yaml:",inline"`
	// OmitProgress leaves the Spark progress record out of every history
	// batch (a smaller history; the checker does not need it).
	OmitProgress bool `yaml:"omit_progress,omitempty"`
	// MaxCopies bounds the number of copies appended (default 20 M): a
	// typo in a rate must fail fast, not exhaust memory.
	MaxCopies int `yaml:"max_copies,omitempty"`
}

// SourceConfig is the honest traffic of one source; misbehaviour comes from
// the fault plan.
type SourceConfig struct {
	// Name is the query source name ("default" in the single-source form).
	Name string `yaml:"name"`
	// Topic is the simulated Kafka topic (default: Name). Letters, digits,
	// '.', '_' and '-' only, as Kafka allows.
	Topic string `yaml:"topic,omitempty"`
	// Partitions of the topic (default 4).
	Partitions int `yaml:"partitions,omitempty"`
	// Partitioner: "key" (default; all copies of an event land in one
	// partition, Kafka's default for keyed records) or "round_robin".
	Partitioner string `yaml:"partitioner,omitempty"`
	// Rate is the arrival rate of logical events.
	Rate Rate `yaml:"rate,omitempty"`
	// Keys is the key space.
	Keys KeySpace `yaml:"keys,omitempty"`
	// Producers is the number of producers, each with its own clock
	// (default 100). With a bounded key space, id k is sent by producer
	// k mod Producers (a device is one producer).
	Producers int `yaml:"producers,omitempty"`
	// SendDelay is the time from an event's occurrence (its event time on an
	// honest clock) to its append (default exponential, mean 100ms).
	SendDelay Dist `yaml:"send_delay,omitempty"`
	// TimestampFormat of the event-time column: "seconds" (default; a JSON
	// number with a microsecond fraction) or "rfc3339".
	TimestampFormat string `yaml:"timestamp_format,omitempty"`
	// TimestampPrecision is the resolution of the producers' clocks: every
	// event time (originals, re-stamped retries, skewed and future clocks
	// alike) is truncated down to a multiple of it. Default 0: none (the
	// microsecond). "1s" is a producer that writes whole seconds, so that
	// many events share one event time, which matters with a watermark
	// delay of 0 (spark-semantics.md §6.8). At most 1h.
	TimestampPrecision Duration `yaml:"timestamp_precision,omitempty"`
}

// Rate profiles.
const (
	RateConstant = "constant"
	RateDiurnal  = "diurnal"
	RateBursts   = "bursts"
)

// Rate is an arrival-rate profile: a Poisson process whose intensity
// follows the profile.
type Rate struct {
	// Profile is "constant" (default), "diurnal" (a sine around PerSec) or
	// "bursts" (PerSec, times BurstFactor during bursts).
	Profile string `yaml:"profile,omitempty"`
	// PerSec is the base rate in events per second (default 100).
	PerSec float64 `yaml:"per_sec,omitempty"`
	// Amplitude of the diurnal sine, in (0, 1] (default 0.5).
	Amplitude float64 `yaml:"amplitude,omitempty"`
	// Period of the diurnal sine (default 24h); the run starts at its
	// rising zero crossing.
	Period Duration `yaml:"period,omitempty"`
	// BurstFactor multiplies the rate during a burst (default 10).
	BurstFactor float64 `yaml:"burst_factor,omitempty"`
	// BurstEvery is the mean quiet time between bursts, exponential
	// (default 10m).
	BurstEvery Duration `yaml:"burst_every,omitempty"`
	// BurstLength is the length of a burst (default 30s).
	BurstLength Duration `yaml:"burst_length,omitempty"`
}

// Key spaces.
const (
	KeysFresh   = "fresh"
	KeysBounded = "bounded"
)

// KeySpace is where event ids come from.
type KeySpace struct {
	// Kind is "fresh" (default; a new id per event, "e<source>-<n>") or
	// "bounded" (ids "d<source>-<k>" drawn uniformly from Size, such as
	// device ids: a repeat is a logical duplicate of the same event).
	Kind string `yaml:"kind,omitempty"`
	// Size of a bounded key space (default 1000).
	Size int `yaml:"size,omitempty"`
}

// Distribution kinds.
const (
	DistFixed       = "fixed"
	DistExponential = "exponential"
	DistLogNormal   = "lognormal"
	DistUniform     = "uniform"
)

// Dist is a distribution of durations.
type Dist struct {
	// Kind is "fixed", "exponential", "lognormal" or "uniform".
	Kind string `yaml:"kind,omitempty"`
	// Mean is the fixed value, the exponential mean, the log-normal median
	// or the uniform lower bound.
	Mean Duration `yaml:"mean,omitempty"`
	// Sigma is the log-normal sigma (default 1).
	Sigma float64 `yaml:"sigma,omitempty"`
	// Max is the uniform upper bound.
	Max Duration `yaml:"max,omitempty"`
}

// Duration is a time.Duration written in YAML as a Go duration ("30s"), a
// Spark interval ("10 minutes") or days ("2d").
type Duration time.Duration

// Ms is d in milliseconds.
func (d Duration) Ms() int64 { return time.Duration(d).Milliseconds() }

func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML reads a duration with a unit; a bare number is refused
// (milliseconds or seconds? the file should say).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 30s", n.Line)
	}
	s := strings.TrimSpace(n.Value)
	ms, err := query.ParseDelay(s)
	if err != nil {
		var err2 error
		if ms, err2 = faults.ParseDurationMs(s); err2 != nil {
			return fmt.Errorf("line %d: %q is not a duration (want 30s, 10 minutes or 2d)", n.Line, s)
		}
	}
	*d = Duration(time.Duration(ms) * time.Millisecond)
	return nil
}

// MarshalYAML writes the Go form.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// QueryText is query YAML. In a scenario file it is either a string or a
// nested mapping, which is kept as YAML text.
type QueryText string

// UnmarshalYAML accepts a string or a mapping.
func (q *QueryText) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*q = QueryText(n.Value)
		return nil
	}
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	*q = QueryText(b)
	return nil
}

// DefaultQuery is the query of Defaults: the seed articles' recommended
// shape, dropDuplicatesWithinWatermark on the id with an idempotent table
// sink.
const DefaultQuery = `dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}
watermark: {column: ts, delay: 1 minute}
shuffle_partitions: 4
sink: {kind: table}
`

// DefaultStart is the default start of processing time.
const DefaultStart = "2026-01-01T00:00:00Z"

// Defaults returns a runnable configuration: DefaultQuery over one default
// source at 100 events/s, a 1s trigger, 5 minutes of fault phase (no
// faults) and 5 minutes of heal.
func Defaults() Config {
	return Config{
		Query:           DefaultQuery,
		Start:           DefaultStart,
		TriggerInterval: Duration(time.Second),
		FaultPhase:      Duration(5 * time.Minute),
		HealPhase:       Duration(5 * time.Minute),
		Downtime:        Duration(10 * time.Second),
		MaxCopies:       20_000_000,
	}
}

// DefaultSource is the workload of a source the config does not describe.
func DefaultSource(name string) SourceConfig {
	s := SourceConfig{Name: name}
	s.fill()
	return s
}

// WithDefaults returns s with its zero fields set to their defaults, as a
// run fills them.
func (s SourceConfig) WithDefaults() SourceConfig {
	s.fill()
	return s
}

func (s *SourceConfig) fill() {
	if s.Topic == "" {
		s.Topic = s.Name
	}
	if s.Partitions == 0 {
		s.Partitions = 4
	}
	if s.Partitioner == "" {
		s.Partitioner = "key"
	}
	r := &s.Rate
	if r.Profile == "" {
		r.Profile = RateConstant
	}
	if r.PerSec == 0 {
		r.PerSec = 100
	}
	if r.Amplitude == 0 {
		r.Amplitude = 0.5
	}
	if r.Period == 0 {
		r.Period = Duration(24 * time.Hour)
	}
	if r.BurstFactor == 0 {
		r.BurstFactor = 10
	}
	if r.BurstEvery == 0 {
		r.BurstEvery = Duration(10 * time.Minute)
	}
	if r.BurstLength == 0 {
		r.BurstLength = Duration(30 * time.Second)
	}
	if s.Keys.Kind == "" {
		s.Keys.Kind = KeysFresh
	}
	if s.Keys.Size == 0 {
		s.Keys.Size = 1000
	}
	if s.Producers == 0 {
		s.Producers = 100
	}
	if s.SendDelay.Kind == "" {
		s.SendDelay = Dist{Kind: DistExponential, Mean: Duration(100 * time.Millisecond)}
	}
	if s.SendDelay.Sigma == 0 {
		s.SendDelay.Sigma = 1
	}
	if s.TimestampFormat == "" {
		s.TimestampFormat = "seconds"
	}
}

func (s *SourceConfig) validate() error {
	if !validTopic(s.Topic) {
		return fmt.Errorf("topic %q: letters, digits, '.', '_' and '-' only", s.Topic)
	}
	if s.Partitions < 1 || s.Partitions > 1024 {
		return fmt.Errorf("partitions %d: want 1..1024", s.Partitions)
	}
	if s.Partitioner != "key" && s.Partitioner != "round_robin" {
		return fmt.Errorf("partitioner %q: want key or round_robin", s.Partitioner)
	}
	r := s.Rate
	switch r.Profile {
	case RateConstant, RateDiurnal, RateBursts:
	default:
		return fmt.Errorf("rate.profile %q: want constant, diurnal or bursts", r.Profile)
	}
	if !(r.PerSec > 0) || r.PerSec > 10_000_000 {
		return fmt.Errorf("rate.per_sec %v: want a rate in (0, 1e7]", r.PerSec)
	}
	if !(r.Amplitude > 0 && r.Amplitude <= 1) {
		return fmt.Errorf("rate.amplitude %v: want (0, 1]", r.Amplitude)
	}
	if r.Period <= 0 || r.BurstEvery <= 0 || r.BurstLength <= 0 {
		return errors.New("rate: period, burst_every and burst_length must be positive")
	}
	if !(r.BurstFactor >= 1) || r.BurstFactor > 1000 {
		return fmt.Errorf("rate.burst_factor %v: want [1, 1000]", r.BurstFactor)
	}
	switch s.Keys.Kind {
	case KeysFresh:
	case KeysBounded:
		if s.Keys.Size < 1 || s.Keys.Size > 100_000_000 {
			return fmt.Errorf("keys.size %d: want 1..1e8", s.Keys.Size)
		}
	default:
		return fmt.Errorf("keys.kind %q: want fresh or bounded", s.Keys.Kind)
	}
	if s.Producers < 1 || s.Producers > 1_000_000 {
		return fmt.Errorf("producers %d: want 1..1e6", s.Producers)
	}
	if err := s.SendDelay.validate(); err != nil {
		return fmt.Errorf("send_delay: %w", err)
	}
	if s.TimestampFormat != "seconds" && s.TimestampFormat != "rfc3339" {
		return fmt.Errorf("timestamp_format %q: want seconds or rfc3339", s.TimestampFormat)
	}
	if s.TimestampPrecision < 0 || time.Duration(s.TimestampPrecision) > time.Hour {
		return fmt.Errorf("timestamp_precision %v: want 0 (none) up to 1h", s.TimestampPrecision)
	}
	return nil
}

func (d Dist) validate() error {
	if d.Mean < 0 || d.Max < 0 {
		return errors.New("negative duration")
	}
	switch d.Kind {
	case DistFixed, DistExponential:
	case DistLogNormal:
		if !(d.Sigma > 0 && d.Sigma <= 5) {
			return fmt.Errorf("sigma %v: want (0, 5]", d.Sigma)
		}
	case DistUniform:
		if d.Max < d.Mean {
			return fmt.Errorf("uniform: max %v below mean (the lower bound) %v", d.Max, d.Mean)
		}
	default:
		return fmt.Errorf("kind %q: want fixed, exponential, lognormal or uniform", d.Kind)
	}
	return nil
}

func validTopic(s string) bool {
	if s == "" || len(s) > 249 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// meanRate is the long-run mean of the profile in events per second.
func (r Rate) meanRate() float64 {
	switch r.Profile {
	case RateBursts:
		l, e := float64(r.BurstLength), float64(r.BurstEvery)
		return r.PerSec * (1 + (r.BurstFactor-1)*l/(l+e))
	}
	return r.PerSec
}

// Validate reports whether the configuration can run: the query parses
// and fits the simulator, the workload and the phases are sane, and the
// fault plan resolves against the catalogue.
func (c Config) Validate() error {
	_, err := c.prepare()
	return err
}

// prepared is a validated configuration with defaults filled in.
type prepared struct {
	Config
	q          *query.Query
	shape      *query.Query // query-shape-change's query
	shapeText  string
	startMs    int64
	eventCol   string // the rows' event-time column
	sourceCfgs []SourceConfig
}

// WithDefaults returns c with every zero top-level field set to its
// default (see Defaults); sources get theirs from SourceConfig.WithDefaults.
func (c Config) WithDefaults() Config {
	d := Defaults()
	if c.Query == "" {
		c.Query = d.Query
	}
	if c.Start == "" {
		c.Start = d.Start
	}
	if c.TriggerInterval == 0 {
		c.TriggerInterval = d.TriggerInterval
	}
	if c.FaultPhase == 0 {
		c.FaultPhase = d.FaultPhase
	}
	if c.HealPhase == 0 {
		c.HealPhase = d.HealPhase
	}
	if c.Downtime == 0 {
		c.Downtime = d.Downtime
	}
	if c.MaxCopies == 0 {
		c.MaxCopies = d.MaxCopies
	}
	return c
}

func (c Config) prepare() (*prepared, error) {
	c = c.WithDefaults()
	p := &prepared{Config: c}
	q, err := query.Parse("query", []byte(c.Query))
	if err != nil {
		return nil, fmt.Errorf("sim: query: %w", err)
	}
	p.q = q
	p.eventCol = q.EventTimeColumn()
	if p.eventCol == "" {
		p.eventCol = "ts"
	}
	if err := checkQuery(q, p.eventCol); err != nil {
		return nil, fmt.Errorf("sim: query: %w", err)
	}
	t, err := time.Parse(time.RFC3339, c.Start)
	if err != nil {
		return nil, fmt.Errorf("sim: start %q: want RFC 3339", c.Start)
	}
	p.startMs = t.UnixMilli()
	if time.Duration(c.TriggerInterval) < time.Millisecond {
		return nil, errors.New("sim: trigger_interval: want at least 1ms")
	}
	if c.FaultPhase < 0 || c.HealPhase < c.TriggerInterval || c.Downtime < 0 {
		return nil, errors.New("sim: phases: fault_phase >= 0, heal_phase >= trigger_interval and downtime >= 0")
	}
	if total := time.Duration(c.FaultPhase + c.HealPhase); total > 366*24*time.Hour {
		return nil, fmt.Errorf("sim: fault_phase + heal_phase = %v: at most a year", total)
	}
	if c.MaxCopies < 1 || c.MaxCopies > math.MaxInt32 {
		return nil, errors.New("sim: max_copies: want 1..2^31-1")
	}
	// Workload per query source, in query order.
	used := make([]bool, len(c.Sources))
	for _, qs := range q.Sources {
		sc := SourceConfig{Name: qs.Name}
		for i, s := range c.Sources {
			if s.Name == qs.Name {
				if used[i] {
					return nil, fmt.Errorf("sim: source %q described twice", s.Name)
				}
				sc, used[i] = s, true
			}
		}
		sc.fill()
		if err := sc.validate(); err != nil {
			return nil, fmt.Errorf("sim: source %q: %w", sc.Name, err)
		}
		p.sourceCfgs = append(p.sourceCfgs, sc)
	}
	for i, s := range c.Sources {
		if !used[i] {
			return nil, fmt.Errorf("sim: source %q is not a source of the query (%s)", s.Name, strings.Join(q.SourceNames(), ", "))
		}
	}
	seenTopic := map[string]bool{}
	expected := 0.0
	for _, s := range p.sourceCfgs {
		if seenTopic[s.Topic] {
			return nil, fmt.Errorf("sim: two sources read topic %q", s.Topic)
		}
		seenTopic[s.Topic] = true
		expected += s.Rate.meanRate() * time.Duration(c.FaultPhase+c.HealPhase).Seconds()
	}
	if expected > float64(c.MaxCopies) {
		return nil, fmt.Errorf("sim: up to %.0f events expected, above max_copies %d", math.Round(expected), c.MaxCopies)
	}
	// Faults.
	if !c.Plan.Swarm {
		s, err := c.Plan.Resolve()
		if err != nil {
			return nil, fmt.Errorf("sim: faults: %w", err)
		}
		for _, name := range s.Names() {
			if err := p.applicable(name); err != nil {
				return nil, fmt.Errorf("sim: fault %s: %w", name, err)
			}
		}
		for _, f := range []string{faults.SourceSilence, faults.LaggingInput} {
			if s.On(f) && s.Int(f, "source") >= len(q.Sources) {
				return nil, fmt.Errorf("sim: fault %s: source %d, the query has %d", f, s.Int(f, "source"), len(q.Sources))
			}
		}
	}
	// The shape-change query, checked even when the fault is off so that a
	// scenario file fails early.
	text := string(c.ShapeChangeQuery)
	if text == "" {
		if text, err = bumpPartitions(string(c.Query), q.ShufflePartitions); err != nil {
			return nil, fmt.Errorf("sim: shape_change_query: %w", err)
		}
	}
	sq, err := query.Parse("shape_change_query", []byte(text))
	if err != nil {
		return nil, fmt.Errorf("sim: shape_change_query: %w", err)
	}
	if err := checkQuery(sq, p.eventCol); err != nil {
		return nil, fmt.Errorf("sim: shape_change_query: %w", err)
	}
	if strings.Join(sq.SourceNames(), ",") != strings.Join(q.SourceNames(), ",") {
		return nil, fmt.Errorf("sim: shape_change_query reads sources %v, the query %v", sq.SourceNames(), q.SourceNames())
	}
	if sq.Sink.Kind != q.Sink.Kind {
		return nil, fmt.Errorf("sim: shape_change_query writes a %s sink, the query a %s sink: the sink persists across the change", sq.Sink.Kind, q.Sink.Kind)
	}
	p.shape, p.shapeText = sq, text
	return p, nil
}

// applicable says why a fault cannot fire in this configuration.
func (p *prepared) applicable(name string) error {
	switch name {
	case faults.LaggingInput:
		if len(p.q.Sources) < 2 {
			return errors.New("needs a query with at least two sources")
		}
	}
	return nil
}

// checkQuery holds a query to what the simulator's rows carry: "id", the
// event-time column and the hidden _copy.
func checkQuery(q *query.Query, eventCol string) error {
	if len(q.Keys) == 0 {
		return fmt.Errorf("dedup keys: the simulator needs explicit keys (every column would include the hidden %s)", CopyColumn)
	}
	if eventCol == "id" || eventCol == CopyColumn {
		return fmt.Errorf("event-time column %q collides with a simulator column", eventCol)
	}
	for _, k := range q.Keys {
		if k != "id" && k != eventCol {
			return fmt.Errorf("dedup key %q: simulated rows have only id and %s", k, eventCol)
		}
	}
	// Both stores run in the simulator. With pebble, rows and counts are
	// as deterministic as with memory, but byte figures (memoryUsedBytes,
	// sstable sizes) come from Pebble's allocator and may differ between
	// runs, so byte-identical histories are promised for memory only.
	if q.Sink.Kind == query.SinkMerge {
		for _, k := range q.Sink.Keys {
			if k != "id" && k != eventCol {
				return fmt.Errorf("sink keys: %q is not a simulated column", k)
			}
		}
	}
	return nil
}

// bumpPartitions returns the query text with shuffle_partitions doubled.
func bumpPartitions(text string, n int) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return "", err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return "", errors.New("query is not a mapping")
	}
	m := doc.Content[0]
	val := fmt.Sprint(2 * n)
	found := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "shuffle_partitions" {
			m.Content[i+1].Kind, m.Content[i+1].Tag, m.Content[i+1].Value, m.Content[i+1].Style = yaml.ScalarNode, "!!int", val, 0
			found = true
		}
	}
	if !found {
		m.Content = append(m.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "shuffle_partitions"},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: val})
	}
	b, err := yaml.Marshal(&doc)
	return string(b), err
}

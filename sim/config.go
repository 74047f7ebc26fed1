package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/internal/duration"
	"github.com/dedupsim/dedupsim/internal/suggest"
	"github.com/dedupsim/dedupsim/sim/record"
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
	// Its dedup keys and event-time column name the rows' columns (see
	// Columns for the layout): a production query keyed on event_id with a
	// watermark on event_ts runs as written.
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
	// typo in a rate must fail fast, not exhaust memory. (The memory a run
	// needs is predicted by Predict; the scenario layer refuses a run above
	// the machine's budget before it starts.)
	MaxCopies int `yaml:"max_copies,omitempty"`
	// Columns are payload columns every row carries beside its key and
	// event-time columns, such as an amount or a note of some size. A row
	// is {"<id column>": "<event id>", "<event-time column>": <time>,
	// <further key columns>, <payload columns>, "_copy": N}: the id column
	// is the query's first dedup key that is not its event-time column
	// ("id" when there is none), and every further key column holds
	// "<column>:<event id>", so each key column alone still tells events
	// apart. Payload values are derived from the event id, so every copy
	// of an event carries the same payload, as a producer's retry does.
	Columns []Column `yaml:"columns,omitempty"`
	// SparkVersion and SparkConf are the query's spark_version and
	// spark_conf given at the scenario's top level (or by run and
	// sweep's --spark-version); FoldSparkVersion moves them into Query.
	SparkVersion string            `yaml:"spark_version,omitempty"`
	SparkConf    map[string]string `yaml:"spark_conf,omitempty"`
}

// Column types.
const (
	ColumnString  = "string"
	ColumnLong    = "long"
	ColumnDouble  = "double"
	ColumnBoolean = "boolean"
)

// Column is one payload column of the rows.
type Column struct {
	// Name of the column: a letter or '_', then letters, digits or '_'
	// (at most 64), and no key, event-time or hidden column.
	Name string `yaml:"name"`
	// Type is "string" (default), "long" (an integer in [0, 2^53)),
	// "double" (a number in [0, 1000) with two decimals) or "boolean".
	Type string `yaml:"type,omitempty"`
	// Bytes is the length of a string value (default 16, at most 65536);
	// only for strings.
	Bytes int `yaml:"bytes,omitempty"`
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

// UnmarshalYAML reads a duration with a unit (see duration.Parse).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 30s", n.Line)
	}
	v, err := duration.Parse(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
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

// FieldError is a configuration value outside its domain. Path names the
// field as a scenario file writes it ("trigger_interval",
// "sources[1].rate.per_sec", "columns[0].bytes", "query"), so that the
// scenario loader can point at its line; Msg says what is wrong and what
// is accepted, in human units. Choices, when set, are the accepted values
// of an enumerated field (for a "did you mean"), Got what was written.
type FieldError struct {
	Path    string
	Msg     string
	Got     string
	Choices []string
}

func (e *FieldError) Error() string { return "sim: " + e.Path + ": " + e.Msg }

func fieldErr(path, format string, a ...any) *FieldError {
	return &FieldError{Path: path, Msg: fmt.Sprintf(format, a...)}
}

// outOf is the error of a value outside the domain of the field at path.
func outOf(path string, v any) *FieldError {
	return fieldErr(path, "%s: want %s", fmtValue(v), Domain(generic(path)))
}

func enumErr(path, got string, choices []string) *FieldError {
	e := fieldErr(path, "%q: want %s", got, suggest.OrList(choices))
	e.Got, e.Choices = got, choices
	return e
}

func fmtValue(v any) string {
	switch x := v.(type) {
	case Duration:
		return duration.Format(time.Duration(x))
	case time.Duration:
		return duration.Format(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// generic is a field path without list indices: "sources[2].rate.per_sec"
// is "sources[].rate.per_sec".
func generic(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		b.WriteByte(path[i])
		if path[i] == '[' {
			for i+1 < len(path) && path[i+1] != ']' {
				i++
			}
		}
	}
	return b.String()
}

// Bounds of the configuration, in one place: validation and the scenario
// loader's messages use them.
const (
	maxRun         = 366 * 24 * time.Hour // fault_phase + heal_phase, and any drawn gap
	maxPerSec      = 10_000_000
	maxPartitions  = 1024
	maxKeySpace    = 100_000_000
	maxProducers   = 1_000_000
	maxColumns     = 64
	maxColumnBytes = 65536
	maxColumnName  = 64
)

// startMin and startMax bound Start: event times stay positive and within
// the four-digit years RFC 3339 writes, whatever the faults add (a year
// ahead at most).
var (
	startMin = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	startMax = time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// domains are the accepted values of every bounded field, by generic path,
// as messages print them.
var domains = map[string]string{
	"start":                         "an RFC 3339 time in [1970-01-01T00:00:00Z, 9000-01-01T00:00:00Z]",
	"trigger_interval":              "[1ms, 24h]",
	"fault_phase":                   "[1ms, 366d]",
	"heal_phase":                    "[trigger_interval, 366d], 366d in all with the fault phase",
	"downtime":                      "[1ms, 24h]",
	"max_copies":                    "[1, 2147483647]",
	"sources[].name":                "a source of the query",
	"sources[].topic":               "1 to 249 letters, digits, '.', '_' or '-' (as Kafka allows)",
	"sources[].partitions":          "[1, 1024]",
	"sources[].rate.per_sec":        "(0, 10000000] events per second",
	"sources[].rate.amplitude":      "(0, 1]",
	"sources[].rate.period":         "[1ms, 366d]",
	"sources[].rate.burst_factor":   "[1, 1000]",
	"sources[].rate.burst_every":    "[1ms, 366d]",
	"sources[].rate.burst_length":   "[1ms, 366d]",
	"sources[].keys.size":           "[1, 100000000] ids",
	"sources[].producers":           "[1, 1000000]",
	"sources[].send_delay.mean":     "[0s, 366d]",
	"sources[].send_delay.sigma":    "(0, 5]",
	"sources[].send_delay.max":      "[send_delay.mean, 366d]",
	"sources[].timestamp_precision": "0s (none) or [1ms, 1h]",
	"columns":                       "at most 64 columns",
	"columns[].name":                "a letter or '_', then letters, digits or '_', at most 64 in all, not a key, event-time or hidden column",
	"columns[].bytes":               "[1, 65536] (strings only)",
}

// Domain is the accepted range of a field in human units ("[1ms, 24h]"),
// by its generic path ("sources[].rate.per_sec"); "" for a field without
// one.
func Domain(path string) string { return domains[generic(path)] }

// durationIn checks a duration field against [lo, hi] and whole
// milliseconds (a Config built in Go may hold any time.Duration).
func durationIn(path string, d Duration, lo, hi time.Duration) error {
	if time.Duration(d) < lo || time.Duration(d) > hi {
		return outOf(path, d)
	}
	if time.Duration(d)%time.Millisecond != 0 {
		return fieldErr(path, "%s is not a whole number of milliseconds (the simulator's clock ticks in ms)", duration.Format(time.Duration(d)))
	}
	return nil
}

func (s *SourceConfig) validate() error { return s.validateAt("sources") }

// validateAt checks a filled source; path names it in errors.
func (s *SourceConfig) validateAt(path string) error {
	if !validTopic(s.Topic) {
		return outOf(path+".topic", fmt.Sprintf("%q", s.Topic))
	}
	if s.Partitions < 1 || s.Partitions > maxPartitions {
		return outOf(path+".partitions", s.Partitions)
	}
	if s.Partitioner != "key" && s.Partitioner != "round_robin" {
		return enumErr(path+".partitioner", s.Partitioner, []string{"key", "round_robin"})
	}
	r := s.Rate
	switch r.Profile {
	case RateConstant, RateDiurnal, RateBursts:
	default:
		return enumErr(path+".rate.profile", r.Profile, []string{RateConstant, RateDiurnal, RateBursts})
	}
	if !(r.PerSec > 0) || r.PerSec > maxPerSec {
		return outOf(path+".rate.per_sec", r.PerSec)
	}
	if !(r.Amplitude > 0 && r.Amplitude <= 1) {
		return outOf(path+".rate.amplitude", r.Amplitude)
	}
	for _, f := range []struct {
		name string
		d    Duration
	}{{"period", r.Period}, {"burst_every", r.BurstEvery}, {"burst_length", r.BurstLength}} {
		if err := durationIn(path+".rate."+f.name, f.d, time.Millisecond, maxRun); err != nil {
			return err
		}
	}
	if !(r.BurstFactor >= 1) || r.BurstFactor > 1000 {
		return outOf(path+".rate.burst_factor", r.BurstFactor)
	}
	switch s.Keys.Kind {
	case KeysFresh:
	case KeysBounded:
		if s.Keys.Size < 1 || s.Keys.Size > maxKeySpace {
			return outOf(path+".keys.size", s.Keys.Size)
		}
	default:
		return enumErr(path+".keys.kind", s.Keys.Kind, []string{KeysFresh, KeysBounded})
	}
	if s.Producers < 1 || s.Producers > maxProducers {
		return outOf(path+".producers", s.Producers)
	}
	if err := s.SendDelay.validate(path + ".send_delay"); err != nil {
		return err
	}
	if s.TimestampFormat != "seconds" && s.TimestampFormat != "rfc3339" {
		return enumErr(path+".timestamp_format", s.TimestampFormat, []string{"seconds", "rfc3339"})
	}
	if s.TimestampPrecision != 0 {
		if err := durationIn(path+".timestamp_precision", s.TimestampPrecision, time.Millisecond, time.Hour); err != nil {
			return err
		}
	}
	return nil
}

func (d Dist) validate(path string) error {
	switch d.Kind {
	case DistFixed, DistExponential:
	case DistLogNormal:
		if !(d.Sigma > 0 && d.Sigma <= 5) {
			return outOf(path+".sigma", d.Sigma)
		}
	case DistUniform:
		if d.Max < d.Mean {
			return fieldErr(path+".max", "%s is below mean (the lower bound) %s: want %s", duration.Format(time.Duration(d.Max)), duration.Format(time.Duration(d.Mean)), Domain("sources[].send_delay.max"))
		}
	default:
		return enumErr(path+".kind", d.Kind, []string{DistFixed, DistExponential, DistLogNormal, DistUniform})
	}
	if err := durationIn(path+".mean", d.Mean, 0, maxRun); err != nil {
		return err
	}
	if d.Kind == DistUniform {
		if err := durationIn(path+".max", d.Max, 0, maxRun); err != nil {
			return err
		}
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

// validColumn reports whether name is a column name the simulator writes
// as is: a letter or '_', then letters, digits or '_' (JSON needs no
// escaping, and Spark reads it without backquotes).
func validColumn(name string) bool {
	if name == "" || len(name) > maxColumnName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
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
// fault plan resolves against the catalogue. A value outside its domain is
// a *FieldError naming the field.
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
	layout     *rowLayout
	sourceCfgs []SourceConfig
	set        faults.Settings // the resolved plan (not in swarm mode: drawn per run)
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
	explicitTrigger := c.TriggerInterval != 0
	c = c.WithDefaults()
	if err := c.FoldSparkVersion(); err != nil {
		return nil, err
	}
	p := &prepared{Config: c}
	q, err := query.Parse("query", []byte(c.Query))
	if err != nil {
		return nil, fmt.Errorf("sim: query: %w", err)
	}
	p.q = q
	if q.RealTime() && q.RealTimeMs > (24*time.Hour).Milliseconds() {
		return nil, fieldErr("query", "trigger.real_time %s is longer than the simulator's trigger grid allows (24h)", duration.Format(time.Duration(q.RealTimeMs)*time.Millisecond))
	}
	if q.RealTime() {
		// Real-time batches run back to back, each lasting the trigger's
		// duration (MicroBatchExecution runs RealTimeTrigger with a
		// ProcessingTimeTrigger(0)): the simulator's trigger grid is it.
		rt := Duration(time.Duration(q.RealTimeMs) * time.Millisecond)
		if explicitTrigger && c.TriggerInterval != rt {
			return nil, fieldErr("trigger_interval", "%s differs from the query's trigger.real_time %s: a real-time batch lasts its trigger's duration; leave trigger_interval out",
				duration.Format(time.Duration(c.TriggerInterval)), duration.Format(time.Duration(rt)))
		}
		c.TriggerInterval, p.Config.TriggerInterval = rt, rt
	}
	p.eventCol = q.EventTimeColumn()
	if p.eventCol == "" {
		p.eventCol = "ts"
	}
	t, err := time.Parse(time.RFC3339, c.Start)
	if err != nil || t.Before(startMin) || t.After(startMax) {
		return nil, outOf("start", fmt.Sprintf("%q", c.Start))
	}
	p.startMs = t.UnixMilli()
	if err := durationIn("trigger_interval", c.TriggerInterval, time.Millisecond, 24*time.Hour); err != nil {
		return nil, err
	}
	if err := durationIn("fault_phase", c.FaultPhase, time.Millisecond, maxRun); err != nil {
		return nil, err
	}
	if c.HealPhase < c.TriggerInterval {
		return nil, fieldErr("heal_phase", "%s is shorter than trigger_interval %s: the phases need at least one trigger of heal, want %s",
			duration.Format(time.Duration(c.HealPhase)), duration.Format(time.Duration(c.TriggerInterval)), Domain("heal_phase"))
	}
	if err := durationIn("heal_phase", c.HealPhase, time.Duration(c.TriggerInterval), maxRun); err != nil {
		return nil, err
	}
	if total := time.Duration(c.FaultPhase + c.HealPhase); total > maxRun {
		return nil, fieldErr("heal_phase", "%s after a fault phase of %s: the phases last at most 366d in all", duration.Format(time.Duration(c.HealPhase)), duration.Format(time.Duration(c.FaultPhase)))
	}
	if err := durationIn("downtime", c.Downtime, time.Millisecond, 24*time.Hour); err != nil {
		return nil, err
	}
	if c.MaxCopies < 1 || c.MaxCopies > math.MaxInt32 {
		return nil, outOf("max_copies", c.MaxCopies)
	}
	// Workload per query source, in query order. A source described twice
	// is refused before matching: the last entry must not silently win.
	given := map[string]int{}
	for i, s := range c.Sources {
		if j, dup := given[s.Name]; dup {
			return nil, fieldErr(fmt.Sprintf("sources[%d].name", i), "%q is described twice (also sources[%d])", s.Name, j)
		}
		given[s.Name] = i
		if _, ok := q.SourceIndex(s.Name); !ok {
			e := fieldErr(fmt.Sprintf("sources[%d].name", i), "%q is not a source of the query (%s)", s.Name, strings.Join(q.SourceNames(), ", "))
			e.Got, e.Choices = s.Name, q.SourceNames()
			return nil, e
		}
	}
	for _, qs := range q.Sources {
		sc, path := SourceConfig{Name: qs.Name}, "sources"
		if i, ok := given[qs.Name]; ok {
			sc, path = c.Sources[i], fmt.Sprintf("sources[%d]", i)
		}
		sc.fill()
		if err := sc.validateAt(path); err != nil {
			return nil, err
		}
		p.sourceCfgs = append(p.sourceCfgs, sc)
	}
	seenTopic := map[string]bool{}
	expected := 0.0
	for _, s := range p.sourceCfgs {
		if seenTopic[s.Topic] {
			return nil, fieldErr("sources", "two sources read topic %q", s.Topic)
		}
		seenTopic[s.Topic] = true
		expected += s.Rate.meanRate() * time.Duration(c.FaultPhase+c.HealPhase).Seconds()
	}
	if expected > float64(c.MaxCopies) {
		return nil, fieldErr("max_copies", "up to %.0f events expected, above the limit of %d copies (set this field to raise it; the memory budget still applies)", math.Round(expected), c.MaxCopies)
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
				return nil, fieldErr("faults."+f+".source", "%d: the query has %d source(s), so want -1 (drawn) or [0, %d]", s.Int(f, "source"), len(q.Sources), len(q.Sources)-1)
			}
		}
		p.set = s
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
	if p.layout, err = newRowLayout(q, sq, p.eventCol, c.Columns); err != nil {
		return nil, err
	}
	if err := p.layout.check(q, "query"); err != nil {
		return nil, err
	}
	if err := p.layout.check(sq, "shape_change_query"); err != nil {
		return nil, err
	}
	if strings.Join(sq.SourceNames(), ",") != strings.Join(q.SourceNames(), ",") {
		return nil, fieldErr("shape_change_query", "reads sources %s, the query %s: both read the same topics", strings.Join(sq.SourceNames(), ", "), strings.Join(q.SourceNames(), ", "))
	}
	if sq.Sink.Kind != q.Sink.Kind {
		return nil, fieldErr("shape_change_query", "writes sink kind %s, the query sink kind %s: the sink persists across the change, so both write the same kind", sq.Sink.Kind, q.Sink.Kind)
	}
	if sq.RealTimeMs != q.RealTimeMs {
		return nil, fieldErr("shape_change_query", "trigger.real_time %dms, the query's %dms: the simulator's trigger grid is the query's, so both run the same trigger", sq.RealTimeMs, q.RealTimeMs)
	}
	if sq.RealTime() {
		// The real-time checks need the version the scenario gives the
		// query (FoldSparkVersion moved it there, not here).
		if sq.SparkVersion.IsZero() && !q.SparkVersion.IsZero() {
			if err := sq.SetSparkVersion(q.SparkVersion); err != nil {
				return nil, fmt.Errorf("sim: shape_change_query: %w", err)
			}
		} else if err := sq.CheckSparkVersion(); err != nil {
			return nil, fmt.Errorf("sim: shape_change_query: %w", err)
		}
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

// rowLayout is the columns of the simulated rows, in row order: the id
// column (the event id), the event-time column, further key columns, the
// payload columns, then the hidden _copy (see Config.Columns).
type rowLayout struct {
	idCol    string
	eventCol string
	keyCols  []string // key columns beyond the id and event-time columns
	payload  []Column
}

// newRowLayout derives the rows' columns from the query, the shape-change
// query (which reads the same rows) and the payload columns. Every dedup
// key of either query that is not the event-time column is a column of
// the row; the first of the query's is the id column.
func newRowLayout(q, sq *query.Query, eventCol string, payload []Column) (*rowLayout, error) {
	l := &rowLayout{eventCol: eventCol}
	if !validColumn(eventCol) {
		return nil, fieldErr("query", "event-time column %q: the simulator's column names are a letter or '_', then letters, digits or '_' (at most 64)", eventCol)
	}
	for _, k := range q.Keys {
		if k != eventCol {
			l.idCol = k
			break
		}
	}
	if l.idCol == "" {
		l.idCol = "id"
	}
	for _, qq := range []*query.Query{q, sq} {
		for _, k := range qq.Keys {
			if k != eventCol && k != l.idCol && !slices.Contains(l.keyCols, k) {
				l.keyCols = append(l.keyCols, k)
			}
		}
	}
	for _, c := range append([]string{l.idCol}, l.keyCols...) {
		if c == record.CopyColumn {
			return nil, fieldErr("query", "dedup key %q is the simulator's hidden column (it tells copies apart, so no duplicate would ever be dropped)", c)
		}
		if !validColumn(c) {
			return nil, fieldErr("query", "dedup key %q: the simulator's column names are a letter or '_', then letters, digits or '_' (at most 64)", c)
		}
	}
	if eventCol == l.idCol {
		return nil, fieldErr("query", "event-time column %q is also the rows' id column: key the query on another column (such as [id, %s])", eventCol, eventCol)
	}
	if eventCol == record.CopyColumn {
		return nil, fieldErr("query", "event-time column %q collides with the simulator's hidden column", eventCol)
	}
	if len(payload) > maxColumns {
		return nil, outOf("columns", fmt.Sprintf("%d columns", len(payload)))
	}
	taken := map[string]string{l.idCol: "the id column", eventCol: "the event-time column", record.CopyColumn: "the simulator's hidden column"}
	for _, k := range l.keyCols {
		taken[k] = "a dedup key (key columns hold values derived from the event id)"
	}
	for i, c := range payload {
		path := fmt.Sprintf("columns[%d]", i)
		if !validColumn(c.Name) {
			return nil, outOf(path+".name", fmt.Sprintf("%q", c.Name))
		}
		if what, dup := taken[c.Name]; dup {
			return nil, fieldErr(path+".name", "%q is %s", c.Name, what)
		}
		taken[c.Name] = fmt.Sprintf("listed twice (also %s)", path)
		switch c.Type {
		case "", ColumnString:
			c.Type = ColumnString
			if c.Bytes == 0 {
				c.Bytes = 16
			}
			if c.Bytes < 1 || c.Bytes > maxColumnBytes {
				return nil, outOf(path+".bytes", c.Bytes)
			}
		case ColumnLong, ColumnDouble, ColumnBoolean:
			if c.Bytes != 0 {
				return nil, fieldErr(path+".bytes", "only for type string (the column is a %s)", c.Type)
			}
		default:
			return nil, enumErr(path+".type", c.Type, []string{ColumnString, ColumnLong, ColumnDouble, ColumnBoolean})
		}
		l.payload = append(l.payload, c)
	}
	return l, nil
}

// columns lists the row's columns in order, _copy last.
func (l *rowLayout) columns() []string {
	out := append([]string{l.idCol, l.eventCol}, l.keyCols...)
	for _, c := range l.payload {
		out = append(out, c.Name)
	}
	return append(out, record.CopyColumn)
}

// check holds a query (which) to what the rows carry.
func (l *rowLayout) check(q *query.Query, which string) error {
	if len(q.Keys) == 0 {
		return fieldErr(which, "dedup keys: the simulator needs explicit keys (every column would include the hidden %s)", record.CopyColumn)
	}
	if col := q.EventTimeColumn(); col != "" && col != l.eventCol {
		return fieldErr(which, "watermark column %q: the rows' event-time column is %q (the query's)", col, l.eventCol)
	}
	// Both stores run in the simulator. With pebble, rows and counts are
	// as deterministic as with memory, but byte figures (memoryUsedBytes,
	// sstable sizes) come from Pebble's allocator and may differ between
	// runs, so byte-identical histories are promised for memory only.
	if len(q.Sink.Keys) > 0 { // the parser admits sink.keys only for a kind that takes them
		cols := l.columns()
		for _, k := range q.Sink.Keys {
			if k == record.CopyColumn || !slices.Contains(cols, k) {
				return fieldErr(which, "sink keys: %q is not a column of the simulated rows (%s)", k, strings.Join(cols[:len(cols)-1], ", "))
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

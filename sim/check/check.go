package check

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/internal/duration"
	"github.com/dedupsim/dedupsim/internal/intmath"
	"github.com/dedupsim/dedupsim/sim/history"
)

// Kind names a finding. The strings are stable: scenarios and saved reports
// refer to them.
type Kind string

// The finding kinds, in report order (violations, then counted, then
// warnings).
const (
	// MalformedHistory: the history contradicts itself (an index out of
	// range, outcomes not matching the input, an unknown outcome or API).
	MalformedHistory Kind = "malformed-history"
	// Lost: a copy that conservation cannot account for: never read although
	// later offsets of its partition were, or dropped as a duplicate while no
	// copy of its key had been emitted.
	Lost Kind = "lost"
	// DoubleRead: a copy in the input of two authoritative batches (or twice
	// in one) of the same checkpoint.
	DoubleRead Kind = "double-read"
	// DuplicateEmitted: an event emitted more than once where the API
	// promises it is not.
	DuplicateEmitted Kind = "duplicate-emitted"
	// LateFilterMismatch: a row's late/not-late fate disagrees with the late
	// watermark the batch ran with (§1.5: late iff eventTime <= lateWatermark).
	LateFilterMismatch Kind = "late-filter-mismatch"
	// SinkReplayDuplicate: a batch delivered more than once reached the table
	// more than once.
	SinkReplayDuplicate Kind = "sink-replay-duplicate"
	// SinkLost: an event the operator emitted is not in the final table.
	SinkLost Kind = "sink-lost"
	// WatermarkRegressed: a batch ran with a lower watermark than an earlier
	// batch of the same checkpoint.
	WatermarkRegressed Kind = "watermark-regressed"
	// NotConverged: the healed phase did not converge (copies never
	// consumed, or events born in the healed phase emitted more than once).
	NotConverged Kind = "not-converged"
	// DuplicateEmittedOutsideGuarantee: an event emitted more than once in a
	// way the API does not exclude (allowed, counted).
	DuplicateEmittedOutsideGuarantee Kind = "duplicate-emitted-outside-guarantee"
	// RereadFreshCheckpoint: a copy read again by a later checkpoint epoch
	// (counted: a new checkpoint carries neither offsets nor state).
	RereadFreshCheckpoint Kind = "reread-fresh-checkpoint"
	// TableDuplicate: an event held more than once in the final table,
	// whatever the cause (counted; the violations name the cause).
	TableDuplicate Kind = "table-duplicate"
	// LateDropped: real events discarded by the late filter (counted).
	LateDropped Kind = "late-dropped"
	// StateUnbounded: numRowsTotal still growing over the second half.
	StateUnbounded Kind = "state-unbounded"
	// StateOverBound: numRowsTotal above arrival rate x retention x (1+margin).
	StateOverBound Kind = "state-over-bound"
	// WatermarkStalled: no watermark advance for StallSpanMs while data flowed.
	WatermarkStalled Kind = "watermark-stalled"
	// MetricsMismatch: a progress figure disagrees with the recorded row fates.
	MetricsMismatch Kind = "metrics-mismatch"
)

// Severity says what a finding means for the verdict.
type Severity string

// Severities.
const (
	// Violation breaks exactly-once (or the record): the verdict fails.
	Violation Severity = "violation"
	// Counted is allowed by the API's contract but reported with a count.
	Counted Severity = "counted"
	// Warning is an operational problem that does not break exactly-once.
	Warning Severity = "warning"
)

// Kinds lists every kind in report order.
var Kinds = []Kind{
	MalformedHistory, Lost, DoubleRead, DuplicateEmitted, LateFilterMismatch,
	SinkReplayDuplicate, SinkLost, WatermarkRegressed, NotConverged,
	DuplicateEmittedOutsideGuarantee, RereadFreshCheckpoint, TableDuplicate, LateDropped,
	StateUnbounded, StateOverBound, WatermarkStalled, MetricsMismatch,
}

// SeverityOf is the fixed severity of each kind.
var SeverityOf = map[Kind]Severity{
	MalformedHistory:                 Violation,
	Lost:                             Violation,
	DoubleRead:                       Violation,
	DuplicateEmitted:                 Violation,
	LateFilterMismatch:               Violation,
	SinkReplayDuplicate:              Violation,
	SinkLost:                         Violation,
	WatermarkRegressed:               Violation,
	NotConverged:                     Violation,
	DuplicateEmittedOutsideGuarantee: Counted,
	RereadFreshCheckpoint:            Counted,
	TableDuplicate:                   Counted,
	LateDropped:                      Counted,
	StateUnbounded:                   Warning,
	StateOverBound:                   Warning,
	WatermarkStalled:                 Warning,
	MetricsMismatch:                  Warning,
}

// Options tune the thresholds. A zero field means its default (see
// DefaultOptions); Check reports the values it used in Report.Options.
type Options struct {
	// StateMargin is the slack over arrival rate x retention before
	// state-over-bound (default 0.5). Values <= 0 mean the default; pass a
	// tiny positive value for "no margin".
	StateMargin float64 `json:"stateMargin"`
	// StallSpanMs is how long the watermark may stand still while data flows
	// before watermark-stalled (default 3 x max(delay, trigger interval, 1 s)).
	StallSpanMs int64 `json:"stallSpanMs"`
	// TriggerIntervalMs is the trigger interval; 0 infers it as the median
	// gap between consecutive authoritative batches that read data.
	TriggerIntervalMs int64 `json:"triggerIntervalMs"`
	// MaxExamples bounds the examples per finding (default 3).
	MaxExamples int `json:"maxExamples"`
	// GrowthFraction is the fitted growth of numRowsTotal over the analysed
	// second half, as a fraction of its mean there, above which state counts
	// as growing (default 0.2).
	GrowthFraction float64 `json:"growthFraction"`
}

// Defaults.
const (
	DefaultStateMargin    = 0.5
	DefaultMaxExamples    = 3
	DefaultGrowthFraction = 0.2
	// DefaultStallFloorMs is the floor of the default stall span's
	// max(delay, trigger) term.
	DefaultStallFloorMs = 1000
)

// DefaultOptions returns the defaults. StallSpanMs and TriggerIntervalMs stay
// 0 (derived from the history).
func DefaultOptions() Options {
	return Options{StateMargin: DefaultStateMargin, MaxExamples: DefaultMaxExamples, GrowthFraction: DefaultGrowthFraction}
}

// Find returns the finding of kind k, or nil.
func (r Report) Find(k Kind) *Finding {
	for i := range r.Findings {
		if r.Findings[i].Kind == k {
			return &r.Findings[i]
		}
	}
	return nil
}

// Kinds lists the kinds found, in report order.
func (r Report) Kinds() []Kind {
	ks := make([]Kind, len(r.Findings))
	for i, f := range r.Findings {
		ks[i] = f.Kind
	}
	return ks
}

// Report is the checker's answer.
type Report struct {
	// Table is what reached the sink, per event: the headline. Its Clean
	// method is what --strict tests.
	Table Table `json:"table"`
	// Margin is how close the run came to letting a copy through, and the
	// delays that would have caught every copy; nil without a streaming
	// watermark.
	Margin   *Margin   `json:"margin,omitempty"`
	Verdict  Verdict   `json:"verdict"`
	Findings []Finding `json:"findings"`
	Counts   Counts    `json:"counts"`
	// Notes say which checks were skipped and why.
	Notes []string `json:"notes"`
	// Options are the effective options (defaults and derived values filled).
	Options Options `json:"options"`
}

// Verdict is the API's side of the bottom line: whether the engine kept the
// promise of the API the query uses (not whether the table is right: see
// Report.Table).
type Verdict struct {
	// ExactlyOnce: no finding of severity violation, i.e. the API contract
	// was kept (the name stays for compatibility: scenarios'
	// expect.exactly_once and saved reports refer to it). Reports call it
	// "API contract kept".
	ExactlyOnce bool `json:"exactlyOnce"`
	// Converged: no not-converged finding, and the state was back under its
	// bound at the last batch (when a bound applies).
	Converged bool `json:"converged"`
	// Contract is the API's promise in one phrase ("dropDuplicates: no two
	// copies with the same event time emitted").
	Contract string `json:"contract"`
	// Violations is the number of violation findings.
	Violations int    `json:"violations"`
	Summary    string `json:"summary"`
}

// Finding is one typed anomaly with a count and a few examples.
type Finding struct {
	Kind     Kind     `json:"kind"`
	Severity Severity `json:"severity"`
	// Count is what the kind counts (events, copies, batches or spans; the
	// message says which).
	Count    int       `json:"count"`
	Message  string    `json:"message"`
	Examples []Example `json:"examples,omitempty"`
}

// Example is one concrete instance: an event, the copies involved (indices
// into History.Copies) and the batch ids involved.
type Example struct {
	Event   string  `json:"event,omitempty"`
	Copies  []int   `json:"copies,omitempty"`
	Batches []int64 `json:"batches,omitempty"`
	Detail  string  `json:"detail"`
	// Timeline follows every copy of the example's event (up to
	// TimelineMaxCopies), in append order: what a reader lines up with the
	// charts.
	Timeline []Step `json:"timeline,omitempty"`
}

// Step is one copy of an event in a timeline: when it was appended, which
// authoritative batch read it and when, its fate, and the watermarks that
// batch ran with. A copy no authoritative batch read has BatchID -1 and
// outcome "unread"; a copy read twice has two steps.
type Step struct {
	Copy   int    `json:"copy"`
	CopyNo int    `json:"copyNo"`
	Fault  string `json:"fault,omitempty"`
	// EventTimeUs is the event-time column; AppendedAtMs when the log got
	// the copy.
	EventTimeUs  int64  `json:"eventTimeUs"`
	AppendedAtMs int64  `json:"appendedAtMs"`
	BatchID      int64  `json:"batchId"`
	Checkpoint   int    `json:"checkpoint"`
	BatchAtMs    int64  `json:"batchAtMs"`
	Outcome      string `json:"outcome"`
	// LateWatermarkMs filtered the copy's batch; WatermarkMs evicted after it.
	LateWatermarkMs int64 `json:"lateWatermarkMs"`
	WatermarkMs     int64 `json:"watermarkMs"`
	// InTable is how many rows of the final table hold this copy.
	InTable int `json:"inTable"`
}

// TimelineMaxCopies bounds the steps of one example's timeline.
const TimelineMaxCopies = 8

// Counts are the run's totals. Row counts are over authoritative batch
// executions.
type Counts struct {
	// StartMs is the run's start: the first append, the origin of the
	// reports' time axes and of the "+12.3s" in messages.
	StartMs     int64 `json:"startMs"`
	Copies      int   `json:"copies"`
	Events      int   `json:"events"`
	Checkpoints int   `json:"checkpoints"`
	// Executions of batches in total, Batches distinct (checkpoint, batch
	// id), Superseded executions replaced by a later run of the same id.
	Executions int `json:"executions"`
	Batches    int `json:"batches"`
	Superseded int `json:"superseded"`
	// Reads = Emitted + DuplicatesDropped + LateDropped (rows read by
	// authoritative batches, by fate).
	Reads             int `json:"reads"`
	Emitted           int `json:"emitted"`
	DuplicatesDropped int `json:"duplicatesDropped"`
	LateDropped       int `json:"lateDropped"`
	// Filtered counts reads removed by drop_future_events.
	Filtered int `json:"filtered,omitempty"`
	// Unread copies no authoritative batch read; ExtraReads reads beyond the
	// first of a copy.
	Unread     int `json:"unread"`
	ExtraReads int `json:"extraReads"`
	// Conservation: every copy read exactly once, so
	// Copies = Emitted + DuplicatesDropped + LateDropped.
	Conservation bool `json:"conservation"`
	// Events by number of emissions.
	EventsEmittedOnce  int `json:"eventsEmittedOnce"`
	EventsEmittedTwice int `json:"eventsEmittedMoreThanOnce"`
	EventsNotEmitted   int `json:"eventsNotEmitted"`
	EventsLateDropped  int `json:"eventsLateDropped"`
	// Sink figures.
	SinkWrites  int  `json:"sinkWrites"`
	HasTable    bool `json:"hasTable"`
	TableRows   int  `json:"tableRows"`
	TableEvents int  `json:"tableEvents"`
	// State figures (authoritative batches).
	StateRowsMax  int64 `json:"stateRowsMax"`
	StateRowsLast int64 `json:"stateRowsLast"`
	// RetentionMs and StateBound are 0 when no bound applies.
	RetentionMs int64   `json:"retentionMs"`
	StateBound  float64 `json:"stateBound"`
	WatermarkMs int64   `json:"watermarkMaxMs"`
}

// Check checks h. It never panics on a history that history.Read accepts
// (nor on a nil one): contradictions become malformed-history findings.
func Check(h *history.History, opts Options) Report {
	c := newChecker(h, opts)
	if h == nil {
		c.add(MalformedHistory, 1, "no history", []Example{{Detail: "nil history"}})
		return c.finish()
	}
	c.index()
	c.checkEvents()
	c.checkSink()
	c.checkState()
	c.checkWatermark()
	c.checkMetrics()
	c.table = c.tableOutcome()
	c.margin = c.computeMargin()
	return c.finish()
}

// finish sorts findings, examples and notes, and writes the verdict.
func (c *checker) finish() Report {
	order := map[Kind]int{}
	for i, k := range Kinds {
		order[k] = i
	}
	sort.SliceStable(c.findings, func(i, j int) bool { return order[c.findings[i].Kind] < order[c.findings[j].Kind] })
	c.timelines()
	r := Report{Table: c.table, Margin: c.margin, Findings: c.findings, Counts: c.counts, Notes: c.notes, Options: c.opts}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	if r.Notes == nil {
		r.Notes = []string{}
	}
	var bad, counted, warn []string
	for _, f := range r.Findings {
		s := fmt.Sprintf("%s (%d)", f.Kind, f.Count)
		switch f.Severity {
		case Violation:
			bad = append(bad, s)
			r.Verdict.Violations++
		case Counted:
			counted = append(counted, s)
		default:
			warn = append(warn, s)
		}
	}
	r.Verdict.ExactlyOnce = len(bad) == 0
	if c.mixedShapes {
		r.Verdict.Contract = "the query of each checkpoint (the shape changed); final: " + c.final.name() + ": " + c.final.guarantee()
	} else {
		r.Verdict.Contract = c.final.name() + ": " + c.final.guarantee()
	}
	r.Verdict.Converged = !c.has(NotConverged) && !c.stateOverAtEnd && !c.has(MalformedHistory)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s; ", r.Table.Name(), r.Table.Line())
	if r.Verdict.ExactlyOnce {
		b.WriteString("API contract kept")
	} else {
		fmt.Fprintf(&b, "API contract BROKEN: %s", strings.Join(bad, ", "))
	}
	if len(counted) > 0 {
		fmt.Fprintf(&b, "; counted: %s", strings.Join(counted, ", "))
	}
	if len(warn) > 0 {
		fmt.Fprintf(&b, "; warnings: %s", strings.Join(warn, ", "))
	}
	if !r.Verdict.Converged {
		b.WriteString("; not converged")
	}
	r.Verdict.Summary = b.String()
	return r
}

// timelines gives every example that names an event the timeline of its
// copies.
func (c *checker) timelines() {
	h := c.h
	if h == nil || c.reads.start == nil {
		return
	}
	var inTable []int32 // per copy; nil: no table
	if h.HasTable {
		inTable = make([]int32, c.nCopies)
		for _, c32 := range h.Table {
			ci := int(c32)
			if ci >= 0 && ci < c.nCopies {
				inTable[ci]++
			}
		}
	}
	// The events the examples name, looked up once each.
	evIndex := map[string]int{}
	for fi := range c.findings {
		for ei := range c.findings[fi].Examples {
			e := &c.findings[fi].Examples[ei]
			if e.Event == "" {
				continue
			}
			ev, ok := evIndex[e.Event]
			if !ok {
				ev = c.eventOf(e.Event)
				evIndex[e.Event] = ev
			}
			if ev < 0 {
				continue
			}
			copies := c.copiesOf.of(ev)
			if len(copies) == 0 {
				continue
			}
			copies = append([]int(nil), copies...)
			sort.SliceStable(copies, func(a, b int) bool { return h.Copies[copies[a]].AppendedAtMs < h.Copies[copies[b]].AppendedAtMs })
			if len(copies) > TimelineMaxCopies {
				copies = copies[:TimelineMaxCopies]
			}
			for _, ci := range copies {
				cp := &h.Copies[ci]
				s := Step{Copy: ci, CopyNo: int(cp.CopyNo), Fault: cp.Fault.String(), EventTimeUs: cp.EventTimeUs, AppendedAtMs: cp.AppendedAtMs, BatchID: -1, Outcome: "unread"}
				if inTable != nil {
					s.InTable = int(inTable[ci])
				}
				if len(c.reads.of(ci)) == 0 {
					e.Timeline = append(e.Timeline, s)
					continue
				}
				for _, r := range c.reads.of(ci) {
					b := &h.Batches[r.exec]
					s.BatchID, s.Checkpoint, s.BatchAtMs, s.Outcome = b.BatchID, c.epochOf[r.exec], b.AtMs, r.outcome.String()
					s.LateWatermarkMs, s.WatermarkMs = b.LateWatermarkMs, b.WatermarkMs
					e.Timeline = append(e.Timeline, s)
				}
			}
		}
	}
}

func (c *checker) has(k Kind) bool {
	for _, f := range c.findings {
		if f.Kind == k {
			return true
		}
	}
	return false
}

// add records a finding when count > 0, keeping at most MaxExamples
// examples; examples must already be in their final order.
func (c *checker) add(k Kind, count int, msg string, ex []Example) {
	if count <= 0 {
		return
	}
	if len(ex) > c.opts.MaxExamples {
		ex = ex[:c.opts.MaxExamples]
	}
	c.findings = append(c.findings, Finding{Kind: k, Severity: SeverityOf[k], Count: count, Message: msg, Examples: ex})
}

func (c *checker) note(format string, a ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, a...))
}

// sortExamples orders examples by event id (natural order), then by first
// copy, first batch and detail.
func sortExamples(ex []Example) {
	sort.SliceStable(ex, func(i, j int) bool {
		a, b := ex[i], ex[j]
		if a.Event != b.Event {
			return naturalLess(a.Event, b.Event)
		}
		if fa, fb := first(a.Copies), first(b.Copies); fa != fb {
			return fa < fb
		}
		if fa, fb := first(a.Batches), first(b.Batches); fa != fb {
			return fa < fb
		}
		return a.Detail < b.Detail
	})
}

func first[T int | int64](s []T) T {
	if len(s) == 0 {
		return -1
	}
	return s[0]
}

// naturalLess compares strings with digit runs compared as numbers, so e2
// sorts before e10.
func naturalLess(a, b string) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			na := strings.TrimLeft(a[si:i], "0")
			nb := strings.TrimLeft(b[sj:j], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			continue
		}
		if ca != cb {
			return ca < cb
		}
		i++
		j++
	}
	if len(a)-i != len(b)-j {
		return len(a)-i < len(b)-j
	}
	return a < b
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// NoNaturalKey is NaturalKey's answer for a name without one.
const NoNaturalKey = ^uint64(0)

// NaturalKey maps a name of the simulator's form, one ASCII byte that is
// not a digit, a number, '-' and a number ("e0-123", "d1-7"; numbers
// without a leading zero, below 2^28), to a number whose order among such
// names is naturalLess's: the byte, then the first number, then the
// second, each compared as naturalLess compares them (a byte by value, a
// digit run without leading zeros by its value). Equal keys are equal
// names. Any other name gets NoNaturalKey and is compared by naturalLess.
func NaturalKey(name string) uint64 {
	if len(name) < 4 || isDigit(name[0]) || name[0] >= 0x80 {
		return NoNaturalKey
	}
	i := 1
	num := func() (uint64, bool) {
		start, v := i, uint64(0)
		for i < len(name) && isDigit(name[i]) {
			v = v*10 + uint64(name[i]-'0')
			i++
			if v >= 1<<28 {
				return 0, false
			}
		}
		if i == start || (name[start] == '0' && i-start > 1) {
			return 0, false
		}
		return v, true
	}
	a, ok := num()
	if !ok || i >= len(name) || name[i] != '-' {
		return NoNaturalKey
	}
	i++
	b, ok := num()
	if !ok || i != len(name) {
		return NoNaturalKey
	}
	return uint64(name[0])<<56 | a<<28 | b
}

// Times in messages: an instant as ISO-8601 (UTC) and as seconds since the
// run's start (the first append, the origin of the reports' time axes:
// "2026-01-01T00:00:12.345Z (+12.3s)"); a span in human units (Dur).

// isoUs renders an instant in microseconds as ISO-8601 UTC.
func isoUs(us int64) string { return duration.StampMicros(us) }

// et renders an event time (µs).
func (c *checker) et(us int64) string {
	return fmt.Sprintf("%s (%s)", isoUs(us), relSec(satAdd(intmath.FloorDiv(us, 1000), -c.counts.StartMs)))
}

// at renders a processing time or a watermark (ms).
func (c *checker) at(ms int64) string {
	return fmt.Sprintf("%s (%s)", isoUs(satMul(ms, 1000)), relSec(satAdd(ms, -c.counts.StartMs)))
}

// Times says how many times, as a person writes it: once, twice, 3 times.
func Times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// SparkTime renders a watermark as Spark's progress prints eventTime
// (yyyy-MM-dd'T'HH:mm:ss.SSS'Z', UTC): 0, the watermark before the first
// one is set, is 1970-01-01T00:00:00.000Z; Spark never has one below.
func SparkTime(ms int64) string { return duration.Stamp(ms) }

// wm renders a watermark (ms): Spark's form, then the time since the run's
// start, or "not set yet" for 0 (no seconds before 1970 counted back from
// the run).
func (c *checker) wm(ms int64) string {
	if ms <= 0 {
		return SparkTime(ms) + " (not set yet)"
	}
	return fmt.Sprintf("%s (%s)", SparkTime(ms), relSec(satAdd(ms, -c.counts.StartMs)))
}

// relSec renders milliseconds since the run's start as signed seconds.
func relSec(ms int64) string {
	s := strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
	if ms >= 0 {
		s = "+" + s
	}
	return s + "s"
}

// Dur renders a span of milliseconds for a reader, exactly (a delay
// threshold must not be rounded): "250 milliseconds", "1 minute 42.904
// seconds", "2 hours 5 minutes" (internal/duration.Words).
func Dur(ms int64) string { return duration.Words(float64(ms)) }

// durUs renders a span of microseconds (sub-millisecond kept below 1s).
func durUs(us int64) string { return duration.Words(float64(us) / 1000) }

// satAdd and satMul are int64 arithmetic that saturates instead of wrapping
// (fuzzed histories carry absurd delays).
func satAdd(a, b int64) int64 {
	s := a + b
	if a > 0 && b > 0 && s < 0 {
		return math.MaxInt64
	}
	if a < 0 && b < 0 && s >= 0 {
		return math.MinInt64
	}
	return s
}

func satMul(a, k int64) int64 {
	if a == 0 || k == 0 {
		return 0
	}
	p := a * k
	if p/k != a {
		if (a < 0) != (k < 0) {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return p
}

func sortedUniqueInts(s []int) []int {
	out := append([]int(nil), s...)
	sort.Ints(out)
	return uniq(out)
}

func sortedUniqueIDs(s []int64) []int64 {
	out := append([]int64(nil), s...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return uniq(out)
}

func uniq[T comparable](s []T) []T {
	if len(s) == 0 {
		return s
	}
	out := s[:1]
	for _, v := range s[1:] {
		if v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}

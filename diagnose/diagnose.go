// Package diagnose turns a real Spark query's progress records (read by
// diagnose/progress) into findings with evidence, per query and per stateful
// operator: the signals of seed 004 ("read the state metrics") and of seed
// 000's checklist step 7 ("alert on rising numRowsTotal, non-zero
// numRowsDroppedByWatermark and a watermark that stops advancing"), each
// with what to change, citing the seeds' advice. Where a finding is the one
// the simulator's checker (sim/check) gives for the same symptom, it carries
// the checker's kind, so that a scenario fitted to the log (Scenario) can
// expect it.
//
// Diagnose is a pure function of the log and the options: no clock, no
// files; the same log gives the same report.
package diagnose

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/dedupsim/dedupsim/diagnose/progress"
	"github.com/dedupsim/dedupsim/sim/check"
)

// Kind names a finding; the checker's kinds are reused where the symptom is
// the same.
type Kind string

// The kinds, in report order.
const (
	QueryFailed          Kind = "query-failed"
	ConflictingCopies    Kind = "conflicting-copies"
	NoWatermark          Kind = "no-watermark"
	StateUnbounded       Kind = Kind(check.StateUnbounded)
	StateOverBound       Kind = Kind(check.StateOverBound)
	WatermarkStalled     Kind = Kind(check.WatermarkStalled)
	WatermarkJump        Kind = "watermark-jump"
	WatermarkRegressed   Kind = "watermark-regressed"
	LateDropped          Kind = Kind(check.LateDropped)
	BatchDurationGrowing Kind = "batch-duration-growing"
	TooFewPartitions     Kind = "state-partitions-too-few"
	DuplicatesDropped    Kind = "duplicates-dropped"
	EventTimeInKey       Kind = "event-time-in-key"
	// RealTimeAtLeastOnce: the query runs in real-time mode, whose rows
	// reach the sink before the batch commits (a crash re-sends them).
	RealTimeAtLeastOnce Kind = "real-time-at-least-once"
	// TableDuplicate: the checkpoint (--checkpoint) holds ids under several
	// event times, so their events reached the table more than once.
	TableDuplicate Kind = Kind(check.TableDuplicate)
	// CheckpointMismatch: the checkpoint given is not the log's query's, or
	// lacks batches the log has.
	CheckpointMismatch Kind = "checkpoint-mismatch"
	QueryRestarted     Kind = "query-restarted"
	BadLines           Kind = "bad-lines"
)

// Kinds lists every kind in report order.
var Kinds = []Kind{ConflictingCopies, CheckpointMismatch, QueryFailed, TableDuplicate, NoWatermark, StateUnbounded, StateOverBound, WatermarkStalled, WatermarkJump,
	WatermarkRegressed, LateDropped, BatchDurationGrowing, TooFewPartitions, DuplicatesDropped, EventTimeInKey, RealTimeAtLeastOnce, QueryRestarted, BadLines}

// Severity: a problem fails the diagnosis (exit 1); a risk is a failure
// the metrics cannot show, which the checkpoint can (--checkpoint); info
// is evidence.
type Severity string

// Severities.
const (
	Problem Severity = "problem"
	Risk    Severity = "risk"
	Info    Severity = "info"
)

// Options tune the rules.
type Options struct {
	// MemoryBudgetBytes: the time until memoryUsedBytes reaches it is
	// forecast (0: none).
	MemoryBudgetBytes int64
	// DelayMs is the watermark delay when known (--query); 0: estimated
	// from the records (running max event time minus the watermark).
	DelayMs int64
	// FutureToleranceMs: an eventTime.max further ahead of the batch's
	// trigger time is a future timestamp (default 1h).
	FutureToleranceMs int64
	// MaxRowsPerPartition and MaxBytesPerPartition bound one state
	// partition before state-partitions-too-few (defaults 5,000,000 keys
	// and 512 MiB of HDFS-store heap).
	MaxRowsPerPartition  int64
	MaxBytesPerPartition int64
	// RealTimeMs is the query's real-time trigger (--query with trigger:
	// {real_time: ...}); -1: --query runs micro-batches; 0: no --query,
	// told from the records (realTimeMode).
	RealTimeMs int64
}

// Defaults.
const (
	DefaultFutureToleranceMs    = 3_600_000
	DefaultMaxRowsPerPartition  = 5_000_000
	DefaultMaxBytesPerPartition = 512 << 20
	// growthFraction is the checker's rule: growth over the window above
	// this share of the window's mean is growth (sim/check).
	growthFraction = 0.2
)

func (o Options) withDefaults() Options {
	if o.FutureToleranceMs <= 0 {
		o.FutureToleranceMs = DefaultFutureToleranceMs
	}
	if o.MaxRowsPerPartition <= 0 {
		o.MaxRowsPerPartition = DefaultMaxRowsPerPartition
	}
	if o.MaxBytesPerPartition <= 0 {
		o.MaxBytesPerPartition = DefaultMaxBytesPerPartition
	}
	return o
}

// Finding is one diagnosis with its evidence and what to change.
type Finding struct {
	Kind     Kind     `json:"kind"`
	Severity Severity `json:"severity"`
	Query    string   `json:"query"`
	// Operator is the index in stateOperators (0: nearest the sink), -1
	// for the query as a whole.
	Operator int    `json:"operator"`
	Message  string `json:"message"`
	// Evidence are the figures behind it, one per line.
	Evidence []string `json:"evidence"`
	// FromBatch is the first batch the finding is seen at (-1: none).
	FromBatch int64  `json:"fromBatch"`
	Advice    string `json:"advice"`
	// Confidence is the trend fit's R² (state and duration growth), else 1.
	Confidence float64 `json:"confidence"`
}

// QueryReport is one query's diagnosis.
type QueryReport struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Runs    int       `json:"runs"`
	Batches int       `json:"batches"`
	Idle    int       `json:"idleRecords"`
	Rows    int64     `json:"inputRows"`
	Facts   Facts     `json:"facts"`
	Points  []Point   `json:"points"`
	Finding []Finding `json:"findings"`
}

// Facts are what the records say about the query's shape.
type Facts struct {
	Operators     []string `json:"operators"`
	Provider      string   `json:"stateStore,omitempty"`
	Partitions    int64    `json:"partitions"`
	HasWatermark  bool     `json:"watermark"`
	DelayMs       int64    `json:"delayMs"`
	DelayEstimate bool     `json:"delayEstimated"`
	TriggerMs     int64    `json:"triggerMs"`
	// RealTime: the query runs in Spark's real-time mode
	// (trigger(realTime=...)), given by --query or told from the records
	// (realTimeMode); RealTimeBatchMs is its batch length, the median
	// batchDuration after each run's first batch.
	RealTime        bool  `json:"realTime,omitempty"`
	RealTimeBatchMs int64 `json:"realTimeBatchMs,omitempty"`
	// InputRate is the mean inputRowsPerSecond of the data batches.
	InputRate float64 `json:"inputRowsPerSecond"`
	// DuplicateRate is duplicates dropped / rows in, over every batch.
	DuplicateRate float64 `json:"duplicateRate"`
	// KeyRatePerSec is new keys per second of event time.
	KeyRatePerSec float64 `json:"keyRatePerSecond"`
	// Plan is the dedup as the event log's SQL plan shows it (nil
	// without an event log).
	Plan *progress.Plan `json:"plan,omitempty"`
	// StateBytes is the measured bytes per key of operator 0
	// (memoryUsedBytes / numRowsTotal over its plateau batches, the figure
	// size --from-progress sizes with); nil when no batch has state rows.
	StateBytes *progress.StateBytes `json:"stateBytesPerKey,omitempty"`
}

// Point is one executed batch of operator 0, for the charts.
type Point struct {
	BatchID        int64   `json:"batchId"`
	Run            int     `json:"run"`
	AtMs           int64   `json:"atMs"`
	InputRows      int64   `json:"inputRows"`
	DurationMs     int64   `json:"durationMs"`
	RowsTotal      int64   `json:"numRowsTotal"`
	MemoryBytes    int64   `json:"memoryUsedBytes"`
	Dropped        int64   `json:"numRowsDroppedByWatermark"`
	Duplicates     int64   `json:"numDroppedDuplicateRows"`
	WatermarkMs    int64   `json:"watermarkMs"`
	HasWatermark   bool    `json:"hasWatermark"`
	MaxEventMs     int64   `json:"maxEventTimeMs"`
	HasMaxEvent    bool    `json:"hasMaxEventTime"`
	InputPerSecond float64 `json:"inputRowsPerSecond"`
}

// Report is the whole diagnosis.
type Report struct {
	Files      []progress.File    `json:"files"`
	Bad        []progress.BadLine `json:"badLines"`
	BadTotal   int                `json:"badLinesTotal"`
	Duplicates int                `json:"duplicateRecords"`
	Conflicts  int                `json:"conflictingCopies"`
	Queries    []QueryReport      `json:"queries"`
	Problems   int                `json:"problems"`
	// Risks are findings the metrics cannot show (Risk).
	Risks   int    `json:"risks"`
	Summary string `json:"summary"`
	// Verdict is the verdict line: "healthy" only with no problem and no
	// risk.
	Verdict string `json:"verdict"`
	// Checkpoint is the checkpoint joined (Join), nil without one.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// Applications are those of an event-log folder given whole.
	Applications []Application `json:"applications,omitempty"`
}

// Healthy: no problem finding.
func (r Report) Healthy() bool { return r.Problems == 0 }

// Find is the first finding of kind k in any query, or nil.
func (r Report) Find(k Kind) *Finding {
	for i := range r.Queries {
		for j := range r.Queries[i].Finding {
			if r.Queries[i].Finding[j].Kind == k {
				return &r.Queries[i].Finding[j]
			}
		}
	}
	return nil
}

// Diagnose judges every query of log.
func Diagnose(log *progress.Log, opt Options) Report {
	opt = opt.withDefaults()
	r := Report{Files: log.Files, Bad: log.Bad, BadTotal: log.BadTotal, Duplicates: log.Duplicates, Conflicts: log.ConflictTotal}
	for _, q := range log.Queries {
		qr := diagnoseQuery(q, opt)
		if n := log.ConflictsPerQuery[q.ID]; n > 0 {
			qr.Finding = append([]Finding{conflictFinding(q.ID, n, log.Conflicts)}, qr.Finding...)
		}
		r.Queries = append(r.Queries, qr)
	}
	if log.BadTotal > 0 && len(r.Queries) > 0 {
		f := Finding{Kind: BadLines, Severity: Info, Query: r.Queries[0].ID, Operator: -1, FromBatch: -1, Confidence: 1,
			Message: fmt.Sprintf("%d line(s) could not be read as progress records and were left out", log.BadTotal),
			Advice:  "check how the records were written: one JSON object per line, whole (a file still being written may end in a cut line)"}
		for _, b := range log.Bad {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s: %q", b.Where, b.Reason, b.Text))
		}
		r.Queries[0].Finding = append(r.Queries[0].Finding, f)
	}
	r.summarize()
	return r
}

// summarize counts the problems and risks and words the summary and the
// verdict (again after Join).
func (r *Report) summarize() {
	r.Problems, r.Risks = 0, 0
	var parts []string
	for _, q := range r.Queries {
		var ks, rs []string
		for _, f := range q.Finding {
			switch f.Severity {
			case Problem:
				r.Problems++
				ks = append(ks, string(f.Kind))
			case Risk:
				r.Risks++
				rs = append(rs, string(f.Kind))
			}
		}
		name := q.Name
		if name == "" {
			name = q.ID
		}
		switch {
		case len(ks) > 0:
			parts = append(parts, fmt.Sprintf("%s: %s", name, strings.Join(uniq(ks), ", ")))
		case len(rs) > 0:
			parts = append(parts, fmt.Sprintf("%s: no problem in the metrics over %s; %s they cannot show (%s)", name, plural(q.Batches, "batch"), plural(len(rs), "risk"), strings.Join(uniq(rs), ", ")))
		default:
			parts = append(parts, fmt.Sprintf("%s: healthy over %s", name, plural(q.Batches, "batch")))
		}
	}
	r.Summary = strings.Join(parts, "; ")
	switch {
	case r.Problems > 0:
		r.Verdict = fmt.Sprintf("%s: %s", plural(r.Problems, "problem"), r.Summary)
	case r.Risks > 0:
		r.Verdict = fmt.Sprintf("no problem in the metrics; %s they cannot show (%s)", plural(r.Risks, "risk"), r.Summary)
	default:
		r.Verdict = fmt.Sprintf("healthy (%s)", r.Summary)
	}
}

// plural is n and what, with an s (es after ch, s, x) for any n but 1.
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "ch") || strings.HasSuffix(what, "s") || strings.HasSuffix(what, "x") {
		return fmt.Sprintf("%d %ses", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// conflictFinding: copies of one executed batch that differ. Spark writes
// one progress per executed batch of a run, so the inputs contradict each
// other and no verdict over them can be trusted: a problem, naming both
// copies. The copy judged is chosen by content (progress.Conflict), so the
// report does not depend on the order of the inputs.
func conflictFinding(id string, n int, all []progress.Conflict) Finding {
	f := Finding{Kind: ConflictingCopies, Severity: Problem, Query: id, Operator: -1, FromBatch: -1, Confidence: 1,
		Message: fmt.Sprintf("%d executed batch(es) have two copies with different figures (same query id, run id and batch id): the inputs contradict each other", n),
		Advice:  "give only the logs of this query's own runs: a hand-edited log, or logs of two checkpoints copied together under one query id, make every other finding doubtful"}
	for _, c := range all {
		if c.ID != id {
			continue
		}
		if f.FromBatch < 0 || c.BatchID < f.FromBatch {
			f.FromBatch = c.BatchID
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("run %s batch %d: %s %s at %s, %s at %s", c.RunID, c.BatchID, c.Field, c.A, c.WhereA, c.B, c.WhereB))
	}
	if len(f.Evidence) < n {
		f.Evidence = append(f.Evidence, fmt.Sprintf("(%d more not listed)", n-len(f.Evidence)))
	}
	return f
}

// series is one query's executed batches in order, with the run index.
type series struct {
	// recs point into the log's records (a year of triggers is a million
	// records: they are not copied).
	recs []*progress.Progress
	run  []int32
	// firstOfRun marks a run's first batch (its planning skews durations).
	firstOfRun []bool
	q          progress.Query
	opt        Options
	facts      Facts
	out        []Finding
}

func diagnoseQuery(q progress.Query, opt Options) QueryReport {
	s := &series{q: q, opt: opt}
	qr := QueryReport{ID: q.ID, Name: q.Name, Runs: len(q.Runs)}
	for ri, run := range q.Runs {
		first := true
		for i := range run.Records {
			p := &run.Records[i]
			if p.Idle {
				qr.Idle++
				continue
			}
			s.recs = append(s.recs, p)
			s.run = append(s.run, int32(ri))
			s.firstOfRun = append(s.firstOfRun, first)
			first = false
			qr.Rows += p.NumInputRows
		}
	}
	qr.Batches = len(s.recs)
	s.facts = s.shape()
	s.facts.RealTime, s.facts.RealTimeBatchMs = s.realTimeMode()
	if sb, ok := progress.MeasureStateBytes(s.recs); ok {
		s.facts.StateBytes = &sb
	}
	qr.Facts = s.facts
	qr.Points = s.points()
	s.failed()
	s.regressed()
	s.watermark()
	for i := range s.facts.Operators {
		s.operator(i)
	}
	if !s.facts.RealTime {
		s.durations()
	}
	s.realTime()
	s.restarts()
	sort.SliceStable(s.out, func(i, j int) bool { return kindIndex(s.out[i].Kind) < kindIndex(s.out[j].Kind) })
	qr.Finding = s.out
	return qr
}

func kindIndex(k Kind) int {
	for i, x := range Kinds {
		if x == k {
			return i
		}
	}
	return len(Kinds)
}

func (s *series) add(f Finding) {
	f.Query = s.q.ID
	if f.Confidence == 0 {
		f.Confidence = 1
	}
	s.out = append(s.out, f)
}

// shape gathers the facts: operators, store, partitions, watermark, delay.
func (s *series) shape() Facts {
	var f Facts
	var rates []float64
	var rows, dups, updated int64
	var minEv, maxEv int64 = math.MaxInt64, math.MinInt64
	for k, p := range s.recs {
		for i, op := range p.StateOperators {
			if i >= len(f.Operators) {
				f.Operators = append(f.Operators, op.OperatorName)
			}
			if pr := op.Provider(); pr != "" {
				f.Provider = pr
			}
			f.Partitions = max(f.Partitions, op.NumShufflePartitions)
		}
		f.HasWatermark = f.HasWatermark || p.EventTime.HasWatermark
		if p.NumInputRows > 0 {
			if p.InputRowsPerSecond >= 0 && !s.firstOfRun[k] {
				rates = append(rates, p.InputRowsPerSecond)
			}
			rows += p.NumInputRows
			if len(p.StateOperators) > 0 {
				if d := p.StateOperators[0].DroppedDuplicates(); d > 0 {
					dups += d
				}
				updated += p.StateOperators[0].NumRowsUpdated
			}
		}
		// Event times beyond the future tolerance (a skewed producer) are
		// left out of the span, or one row a year ahead would make the key
		// rate nil.
		limit := p.TimestampMs + s.opt.FutureToleranceMs
		if p.EventTime.HasMin && p.EventTime.MinMs <= limit {
			minEv = min(minEv, p.EventTime.MinMs)
		}
		if p.EventTime.HasMax && p.EventTime.MaxMs <= limit {
			maxEv = max(maxEv, p.EventTime.MaxMs)
		}
	}
	f.InputRate = mean(rates)
	if rows > 0 {
		f.DuplicateRate = float64(dups) / float64(rows)
	}
	if maxEv > minEv {
		f.KeyRatePerSec = float64(updated) / (float64(maxEv-minEv) / 1000)
	}
	f.DelayMs, f.DelayEstimate = s.opt.DelayMs, false
	f.Plan = s.q.Plan
	if f.DelayMs == 0 && f.Plan != nil && f.Plan.HasDelay {
		f.DelayMs = f.Plan.DelayMs
	}
	if f.DelayMs == 0 && f.HasWatermark {
		f.DelayMs, f.DelayEstimate = s.estimateDelay(), true
	}
	f.TriggerMs = s.medianGap()
	return f
}

// estimateDelay: the watermark is max event time seen minus the delay,
// applied from the next batch (§6.3); the smallest gap at a
// watermark move is the delay (under min of several inputs, gaps are
// larger). 0 when the watermark never moved.
func (s *series) estimateDelay() int64 {
	best := int64(-1)
	var maxSeen int64 = math.MinInt64
	prevWM := int64(math.MinInt64)
	for _, p := range s.recs {
		if p.EventTime.HasWatermark && prevWM != math.MinInt64 && p.EventTime.WatermarkMs > prevWM && maxSeen != math.MinInt64 {
			if d := maxSeen - p.EventTime.WatermarkMs; d >= 0 && (best < 0 || d < best) {
				best = d
			}
		}
		if p.EventTime.HasWatermark {
			prevWM = p.EventTime.WatermarkMs
		}
		if p.EventTime.HasMax {
			maxSeen = max(maxSeen, p.EventTime.MaxMs)
		}
	}
	return max(best, 0)
}

// medianGap is the median time between the starts of consecutive data
// batches of one run: the trigger interval as run.
func (s *series) medianGap() int64 {
	var gaps []int64
	prev := -1
	for i, p := range s.recs {
		if p.NumInputRows == 0 {
			continue
		}
		if prev >= 0 && s.run[prev] == s.run[i] {
			gaps = append(gaps, p.TimestampMs-s.recs[prev].TimestampMs)
		}
		prev = i
	}
	if len(gaps) == 0 {
		return 0
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	return gaps[len(gaps)/2]
}

func (s *series) points() []Point {
	var out []Point
	for i, p := range s.recs {
		pt := Point{BatchID: p.BatchID, Run: int(s.run[i]), AtMs: p.TimestampMs, InputRows: p.NumInputRows,
			DurationMs: p.BatchDurationMs, InputPerSecond: p.InputRowsPerSecond,
			WatermarkMs: p.EventTime.WatermarkMs, HasWatermark: p.EventTime.HasWatermark,
			MaxEventMs: p.EventTime.MaxMs, HasMaxEvent: p.EventTime.HasMax}
		if len(p.StateOperators) > 0 {
			op := p.StateOperators[0]
			pt.RowsTotal, pt.MemoryBytes, pt.Dropped = op.NumRowsTotal, op.MemoryUsedBytes, op.NumRowsDroppedByWatermark
			pt.Duplicates = max(op.DroppedDuplicates(), 0)
		}
		out = append(out, pt)
	}
	return out
}

func uniq(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

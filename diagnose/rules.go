package diagnose

import (
	"fmt"
	"math"
	"time"

	"github.com/dedupsim/dedupsim/internal/duration"
	"github.com/dedupsim/dedupsim/sim/check"
)

// The seeds' advice each finding cites (the seed articles the
// project was built from; docs/incidents.md quotes the same advice).
const (
	adviceWatermark = `add .withWatermark("<event time>", "<delay>") BEFORE the dedup and either put the event-time ` +
		`column in the dropDuplicates keys or use dropDuplicatesWithinWatermark(keys) (seed 000, "What to do next" 3: ` +
		`"Never use either without a watermark on an unbounded key space"; seed 004, Step 3)`
	adviceRocksDB = `set spark.sql.streaming.stateStore.providerClass to the RocksDB provider with ` +
		`spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled=true (seed 004, Step 5: ` +
		`"Default to RocksDB with changelog checkpointing for any non-trivial state"); a new checkpoint is needed`
	adviceFuture = `filter impossible timestamps (e.g. event time more than 1 hour ahead of current_timestamp()) BEFORE ` +
		`withWatermark (seed 000, "Clock-skewed producers": "Filter impossible timestamps before withWatermark"; ` +
		`seed 004: "Validate event-time quality (no future timestamps) before the watermark"); the watermark never goes ` +
		`back, so the checkpoint must be reset to undo the jump`
	adviceStall = `a watermark follows the slowest input under spark.sql.streaming.multipleWatermarkPolicy=min (the default): ` +
		`find the quiet input, or set the policy to max if its late rows may be dropped (seed 000, "Stalled watermark"; ` +
		`seed 004, Step 2); "Check the watermark in progress reports, not just throughput"`
	adviceLate = `set the watermark delay above the largest gap between copies of an event (measure it with dedupsim analyze), ` +
		`and catch the tail at the sink with a MERGE (seed 000, "Late drops": "A non-zero numRowsDroppedByWatermark means ` +
		`real events were discarded as too late ... Alert on it as a rate")`
	adviceRestamp = `if producers stamp the event time anew on every retry, copies are different keys and pass: use ` +
		`dropDuplicatesWithinWatermark(keys without the event time) (seed 000, "Event time in the key, different per retry"); ` +
		`diagnose --checkpoint DIR (the query's checkpoint) looks in the state for ids held under several event times`
	adviceDuration = `eviction scans the whole store every batch, so batch time tracks state size: bound the state ` +
		`(a watermark, a shorter delay) and move it off the heap (seed 004, Symptoms and Step 5)`
	advicePartitions = `spark.sql.shuffle.partitions sets the state partitions and is pinned by the checkpoint: ` +
		`"Too few gives huge partitions; it can't be changed without a new checkpoint" (seed 004, Step 5); size it as ` +
		`rate x retention x bytes per key / partitions (seed 000, "Worked example"; dedupsim size)`
)

func (s *series) failed() {
	for _, r := range s.q.Runs {
		if r.Exception == "" {
			continue
		}
		last := int64(-1)
		if n := len(r.Records); n > 0 {
			last = r.Records[n-1].BatchID
		}
		s.add(Finding{Kind: QueryFailed, Severity: Problem, Operator: -1, FromBatch: last,
			Message:  fmt.Sprintf("run %s stopped with an exception after batch %d", r.RunID, last),
			Evidence: []string{"exception: " + firstLine(r.Exception)},
			Advice:   "a batch that failed after the sink write is re-run on restart with the same batch id: make the sink idempotent per batch id (seed 000, txnAppId/txnVersion or MERGE)"})
	}
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

// opSeries is one operator's figures over the executed batches.
type opSeries struct {
	xs, total, mem                 []float64
	removed, dropped, dups, input  int64
	updated                        int64
	batches                        []int64
	lastTotal, lastMem, firstTotal int64
	partitions                     int64
	name, provider                 string
	firstDrop                      int64
	maxDrop                        int64
	dropBatches                    int
	dupBatches, maxDup             int64
}

func (s *series) op(i int) opSeries {
	o := opSeries{firstDrop: -1, firstTotal: -1}
	t0 := int64(0)
	if len(s.recs) > 0 {
		t0 = s.recs[0].TimestampMs
	}
	for _, p := range s.recs {
		if i >= len(p.StateOperators) {
			continue
		}
		op := p.StateOperators[i]
		o.name = op.OperatorName
		if pr := op.Provider(); pr != "" {
			o.provider = pr
		}
		o.xs = append(o.xs, float64(p.TimestampMs-t0)/1000)
		o.total = append(o.total, float64(op.NumRowsTotal))
		o.mem = append(o.mem, float64(op.MemoryUsedBytes))
		o.batches = append(o.batches, p.BatchID)
		if o.firstTotal < 0 {
			o.firstTotal = op.NumRowsTotal
		}
		o.lastTotal, o.lastMem = op.NumRowsTotal, op.MemoryUsedBytes
		o.partitions = max(o.partitions, op.NumShufflePartitions)
		o.removed += op.NumRowsRemoved
		o.updated += op.NumRowsUpdated
		o.input += p.NumInputRows
		if d := op.NumRowsDroppedByWatermark; d > 0 {
			o.dropped += d
			o.dropBatches++
			o.maxDrop = max(o.maxDrop, d)
			if o.firstDrop < 0 {
				o.firstDrop = p.BatchID
			}
		}
		if d := op.DroppedDuplicates(); d > 0 {
			o.dups += d
			o.dupBatches++
			o.maxDup = max(o.maxDup, d)
		}
	}
	return o
}

func (s *series) operator(i int) {
	o := s.op(i)
	if len(o.xs) == 0 {
		return
	}
	name := fmt.Sprintf("operator %d (%s)", i, o.name)
	isDedup := o.name == "dedupe" || o.name == "dedupeWithinWatermark"
	growing := o.lastTotal > o.firstTotal
	if isDedup && !s.facts.HasWatermark && o.removed == 0 {
		sev, msg := Info, fmt.Sprintf("%s has no watermark and never removed a key, but its state did not grow (%d keys): a bounded key space", name, o.lastTotal)
		if growing {
			sev = Problem
			msg = fmt.Sprintf("%s deduplicates without a watermark: no record has eventTime.watermark and no key was ever removed, so Spark keeps every key forever (numRowsTotal %s -> %s over %d batches)",
				name, num(o.firstTotal), num(o.lastTotal), len(o.xs))
		}
		s.add(Finding{Kind: NoWatermark, Severity: sev, Operator: i, FromBatch: o.batches[0], Message: msg,
			Evidence: []string{"eventTime has no watermark key in any of the records", fmt.Sprintf("numRowsRemoved = 0 in all %d batches", len(o.xs))},
			Advice:   adviceWatermark})
	}
	s.stateGrowth(i, name, o)
	s.overBound(i, name, o)
	if o.dropped > 0 {
		s.lateDrops(i, name, o)
	}
	s.partitions(i, name, o)
	if o.dups > 0 || (isDedup && o.input > 0) {
		share := 0.0
		if o.input > 0 {
			share = float64(o.dups) / float64(o.input)
		}
		s.add(Finding{Kind: DuplicatesDropped, Severity: Info, Operator: i, FromBatch: -1,
			Message: fmt.Sprintf("%s dropped %s duplicate rows (%.2f%% of %s rows in), in %d of %d batches, at most %s in one batch",
				name, num(o.dups), 100*share, num(o.input), o.dupBatches, len(o.xs), num(o.maxDup)),
			Evidence: []string{"customMetrics.numDroppedDuplicateRows summed over the batches"},
			Advice:   "none needed: this is the dedup working; a sudden change of this rate is a producer change worth a look"})
	}
	if o.name == "dedupe" && s.facts.HasWatermark && o.removed > 0 {
		s.add(Finding{Kind: EventTimeInKey, Severity: Risk, Operator: i, FromBatch: -1,
			Message: fmt.Sprintf("%s evicts keys as the watermark passes (%s removed), so the event-time column is in its key: copies are duplicates only when their event times are equal, and a retry re-stamped with a new event time is a new key that reaches the table again, which no metric counts", name, num(o.removed)),
			Evidence: []string{"operatorName dedupe with eventTime.watermark and numRowsRemoved > 0",
				"numDroppedDuplicateRows counts only copies with equal event times: re-stamped copies are emitted and counted as new rows"},
			Advice: s.restampAdvice()})
	}
}

// restampAdvice is adviceRestamp, or, in real-time mode (which refuses
// dropDuplicatesWithinWatermark), what real-time mode leaves.
func (s *series) restampAdvice() string {
	if !s.facts.RealTime {
		return adviceRestamp
	}
	return `if producers stamp the event time anew on every retry, copies are different keys and pass; real-time mode (Spark 4.3) ` +
		`does not run dropDuplicatesWithinWatermark (STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST): keep the event time ` +
		`out of the key (the state then grows with the keys), dedupe by id where the output topic is read, or run micro-batches with ` +
		`dropDuplicatesWithinWatermark (seed 000, "Event time in the key, different per retry"); diagnose --checkpoint DIR looks in the ` +
		`state for ids held under several event times`
}

// stateGrowth is the checker's state-unbounded rule on the log, with the
// window cut by batch count rather than time (a run's first batch can take
// as long as ten others: planning, JIT): over the second half of the
// batches, the least-squares growth exceeds 20% of the window's mean, the
// last quarter's max exceeds the second quarter's, and the fit explains at
// least half the variance (R² >= 0.5: a sawtooth of data and no-data
// batches around a plateau is not growth).
// minConfidence is the R² a growth trend needs before it is a finding.
const minConfidence = 0.5

func (s *series) stateGrowth(i int, name string, o opSeries) {
	n := len(o.xs)
	if n < 4 {
		return
	}
	wx, wy, wm := o.xs[n/2:], o.total[n/2:], o.mem[n/2:]
	secondQ, lastQ := o.total[n/4:n/2], o.total[n-max(1, n/4):]
	if len(wx) < 3 {
		return
	}
	if len(secondQ) == 0 {
		secondQ = o.total[:n/2]
	}
	f := linear(wx, wy)
	width := wx[len(wx)-1] - wx[0]
	if f.slope*width <= growthFraction*mean(wy) || maxOf(lastQ) <= maxOf(secondQ) || f.r2 < minConfidence {
		return
	}
	ev := []string{
		fmt.Sprintf("numRowsTotal %s -> %s; over the second half +%.1f keys/s (least squares, %s)", num(o.firstTotal), num(o.lastTotal), f.slope, fitText(f.r2, len(wx))),
		fmt.Sprintf("numRowsRemoved summed: %s", num(o.removed)),
	}
	mf := linear(wx, wm)
	if mf.slope > 0 {
		ev = append(ev, fmt.Sprintf("memoryUsedBytes %s, +%s/s (%s)", bytesText(o.lastMem), bytesText(int64(mf.slope)), fitText(mf.r2, len(wx))))
		if b := s.opt.MemoryBudgetBytes; b > 0 {
			if o.lastMem >= b {
				ev = append(ev, fmt.Sprintf("memoryUsedBytes is already over the budget of %s", bytesText(b)))
			} else {
				eta := time.Duration(float64(b-o.lastMem) / mf.slope * float64(time.Second))
				if eta > time.Hour {
					eta = eta.Round(time.Minute)
				} else {
					eta = eta.Round(time.Second)
				}
				ev = append(ev, fmt.Sprintf("at this rate the budget of %s is reached in %s (after the last record)", bytesText(b), check.Dur(eta.Milliseconds())))
			}
		}
	}
	advice := adviceWatermark
	if s.facts.HasWatermark {
		advice = "the watermark does not evict: check that it advances (watermark-stalled) and, for dropDuplicates, that the event-time column is in the keys (seed 000, Monitoring: \"A line that keeps rising means eviction is not happening\")"
	}
	if o.provider == "hdfs" {
		advice += "; meanwhile " + adviceRocksDB
	}
	s.add(Finding{Kind: StateUnbounded, Severity: Problem, Operator: i, FromBatch: o.batches[0], Confidence: f.r2,
		Message:  fmt.Sprintf("%s: state keeps growing, %s keys now, +%.1f keys/s over the second half (%s)", name, num(o.lastTotal), f.slope, fitSummary(f.r2, len(wx))),
		Evidence: append(ev, fewPoints(len(wx))...), Advice: advice})
}

// overBound: numRowsTotal above new keys per second of event time x
// retention x 1.5 (the checker's state-over-bound, with the rate measured
// from the log: retention is the delay for dropDuplicates, twice the delay
// for dropDuplicatesWithinWatermark, plus a trigger).
func (s *series) overBound(i int, name string, o opSeries) {
	if !s.facts.HasWatermark || s.facts.DelayMs <= 0 || s.facts.KeyRatePerSec <= 0 || len(o.xs) < 4 {
		return
	}
	evicting := o.name == "dedupeWithinWatermark" || (o.name == "dedupe" && o.removed > 0)
	if !evicting {
		return
	}
	ret := s.facts.DelayMs + s.facts.TriggerMs
	if o.name == "dedupeWithinWatermark" {
		ret += s.facts.DelayMs
	}
	bound := s.facts.KeyRatePerSec * float64(ret) / 1000 * (1 + check.DefaultStateMargin)
	over := 0
	from := int64(-1)
	for k, t := range o.total {
		if t > bound {
			over++
			if from < 0 {
				from = o.batches[k]
			}
		}
	}
	if float64(o.lastTotal) <= bound || bound < 1 {
		return
	}
	est := ""
	if s.facts.DelayEstimate {
		est = " (estimated from the records: max event time minus watermark)"
	}
	s.add(Finding{Kind: StateOverBound, Severity: Problem, Operator: i, FromBatch: from,
		Message: fmt.Sprintf("%s holds %s keys, above rate x retention = %s keys (x1.5 margin) in %d batches", name, num(o.lastTotal), num(int64(bound)), over),
		Evidence: []string{
			fmt.Sprintf("new keys per second of event time: %.2f (numRowsUpdated over the event-time span)", s.facts.KeyRatePerSec),
			fmt.Sprintf("retention %s = delay %s%s + trigger %s", check.Dur(ret), check.Dur(s.facts.DelayMs), est, check.Dur(s.facts.TriggerMs)),
		},
		Advice: "state should plateau at about arrival rate x retention (seed 000, Monitoring): find what holds keys past their expiry (a stalled watermark, an event-time column missing from the key)"})
}

func (s *series) lateDrops(i int, name string, o opSeries) {
	share := 0.0
	if o.input > 0 {
		share = float64(o.dropped) / float64(o.input)
	}
	var per float64
	if n := len(o.xs); n > 1 && o.xs[n-1] > o.xs[0] {
		per = float64(o.dropped) / (o.xs[n-1] - o.xs[0]) * 60
	}
	advice := adviceLate
	if s.has(WatermarkJump) {
		advice = adviceFuture
	}
	s.add(Finding{Kind: LateDropped, Severity: Problem, Operator: i, FromBatch: o.firstDrop,
		Message: fmt.Sprintf("%s dropped %s rows as late (%.1f%% of %s rows in), from batch %d, in %d batches",
			name, num(o.dropped), 100*share, num(o.input), o.firstDrop, o.dropBatches),
		Evidence: []string{
			fmt.Sprintf("numRowsDroppedByWatermark: %s in total, at most %s in one batch, %.1f rows per minute of trigger time", num(o.dropped), num(o.maxDrop), per),
		},
		Advice: advice})
}

func (s *series) has(k Kind) bool {
	for _, f := range s.out {
		if f.Kind == k {
			return true
		}
	}
	return false
}

func (s *series) partitions(i int, name string, o opSeries) {
	if o.partitions <= 0 {
		return
	}
	rows := o.lastTotal / o.partitions
	var ev []string
	if rows > s.opt.MaxRowsPerPartition {
		ev = append(ev, fmt.Sprintf("%s keys per partition (numRowsTotal %s / numShufflePartitions %d), above %s", num(rows), num(o.lastTotal), o.partitions, num(s.opt.MaxRowsPerPartition)))
	}
	if o.provider == "hdfs" && o.lastMem/o.partitions > s.opt.MaxBytesPerPartition {
		ev = append(ev, fmt.Sprintf("%s of heap per partition (memoryUsedBytes %s / %d), above %s", bytesText(o.lastMem/o.partitions), bytesText(o.lastMem), o.partitions, bytesText(s.opt.MaxBytesPerPartition)))
	}
	if len(ev) == 0 {
		return
	}
	advice := advicePartitions
	if o.provider == "hdfs" {
		advice += "; and " + adviceRocksDB
	}
	s.add(Finding{Kind: TooFewPartitions, Severity: Problem, Operator: i, FromBatch: o.batches[len(o.batches)-1],
		Message:  fmt.Sprintf("%s: %d state partitions are too few for %s keys", name, o.partitions, num(o.lastTotal)),
		Evidence: ev, Advice: advice})
}

// regressed: within one run the watermark never goes back. Spark's
// WatermarkTracker.updateWatermark only ever raises the global watermark,
// and a batch runs with (and its progress reports as eventTime.watermark)
// the batchWatermarkMs of its offsets/N, taken from the tracker; so among
// one run's executed batches in batch order it is non-decreasing. A record
// below an earlier batch's watermark is a corrupt or hand-edited log, or
// two logs mixed under one run id: a problem naming both records. Across
// runs nothing is assumed (a checkpoint can be rebuilt under the same id).
func (s *series) regressed() {
	var ev []string
	from, n := int64(-1), 0
	prev := -1
	for k, p := range s.recs {
		if !p.EventTime.HasWatermark {
			continue
		}
		if prev >= 0 && s.run[prev] != s.run[k] {
			prev = -1
		}
		if prev >= 0 && p.EventTime.WatermarkMs < s.recs[prev].EventTime.WatermarkMs {
			q := s.recs[prev]
			n++
			if from < 0 {
				from = p.BatchID
			}
			if len(ev) < 10 {
				ev = append(ev, fmt.Sprintf("batch %d (%s) ran with watermark %s, below batch %d's %s (%s)",
					p.BatchID, p.Where, iso(p.EventTime.WatermarkMs), q.BatchID, iso(q.EventTime.WatermarkMs), q.Where))
			}
			continue // the higher watermark stays the one to compare with
		}
		prev = k
	}
	if n == 0 {
		return
	}
	s.add(Finding{Kind: WatermarkRegressed, Severity: Problem, Operator: -1, FromBatch: from,
		Message:  fmt.Sprintf("the watermark goes back within a run in %d batch(es), which Spark never does (it only raises it): the log is corrupt, edited, or two logs share a run id", n),
		Evidence: ev,
		Advice:   "give the query's own, unedited progress records; the other findings over these records are doubtful"})
}

// watermark: jumps (a future event time drags it) and stalls (it stands
// still while data flows and the max event time moves on).
func (s *series) watermark() {
	if !s.facts.HasWatermark {
		return
	}
	s.jump()
	s.stall()
}

func (s *series) jump() {
	tol := s.opt.FutureToleranceMs
	for k, p := range s.recs {
		if !p.EventTime.HasMax || p.EventTime.MaxMs-p.TimestampMs <= tol {
			continue
		}
		ev := []string{fmt.Sprintf("batch %d: eventTime.max %s, trigger time %s: %s ahead (tolerance %s)",
			p.BatchID, iso(p.EventTime.MaxMs), iso(p.TimestampMs), check.Dur(p.EventTime.MaxMs-p.TimestampMs), check.Dur(tol))}
		for _, q := range s.recs[k+1:] {
			if q.EventTime.HasWatermark && q.EventTime.WatermarkMs > p.TimestampMs {
				ev = append(ev, fmt.Sprintf("batch %d ran with watermark %s, ahead of its own trigger time %s", q.BatchID, iso(q.EventTime.WatermarkMs), iso(q.TimestampMs)))
				break
			}
		}
		s.add(Finding{Kind: WatermarkJump, Severity: Problem, Operator: -1, FromBatch: p.BatchID,
			Message:  fmt.Sprintf("a future event time at batch %d (%s ahead of the trigger time) drags the watermark forward for good", p.BatchID, check.Dur(p.EventTime.MaxMs-p.TimestampMs)),
			Evidence: ev, Advice: adviceFuture})
		return
	}
}

// stall: a streak of data batches that ran with one watermark while the
// running max event time moved on by more than the delay (at least 3
// batches): what holds the watermark is not the data of this query's
// fastest input.
func (s *series) stall() {
	delay := max(s.facts.DelayMs, 1000)
	var maxSeen int64 = math.MinInt64
	start, startMax := -1, int64(0)
	best := struct{ from, to int }{-1, -1}
	var bestAdvance int64
	for k, p := range s.recs {
		if !p.EventTime.HasWatermark || p.NumInputRows == 0 {
			continue
		}
		if start >= 0 && p.EventTime.WatermarkMs != s.recs[start].EventTime.WatermarkMs {
			start = -1
		}
		if start < 0 {
			start, startMax = k, maxSeen
		}
		if p.EventTime.HasMax {
			maxSeen = max(maxSeen, p.EventTime.MaxMs)
		}
		if startMax == math.MinInt64 {
			startMax = maxSeen
		}
		adv := maxSeen - startMax
		if k-start >= 2 && adv > delay && adv > bestAdvance {
			best.from, best.to, bestAdvance = start, k, adv
		}
	}
	if best.from < 0 {
		return
	}
	a, b := s.recs[best.from], s.recs[best.to]
	var rows int64
	for _, p := range s.recs[best.from : best.to+1] {
		rows += p.NumInputRows
	}
	s.add(Finding{Kind: WatermarkStalled, Severity: Problem, Operator: -1, FromBatch: a.BatchID,
		Message: fmt.Sprintf("the watermark stood at %s from batch %d to batch %d (%s of trigger time) while %s rows arrived and the max event time moved on by %s",
			iso(a.EventTime.WatermarkMs), a.BatchID, b.BatchID, check.Dur(b.TimestampMs-a.TimestampMs), num(rows), check.Dur(bestAdvance)),
		Evidence: []string{
			fmt.Sprintf("eventTime.watermark = %s in every data batch %d..%d", iso(a.EventTime.WatermarkMs), a.BatchID, b.BatchID),
			fmt.Sprintf("running max eventTime.max: +%s over the stall, more than the delay %s", check.Dur(bestAdvance), check.Dur(s.facts.DelayMs)),
			fmt.Sprintf("sources in the query: %d", len(a.Sources)),
		},
		Advice: adviceStall})
}

// durations: batch duration growing over the run (each run's first batch
// left out: it plans the query).
func (s *series) durations() {
	var xs, ys []float64
	var batches []int64
	if len(s.recs) == 0 {
		return
	}
	t0 := s.recs[0].TimestampMs
	for k, p := range s.recs {
		if s.firstOfRun[k] || p.BatchDurationMs < 0 || p.NumInputRows == 0 {
			continue
		}
		xs = append(xs, float64(p.TimestampMs-t0)/1000)
		ys = append(ys, float64(p.BatchDurationMs))
		batches = append(batches, p.BatchID)
	}
	if len(xs) < 6 {
		return
	}
	f := linear(xs, ys)
	h := len(ys) / 2
	first, second := mean(ys[:h]), mean(ys[h:])
	growth := f.slope * (xs[len(xs)-1] - xs[0])
	if f.r2 < 0.5 || growth <= first || second < 2*first {
		return
	}
	s.add(Finding{Kind: BatchDurationGrowing, Severity: Problem, Operator: -1, FromBatch: batches[0], Confidence: f.r2,
		Message: fmt.Sprintf("batch duration grows: %s on average in the first half, %s in the second (+%s per minute, %s)",
			check.Dur(int64(first)), check.Dur(int64(second)), check.Dur(int64(f.slope*60)), fitSummary(f.r2, len(xs))),
		Evidence: append([]string{fmt.Sprintf("batchDuration (or durationMs.triggerExecution) of %d data batches, each run's first left out", len(xs))}, fewPoints(len(xs))...),
		Advice:   adviceDuration})
}

func (s *series) restarts() {
	if len(s.q.Runs) < 2 {
		return
	}
	var ev []string
	for k, r := range s.q.Runs {
		if len(r.Records) == 0 {
			continue
		}
		ev = append(ev, fmt.Sprintf("run %d: runId %s, batches %d..%d, started %s", k+1, r.RunID, r.Records[0].BatchID, r.Records[len(r.Records)-1].BatchID, iso(r.StartMs)))
	}
	s.add(Finding{Kind: QueryRestarted, Severity: Info, Operator: -1, FromBatch: -1,
		Message:  fmt.Sprintf("the query ran %d times on its checkpoint (a new runId each start)", len(s.q.Runs)),
		Evidence: ev,
		Advice:   "a restart re-runs an uncommitted batch with the same batch id: the sink must be idempotent per batch id (seed 000, txnAppId + txnVersion)"})
}

// minTrendPoints is how many batches a fitted trend needs before its R² is
// evidence: a straight line fits a handful of points closely whatever the
// state does next.
const minTrendPoints = 12

// fitText states a fit's R² with the points it rests on, and says when
// they are too few to mean much.
func fitText(r2 float64, n int) string {
	return fmt.Sprintf("R² %.2f over %d batches", r2, n)
}

// fitSummary is fitText for a finding's message: "only N batches: weak
// evidence" when they are too few.
func fitSummary(r2 float64, n int) string {
	if n < minTrendPoints {
		return fmt.Sprintf("R² %.2f over only %d batches: weak evidence", r2, n)
	}
	return fitText(r2, n)
}

// fewPoints is the evidence line of a trend over too few batches.
func fewPoints(n int) []string {
	if n >= minTrendPoints {
		return nil
	}
	return []string{fmt.Sprintf("only %d batches in the fit: under %d, a straight line fits almost any points closely, so an R² near 1 says little; let the query run longer and diagnose again", n, minTrendPoints)}
}

func iso(ms int64) string { return duration.Stamp(ms) }

func num(n int64) string {
	s := fmt.Sprint(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

func bytesText(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	v, u := float64(b), 0
	for v >= unit && u < 5 {
		v /= unit
		u++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[u-1])
}

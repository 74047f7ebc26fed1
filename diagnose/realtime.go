package diagnose

import (
	"fmt"
	"slices"
)

// Real-time mode (Spark 4.3's trigger(realTime=...), spark-semantics §18)
// seen in the progress records. Its batches run whether or not data
// arrived, each for the trigger's whole duration (at least
// spark.sql.streaming.realTimeMode.minBatchDuration, 5 s), back to back;
// rows reach the sink while the batch runs, before its offsets and
// commit.

// realTimeMinBatchMs is minBatchDuration's default.
const realTimeMinBatchMs = 5000

// realTimeMode tells real-time mode from the records, unless --query said
// so: every run of at least three batches has every batch last at least
// minBatchDuration, the lengths after the run's first batch within 30% of
// each other, and either a batch that read nothing and still lasted that
// long (a micro-batch without data only evicts state: it is short) or
// every batch starting where the one before ended (within a second).
// A micro-batch query slow enough to look like this has batch lengths
// that follow its input, not a trigger's duration.
func (s *series) realTimeMode() (bool, int64) {
	if s.opt.RealTimeMs < 0 {
		return false, 0 // --query says micro-batches
	}
	var lengths []int64
	median := func() int64 {
		if len(lengths) == 0 {
			return s.opt.RealTimeMs
		}
		slices.Sort(lengths)
		return lengths[len(lengths)/2]
	}
	runs := 0
	for i := 0; i < len(s.recs); {
		j := i
		for j < len(s.recs) && s.run[j] == s.run[i] {
			j++
		}
		run := s.recs[i:j]
		i = j
		if len(run) < 3 {
			continue
		}
		runs++
		lo, hi := int64(-1), int64(0)
		longEmpty, backToBack := false, true
		for k, p := range run {
			if p.BatchDurationMs < realTimeMinBatchMs {
				return s.opt.RealTimeMs > 0, median()
			}
			if k > 0 {
				lengths = append(lengths, p.BatchDurationMs)
				if lo < 0 || p.BatchDurationMs < lo {
					lo = p.BatchDurationMs
				}
				hi = max(hi, p.BatchDurationMs)
				gap := p.TimestampMs - run[k-1].TimestampMs - run[k-1].BatchDurationMs
				backToBack = backToBack && gap >= -1000 && gap <= 1000
			}
			longEmpty = longEmpty || p.NumInputRows == 0
		}
		if float64(hi) > 1.3*float64(lo) || !(longEmpty || backToBack) {
			return s.opt.RealTimeMs > 0, median()
		}
	}
	return s.opt.RealTimeMs > 0 || runs > 0, median()
}

// realTime is the real-time-at-least-once risk: no metric shows a row
// sent twice, but every crash before a batch's commit does it.
func (s *series) realTime() {
	if !s.facts.RealTime {
		return
	}
	evidence := []string{fmt.Sprintf("every batch lasts about %s (batchDuration), data or not, and starts as the one before ends: real-time mode's trigger", durText(s.facts.RealTimeBatchMs))}
	if s.opt.RealTimeMs > 0 {
		evidence = []string{fmt.Sprintf("--query sets trigger: {real_time: %s}", durText(s.opt.RealTimeMs))}
	}
	var most int64
	for _, p := range s.recs {
		most = max(most, p.NumInputRows)
	}
	evidence = append(evidence, "real-time mode writes offsets/N and commits/N after the batch's rows reached the sink; a restart plans the uncommitted batch again from the last commit (MicroBatchExecution, offsetLog.purgeAfter)")
	s.add(Finding{Kind: RealTimeAtLeastOnce, Severity: Risk, Operator: 0, FromBatch: -1,
		Message: fmt.Sprintf("the query runs in real-time mode: rows reach the sink as they are processed, before the batch's offsets and commit, so a crash sends every row of the batch in flight again (up to %s of input, at most %s rows in one batch here); Spark's Kafka sink is at-least-once, and no metric counts the copies",
			durText(s.facts.RealTimeBatchMs), num(most)),
		Evidence: evidence,
		Advice: "make the table absorb them: a MERGE on the dedup key where the topic is read (or a dedup there), or run micro-batches into an idempotent sink " +
			"(Spark's real-time mode guide, \"Fault Tolerance\"); dedupsim run real-time-kafka-sink-replay shows the copies a crash leaves"})
}

package reports

import (
	"fmt"
	"strconv"

	"github.com/dedupsim/dedupsim/internal/duration"
	"github.com/dedupsim/dedupsim/internal/intmath"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sim/check"
)

// badge colours the PASS/FAIL badge: green only when the expectations were
// met and every event is in the table exactly once.
func badge(r *result.Run) Tone {
	switch {
	case !r.Passed:
		return Bad
	case r.Report.Table.Exact() && r.Report.Verdict.ExactlyOnce:
		return Good
	}
	return Neutral
}

// expName is how a report names an expectation: the verdict's is the API
// contract (scenario field expect.exactly_once).
func expName(finding string) string {
	if finding == "exactly-once" {
		return "API contract kept (exactly_once)"
	}
	return finding
}

// isoMs renders an instant in ms as ISO-8601 UTC.
func isoMs(ms int64) string { return duration.Stamp(ms) }

// isoUs renders an instant in µs as ISO-8601 UTC.
func isoUs(us int64) string { return duration.StampMicros(us) }

// rel renders ms since the run's start as "+12.345s".
func rel(ms, startMs int64) string {
	d := ms - startMs
	s := strconv.FormatFloat(float64(d)/1000, 'f', -1, 64) + "s"
	if d >= 0 {
		s = "+" + s
	}
	return s
}

type findingView struct {
	check.Finding
	Examples []exampleView
}

type exampleView struct {
	check.Example
	Spread string
	Steps  []stepView
}

type stepView struct {
	Copy                         int
	Fault                        string
	Batch, Outcome               string
	EventTime, Appended, BatchAt stamp
	LateWatermark, Watermark     stamp
	InTable                      int
}

// stamp is an instant as seconds since the run's start and as ISO-8601.
type stamp struct{ Rel, ISO string }

func stampMs(ms, start int64) stamp { return stamp{rel(ms, start), isoMs(ms)} }

// findingViews renders the findings' examples for the page: each
// timeline with its times relative to the run's start and as ISO-8601, and
// the gap between the event's copies.
func findingViews(r *result.Run) []findingView {
	start := r.Report.Counts.StartMs
	var out []findingView
	for _, f := range r.Report.Findings {
		fv := findingView{Finding: f}
		for _, e := range f.Examples {
			ev := exampleView{Example: e, Spread: spread(e.Timeline)}
			for _, s := range e.Timeline {
				sv := stepView{Copy: s.Copy, Fault: s.Fault, Outcome: s.Outcome, InTable: s.InTable,
					EventTime: stamp{rel(intmath.FloorDiv(s.EventTimeUs, 1000), start), isoUs(s.EventTimeUs)},
					Appended:  stampMs(s.AppendedAtMs, start), Batch: "never read"}
				if s.BatchID >= 0 {
					sv.Batch = fmt.Sprint(s.BatchID)
					if s.Checkpoint > 0 {
						sv.Batch += fmt.Sprintf(" (checkpoint %d)", s.Checkpoint)
					}
					sv.BatchAt = stampMs(s.BatchAtMs, start)
					sv.LateWatermark, sv.Watermark = wmStamp(s.LateWatermarkMs, start), wmStamp(s.WatermarkMs, start)
				}
				ev.Steps = append(ev.Steps, sv)
			}
			fv.Examples = append(fv.Examples, ev)
		}
		out = append(out, fv)
	}
	return out
}

// wmStamp is a watermark; 0 is Spark's initial value, not an instant.
func wmStamp(ms, start int64) stamp {
	if ms <= 0 {
		return stamp{Rel: "not set yet", ISO: check.SparkTime(0)}
	}
	return stamp{rel(ms, start), check.SparkTime(ms)}
}

// spread states the gap between the first and the last copy of a timeline.
func spread(steps []check.Step) string {
	if len(steps) < 2 {
		return ""
	}
	lo, hi := steps[0], steps[0]
	for _, s := range steps {
		if s.AppendedAtMs < lo.AppendedAtMs {
			lo = s
		}
		if s.AppendedAtMs > hi.AppendedAtMs {
			hi = s
		}
	}
	if lo.Copy == hi.Copy {
		return ""
	}
	return fmt.Sprintf("copies %d and %d: appended %s apart, event times %s apart", lo.Copy, hi.Copy,
		check.Dur(hi.AppendedAtMs-lo.AppendedAtMs), gapDur(float64(hi.EventTimeUs-lo.EventTimeUs)/1000))
}

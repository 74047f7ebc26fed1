package diagnose

import (
	"fmt"
	"math"
	"strings"
)

// ScenarioHints are what the log cannot say and a QUERY.yaml can (the
// --query flag): the dedup keys, and the event-time column.
type ScenarioHints struct {
	Keys     []string
	TimeCol  string
	Policy   string
	Files    []string
	Sources  int
	Override bool
}

// reproduces is the checker's findings the emitted scenario expects for
// query q's problems: the root cause in the checker's vocabulary, in order
// (no watermark shows as state-unbounded; a stall as watermark-stalled with
// state-over-bound, since the simulated stall heals; a future timestamp or
// late retries as late-dropped; a watermark that evicts nothing as
// state-unbounded).
func reproduces(has func(Kind) bool) []string {
	var out []string
	switch {
	case has(NoWatermark):
		out = append(out, string(StateUnbounded))
	case has(WatermarkStalled):
		out = append(out, string(WatermarkStalled))
		if has(StateOverBound) || has(StateUnbounded) {
			out = append(out, string(StateOverBound))
		}
	case has(StateUnbounded):
		out = append(out, string(StateUnbounded))
	}
	if has(WatermarkJump) || has(LateDropped) {
		out = append(out, string(LateDropped))
	}
	return out
}

// Scenario is a scenario file (scenarios/README.md) fitted to query q of
// the report: the input rate from inputRowsPerSecond, the duplicate rate
// from numDroppedDuplicateRows, the API and watermark from the operator and
// eventTime, and the fault that explains each problem finding (no
// watermark, a quiet second input, a future-clock producer). Its expect
// block asks the simulator for the same findings (Reproduces), and for
// their absence when the query was healthy.
func Scenario(r Report, qi int, h ScenarioHints) (string, []string) {
	q := r.Queries[qi]
	f := q.Facts
	has := func(k Kind) bool {
		for _, x := range q.Finding {
			if x.Kind == k && x.Severity == Problem {
				return true
			}
		}
		return false
	}
	api := "dropDuplicates"
	if len(f.Operators) > 0 && f.Operators[0] == "dedupeWithinWatermark" {
		api = "dropDuplicatesWithinWatermark"
	}
	keys := h.Keys
	if len(keys) == 0 {
		keys = []string{"id"}
		if api == "dropDuplicates" && f.HasWatermark && hasKind(q, EventTimeInKey) {
			keys = []string{"id", "ts"}
		}
	}
	delay := roundDelay(f.DelayMs)
	trigger := max(1, int64(math.Round(float64(f.TriggerMs)/1000)))
	rate := math.Max(1, math.Min(200, math.Round(f.InputRate)))
	partitions := max(f.Partitions, 1)
	name := "diagnosed-" + slug(nameOf(q))
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\n", name)
	fmt.Fprintf(&b, "source: %s\n", yamlQuote("dedupsim diagnose "+strings.Join(h.Files, " ")+": "+r.Summary))
	b.WriteString("description: |\n")
	fmt.Fprintf(&b, "  Fitted to query %s (id %s) by dedupsim diagnose.\n\n", nameOf(q), q.ID)
	fmt.Fprintf(&b, "  %s; %d batches, %s rows in. Rates and sizes are scaled to a short\n", f.describe(), q.Batches, num(q.Rows))
	b.WriteString("  simulated run; the fault below is the one that explains the finding. Keep it under\n")
	b.WriteString("  scenarios/incidents/ with the fix applied and its expectation turned to absent.\n")
	b.WriteString("query:\n")
	stall := has(WatermarkStalled)
	nsrc := 1
	if stall || h.Sources > 1 {
		nsrc = 2
	}
	fmt.Fprintf(&b, "  dedup: {api: %s, keys: [%s]}\n", api, strings.Join(keys, ", "))
	switch {
	case !f.HasWatermark:
	case nsrc > 1:
		b.WriteString("  sources:\n")
		for _, s := range []string{"fast", "slow"} {
			fmt.Fprintf(&b, "    - name: %s\n      watermark: {column: ts, delay: %s}\n", s, delay)
		}
		policy := h.Policy
		if policy == "" {
			policy = "min"
		}
		fmt.Fprintf(&b, "  watermark_policy: %s\n", policy)
	default:
		fmt.Fprintf(&b, "  watermark: {column: ts, delay: %s}\n", delay)
	}
	fmt.Fprintf(&b, "  shuffle_partitions: %d\n  sink: {kind: table}\n", partitions)
	fmt.Fprintf(&b, "trigger_interval: %ds\nfault_phase: 2m\nheal_phase: 1m\n", trigger)
	b.WriteString("sources:\n")
	if nsrc > 1 && f.HasWatermark {
		fmt.Fprintf(&b, "  - name: fast\n    rate: {per_sec: %g}\n  - name: slow\n    rate: {per_sec: %g}\n", rate, math.Max(1, math.Round(rate/4)))
	} else {
		fmt.Fprintf(&b, "  - name: default\n    rate: {per_sec: %g}\n", rate)
		if !f.HasWatermark {
			b.WriteString("    keys: {kind: fresh}\n")
		}
	}
	var faults []string
	late := has(LateDropped) && !has(WatermarkJump)
	if f.DuplicateRate > 0 || late {
		// Late rows without a jump are copies that arrive after the
		// watermark passed them: retries further apart than the delay.
		gap := max(1, trigger)
		if late {
			gap = 3 * max(1, (f.DelayMs+999)/1000)
		}
		faults = append(faults, fmt.Sprintf("  producer-retry: {probability: %.4g, gap_ms: %ds}", math.Max(0.01, math.Min(0.5, f.DuplicateRate)), gap))
	}
	if stall {
		faults = append(faults, "  source-silence: {source: 1, start_frac: 0.2, duration_ms: 90s}")
	}
	if has(WatermarkJump) {
		faults = append(faults, "  future-timestamp: {producers_fraction: 0.01, ahead_ms: 365d}")
	}
	if len(faults) > 0 {
		b.WriteString("faults:\n" + strings.Join(faults, "\n") + "\n")
	}
	want := reproduces(has)
	b.WriteString("expect:\n  findings:\n")
	for _, ck := range want {
		fmt.Fprintf(&b, "    %s: present\n", ck)
	}
	if len(want) == 0 {
		for _, ck := range []string{string(StateUnbounded), string(WatermarkStalled), string(LateDropped)} {
			fmt.Fprintf(&b, "    %s: absent    # diagnose: healthy\n", ck)
		}
	}
	b.WriteString("    duplicate-emitted: absent\n")
	return b.String(), want
}

func hasKind(q QueryReport, k Kind) bool {
	for _, f := range q.Finding {
		if f.Kind == k {
			return true
		}
	}
	return false
}

// roundDelay is the delay in the scenario's notation, at least 1 second
// (a stalled or never-moved watermark gives no estimate: 10 seconds).
func roundDelay(ms int64) string {
	if ms <= 0 {
		return "10 seconds"
	}
	s := max(1, (ms+500)/1000)
	if s%60 == 0 {
		return fmt.Sprintf("%d minutes", s/60)
	}
	return fmt.Sprintf("%d seconds", s)
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		out = "query"
	}
	if len(out) > 60 {
		out = out[:60]
	}
	return out
}

func yamlQuote(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) > 300 {
		s = s[:300]
	}
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "'", "''") + "'"
}

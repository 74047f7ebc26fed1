package diagnose

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// ScenarioHints are what the log cannot say and a QUERY.yaml can (the
// --query flag): the dedup keys, the event-time column, the policy over
// several sources.
type ScenarioHints struct {
	Keys     []string
	TimeCol  string
	Policy   string
	Files    []string
	Sources  int
	Override bool
}

// MaxScenarioRate bounds the emitted scenario's rate (events per second):
// a faster query is scaled down to it (said in the description), so that
// the simulated run stays a few hundred thousand events.
const MaxScenarioRate = 10_000

// reproduces is the checker's findings the emitted scenario expects for
// query q's problems: the root cause in the checker's vocabulary, in order
// (no watermark shows as state-unbounded; a stall as watermark-stalled with
// state-over-bound, since the simulated stall heals; a future timestamp or
// late retries as late-dropped; a watermark that evicts nothing as
// state-unbounded; ids under several event times in the checkpoint as
// table-duplicate).
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
	if has(TableDuplicate) {
		out = append(out, string(TableDuplicate))
	}
	return out
}

// world is the query as the user wrote it, from the best source there is
// for each part: --query, then the checkpoint (its key schema, pinned
// partitions and policy), then the event log's SQL plan, then the
// progress records (the operator's name, an estimated delay).
type world struct {
	api, timeCol, policy string
	keys                 []string
	delayMs              int64
	partitions           int64
	from                 []string // where the columns came from
}

var simColumn = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

func fitWorld(r Report, q QueryReport, h ScenarioHints, has func(Kind) bool) world {
	f := q.Facts
	w := world{api: "dropDuplicates", delayMs: f.DelayMs, partitions: max(f.Partitions, 1), policy: h.Policy}
	if len(f.Operators) > 0 && f.Operators[0] == "dedupeWithinWatermark" {
		w.api = "dropDuplicatesWithinWatermark"
	}
	var ck *CheckpointOperator
	if c := r.Checkpoint; c != nil && c.QueryID == q.ID {
		if w.policy == "" {
			w.policy = c.Policy
		}
		if len(c.Operators) > 0 {
			ck = &c.Operators[0]
			if ck.Partitions > 0 {
				w.partitions = int64(ck.Partitions)
			}
		}
	}
	switch {
	case len(h.Keys) > 0:
		w.keys, w.timeCol = h.Keys, h.TimeCol
		w.from = append(w.from, "--query")
	case ck != nil && len(ck.KeyColumns) > 0:
		w.keys = ck.KeyColumns
		if ck.EventTime != "expiresAtMicros" {
			w.timeCol = ck.EventTime
		}
		w.from = append(w.from, "the checkpoint's key schema")
	case f.Plan != nil && len(f.Plan.Keys) > 0:
		w.keys, w.timeCol = f.Plan.Keys, f.Plan.EventTime
		w.from = append(w.from, "the event log's SQL plan")
	}
	if f.Plan != nil {
		w.api = f.Plan.API
		if w.timeCol == "" {
			w.timeCol = f.Plan.EventTime
		}
	}
	if f.DelayEstimate {
		switch {
		case ck != nil && ck.DelayMs > 0:
			w.delayMs = ck.DelayMs
		case f.Plan != nil && f.Plan.HasDelay:
			w.delayMs = f.Plan.DelayMs
		}
	}
	for _, k := range append(slices.Clone(w.keys), w.timeCol) {
		if k != "" && !simColumn.MatchString(k) {
			w.keys, w.timeCol = nil, ""
			w.from = append(w.from, fmt.Sprintf("not %q: the simulator's column names are identifiers", k))
			break
		}
	}
	if w.timeCol == "" {
		w.timeCol = "ts"
	}
	if len(w.keys) == 0 {
		w.keys = []string{"id"}
		if w.api == "dropDuplicates" && f.HasWatermark && (hasKind(q, EventTimeInKey) || has(TableDuplicate)) {
			w.keys = []string{"id", w.timeCol}
		}
	}
	if w.api == "dropDuplicatesWithinWatermark" {
		w.keys = slices.DeleteFunc(slices.Clone(w.keys), func(k string) bool { return k == w.timeCol })
		if len(w.keys) == 0 {
			w.keys = []string{"id"}
		}
	}
	return w
}

// Scenario is a scenario file (scenarios/README.md) fitted to query q of
// the report, in the user's world: the key and event-time columns, the
// delay, the state partitions and the policy of the real query (fitWorld),
// the input rate from inputRowsPerSecond (above MaxScenarioRate scaled
// down, and said), the duplicate rate from numDroppedDuplicateRows, and the
// fault that explains each problem finding (no watermark, a quiet second
// input, a future-clock producer, re-stamped retries). Its expect block
// asks the simulator for the same findings (Reproduces), and for their
// absence when the query was healthy.
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
	w := fitWorld(r, q, h, has)
	delay := roundDelay(w.delayMs)
	trigger := max(1, int64(math.Round(float64(f.TriggerMs)/1000)))
	measured := math.Max(1, math.Round(f.InputRate))
	rate := math.Min(MaxScenarioRate, measured)
	name := "diagnosed-" + slug(nameOf(q))
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\n", name)
	fmt.Fprintf(&b, "source: %s\n", yamlQuote("dedupsim diagnose "+strings.Join(h.Files, " ")+": "+r.Summary))
	b.WriteString("description: |\n")
	fmt.Fprintf(&b, "  Fitted to query %s (id %s) by dedupsim diagnose.\n\n", nameOf(q), q.ID)
	fmt.Fprintf(&b, "  %s; %d batches, %s rows in.\n", f.describe(), q.Batches, num(q.Rows))
	if len(w.from) > 0 {
		fmt.Fprintf(&b, "  Columns from %s.\n", strings.Join(w.from, "; "))
	}
	if rate < measured {
		fmt.Fprintf(&b, "  The input rate is scaled from %g to %g rows/s for a short simulated run (delay, partitions\n  and retry gaps are kept).\n", measured, rate)
	}
	b.WriteString("  The fault below is the one that explains the finding. Keep it under\n")
	b.WriteString("  scenarios/incidents/ with the fix applied and its expectation turned to absent.\n")
	if f.RealTime {
		// Real-time mode (spark-semantics §18): Spark 4.3, the Kafka sink,
		// the batch duration measured; a crash after the rows went out is
		// the at-least-once the records cannot show.
		b.WriteString("  The query runs in real-time mode: a crash after its rows reached the Kafka sink\n")
		b.WriteString("  sends them again (real-time-at-least-once).\n")
		b.WriteString("spark_version: 4.3.0\n")
	}
	b.WriteString("query:\n")
	stall := has(WatermarkStalled)
	nsrc := 1
	if stall || h.Sources > 1 {
		nsrc = 2
	}
	fmt.Fprintf(&b, "  dedup: {api: %s, keys: [%s]}\n", w.api, strings.Join(w.keys, ", "))
	switch {
	case !f.HasWatermark:
	case nsrc > 1:
		b.WriteString("  sources:\n")
		for _, s := range []string{"fast", "slow"} {
			fmt.Fprintf(&b, "    - name: %s\n      watermark: {column: %s, delay: %s}\n", s, w.timeCol, delay)
		}
		policy := w.policy
		if policy == "" {
			policy = "min"
		}
		fmt.Fprintf(&b, "  watermark_policy: %s\n", policy)
	default:
		fmt.Fprintf(&b, "  watermark: {column: %s, delay: %s}\n", w.timeCol, delay)
	}
	if f.RealTime {
		batch := max(5, (f.RealTimeBatchMs+500)/1000)
		fmt.Fprintf(&b, "  shuffle_partitions: %d\n  sink: {kind: kafka}\n  trigger: {real_time: %d seconds}\n", w.partitions, batch)
		trigger = batch
		b.WriteString("fault_phase: 5m\nheal_phase: 1m\n")
	} else {
		fmt.Fprintf(&b, "  shuffle_partitions: %d\n  sink: {kind: table}\n", w.partitions)
		fmt.Fprintf(&b, "trigger_interval: %ds\nfault_phase: 2m\nheal_phase: 1m\n", trigger)
	}
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
	dupRate := math.Max(0.01, math.Min(0.5, f.DuplicateRate))
	switch {
	case has(TableDuplicate):
		// Ids under several event times: retries re-stamped when sent again.
		faults = append(faults, fmt.Sprintf("  producer-retry-restamped: {probability: %.4g, gap: exponential, gap_ms: %ds}", dupRate, max(1, trigger)))
	case f.DuplicateRate > 0 || late:
		// Late rows without a jump are copies that arrive after the
		// watermark passed them: retries further apart than the delay.
		gap := max(1, trigger)
		if late {
			gap = 3 * max(1, (w.delayMs+999)/1000)
		}
		faults = append(faults, fmt.Sprintf("  producer-retry: {probability: %.4g, gap_ms: %ds}", dupRate, gap))
	}
	if stall {
		faults = append(faults, "  source-silence: {source: 1, start_frac: 0.2, duration_ms: 90s}")
	}
	if has(WatermarkJump) {
		faults = append(faults, "  future-timestamp: {producers_fraction: 0.01, ahead_ms: 365d}")
	}
	if f.RealTime {
		faults = append(faults, "  crash-after-sink-write: {rate: 0.15}")
	}
	if len(faults) > 0 {
		b.WriteString("faults:\n" + strings.Join(faults, "\n") + "\n")
	}
	want := reproduces(has)
	if f.RealTime {
		want = append(want, "sink-replay-duplicate")
	}
	b.WriteString("expect:\n  findings:\n")
	for _, ck := range want {
		fmt.Fprintf(&b, "    %s: present\n", ck)
	}
	if len(reproduces(has)) == 0 {
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

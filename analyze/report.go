package analyze

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/internal/duration"
	"github.com/dedupsim/dedupsim/sizing"
)

// Report is the result of an analysis. Times are in milliseconds, rates per
// second of event time.
type Report struct {
	File        string   `json:"file"`
	Keys        []string `json:"keys"`
	Time        string   `json:"time_column"`
	Arrival     string   `json:"arrival_column,omitempty"`
	Lines       int64    `json:"lines"`
	Events      int64    `json:"events"`
	BadLines    int64    `json:"bad_lines"`
	BadExamples []string `json:"bad_examples,omitempty"`

	// Impossible timestamps, left out of every figure below.
	BeforeEpoch int64  `json:"before_epoch"`
	Future      int64  `json:"future"`
	FutureRule  string `json:"future_rule"`

	Analysed       int64   `json:"analysed"`
	DistinctKeys   int64   `json:"distinct_keys"`
	ExtraCopies    int64   `json:"extra_copies"`
	DuplicateRate  float64 `json:"duplicate_rate"` // extra copies / events analysed
	KeysWithCopies int64   `json:"keys_with_copies"`
	// KeysWithCopiesRate is keys with copies / distinct keys (seed 000's
	// "0.4% of ids appear more than once").
	KeysWithCopiesRate float64      `json:"keys_with_copies_rate"`
	CopiesPerKey       CopiesPerKey `json:"copies_per_key"`
	Window             Window       `json:"window"`

	// Gap between the first and the last copy of each key with copies.
	EventTimeGapMs Quantiles `json:"event_time_gap_ms"`
	// KeysTimeDiffers counts keys with copies whose copies do not all
	// carry the same event time.
	KeysTimeDiffers int64     `json:"keys_time_differs"`
	ArrivalGap      Quantiles `json:"arrival_gap"`
	ArrivalGapUnit  string    `json:"arrival_gap_unit"` // "ms" or "events"
	// LatenessMs: how far each event's time is behind the newest event
	// time before it in the file.
	LatenessMs Quantiles `json:"lateness_ms"`

	SpanSec   float64 `json:"event_time_span_s"`
	SpanBasis string  `json:"span_basis"`
	// KeyRatePerSec is the mean: distinct keys over the span.
	KeyRatePerSec float64 `json:"key_rate_per_s"`
	// RateWindows: distinct keys per window of event time.
	RateWindows RateWindows `json:"rate_windows"`
	// SizingRatePerSec is the rate the state is sized from: --rate, else
	// the percentile of the per-window rates, but never below the mean.
	SizingRatePerSec float64 `json:"sizing_rate_per_s"`
	SizingRateBasis  string  `json:"sizing_rate_basis"`

	Recommendation *Recommendation `json:"recommendation,omitempty"`
	// Replay and State are the state curve replayed from the trace
	// (Options.Replay): State is keyed by API name.
	Replay *ReplayInfo             `json:"replay,omitempty"`
	State  map[string]*ReplayState `json:"state,omitempty"`
	Notes  []string                `json:"notes,omitempty"`
}

// ReplayInfo says how the state curve was replayed.
type ReplayInfo struct {
	DelayMs     int64   `json:"delay_ms"`
	Delay       string  `json:"delay"`
	DelayBasis  string  `json:"delay_basis"`
	TriggerMs   int64   `json:"trigger_ms"`
	Trigger     string  `json:"trigger"`
	Clock       string  `json:"clock"`
	Batches     int64   `json:"batches"`
	BytesPerKey float64 `json:"bytes_per_key"`
}

// RateWindows is the distribution of the distinct-key rate over tumbling
// windows of event time (windows without events are not counted: a quiet
// hour does not dilute the peak).
type RateWindows struct {
	WindowSec  float64 `json:"window_s"`
	Windows    int64   `json:"windows"`
	Percentile float64 `json:"percentile"`
	// AtPercentile, P50 and Max are keys per second.
	AtPercentile float64 `json:"at_percentile_per_s"`
	P50          float64 `json:"p50_per_s"`
	Max          float64 `json:"max_per_s"`
	// Late counts copies whose window had closed (more than a day of event
	// time behind the newest) before they came: not in the rate.
	Late int64 `json:"late"`
}

// Quantiles of a distribution (nearest rank).
type Quantiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99.9"`
	P9999 float64 `json:"p99.99"`
	Max   float64 `json:"max"`
}

// CopiesPerKey is how many keys had 1, 2, 3 and 4 or more copies.
type CopiesPerKey struct {
	One      int64 `json:"1"`
	Two      int64 `json:"2"`
	Three    int64 `json:"3"`
	FourPlus int64 `json:"4+"`
	Max      int64 `json:"max"`
}

// Window says whether the key cap was reached.
type Window struct {
	MaxKeys int   `json:"max_keys"`
	Evicted int64 `json:"evicted"`
	// Beyond counts copies whose key had been evicted: their gap is
	// wider than the window and not in the gap figures.
	Beyond int64 `json:"beyond_window"`
	// ExpectedFalseBeyond is how many of Beyond the Bloom filters may
	// have mistaken for a copy (an upper estimate).
	ExpectedFalseBeyond float64 `json:"expected_false_beyond"`
}

// Recommendation is the delay chosen from the event-time gap, and the
// state it costs.
type Recommendation struct {
	Percentile float64 `json:"percentile"`
	Margin     float64 `json:"margin"`
	GapMs      float64 `json:"gap_at_percentile_ms"`
	// NoDelay says why no delay is recommended: the gap is at least
	// sizing.MaxDelay (then DelayMs is 0 and nothing below is set).
	NoDelay    string `json:"no_delay,omitempty"`
	DelayMs    int64  `json:"delay_ms"`
	Delay      string `json:"delay"`       // "50m"
	SparkDelay string `json:"spark_delay"` // "50 minutes", for withWatermark
	// Saturated: gap x (1 + margin) is beyond sizing.MaxDelay, so the
	// delay is MaxDelay: above the gap, with less margin than asked.
	Saturated bool `json:"saturated,omitempty"`
	// KeysNotCovered: keys with copies whose gap is at least the delay;
	// dropDuplicatesWithinWatermark lets a copy of each through.
	KeysNotCovered int64 `json:"keys_not_covered"`
	// LateEvents: events more than the delay behind the newest event time
	// before them, which the watermark drops as too late (an upper bound:
	// Spark moves the watermark once per batch).
	LateEvents  int64   `json:"late_events"`
	BytesPerKey float64 `json:"bytes_per_key"`
	Partitions  int     `json:"partitions"`
	State       []State `json:"state,omitempty"`
	StateNote   string  `json:"state_note,omitempty"`
}

// State is sizing.Compute's estimate for one API at the delay.
type State struct {
	API          string  `json:"api"`
	Keys         string  `json:"keys"`
	RetentionSec float64 `json:"retention_s"`
	KeysInState  float64 `json:"keys_in_state"`
	TotalBytes   float64 `json:"total_bytes"`
	PerPartition float64 `json:"per_partition_bytes"`
	Formula      string  `json:"formula"`
}

func quantiles(h *Hist, scale float64) Quantiles {
	return Quantiles{
		Count: h.Count(),
		P50:   h.Quantile(50) * scale,
		P99:   h.Quantile(99) * scale,
		P999:  h.Quantile(99.9) * scale,
		P9999: h.Quantile(99.99) * scale,
		Max:   float64(h.Max()) * scale,
	}
}

func (a *Analyzer) report() *Report {
	o := a.opt
	r := &Report{
		File: o.File, Keys: o.Keys, Time: o.Time, Arrival: o.Arrival,
		Lines: a.lines, Events: a.events, BadLines: a.bad, BadExamples: a.badExamples,
		BeforeEpoch: a.beforeEpoch, Future: a.future,
		Analysed: a.analysed, DistinctKeys: a.distinct, ExtraCopies: a.extra,
		KeysWithCopies: a.keysWithCopies,
		CopiesPerKey:   CopiesPerKey{One: a.copies[0], Two: a.copies[1], Three: a.copies[2], FourPlus: a.copies[3], Max: a.maxCopies},
		Window:         Window{MaxKeys: o.MaxKeys, Evicted: a.evicted, Beyond: a.beyond, ExpectedFalseBeyond: math.Min(a.expFalse, float64(a.beyond))},
		EventTimeGapMs: quantiles(&a.gapET, 1e-3),
		LatenessMs:     quantiles(&a.late, 1e-3),
	}
	r.KeysTimeDiffers = a.gapET.Count() - a.gapET.Zeros()
	if o.Arrival != "" {
		r.FutureRule = fmt.Sprintf("event time more than %s ahead of its arrival time (%s)", duration.About(ms(o.FutureTolerance)), o.Arrival)
		r.ArrivalGap, r.ArrivalGapUnit = quantiles(&a.gapArr, 1e-3), "ms"
	} else {
		r.FutureRule = fmt.Sprintf("event time more than %s ahead of the median event time of its block of %s events", duration.About(ms(o.FutureTolerance)), sizing.Group(BlockEvents))
		r.ArrivalGap, r.ArrivalGapUnit = quantiles(&a.gapArr, 1), "events"
	}
	if a.analysed > 0 {
		r.DuplicateRate = float64(a.extra) / float64(a.analysed)
	}
	if a.distinct > 0 {
		r.KeysWithCopiesRate = float64(a.keysWithCopies) / float64(a.distinct)
	}

	// The event-time span the keys arrived over, for the key rate.
	switch {
	case a.analysed == 0:
	case o.Arrival != "":
		r.SpanSec, r.SpanBasis = float64(a.maxArr-a.minArr)/1e6, "arrival times"
	case a.blocks >= 2 && a.lastMed > a.firstMed && a.medDrops*10 <= a.blocks-1:
		r.SpanSec = float64(a.lastMed-a.firstMed) / (a.lastMid - a.firstMid) * float64(a.events) / 1e6
		r.SpanBasis = fmt.Sprintf("median event times of the first and last full blocks of %s events", sizing.Group(BlockEvents))
	default:
		r.SpanSec, r.SpanBasis = float64(a.maxET-a.minET)/1e6, "earliest to latest event time"
		if a.blocks >= 2 {
			r.SpanBasis += " (the file is not in event-time order)"
		}
	}
	if r.SpanSec > 0 {
		r.KeyRatePerSec = float64(a.distinct) / r.SpanSec
	}
	a.sizingRate(r)
	a.recommend(r)
	a.replayReport(r)
	a.notes(r)
	return r
}

// replayReport fills Report.Replay and Report.State from the replay.
func (a *Analyzer) replayReport(r *Report) {
	rp := a.replay
	if rp == nil {
		return
	}
	o := a.opt
	info := &ReplayInfo{DelayMs: o.Delay.Milliseconds(), Delay: jsonDur(ms(o.Delay)), DelayBasis: o.DelayBasis,
		TriggerMs: o.Trigger.Milliseconds(), Trigger: jsonDur(ms(o.Trigger)), Batches: rp.nextID, BytesPerKey: o.BytesPerKey,
		Clock: "the newest event time read so far (no --arrival column: a source read as it is written)"}
	if o.Arrival != "" {
		info.Clock = "the arrival column " + o.Arrival + " (never going back)"
	}
	r.Replay = info
	keys := "[" + strings.Join(o.Keys, ", ") + "]"
	withTime := "[" + strings.Join(append(append([]string{}, o.Keys...), o.Time), ", ") + "]"
	r.State = map[string]*ReplayState{}
	for i, s := range rp.apis {
		st := s.st
		st.Keys = keys
		if i == 0 {
			st.Keys = withTime
		}
		st.PeakAt = time.UnixMilli(st.PeakAtMs).UTC().Format(time.RFC3339)
		st.PeakBytes, st.EndBytes = float64(st.PeakKeys)*o.BytesPerKey, float64(st.EndKeys)*o.BytesPerKey
		r.State[st.API] = &st
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// sizingRate reads the per-window rates and picks the rate the state is
// sized from.
func (a *Analyzer) sizingRate(r *Report) {
	o, rw := a.opt, a.rate
	w := o.RateWindow.Seconds()
	r.RateWindows = RateWindows{WindowSec: w, Windows: rw.counts.Count(), Percentile: o.RatePercentile,
		AtPercentile: rw.counts.Quantile(o.RatePercentile) / w, P50: rw.counts.Quantile(50) / w,
		Max: float64(rw.counts.Max()) / w, Late: rw.late}
	p := "p" + strconv.FormatFloat(o.RatePercentile, 'f', -1, 64)
	peak := r.RateWindows.AtPercentile
	switch {
	case o.Rate > 0:
		r.SizingRatePerSec, r.SizingRateBasis = o.Rate, "--rate"
	case peak > 0 && peak >= r.KeyRatePerSec:
		r.SizingRatePerSec = peak
		r.SizingRateBasis = fmt.Sprintf("%s of the distinct keys per %s window of event time", p, duration.About(w*1e3))
	case r.KeyRatePerSec > 0:
		// Fewer full windows than the percentile can use (a trace shorter
		// than a few windows): never size below the mean.
		r.SizingRatePerSec = r.KeyRatePerSec
		r.SizingRateBasis = fmt.Sprintf("the mean, above %s of the %s windows (the trace covers few of them)", p, duration.About(w*1e3))
	}
}

func (a *Analyzer) recommend(r *Report) {
	if a.keysWithCopies == 0 {
		return
	}
	o := a.opt
	gap := a.gapET.Quantile(o.Percentile) // µs, at most ~3.2e17 (years 0000-9999)
	rec := &Recommendation{Percentile: o.Percentile, Margin: o.Margin, GapMs: gap / 1e3,
		BytesPerKey: o.BytesPerKey, Partitions: o.Partitions}
	r.Recommendation = rec
	// All in float microseconds until the delay is known to fit a
	// time.Duration: gap x (1 + margin) is at most ~3.5e18 µs, finite.
	maxUs := float64(sizing.MaxDelay.Microseconds())
	want := math.Ceil(gap * (1 + o.Margin))
	var d time.Duration
	switch {
	case gap >= maxUs:
		rec.NoDelay = fmt.Sprintf("the event-time gap at p%s, %s, is at least %s, the longest delay dedupsim sizes: a watermark cannot deduplicate copies this far apart (wrong timestamps, e.g. zeros or a unit mistake, are the likelier cause); catch them at the sink (a MERGE on the id, seed 000)",
			strconv.FormatFloat(o.Percentile, 'f', -1, 64), duration.About(gap/1e3), duration.About(ms(sizing.MaxDelay)))
		return
	case want > maxUs:
		d, rec.Saturated = sizing.MaxDelay, true
	default:
		d = min(RoundDelay(time.Duration(want)*time.Microsecond), sizing.MaxDelay)
	}
	d = max(d, MinDelay)
	rec.DelayMs, rec.Delay, rec.SparkDelay = d.Milliseconds(), jsonDur(ms(d)), SparkInterval(d)
	// dropDuplicatesWithinWatermark covers gaps below the delay.
	rec.KeysNotCovered = a.gapET.CountAbove(float64(d.Microseconds()) - 1)
	rec.LateEvents = a.late.CountAbove(float64(d.Microseconds()))
	switch {
	case r.SizingRatePerSec <= 0:
		rec.StateNote = "no state estimate: the events span no event time"
		return
	case r.SizingRatePerSec > sizing.MaxRatePerSec:
		rec.StateNote = fmt.Sprintf("no state estimate: a key rate of %s keys/s is beyond a billion: the events span too little event time to measure a rate; give --rate",
			rate(r.SizingRatePerSec))
		return
	}
	keys := "[" + strings.Join(o.Keys, ", ") + "]"
	withTime := "[" + strings.Join(append(append([]string{}, o.Keys...), o.Time), ", ") + "]"
	for _, api := range []query.API{query.DropDuplicates, query.DropDuplicatesWithinWatermark} {
		e, err := sizing.Compute(sizing.Params{RatePerSec: r.SizingRatePerSec, Delay: d, API: api,
			Partitions: o.Partitions, BytesPerKey: o.BytesPerKey, EventTimeInKey: true})
		if err != nil {
			rec.StateNote = "no state estimate: " + err.Error()
			rec.State = nil
			return
		}
		k := keys
		if api == query.DropDuplicates {
			k = withTime
		}
		rec.State = append(rec.State, State{API: string(api), Keys: k, RetentionSec: e.RetentionSec,
			KeysInState: e.Keys, TotalBytes: e.TotalBytes, PerPartition: e.PerPartition, Formula: e.Formula})
	}
}

func (a *Analyzer) notes(r *Report) {
	add := func(format string, args ...any) { r.Notes = append(r.Notes, fmt.Sprintf(format, args...)) }
	if r.BadLines > 0 {
		add("%s skipped (--skip-bad); the first: %s", plural(r.BadLines, "bad line", "bad lines"), r.BadExamples[0])
	}
	if n := r.BeforeEpoch + r.Future; n > 0 {
		add("%s impossible timestamps: filter them before withWatermark, or one of them drags the watermark forward and honest events become late (seed 000)", plural(n, "event", "events")+" with")
	}
	if w := r.Window; w.Evicted > 0 {
		add("the key window (--max-keys %s) overflowed: %s evicted; %s of evicted keys counted beyond the window (about %.0f of them may be false positives); their gaps are wider than the window and not in the gap figures",
			sizing.Group(int64(w.MaxKeys)), plural(w.Evicted, "key", "keys"), plural(w.Beyond, "later copy", "later copies"), w.ExpectedFalseBeyond)
	}
	if n := r.RateWindows.Late; n > 0 {
		add("%s more than %s of event time behind the newest: their windows had closed, so they are not in the key rate",
			plural(n, "copy came", "copies came"), duration.About(ms(RateTolerance)))
	}
	if a.opt.Arrival == "" && a.blocks >= 2 && a.medDrops*10 > a.blocks-1 {
		add("the median event time fell from one block of %s events to the next %s of %s times: the file does not look like it is in arrival order, which the future-timestamp rule and the key rate assume; give --arrival",
			sizing.Group(BlockEvents), sizing.Group(int64(a.medDrops)), sizing.Group(int64(a.blocks-1)))
	}
	rec := r.Recommendation
	if rec == nil {
		if r.Analysed > 0 {
			add("no key has copies: any delay deduplicates this trace; choose the delay for lateness")
		}
		return
	}
	n := r.KeysWithCopies
	p := "p" + strconv.FormatFloat(rec.Percentile, 'f', -1, 64)
	if left := n - Rank(rec.Percentile, n); left == 0 && rec.Percentile < 100 {
		// 1 / (1 - p/100) is finite below p100; capped so it prints.
		need := math.Min(math.Ceil(1/(1-rec.Percentile/100)-1e-9), math.MaxInt64/2)
		add("%s of %s keys with copies is their largest gap: %s needs at least %s keys with copies to leave any out",
			p, sizing.Group(n), p, sizing.Group(int64(need)))
	}
	if rec.Saturated {
		add("the gap x %s is beyond %s, the longest delay dedupsim sizes: the delay is %s, above the gap but with less margin than --margin asks",
			trim(1+rec.Margin, 4), duration.About(ms(sizing.MaxDelay)), rec.SparkDelay)
	}
	if r.Window.Beyond > 0 && r.Window.Beyond > n-Rank(rec.Percentile, n) {
		add("copies beyond the window outnumber the keys above %s: the delay may be too short; raise --max-keys", p)
	}
	if r.KeysTimeDiffers > 0 {
		add("%s of %s with copies (%s) had copies with different event times: dropDuplicates with the event time in its keys lets those copies through; use dropDuplicatesWithinWatermark",
			sizing.Group(r.KeysTimeDiffers), plural(n, "key", "keys"), Percent(float64(r.KeysTimeDiffers)/float64(n)))
	} else {
		add("every key's copies share one event time: dropDuplicates with the event time in its keys deduplicates them too, with half the retention")
	}
	if rec.KeysNotCovered > 0 {
		add("%s copies %s or more apart: each lets a copy through dropDuplicatesWithinWatermark at this delay; catch them at the sink (a MERGE on the id, seed 000)",
			plural(rec.KeysNotCovered, "key", "keys")+" had", rec.SparkDelay)
	}
	if rec.LateEvents > 0 {
		add("%s (%s of those analysed) more than %s behind the newest event time before it: the watermark would drop it as too late (an upper bound: Spark moves the watermark once per batch)",
			plural(rec.LateEvents, "event came", "events came each"), Percent(float64(rec.LateEvents)/float64(r.Analysed)), rec.SparkDelay)
	}
}

// MinDelay is the shortest delay recommended: with copies that share an
// event time (a gap of 0) a zero delay would still leave them to the batch
// boundaries.
const MinDelay = time.Second

// delayUnits are the steps a delay is rounded up to.
var delayUnits = []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond,
	time.Second, 5 * time.Second, 15 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute,
	time.Hour, 6 * time.Hour, 24 * time.Hour}

// RoundDelay rounds d up to a multiple of the largest of 1ms, 10ms, 100ms,
// 1s, 5s, 15s, 1m, 5m, 15m, 1h, 6h and 1d that is at most a tenth of d, so
// rounding adds less than 10%: 49m 52s becomes 50m, 51m 15s becomes 55m,
// 2h 3m becomes 2h 5m.
func RoundDelay(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	unit := delayUnits[0]
	for _, u := range delayUnits {
		if u*10 <= d {
			unit = u
		}
	}
	return (d + unit - 1) / unit * unit
}

// SparkInterval writes a delay as withWatermark takes it: "50 minutes",
// "1 hour 5 minutes", "1.5 seconds".
// It is the project's one way to write a span (internal/duration.Words),
// which is Spark's interval wording.
func SparkInterval(d time.Duration) string {
	if d <= 0 {
		return "0 seconds"
	}
	return duration.Words(float64(d) / float64(time.Millisecond))
}

// jsonDur writes a span for the report's JSON "delay" and "trigger"
// fields, which keep their compact form ("350ms", "12.5s", "39m 58s",
// "2h 5m", "3d 4h") for the programs that read them; text for a reader
// is written by internal/duration.
func jsonDur(ms float64) string {
	switch {
	case ms == 0:
		return "0"
	case ms < 1000:
		return trim(ms, 3) + "ms"
	case ms < 60e3:
		return trim(ms/1e3, 1) + "s"
	}
	s := int64(math.Round(ms / 1e3))
	two := func(a int64, ua string, b int64, ub string) string {
		if b == 0 {
			return strconv.FormatInt(a, 10) + ua
		}
		return fmt.Sprintf("%d%s %d%s", a, ua, b, ub)
	}
	switch {
	case s < 3600:
		return two(s/60, "m", s%60, "s")
	case s < 86400:
		return two(s/3600, "h", s%3600/60, "m")
	}
	return two(s/86400, "d", s%86400/3600, "h")
}

func trim(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// plural writes "1 key", "2 keys".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return sizing.Group(n) + " " + many
}

// Percent writes a fraction as a percentage with 2 significant decimals
// past the leading zeros: 0.4%, 0.0097%.
func Percent(f float64) string {
	if f == 0 {
		return "0%"
	}
	d := 2
	for x := f * 100; x < 1 && d < 8; x *= 10 {
		d++
	}
	return trim(f*100, d) + "%"
}

// msFigure writes a millisecond figure for a table: three decimals below
// 10 ms, whole milliseconds with separators above.
func msFigure(v float64) string {
	if v < 10 {
		return trim(v, 3)
	}
	return sizing.Group(int64(math.Round(v)))
}

// WriteText prints the report for a person.
func (r *Report) WriteText(w io.Writer) {
	pf := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	row := func(label, value string) { pf("%-22s %s\n", label, value) }
	row("file", fmt.Sprintf("%s: %s lines, %s events", r.File, sizing.Group(r.Lines), sizing.Group(r.Events)))
	if r.BadLines > 0 {
		row("bad lines", sizing.Group(r.BadLines)+" skipped")
		for _, e := range r.BadExamples {
			row("", e)
		}
	}
	row("impossible timestamps", fmt.Sprintf("%s before the epoch, %s in the future; left out below", sizing.Group(r.BeforeEpoch), sizing.Group(r.Future)))
	row("", "future: "+r.FutureRule)
	row("events analysed", sizing.Group(r.Analysed))
	row("distinct keys", sizing.Group(r.DistinctKeys))
	row("extra copies", fmt.Sprintf("%s   duplicate rate %s (extra copies / events analysed)", sizing.Group(r.ExtraCopies), Percent(r.DuplicateRate)))
	row("keys with copies", fmt.Sprintf("%s (%s of distinct keys)", sizing.Group(r.KeysWithCopies), Percent(r.KeysWithCopiesRate)))
	c := r.CopiesPerKey
	row("copies per key", fmt.Sprintf("1: %s   2: %s   3: %s   4+: %s   (max %s)", sizing.Group(c.One), sizing.Group(c.Two), sizing.Group(c.Three), sizing.Group(c.FourPlus), sizing.Group(c.Max)))
	if r.Window.Evicted == 0 {
		row("key window", fmt.Sprintf("every key held (--max-keys %s)", sizing.Group(int64(r.Window.MaxKeys))))
	} else {
		row("key window", fmt.Sprintf("%s keys evicted (--max-keys %s); %s copies beyond the window (about %.0f false positives)",
			sizing.Group(r.Window.Evicted), sizing.Group(int64(r.Window.MaxKeys)), sizing.Group(r.Window.Beyond), r.Window.ExpectedFalseBeyond))
	}

	pf("\ngap between the first and the last copy of a key (%s keys with copies)\n", sizing.Group(r.KeysWithCopies))
	pf("%-22s %22s %22s %22s %22s %22s\n", "", "p50", "p99", "p99.9", "p99.99", "max")
	line := func(label string, q Quantiles, f func(float64) string) {
		pf("%-22s %22s %22s %22s %22s %22s\n", label, f(q.P50), f(q.P99), f(q.P999), f(q.P9999), f(q.Max))
	}
	line("event time", r.EventTimeGapMs, duration.About)
	line("event time (ms)", r.EventTimeGapMs, msFigure)
	if r.ArrivalGapUnit == "ms" {
		line("arrival", r.ArrivalGap, duration.About)
		line("arrival (ms)", r.ArrivalGap, msFigure)
	} else {
		line("arrival (events)", r.ArrivalGap, func(v float64) string { return sizing.Group(int64(math.Round(v))) })
	}
	pf("\nlateness: event time behind the newest event time before it (%s events)\n", sizing.Group(r.LatenessMs.Count))
	line("lateness", r.LatenessMs, duration.About)
	line("lateness (ms)", r.LatenessMs, msFigure)

	pf("\n")
	rw := r.RateWindows
	win := duration.About(rw.WindowSec * 1e3)
	if rw.Windows > 0 {
		row("key rate", fmt.Sprintf("per %s window of event time (%s windows with events): p%s %s/s, p50 %s/s, max %s/s",
			win, sizing.Group(rw.Windows), strconv.FormatFloat(rw.Percentile, 'f', -1, 64), rate(rw.AtPercentile), rate(rw.P50), rate(rw.Max)))
	}
	if r.KeyRatePerSec > 0 {
		row("", fmt.Sprintf("mean %s/s (distinct keys over %s, %s)", rate(r.KeyRatePerSec), duration.About(r.SpanSec*1e3), r.SpanBasis))
	}
	if r.SizingRatePerSec > 0 {
		row("sizing rate", fmt.Sprintf("%s keys/s: %s", rate(r.SizingRatePerSec), r.SizingRateBasis))
	} else {
		row("sizing rate", "unknown: the events span no event time")
	}
	if rec := r.Recommendation; rec != nil && rec.NoDelay != "" {
		row("recommended delay", "none: "+rec.NoDelay)
	} else if rec != nil {
		p := "p" + strconv.FormatFloat(rec.Percentile, 'f', -1, 64)
		how := "rounded up"
		switch {
		case rec.Saturated:
			how = "capped at " + duration.About(ms(sizing.MaxDelay))
		case rec.DelayMs == MinDelay.Milliseconds():
			how = "rounded up, at least " + duration.About(ms(MinDelay))
		}
		row("recommended delay", fmt.Sprintf("%s = %s of the event-time gap (%s) x %s, %s", rec.SparkDelay, p, duration.About(rec.GapMs), trim(1+rec.Margin, 4), how))
		row("", fmt.Sprintf(".withWatermark(%q, %q)", r.Time, rec.SparkDelay))
		row("keys not covered", fmt.Sprintf("%s (copies %s or more apart)", sizing.Group(rec.KeysNotCovered), rec.SparkDelay))
		row("late events", fmt.Sprintf("%s (more than %s behind: dropped by the watermark)", sizing.Group(rec.LateEvents), rec.SparkDelay))
		if rec.StateNote != "" {
			row("state", rec.StateNote)
		}
		if len(rec.State) > 0 {
			pf("\nstate at %s (%s keys/s, %s B/key, %d partitions)\n", rec.SparkDelay, rate(r.SizingRatePerSec), trim(rec.BytesPerKey, 2), rec.Partitions)
			for _, s := range rec.State {
				pf("  %-46s retention %-20s %14s keys %12s %12s/partition\n", s.API+"("+s.Keys+")", duration.About(s.RetentionSec*1e3), count(s.KeysInState), sizing.Bytes(s.TotalBytes), sizing.Bytes(s.PerPartition))
			}
		}
	}
	if rp := r.Replay; rp != nil {
		pf("\nstate replayed from the trace at delay %s (%s), one batch every %s of %s: %s batches, %s B/key\n",
			duration.Words(float64(rp.DelayMs)), rp.DelayBasis, duration.Words(float64(rp.TriggerMs)), rp.Clock, sizing.Group(rp.Batches), trim(rp.BytesPerKey, 2))
		for _, api := range []string{string(query.DropDuplicates), string(query.DropDuplicatesWithinWatermark)} {
			s := r.State[api]
			if s == nil {
				continue
			}
			lower := ""
			if s.Overflow {
				lower = " (at least: the state passed --max-keys and its replay stopped)"
			}
			pf("  %-46s peak %s keys (%s) at %s%s, end %s keys (%s), %s late rows\n", s.API+"("+s.Keys+")",
				sizing.Group(s.PeakKeys), sizing.Bytes(s.PeakBytes), s.PeakAt, lower, sizing.Group(s.EndKeys), sizing.Bytes(s.EndBytes), sizing.Group(s.LateRows))
		}
		if r.Recommendation != nil && len(r.Recommendation.State) > 0 {
			pf("  (the rate x retention figures above are for steady traffic at the sizing rate; the replay is this trace's own curve)\n")
		}
	}
	if len(r.Notes) > 0 {
		pf("\nnotes\n")
		for _, n := range r.Notes {
			pf("  - %s\n", n)
		}
	}
}

// rate writes keys per second: separators above 1,000, two decimals below.
func rate(v float64) string {
	if v >= 1000 {
		return sizing.Group(int64(math.Round(v)))
	}
	return trim(v, 2)
}

func count(v float64) string {
	switch {
	case v >= 1e9:
		return trim(v/1e9, 2) + " billion"
	case v >= 1e6:
		return trim(v/1e6, 2) + " million"
	}
	return sizing.Group(int64(math.Round(v)))
}

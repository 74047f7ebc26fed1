package analyze

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
)

func analyzeText(t *testing.T, opt Options, input string) *Report {
	t.Helper()
	if opt.Keys == nil {
		opt.Keys = []string{"id"}
	}
	if opt.Time == "" {
		opt.Time = "ts"
	}
	if opt.File == "" {
		opt.File = "events.jsonl"
	}
	r, err := Run(strings.NewReader(input), opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFigures pins every figure of small traces worked out by hand.
func TestFigures(t *testing.T) {
	// a: 100 -> 160 (60 s apart, events 1 and 3); b: 100 twice (0 s,
	// events 2 and 5); c: 200, 230, 250 (50 s, events 4 and 7, three
	// copies). b's second copy is 150 s behind the newest event time (250
	// is not seen yet: 200 is), so 100 s late.
	const pairs = `# a comment, then a blank line

{"id":"a","ts":100}
{"id":"b","ts":100}
{"id":"a","ts":160}
{"id":"c","ts":"1970-01-01T00:03:20Z"}
{"id":"b","ts":100.0}
  {"id":"c","ts":230}
{"id":"c","ts":250}
`
	r := analyzeText(t, Options{Margin: DefaultMargin}, pairs)
	want := Report{
		File: "events.jsonl", Keys: []string{"id"}, Time: "ts", Lines: 9, Events: 7,
		FutureRule: "event time more than 1 day ahead of the median event time of its block of 1,000 events",
		Analysed:   7, DistinctKeys: 3, ExtraCopies: 4, DuplicateRate: 4.0 / 7, KeysWithCopies: 3, KeysWithCopiesRate: 1,
		CopiesPerKey:    CopiesPerKey{Two: 2, Three: 1, Max: 3},
		Window:          Window{MaxKeys: DefaultMaxKeys},
		EventTimeGapMs:  Quantiles{Count: 3, P50: 50000, P99: 60000, P999: 60000, P9999: 60000, Max: 60000},
		KeysTimeDiffers: 2,
		ArrivalGap:      Quantiles{Count: 3, P50: 3, P99: 3, P999: 3, P9999: 3, Max: 3}, ArrivalGapUnit: "events",
		LatenessMs: Quantiles{Count: 7, P99: 100000, P999: 100000, P9999: 100000, Max: 100000},
		SpanSec:    150, SpanBasis: "earliest to latest event time", KeyRatePerSec: 0.02,
		// Distinct keys per minute of event time: [60, 120) a and b; [120,
		// 180) a again (its first copy was in the window before); [180,
		// 240) c (b's second copy at 100 and c's at 230 are not new to
		// their windows); [240, 300) c again. p99 of {2, 1, 1, 1} is 2
		// keys a minute, above the mean 0.02/s: the state is sized from it.
		RateWindows:      RateWindows{WindowSec: 60, Windows: 4, Percentile: 99, AtPercentile: 2.0 / 60, P50: 1.0 / 60, Max: 2.0 / 60},
		SizingRatePerSec: 2.0 / 60, SizingRateBasis: "p99 of the distinct keys per 1 minute window of event time",
	}
	rec := r.Recommendation
	r.Recommendation, r.Notes = nil, nil
	if !equalJSON(t, r, &want) {
		return
	}
	// p99.99 of {0, 50 s, 60 s} is 60 s; x 1.25 = 75 s, a multiple of 5 s.
	if rec == nil || rec.GapMs != 60000 || rec.DelayMs != 75000 || rec.Delay != "1m 15s" || rec.SparkDelay != "1 minute 15 seconds" ||
		rec.KeysNotCovered != 0 || rec.LateEvents != 1 {
		t.Fatalf("recommendation %+v", rec)
	}
	if len(rec.State) != 2 {
		t.Fatalf("state %+v (%s)", rec.State, rec.StateNote)
	}
	// At 2 keys a minute: 75 s x 1/30 = 2.5 keys, 150 s x 1/30 = 5 keys.
	dd, dw := rec.State[0], rec.State[1]
	if dd.API != "dropDuplicates" || dd.Keys != "[id, ts]" || dd.RetentionSec != 75 || math.Abs(dd.KeysInState-2.5) > 1e-9 || math.Abs(dd.TotalBytes-250) > 1e-6 {
		t.Errorf("dropDuplicates %+v", dd)
	}
	if dw.API != "dropDuplicatesWithinWatermark" || dw.Keys != "[id]" || dw.RetentionSec != 150 || math.Abs(dw.KeysInState-5) > 1e-9 || math.Abs(dw.PerPartition-2.5) > 1e-9 {
		t.Errorf("dropDuplicatesWithinWatermark %+v", dw)
	}

	// The delay covers 60 s with --margin 0 exactly; a gap equal to the
	// delay is not covered (Spark: the distance must be smaller).
	r = analyzeText(t, Options{Percentile: 50}, pairs)
	if rec := r.Recommendation; rec.GapMs != 50000 || rec.Delay != "50s" || rec.KeysNotCovered != 2 {
		t.Errorf("p50, no margin: %+v", rec)
	}
}

func equalJSON(t *testing.T, got, want any) bool {
	t.Helper()
	g, _ := json.MarshalIndent(got, "", " ")
	w, _ := json.MarshalIndent(want, "", " ")
	if !bytes.Equal(g, w) {
		t.Errorf("got\n%s\nwant\n%s", g, w)
		return false
	}
	return true
}

// TestCompositeKeyAndArrival: a two-column key, and gaps in arrival time
// when an arrival column is given.
func TestCompositeKeyAndArrival(t *testing.T) {
	in := `{"id":1,"acct":"x","ts":10,"at":"2024-01-01T00:00:00Z"}
{"id":1,"acct":"y","ts":10,"at":"2024-01-01T00:00:01Z"}
{"acct":"x","id":1.0,"ts":12.5,"at":"2024-01-01T00:00:04.25Z"}
{"id":"1","acct":"x","ts":13,"at":"2024-01-01T00:00:05Z"}
`
	r := analyzeText(t, Options{Keys: []string{"id", "acct"}, Arrival: "at", Margin: DefaultMargin}, in)
	// (1, x) twice (1.0 is the number 1; "1" is a string, another key).
	if r.DistinctKeys != 3 || r.ExtraCopies != 1 || r.KeysWithCopies != 1 {
		t.Fatalf("keys %d extra %d with copies %d", r.DistinctKeys, r.ExtraCopies, r.KeysWithCopies)
	}
	if r.EventTimeGapMs.Max != 2500 || r.ArrivalGapUnit != "ms" || r.ArrivalGap.Max != 4250 {
		t.Fatalf("gaps %+v %+v %s", r.EventTimeGapMs, r.ArrivalGap, r.ArrivalGapUnit)
	}
	if r.SpanBasis != "arrival times" || r.SpanSec != 5 || r.KeyRatePerSec != 0.6 {
		t.Fatalf("span %v %q rate %v", r.SpanSec, r.SpanBasis, r.KeyRatePerSec)
	}
	// 2.5 s x 1.25 = 3.125 s: a tenth is 312 ms, so 100 ms steps: 3.2 s.
	if rec := r.Recommendation; rec.Delay != "3.2s" || rec.SparkDelay != "3.2 seconds" || rec.DelayMs != 3200 || rec.State[0].Keys != "[id, acct, ts]" {
		t.Fatalf("%+v", rec)
	}
}

// TestImpossibleTimestamps: before the epoch, and in the future by both
// rules; they are left out of every other figure.
func TestImpossibleTimestamps(t *testing.T) {
	// With an arrival column: 1 h of tolerance.
	in := `{"id":"a","ts":"2024-01-01T10:00:00Z","at":"2024-01-01T10:00:00Z"}
{"id":"a","ts":"2024-01-01T11:00:00Z","at":"2024-01-01T10:00:00Z"}
{"id":"a","ts":"2024-01-01T11:00:00.001Z","at":"2024-01-01T10:00:00Z"}
{"id":"b","ts":-0.000001,"at":"2024-01-01T10:00:00Z"}
{"id":"b","ts":0,"at":"2024-01-01T10:00:01Z"}
{"id":"c","ts":"2030-01-01T00:00:00Z","at":"2024-01-01T10:00:02Z"}
`
	r := analyzeText(t, Options{Arrival: "at"}, in)
	if r.BeforeEpoch != 1 || r.Future != 2 || r.Analysed != 3 || r.DistinctKeys != 2 || r.ExtraCopies != 1 {
		t.Fatalf("before %d future %d analysed %d keys %d extra %d", r.BeforeEpoch, r.Future, r.Analysed, r.DistinctKeys, r.ExtraCopies)
	}
	if r.EventTimeGapMs.Max != 3600e3 {
		t.Fatalf("gap %+v", r.EventTimeGapMs)
	}
	if !strings.Contains(r.FutureRule, "1 hour ahead of its arrival time (at)") {
		t.Fatal(r.FutureRule)
	}
	r = analyzeText(t, Options{Arrival: "at", FutureTolerance: 2 * time.Hour}, in)
	if r.Future != 1 {
		t.Fatalf("2h tolerance: future %d", r.Future)
	}

	// Without: 24 h ahead of the median of the block (here the whole
	// file: 100 events around t0 and one a day and a second ahead).
	var b strings.Builder
	t0 := 1_700_000_000
	for i := range 100 {
		b.WriteString(`{"id":"k` + itoa(i) + `","ts":` + itoa(t0+i) + "}\n")
	}
	// The block's 102 values have t0+50 as their (lower) median.
	b.WriteString(`{"id":"far","ts":` + itoa(t0+50+86400+1) + "}\n")
	b.WriteString(`{"id":"near","ts":` + itoa(t0+50+86400) + "}\n") // exactly 24 h ahead: allowed
	r = analyzeText(t, Options{}, b.String())
	if r.Future != 1 || r.Analysed != 101 {
		t.Fatalf("median rule: future %d analysed %d", r.Future, r.Analysed)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestMinDelay: copies that share their event time get the 1 s floor.
func TestMinDelay(t *testing.T) {
	r := analyzeText(t, Options{Margin: DefaultMargin}, "{\"id\":1,\"ts\":1}\n{\"id\":1,\"ts\":1}\n{\"id\":2,\"ts\":1.2}\n{\"id\":2,\"ts\":1.5}\n")
	if rec := r.Recommendation; rec.GapMs != 300 || rec.DelayMs != 1000 || rec.KeysNotCovered != 0 || r.KeysTimeDiffers != 1 {
		t.Fatalf("%+v", rec)
	}
	var out bytes.Buffer
	r.WriteText(&out)
	if !strings.Contains(out.String(), "x 1.25, rounded up, at least 1 second") {
		t.Fatal(out.String())
	}
}

func TestNoCopies(t *testing.T) {
	r := analyzeText(t, Options{}, "{\"id\":1,\"ts\":1}\n{\"id\":2,\"ts\":2}\n")
	if r.Recommendation != nil || r.DuplicateRate != 0 || r.CopiesPerKey.One != 2 {
		t.Fatalf("%+v", r)
	}
	var out bytes.Buffer
	r.WriteText(&out)
	if !strings.Contains(out.String(), "no key has copies") {
		t.Fatal(out.String())
	}
	r = analyzeText(t, Options{}, "")
	if r.Events != 0 || r.KeyRatePerSec != 0 || r.Recommendation != nil {
		t.Fatalf("%+v", r)
	}
	out.Reset()
	r.WriteText(&out)
}

// TestLineErrors: a bad line names file:line: column, or fails the whole
// run without --skip-bad.
func TestLineErrors(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{"id":"a","ts":`, `x.jsonl:2: invalid JSON at byte 15: want a value, got end of input`},
		{`[1,2]`, `x.jsonl:2: row is an array, want a JSON object`},
		{`"id"`, `x.jsonl:2: row is a string, want a JSON object`},
		{`{"ts":5}`, `x.jsonl:2: id: missing`},
		{`{"id":"a"}`, `x.jsonl:2: ts: missing`},
		{`{"id":"a","ts":true}`, `x.jsonl:2: ts: want a number (seconds since the epoch) or an RFC 3339 string, got true`},
		{`{"id":"a","ts":"yesterday"}`, `x.jsonl:2: ts: `},
		{`{"id":"a","ts":null}`, `x.jsonl:2: ts: event time is null`},
		{`{"id":"a","id":"b","ts":1}`, `x.jsonl:2: id: appears twice in the row`},
		{`{"id":"a","ts":1e30}`, `x.jsonl:2: ts: `},
	} {
		_, err := Run(strings.NewReader("{\"id\":\"ok\",\"ts\":1}\n"+c.line+"\n{\"id\":\"ok\",\"ts\":1}\n"), Options{File: "x.jsonl", Keys: []string{"id"}, Time: "ts"})
		var le *LineError
		if !errors.As(err, &le) || le.Line != 2 || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q...", c.line, err, c.want)
		}
	}
	// Arrival column.
	_, err := Run(strings.NewReader(`{"id":"a","ts":1,"at":null}`), Options{File: "x.jsonl", Keys: []string{"id"}, Time: "ts", Arrival: "at"})
	if err == nil || err.Error() != "x.jsonl:1: at: arrival time is null" {
		t.Errorf("arrival null: %v", err)
	}
	_, err = Run(strings.NewReader(`{"id":"a","ts":1}`), Options{File: "x.jsonl", Keys: []string{"id"}, Time: "ts", Arrival: "at"})
	if err == nil || err.Error() != "x.jsonl:1: at: missing; the row's fields: id, ts" {
		t.Errorf("arrival missing: %v", err)
	}

	// --skip-bad: counted, quoted, nothing else lost.
	in := "{\"id\":\"a\",\"ts\":1}\nnot json\n{\"id\":\"a\",\"ts\":2}\n{\"ts\":3}\n"
	r, err := Run(strings.NewReader(in), Options{File: "x.jsonl", Keys: []string{"id"}, Time: "ts", SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.BadLines != 2 || r.Events != 2 || r.ExtraCopies != 1 || len(r.BadExamples) != 2 ||
		!strings.HasPrefix(r.BadExamples[0], "x.jsonl:2: ") || r.BadExamples[1] != "x.jsonl:4: id: missing; the row's fields: ts" {
		t.Fatalf("%+v", r)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "2 bad lines skipped") {
		t.Fatal(r.Notes)
	}

	// Options.
	for _, o := range []Options{{}, {Keys: []string{"id"}}, {Keys: []string{""}, Time: "ts"},
		{Keys: []string{"id"}, Time: "ts", Percentile: 101}, {Keys: []string{"id"}, Time: "ts", Margin: -1},
		{Keys: []string{"id"}, Time: "ts", MaxKeys: -1}} {
		if _, err := New(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// TestLongLine: a line longer than the read buffer.
func TestLongLine(t *testing.T) {
	pad := strings.Repeat("x", 3<<20)
	in := `{"id":"a","pad":"` + pad + `","ts":1}` + "\n" + `{"id":"a","ts":3}`
	r := analyzeText(t, Options{}, in)
	if r.Events != 2 || r.EventTimeGapMs.Max != 2000 {
		t.Fatalf("%+v", r)
	}
}

// TestEviction: with room for two keys, the third evicts the first, whose
// later copy is beyond the window.
func TestEviction(t *testing.T) {
	in := `{"id":"a","ts":1}
{"id":"b","ts":2}
{"id":"b","ts":4}
{"id":"c","ts":5}
{"id":"a","ts":6}
{"id":"c","ts":9}
{"id":"d","ts":10}
{"id":"b","ts":11}
`
	r := analyzeText(t, Options{MaxKeys: 2}, in)
	// c evicts a (1 copy), d evicts b (2 copies, gap 2 s); a and b come
	// back beyond the window; c (gap 4 s) and d remain.
	w := Window{MaxKeys: 2, Evicted: 2, Beyond: 2}
	if r.Window.MaxKeys != w.MaxKeys || r.Window.Evicted != w.Evicted || r.Window.Beyond != w.Beyond || r.Window.ExpectedFalseBeyond > 0.01 {
		t.Fatalf("window %+v", r.Window)
	}
	if r.DistinctKeys != 4 || r.ExtraCopies != 4 || r.KeysWithCopies != 2 || r.CopiesPerKey != (CopiesPerKey{One: 2, Two: 2, Max: 2}) {
		t.Fatalf("%+v", r)
	}
	if r.EventTimeGapMs.P50 != 2000 || r.EventTimeGapMs.Max != 4000 {
		t.Fatalf("%+v", r.EventTimeGapMs)
	}
	notes := strings.Join(r.Notes, "\n")
	if !strings.Contains(notes, "overflowed: 2 keys evicted; 2 later copies") || !strings.Contains(notes, "raise --max-keys") {
		t.Fatal(notes)
	}
}

// TestWindowAgainstMap drives the window with hashes that share tags and
// home slots, against a FIFO list and a map.
func TestWindowAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, max := range []int{1, 7, 700, 5000} {
		w := newWindow(max)
		var fifo []uint64
		live := map[uint64]int64{}
		for step := range 40000 {
			// Few tags, many low bits: long clusters and equal tags.
			h := uint64(rng.IntN(64))<<32 | uint64(rng.IntN(3*max+3))
			if rng.IntN(4) == 0 {
				h = uint64(rng.IntN(1<<20))<<44 | h // spread too
			}
			i, slot, _, ok := w.find(h)
			et, inMap := live[h]
			if ok != inMap {
				t.Fatalf("max %d step %d: find %x = %v, map says %v", max, step, h, ok, inMap)
			}
			if ok {
				if w.at(i).et != et {
					t.Fatalf("record of %x: %d, want %d", h, w.at(i).et, et)
				}
				continue
			}
			old, _, evicted := w.insert(h, slot, int64(step), 0)
			if len(fifo) == max {
				if !evicted || old.hash != fifo[0] {
					t.Fatalf("evicted %v %x, want %x", evicted, old.hash, fifo[0])
				}
				delete(live, fifo[0])
				fifo = fifo[1:]
				if !w.evictedBefore(old.hash) {
					t.Fatal("evicted key not remembered")
				}
			} else if evicted {
				t.Fatal("evicted before full")
			}
			fifo = append(fifo, h)
			live[h] = int64(step)
		}
		n := 0
		w.each(func(r *rec, _ bool) {
			n++
			if live[r.hash] != r.et {
				t.Fatalf("live record %x", r.hash)
			}
		})
		if n != len(live) {
			t.Fatalf("%d live, want %d", n, len(live))
		}
	}
}

// TestHistQuantiles: histogram quantiles against exact sorted quantiles
// (nearest rank) on random data spanning 0 to days, within 1%.
func TestHistQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 20 {
		n := 1 + rng.IntN(50000)
		var h Hist
		vals := make([]int64, n)
		for i := range vals {
			var v int64
			switch rng.IntN(5) {
			case 0:
				v = 0
			case 1:
				v = int64(rng.IntN(200)) // small integers: exact
			default:
				v = int64(math.Exp(rng.Float64() * math.Log(3e11))) // 1 µs to ~3.5 days
			}
			if trial == 0 {
				v = 2_400_000_000 // one value: exact
			}
			vals[i] = v
			h.Add(v)
		}
		slices.Sort(vals)
		for _, p := range []float64{0.1, 1, 10, 25, 50, 75, 90, 99, 99.5, 99.9, 99.99, 99.999, 100} {
			exact := float64(vals[Rank(p, int64(n))-1])
			got := h.Quantile(p)
			if exact == 0 && got != 0 || exact != 0 && math.Abs(got-exact)/exact > 0.01 {
				t.Fatalf("trial %d n %d p%v: got %v, exact %v", trial, n, p, got, exact)
			}
			if exact < 100 && got != exact {
				t.Fatalf("small value p%v: got %v, exact %v", p, got, exact)
			}
		}
		if h.Max() != vals[n-1] || h.Count() != int64(n) {
			t.Fatal("max/count")
		}
		for _, x := range []float64{-1, 0, 50, 1e6, 1e9, 1e12} {
			exact := int64(n - sort64(vals, x))
			got := h.CountAbove(x)
			if math.Abs(float64(got-exact)) > 0.01*float64(n)+1 {
				t.Fatalf("CountAbove(%v): %d, exact %d", x, got, exact)
			}
		}
	}
	if Rank(99.99, 10000) != 9999 || Rank(99.99, 10001) != 10000 || Rank(50, 3) != 2 || Rank(0.0001, 3) != 1 {
		t.Fatal("Rank")
	}
}

// sort64 counts the sorted values <= x.
func sort64(vals []int64, x float64) int {
	n, _ := slices.BinarySearchFunc(vals, x, func(v int64, x float64) int {
		if float64(v) <= x {
			return -1
		}
		return 1
	})
	return n
}

func TestRoundDelay(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{
		{0, 0},
		{-time.Second, 0},
		{300 * time.Microsecond, time.Millisecond},
		{37*time.Millisecond + 1, 38 * time.Millisecond},
		{3125 * time.Millisecond, 3200 * time.Millisecond},
		{75 * time.Second, 75 * time.Second},
		{76 * time.Second, 80 * time.Second},
		{150*time.Second + 1, 165 * time.Second},
		{49*time.Minute + 52*time.Second, 50 * time.Minute},
		{50 * time.Minute, 50 * time.Minute},
		{51*time.Minute + 15*time.Second, 55 * time.Minute},
		{2*time.Hour + 3*time.Minute, 2*time.Hour + 5*time.Minute},
		{9*time.Hour + time.Second, 9*time.Hour + 15*time.Minute},
		{25 * time.Hour, 25 * time.Hour},
		{25*time.Hour + 1, 26 * time.Hour},
		{10*24*time.Hour + time.Second, 11 * 24 * time.Hour},
	} {
		got := RoundDelay(c.in)
		if got != c.want {
			t.Errorf("RoundDelay(%v) = %v, want %v", c.in, got, c.want)
		}
		if c.in > 0 && (got < c.in || float64(got) > float64(c.in)*1.1+float64(time.Millisecond)) {
			t.Errorf("RoundDelay(%v) = %v: not within 10%% above", c.in, got)
		}
		// Spark reads the interval back as the same delay.
		ms, err := query.ParseDelay(SparkInterval(got))
		if err != nil || ms != got.Milliseconds() {
			t.Errorf("SparkInterval(%v) = %q reads back as %d ms, %v", got, SparkInterval(got), ms, err)
		}
	}
	for _, c := range []struct {
		ms   float64
		want string
	}{{0, "0"}, {0.25, "0.25ms"}, {350, "350ms"}, {1500, "1.5s"}, {60000, "1m"}, {2398000, "39m 58s"},
		{3600e3, "1h"}, {7500e3, "2h 5m"}, {86400e3 + 3600e3, "1d 1h"}} {
		if got := jsonDur(c.ms); got != c.want {
			t.Errorf("jsonDur(%v) = %q, want %q", c.ms, got, c.want)
		}
	}
	if Percent(0.004) != "0.4%" || Percent(0.000097) != "0.0097%" || Percent(4.0/7) != "57.14%" {
		t.Error("Percent", Percent(0.004), Percent(0.000097), Percent(4.0/7))
	}
}

// TestPayments: the synthetic payments trace has seed 000's ratios, and
// the delay chosen from it covers 40 minutes with the margin.
func TestPayments(t *testing.T) {
	var a *Analyzer
	a, err := New(Options{Keys: []string{"id"}, Time: "ts", Margin: DefaultMargin})
	if err != nil {
		t.Fatal(err)
	}
	if err := Payments(200_000).Each(a.Line); err != nil {
		t.Fatal(err)
	}
	r := a.Finish()
	if r.KeysWithCopiesRate < 0.0035 || r.KeysWithCopiesRate > 0.0045 || math.Abs(r.KeyRatePerSec-500) > 5 {
		t.Fatalf("keys with copies %v, rate %v", r.KeysWithCopiesRate, r.KeyRatePerSec)
	}
	// About 800 keys with copies: p99 is within 40 minutes, the max is
	// copy 7's tail of hours.
	if r.EventTimeGapMs.P50 > 5000 || r.EventTimeGapMs.P99 > 40*60e3 || r.EventTimeGapMs.Max < 2*3600e3 {
		t.Fatalf("gaps %+v", r.EventTimeGapMs)
	}
	var out bytes.Buffer
	r.WriteText(&out)
	for _, s := range []string{"recommended delay", ".withWatermark(\"ts\",", "dropDuplicatesWithinWatermark([id])", "is their largest gap"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, out.String())
		}
	}
}

// TestAgainstReference: random traces over a small key space, with a
// window small enough to evict, against a direct model (maps, a FIFO and
// an exact set of evicted keys).
func TestAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		maxKeys := []int{1, 2, 3, 10, 100}[trial%5]
		universe := 1 + rng.IntN(60)
		n := rng.IntN(3000)
		type ref struct{ etMin, etMax, arrMin, arrMax, copies int64 }
		live := map[string]*ref{}
		evicted := map[string]bool{}
		var fifo []string
		var distinct, extra, beyond, nEvicted int64
		var copies [4]int64
		var gapsET, gapsArr []int64
		finalize := func(r *ref) {
			copies[min(r.copies, 4)-1]++
			if r.copies > 1 {
				gapsET = append(gapsET, r.etMax-r.etMin)
				gapsArr = append(gapsArr, r.arrMax-r.arrMin)
			}
		}
		var in strings.Builder
		for i := range n {
			k := "k" + strconv.Itoa(rng.IntN(universe))
			ts := 1 + rng.IntN(5000)
			in.WriteString(`{"id":"` + k + `","ts":` + strconv.Itoa(ts) + "}\n")
			et, arr := int64(ts)*1e6, int64(i+1)
			switch r := live[k]; {
			case r != nil:
				r.etMin, r.etMax = min(r.etMin, et), max(r.etMax, et)
				r.arrMin, r.arrMax = min(r.arrMin, arr), max(r.arrMax, arr)
				r.copies++
				extra++
			case evicted[k]:
				beyond++
				extra++
			default:
				distinct++
				if len(fifo) == maxKeys {
					finalize(live[fifo[0]])
					delete(live, fifo[0])
					evicted[fifo[0]] = true
					nEvicted++
					fifo = fifo[1:]
				}
				fifo = append(fifo, k)
				live[k] = &ref{et, et, arr, arr, 1}
			}
		}
		for _, k := range fifo {
			finalize(live[k])
		}
		r := analyzeText(t, Options{MaxKeys: maxKeys}, in.String())
		if r.DistinctKeys != distinct || r.ExtraCopies != extra || r.Window.Beyond != beyond || r.Window.Evicted != nEvicted ||
			r.CopiesPerKey.One != copies[0] || r.CopiesPerKey.Two != copies[1] || r.CopiesPerKey.Three != copies[2] || r.CopiesPerKey.FourPlus != copies[3] {
			t.Fatalf("trial %d (max %d, %d keys, %d events): got keys %d extra %d beyond %d evicted %d copies %+v; want %d %d %d %d %v",
				trial, maxKeys, universe, n, r.DistinctKeys, r.ExtraCopies, r.Window.Beyond, r.Window.Evicted, r.CopiesPerKey,
				distinct, extra, beyond, nEvicted, copies)
		}
		for _, c := range []struct {
			vals  []int64
			q     Quantiles
			scale float64
		}{{gapsET, r.EventTimeGapMs, 1e-3}, {gapsArr, r.ArrivalGap, 1}} {
			if int64(len(c.vals)) != c.q.Count {
				t.Fatalf("trial %d: %d gaps, want %d", trial, c.q.Count, len(c.vals))
			}
			if len(c.vals) == 0 {
				continue
			}
			slices.Sort(c.vals)
			for _, p := range []struct {
				pct float64
				got float64
			}{{50, c.q.P50}, {99, c.q.P99}, {99.9, c.q.P999}, {99.99, c.q.P9999}, {100, c.q.Max}} {
				exact := float64(c.vals[Rank(p.pct, int64(len(c.vals)))-1]) * c.scale
				if math.Abs(p.got-exact) > 0.01*exact {
					t.Fatalf("trial %d: p%v %v, exact %v", trial, p.pct, p.got, exact)
				}
			}
		}
	}
}

// TestBloomGenerations: recently evicted keys are always recognised, keys
// evicted more than two generations ago are forgotten, and the false
// positive rate is small and as estimated.
func TestBloomGenerations(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	w := newWindow(100)
	var hs []uint64
	for range 100 + 3*minBloomKeys + 1000 {
		h := rng.Uint64()
		_, slot, _, ok := w.find(h)
		if ok {
			continue
		}
		w.insert(h, slot, 0, 0)
		hs = append(hs, h)
	}
	evicted := hs[:len(hs)-100]
	for _, h := range evicted[len(evicted)-minBloomKeys:] {
		if !w.evictedBefore(h) {
			t.Fatal("a recent eviction was forgotten")
		}
	}
	forgotten := 0
	for _, h := range evicted[:minBloomKeys] {
		if !w.evictedBefore(h) {
			forgotten++
		}
	}
	fp := 0
	const fresh = 200_000
	for range fresh {
		if w.evictedBefore(rng.Uint64()) {
			fp++
		}
	}
	est := w.falsePositive()
	t.Logf("forgotten %d of %d old evictions; false positives %d of %d (estimated %.2g each)", forgotten, minBloomKeys, fp, fresh, est)
	if forgotten < minBloomKeys*99/100 || est > 1e-3 || float64(fp) > 3*est*fresh+10 {
		t.Fatalf("forgotten %d, false positives %d, estimate %g", forgotten, fp, est)
	}
}

package diagnose

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/diagnose/progress"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/sim/check"
)

func checkKind(k string) check.Kind { return check.Kind(k) }

// expectations per fixture case (scripts/diagnose/fixtures.py): the
// problems that must be found, and those that must not.
var expectations = map[string]struct{ want, not []Kind }{
	"unbounded":   {want: []Kind{NoWatermark, StateUnbounded}, not: []Kind{WatermarkStalled, LateDropped, WatermarkJump}},
	"stalled-min": {want: []Kind{WatermarkStalled, StateUnbounded}, not: []Kind{NoWatermark, LateDropped, WatermarkJump}},
	"healthy":     {not: problemKinds},
	"future-jump": {want: []Kind{WatermarkJump, LateDropped}, not: []Kind{NoWatermark, WatermarkStalled}},
	"restamped":   {not: problemKinds},
	"snapshots":   {not: problemKinds},
}

func caseOf(dir string) string {
	b := filepath.Base(dir)
	return b[:strings.LastIndexByte(b, '-')]
}

func problems(r Report) []Kind {
	var out []Kind
	for _, q := range r.Queries {
		for _, f := range q.Finding {
			if f.Severity == Problem {
				out = append(out, f.Kind)
			}
		}
	}
	return out
}

func fixtureDirs(t *testing.T) []string {
	dirs, _ := filepath.Glob("testdata/spark/*-*")
	if len(dirs) < 10 {
		t.Fatalf("want 10 fixtures (5 cases x 2 stores) under testdata/spark, got %v", dirs)
	}
	return dirs
}

// Every shape of every fixture gives the case's findings.
func TestFixtureFindings(t *testing.T) {
	for _, dir := range fixtureDirs(t) {
		exp, ok := expectations[caseOf(dir)]
		if !ok {
			t.Fatalf("%s: no expectation", dir)
		}
		ev, _ := filepath.Glob(filepath.Join(dir, "eventlog", "*"))
		for _, in := range append([]string{"progress.jsonl", "progress.json", "driver.log"}, ev...) {
			if !strings.Contains(in, "/") {
				in = filepath.Join(dir, in)
			}
			t.Run(strings.TrimPrefix(in, "testdata/spark/"), func(t *testing.T) {
				l, err := progress.Read([]string{in})
				if err != nil {
					t.Fatal(err)
				}
				r := Diagnose(l, Options{MemoryBudgetBytes: 1 << 30})
				got := problems(r)
				for _, k := range exp.want {
					if !slices.Contains(got, k) {
						t.Errorf("want %s, got %v", k, got)
					}
				}
				for _, k := range exp.not {
					if slices.Contains(got, k) {
						t.Errorf("unexpected %s: %+v", k, *r.Find(k))
					}
				}
				if len(exp.want) == 0 && !r.Healthy() {
					t.Errorf("healthy case: %s", r.Summary)
				}
				for _, f := range r.Queries[0].Finding {
					if f.Severity == Problem && (f.Advice == "" || !strings.Contains(f.Advice, "seed 00")) {
						t.Errorf("%s: the advice cites no seed: %q", f.Kind, f.Advice)
					}
					if f.Message == "" || len(f.Evidence) == 0 {
						t.Errorf("%s has no message or evidence", f.Kind)
					}
				}
			})
		}
	}
}

// prog builds a synthetic record.
func prog(batch int64, atMs int64, in int64, op progress.StateOperator, et progress.EventTime, durMs int64) progress.Progress {
	return progress.Progress{ID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", RunID: "11111111-2222-3333-4444-555555555555",
		TimestampMs: atMs, BatchID: batch, BatchDurationMs: durMs, NumInputRows: in, InputRowsPerSecond: float64(in),
		EventTime: et, StateOperators: []progress.StateOperator{op},
		Sources: []progress.Source{{NumInputRows: in}}}
}

func logOf(recs ...progress.Progress) *progress.Log {
	return &progress.Log{Queries: []progress.Query{{ID: recs[0].ID, Runs: []progress.Run{{RunID: recs[0].RunID, Records: recs}}}}}
}

func TestSyntheticRules(t *testing.T) {
	const t0 = 1_800_000_000_000
	et := func(i int64, wm int64) progress.EventTime {
		return progress.EventTime{MaxMs: t0 + i*10_000, HasMax: true, MinMs: t0 + i*10_000 - 5000, HasMin: true, WatermarkMs: wm, HasWatermark: true}
	}
	healthyOp := func(total int64) progress.StateOperator {
		return progress.StateOperator{OperatorName: "dedupeWithinWatermark", NumRowsTotal: total, NumRowsUpdated: 100, NumRowsRemoved: 100,
			NumShufflePartitions: 200, DroppedDuplicateRows: 2, StoreProvider: "hdfs"}
	}
	var durations, partitions, healthy []progress.Progress
	for i := int64(0); i < 20; i++ {
		wm := t0 + (i-1)*10_000 - 20_000
		durations = append(durations, prog(i, t0+i*10_000, 100, healthyOp(500), et(i, wm), 1000+i*i*100))
		big := healthyOp(2_000_000_000)
		partitions = append(partitions, prog(i, t0+i*10_000, 100, big, et(i, wm), 1000))
		healthy = append(healthy, prog(i, t0+i*10_000, 100, healthyOp(500), et(i, wm), 1000))
	}
	for _, tc := range []struct {
		name string
		log  *progress.Log
		want Kind
	}{
		{"duration", logOf(durations...), BatchDurationGrowing},
		{"partitions", logOf(partitions...), TooFewPartitions},
		{"healthy", logOf(healthy...), ""},
	} {
		r := Diagnose(tc.log, Options{})
		got := problems(r)
		if tc.want == "" {
			if len(got) != 0 {
				t.Errorf("%s: %v", tc.name, got)
			}
			continue
		}
		if !slices.Contains(got, tc.want) {
			t.Errorf("%s: want %s, got %v", tc.name, tc.want, got)
		}
	}
	failed := logOf(healthy...)
	failed.Queries[0].Runs[0].Exception = "org.apache.spark.SparkException: boom\n\tat ..."
	if r := Diagnose(failed, Options{}); r.Find(QueryFailed) == nil || !strings.Contains(r.Find(QueryFailed).Evidence[0], "boom") {
		t.Errorf("query-failed: %v", problems(r))
	}
}

// The loop: real log -> diagnose -> scenario -> simulator -> the same
// finding (in the checker's vocabulary), and a healthy log gives a
// scenario that runs clean.
func TestEmittedScenarioReproduces(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	for _, c := range []string{"unbounded", "stalled-min", "future-jump", "healthy"} {
		t.Run(c, func(t *testing.T) {
			in := filepath.Join("testdata/spark", c+"-hdfs", "progress.jsonl")
			l, err := progress.Read([]string{in})
			if err != nil {
				t.Fatal(err)
			}
			r := Diagnose(l, Options{})
			text, want := Scenario(r, 0, ScenarioHints{Files: []string{in}})
			if (len(want) == 0) != r.Healthy() {
				t.Fatalf("expects %v for %s", want, r.Summary)
			}
			s, err := scenarios.Parse(c+".yaml", []byte(text))
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			run, err := scenarios.Run(s, 1, scenarios.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !run.Passed {
				t.Fatalf("the fitted scenario did not reproduce %v: %+v\n%s", want, run.Expect, text)
			}
			for _, k := range want {
				if run.Report.Find(checkKind(k)) == nil {
					t.Errorf("the simulator did not find %s", k)
				}
			}
		})
	}
}

// TestRedteamWatermarkRegressed: within one run Spark's watermark never
// goes back (WatermarkTracker.updateWatermark only raises it, and a batch
// runs with the watermark of its offsets/N); a record whose watermark is
// below an earlier batch's of the same run is a problem naming both.
func TestRedteamWatermarkRegressed(t *testing.T) {
	op := progress.StateOperator{OperatorName: "dedupeWithinWatermark", NumRowsTotal: 10, NumRowsUpdated: 5, NumRowsRemoved: 5}
	var recs []progress.Progress
	for i := range 6 {
		wm := int64(i) * 60_000
		if i == 4 {
			wm = 60_000
		}
		p := prog(int64(i), int64(i)*60_000+600_000, 5, op, progress.EventTime{WatermarkMs: wm, HasWatermark: true, MaxMs: int64(i)*60_000 + 120_000, HasMax: true}, 100)
		p.Where = fmt.Sprintf("p.jsonl:%d", i+1)
		recs = append(recs, p)
	}
	r := Diagnose(logOf(recs...), Options{})
	f := r.Find(WatermarkRegressed)
	if f == nil || f.Severity != Problem || f.FromBatch != 4 || !strings.Contains(strings.Join(f.Evidence, "\n"), "p.jsonl:4") || !strings.Contains(strings.Join(f.Evidence, "\n"), "p.jsonl:5") {
		t.Fatalf("want watermark-regressed at batch 4 naming p.jsonl:4 and p.jsonl:5, got %+v", f)
	}
	// A watermark standing still is no regression.
	for i := range recs {
		recs[i].EventTime.WatermarkMs = 0
	}
	if r := Diagnose(logOf(recs...), Options{}); r.Find(WatermarkRegressed) != nil {
		t.Errorf("a watermark standing still is no regression")
	}
}

// TestRealTimeProgress: real Spark 4.3 progress of a real-time query
// (scripts/diagnose/realtime_progress.py) is told as real-time mode, with
// its at-least-once risk, and the re-stamp advice does not send the user
// to dropDuplicatesWithinWatermark, which real-time mode refuses.
func TestRealTimeProgress(t *testing.T) {
	l, err := progress.Read([]string{"testdata/realtime/progress.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	r := Diagnose(l, Options{})
	q := r.Queries[0]
	if !q.Facts.RealTime || q.Facts.RealTimeBatchMs < 5000 || q.Facts.RealTimeBatchMs > 6000 {
		t.Fatalf("facts %+v", q.Facts)
	}
	f := r.Find(RealTimeAtLeastOnce)
	if f == nil || f.Severity != Risk || !strings.Contains(f.Message, "at most 46 rows in one batch") {
		t.Fatalf("real-time finding %+v", f)
	}
	e := r.Find(EventTimeInKey)
	if e == nil || !strings.Contains(e.Advice, "does not run dropDuplicatesWithinWatermark") {
		t.Fatalf("event-time-in-key advice %+v", e)
	}
	if r.Find(BatchDurationGrowing) != nil {
		t.Fatal("a real-time batch lasts its trigger: no duration finding")
	}
	// --query saying so is enough, whatever the records look like.
	if !diagnoseQuery(l.Queries[0], Options{RealTimeMs: 5000}.withDefaults()).Facts.RealTime {
		t.Fatal("--query real_time not taken")
	}
	// --query without a trigger says micro-batches, whatever the records.
	if diagnoseQuery(l.Queries[0], Options{RealTimeMs: -1}.withDefaults()).Facts.RealTime {
		t.Fatal("--query without trigger overridden by the records")
	}
}

// TestNotRealTime: micro-batches are not taken for real-time mode: the
// fixtures (1 s triggers), and a slow micro-batch query whose batches last
// over 5 s but follow their input (no long empty batch, lengths spread).
func TestNotRealTime(t *testing.T) {
	for _, dir := range fixtureDirs(t) {
		l, err := progress.Read([]string{filepath.Join(dir, "progress.jsonl")})
		if err != nil {
			t.Fatal(err)
		}
		if r := Diagnose(l, Options{}); r.Queries[0].Facts.RealTime || r.Find(RealTimeAtLeastOnce) != nil {
			t.Errorf("%s: taken for real-time mode", dir)
		}
	}
	op := progress.StateOperator{OperatorName: "dedupe", NumRowsTotal: 10}
	var recs []progress.Progress
	at := int64(1_700_000_000_000)
	for i, d := range []int64{6000, 9000, 12000, 7000, 15000} {
		recs = append(recs, prog(int64(i), at, 100*int64(i+1), op, progress.EventTime{}, d))
		at += d
	}
	if r := Diagnose(logOf(recs...), Options{}); r.Queries[0].Facts.RealTime {
		t.Error("slow micro-batches taken for real-time mode")
	}
	// The same lengths as real-time batches (5.1-5.4 s, back to back) are.
	recs = recs[:0]
	for i, d := range []int64{7000, 5200, 5300, 5100, 5400} {
		recs = append(recs, prog(int64(i), at, 10, op, progress.EventTime{}, d))
		at += d + 50
	}
	if r := Diagnose(logOf(recs...), Options{}); !r.Queries[0].Facts.RealTime {
		t.Error("real-time batches not recognised")
	}
}

// TestEmittedRealTimeScenario: a real-time log's fitted scenario runs the
// query in real-time mode on the Kafka sink with a crash after the rows
// went out, and the simulator shows the copies (sink-replay-duplicate).
func TestEmittedRealTimeScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	in := "testdata/realtime/progress.jsonl"
	l, err := progress.Read([]string{in})
	if err != nil {
		t.Fatal(err)
	}
	r := Diagnose(l, Options{})
	text, want := Scenario(r, 0, ScenarioHints{Files: []string{in}})
	if !slices.Equal(want, []string{"sink-replay-duplicate"}) || !strings.Contains(text, "trigger: {real_time: 5 seconds}") ||
		!strings.Contains(text, "sink: {kind: kafka}") || !strings.Contains(text, "spark_version: 4.3.0") {
		t.Fatalf("want %v\n%s", want, text)
	}
	s, err := scenarios.Parse("realtime.yaml", []byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	run, err := scenarios.Run(s, 1, scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !run.Passed || run.Report.Find(checkKind("sink-replay-duplicate")) == nil {
		t.Fatalf("the fitted scenario did not reproduce the copies: %+v\n%s", run.Expect, text)
	}
}

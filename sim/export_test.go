package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/engine/dedup"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim/history"
)

// replayed is what exec made of an exported trace.
type replayed struct {
	recs   []*engine.BatchRecord
	res    *trace.Result
	steps  []steps.Step
	warned []string
}

// replayTrace parses an exported trace and runs it as `dedupsim exec` does
// (steps.Parse + trace.Run on a fresh checkpoint).
func replayTrace(t testing.TB, queryYAML, stepsJSONL []byte) *replayed {
	t.Helper()
	q, err := query.Parse("query.yaml", queryYAML)
	if err != nil {
		t.Fatalf("exported query does not parse: %v\n%s", err, queryYAML)
	}
	st, err := steps.Parse("steps.jsonl", stepsJSONL, q)
	if err != nil {
		t.Fatalf("exported steps do not parse: %v", err)
	}
	r := &replayed{steps: st}
	res, err := trace.Run(q, st, trace.Options{Checkpoint: fsys.NewMem(),
		OnBatch: func(rec *engine.BatchRecord) { r.recs = append(r.recs, rec) },
		Warn:    func(s string) { r.warned = append(r.warned, s) }})
	if err != nil {
		t.Fatalf("exec of the exported trace: %v", err)
	}
	r.res = res
	return r
}

func outcomeName(o dedup.Outcome) history.Outcome {
	switch o {
	case dedup.Emitted:
		return history.Emitted
	case dedup.Duplicate:
		return history.Duplicate
	case dedup.Late:
		return history.Late
	case dedup.Filtered:
		return history.Filtered
	}
	return 0 // none: no outcome of the history
}

// stateFigures are the compared state metrics of one execution.
type stateFigures struct {
	Total, Updated, Removed, DroppedByWatermark, DroppedDuplicates int64
}

func figuresOf(p engine.Progress) (stateFigures, bool) {
	if len(p.StateOperators) == 0 {
		return stateFigures{}, false
	}
	o := p.StateOperators[0]
	return stateFigures{o.NumRowsTotal, o.NumRowsUpdated, o.NumRowsRemoved, o.NumRowsDroppedByWatermark, o.CustomMetrics["numDroppedDuplicateRows"]}, true
}

// compareReplay asserts that exec ran exactly the history's batch
// executions of checkpoint epoch [fromMs, toMs): same ids, replays and
// crashes, inputs (by _copy), outcomes, emitted rows (byte for byte, sorted),
// watermarks and state metrics; and, when wantTable, the same final table.
func compareReplay(t *testing.T, h *history.History, r *replayed, opt ExportOptions, fromMs, toMs int64, wantTable bool) {
	t.Helper()
	var want []*history.Batch
	for i := range h.Batches {
		if b := &h.Batches[i]; b.AtMs >= fromMs && b.AtMs < toMs {
			want = append(want, b)
		}
	}
	if len(r.recs) != len(want) {
		t.Fatalf("exec ran %d batch executions, the history %d", len(r.recs), len(want))
	}
	randomAt := map[[2]int64]bool{}
	for _, c := range h.Crashes {
		if c.Point == "random" {
			randomAt[[2]int64{c.AtMs, c.BatchID}] = true
		}
	}
	encs := map[int]*rowEncoder{}
	x, err := newExporter(h, opt)
	if err != nil {
		t.Fatal(err)
	}
	for s := range x.encs {
		encs[s] = x.encs[s]
	}
	render := func(c int) string {
		cp := h.Copies[c]
		return string(encs[int(cp.Source)].appendRow(nil, cp.Event, cp.EventTimeUs, c))
	}
	for i, rec := range r.recs {
		b := want[i]
		where := fmt.Sprintf("execution %d (batch %d at %d ms)", i, b.BatchID, b.AtMs)
		crashedOK := string(rec.Crashed) == b.Crashed
		if randomAt[[2]int64{b.AtMs, b.BatchID}] && b.Crashed == string(crashpoint.AfterSinkWrite) && rec.Crashed == crashpoint.AfterCommit {
			crashedOK = true // its commit write failed after the commit was durable: after-commit in exec
		}
		if rec.BatchID != b.BatchID || rec.Replay != b.Replay || !crashedOK {
			t.Fatalf("%s: exec ran batch %d replay=%v crashed=%q, the history batch %d replay=%v crashed=%q",
				where, rec.BatchID, rec.Replay, rec.Crashed, b.BatchID, b.Replay, b.Crashed)
		}
		in := make([]int, len(rec.Input))
		for j, row := range rec.Input {
			in[j] = copyIndex(row.Data)
		}
		// The export leaves out the rows drop_future_events filtered.
		var wantIn []int
		var wantOut []history.Outcome
		for j, c := range b.Input {
			if b.Outcomes[j] != history.Filtered {
				wantIn, wantOut = append(wantIn, int(c)), append(wantOut, b.Outcomes[j])
			}
		}
		filtered := len(b.Input) - len(wantIn)
		if !slices.Equal(in, wantIn) {
			t.Fatalf("%s: exec read copies %v, the history %v", where, in, b.Input)
		}
		for j, o := range rec.Outcomes {
			if outcomeName(o) != wantOut[j] {
				t.Fatalf("%s: copy %d %s in exec, %s in the history", where, in[j], outcomeName(o), wantOut[j])
			}
		}
		var got, exp []string
		for _, o := range rec.Output {
			got = append(got, string(o.Data))
		}
		for j, c := range b.Input {
			if b.Outcomes[j] == history.Emitted {
				exp = append(exp, render(int(c)))
			}
		}
		slices.Sort(got)
		slices.Sort(exp)
		if !slices.Equal(got, exp) {
			t.Fatalf("%s: exec emitted %d rows %.300q, the history %d %.300q", where, len(got), got, len(exp), exp)
		}
		// An execution that died in its commit write (crash-random) reports
		// the watermark computed for the commit; exec's after-sink-write
		// crash, which stands for it, the current one (engine.execute).
		nextOK := rec.NextWatermarkMs == b.NextWatermarkMs || randomAt[[2]int64{b.AtMs, b.BatchID}]
		if rec.LateWatermarkMs != b.LateWatermarkMs || rec.WatermarkMs != b.WatermarkMs || !nextOK {
			t.Fatalf("%s: watermarks (late, batch, next) exec (%d, %d, %d), history (%d, %d, %d)", where,
				rec.LateWatermarkMs, rec.WatermarkMs, rec.NextWatermarkMs, b.LateWatermarkMs, b.WatermarkMs, b.NextWatermarkMs)
		}
		gotF, hasState := figuresOf(rec.Progress)
		if hasState != (b.NumRowsTotal != 0 || b.NumRowsUpdated != 0 || b.NumRowsRemoved != 0 || h.API != string(query.BatchDropDuplicates)) {
			t.Fatalf("%s: exec state operator present=%v for api %s", where, hasState, h.API)
		}
		var p engine.Progress
		if err := json.Unmarshal(b.Progress, &p); err != nil {
			t.Fatalf("%s: history progress: %v", where, err)
		}
		wantF, _ := figuresOf(p)
		if gotF != wantF || gotF.Total != b.NumRowsTotal || gotF.Updated != b.NumRowsUpdated || gotF.Removed != b.NumRowsRemoved {
			t.Fatalf("%s: state exec %+v, history %+v", where, gotF, wantF)
		}
		if p.NumInputRows != rec.Progress.NumInputRows+int64(filtered) || p.EventTime["watermark"] != rec.Progress.EventTime["watermark"] {
			t.Fatalf("%s: progress numInputRows/watermark exec %d %q, history %d %q", where,
				rec.Progress.NumInputRows, rec.Progress.EventTime["watermark"], p.NumInputRows, p.EventTime["watermark"])
		}
	}
	if wantTable {
		var got, exp []string
		for _, row := range r.res.Table {
			got = append(got, string(row))
		}
		for _, c := range h.Table {
			exp = append(exp, render(int(c)))
		}
		if !slices.Equal(got, exp) {
			t.Fatalf("final table: exec %d rows, history %d", len(got), len(exp))
		}
	}
}

// exportConfig is a short run: 40 s of faults, 20 s of heal.
func exportConfig(q string, rate float64, plan map[string]faults.Knobs) Config {
	cfg := testConfig(q, plan)
	cfg.FaultPhase = Duration(40 * time.Second)
	cfg.HealPhase = Duration(20 * time.Second)
	cfg.Downtime = Duration(3 * time.Second)
	cfg.Sources[0].Rate.PerSec = rate
	return cfg
}

// TestExportTraceReplays: the exported file of a run with retries,
// duplicate appends and crashes at every named point replays with exec
// batch for batch.
func TestExportTraceReplays(t *testing.T) {
	crashes := func(rate float64, extra map[string]faults.Knobs) map[string]faults.Knobs {
		p := map[string]faults.Knobs{}
		for _, cp := range crashpoint.All() {
			p[faults.CrashAt(string(cp))] = faults.Knobs{"rate": rate}
		}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	retries := map[string]faults.Knobs{
		faults.ProducerRetry:   {"probability": 0.1, "copies_max": 3, "gap_ms": "2s"},
		faults.DuplicateAppend: {"probability": 0.05},
	}
	restamped := map[string]faults.Knobs{faults.ProducerRetryRestamped: {"probability": 0.1, "gap_ms": "3s"}, faults.DuplicateAppend: {"probability": 0.05}}
	eventKey := "dedup: {api: dropDuplicates, keys: [id, ts]}\nwatermark: {column: ts, delay: 5 seconds}\nshuffle_partitions: 2\nsink: {kind: merge}\n"
	noWM := "dedup: {api: dropDuplicates, keys: [id]}\nshuffle_partitions: 2\nsink: {kind: append}\n"
	batchDD := "dedup: {api: batchDropDuplicates, keys: [id]}\nsink: {kind: append}\n"
	policyMax := strings.Replace(twoSources, "shuffle_partitions: 2", "shuffle_partitions: 2\nwatermark_policy: max", 1)

	type tc struct {
		name string
		cfg  Config
	}
	var cases []tc
	cases = append(cases,
		tc{"table", exportConfig(tableQuery, 40, crashes(0.08, retries))},
		tc{"append-restamped", exportConfig(appendQuery, 40, crashes(0.08, restamped))},
		tc{"merge-event-time-key", exportConfig(eventKey, 30, crashes(0.06, restamped))},
		tc{"no-watermark-bounded", func() Config {
			c := exportConfig(noWM, 30, crashes(0.06, retries))
			c.Sources[0].Keys = KeySpace{Kind: KeysBounded, Size: 200}
			return c
		}()},
		tc{"batchDropDuplicates", exportConfig(batchDD, 30, crashes(0.06, retries))},
		tc{"future-and-skew", exportConfig(tableQuery, 30, crashes(0.05, map[string]faults.Knobs{
			faults.FutureTimestamp: {"producers_fraction": 0.02, "ahead_ms": "1m"}, faults.ClockSkew: nil}))},
		tc{"drop-future-events", exportConfig(strings.Replace(tableQuery, "sink:", "drop_future_events: 30 seconds\nsink:", 1), 30, crashes(0.05, map[string]faults.Knobs{
			faults.FutureTimestamp: {"producers_fraction": 0.05, "ahead_ms": "1h"}, faults.ProducerRetry: {"probability": 0.1}}))},
		tc{"rfc3339", func() Config {
			c := exportConfig(tableQuery, 30, crashes(0.06, retries))
			c.Sources[0].TimestampFormat = "rfc3339"
			return c
		}()},
		tc{"two-sources", func() Config {
			c := twoSourceConfig(crashes(0.06, map[string]faults.Knobs{faults.ProducerRetry: {"probability": 0.1},
				faults.SourceSilence: {"source": 1, "start_frac": 0.2, "duration_ms": "10s"}}))
			c.FaultPhase, c.HealPhase, c.Downtime = Duration(40*time.Second), Duration(20*time.Second), Duration(3*time.Second)
			c.Sources[0].Rate.PerSec, c.Sources[1].Rate.PerSec = 20, 10
			return c
		}()},
		tc{"two-sources-lagging-max", func() Config {
			c := twoSourceConfig(crashes(0.06, map[string]faults.Knobs{faults.LaggingInput: {"source": 0, "lag_ms": "5s"}}))
			c.Query = QueryText(policyMax)
			c.FaultPhase, c.HealPhase, c.Downtime = Duration(40*time.Second), Duration(20*time.Second), Duration(3*time.Second)
			c.Sources[0].Rate.PerSec, c.Sources[1].Rate.PerSec = 20, 10
			return c
		}()},
	)
	crashed := map[string]int{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 3; seed++ {
				h := run(t, c.cfg, seed)
				opt, err := ExportOptionsFor(c.cfg)
				if err != nil {
					t.Fatal(err)
				}
				qy, st, err := ExportTraceWith(h, opt)
				if err != nil {
					t.Fatal(err)
				}
				r := replayTrace(t, qy, st)
				if len(r.warned) > 0 {
					t.Errorf("seed %d: exec warned: %q", seed, r.warned)
				}
				if bytes.Contains(st, []byte("No exec form")) {
					t.Errorf("seed %d: named crashes without power loss need no approximation", seed)
				}
				mergeLookback := strings.Contains(string(h.Query), "lookback")
				compareReplay(t, h, r, opt, -1<<63, 1<<63-1, h.HasTable && !mergeLookback)
				if r.res.Crashes != len(h.Crashes) {
					t.Fatalf("seed %d: exec crashed %d times, the history %d", seed, r.res.Crashes, len(h.Crashes))
				}
				for _, cr := range h.Crashes {
					crashed[cr.Point]++
				}
				if c.name == "drop-future-events" && !bytes.Contains(st, []byte("drop_future_events filter removed")) {
					t.Fatalf("seed %d: nothing filtered", seed)
				}
			}
		})
	}
	for _, cp := range crashpoint.All() {
		if crashed[string(cp)] == 0 {
			t.Errorf("no sampled run crashed at %s", cp)
		}
	}
}

// TestExportTraceShape: the line forms of a small run, by hand.
func TestExportTraceShape(t *testing.T) {
	cfg := exportConfig(tableQuery, 5, map[string]faults.Knobs{faults.CrashAfterOffsetsWrite: {"rate": 0.2}, faults.CrashAfterSinkWrite: {"rate": 0.2}})
	h := run(t, cfg, 7)
	qy, st, err := ExportTrace(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(qy), tableQuery) {
		t.Fatalf("query.yaml lost the query:\n%s", qy)
	}
	lines := strings.Split(strings.TrimSpace(string(st)), "\n")
	var once, ticks, crashesSeen int
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, `{"sources": {"default": [{"id":"`) && strings.HasSuffix(l, `]}, "once": true}`):
			once++
		case l == `{"tick": true}`:
			ticks++
		case strings.HasPrefix(l, `{"crash": "after-`):
			crashesSeen++
		default:
			t.Fatalf("unexpected line %q", l)
		}
	}
	if once+ticks < len(h.Batches) || crashesSeen != len(h.Crashes) || crashesSeen == 0 {
		t.Fatalf("%d once, %d ticks, %d crashes for %d executions and %d crashes", once, ticks, crashesSeen, len(h.Batches), len(h.Crashes))
	}
	// The rows are the simulator's bytes.
	var copiesInFile int
	for _, s := range replayTrace(t, qy, st).steps {
		for _, rows := range s.Rows {
			for _, r := range rows {
				c := copyIndex(r.Data)
				cp := h.Copies[c]
				enc := newRowEncoder("ts", false)
				a := &arena{}
				ref := enc.encode(a, []byte(cp.Event), cp.EventTimeUs, c)
				if want := a.chunks[ref.chunk][ref.off : ref.off+ref.dataLen]; !bytes.Equal(r.Data, want) {
					t.Fatalf("row %s, the simulator's %s", r.Data, want)
				}
				copiesInFile++
			}
		}
	}
	if copiesInFile != len(h.Copies) {
		t.Fatalf("%d rows in the file, %d copies", copiesInFile, len(h.Copies))
	}
}

// TestAppendRowMatchesEncode: appendRow renders what encode stores.
func TestAppendRowMatchesEncode(t *testing.T) {
	for _, rfc := range []bool{false, true} {
		for _, us := range []int64{0, 1, -1, -1_500_000, 1767225600_123456, 999_999, -999_999} {
			e := newRowEncoder("event_time", rfc)
			a := &arena{}
			ref := e.encode(a, []byte("e0-42"), us, 17)
			want := a.chunks[ref.chunk][ref.off : ref.off+ref.dataLen]
			if got := e.appendRow(nil, "e0-42", us, 17); !bytes.Equal(got, want) {
				t.Fatalf("appendRow %s, encode %s", got, want)
			}
		}
	}
	e := newRowEncoder("ts", false)
	if got := string(e.appendRow(nil, `a"b`, 0, 1)); got != `{"id":"a\"b","ts":0.000000,"_copy":1}` {
		t.Fatalf("escaped id: %s", got)
	}
}

// TestExportTraceApproximations: crash-random with power losses and torn
// writes has no exec form; the export still parses and runs, appends every
// copy exactly once and says where it approximated. The named points it
// picks leave exec's checkpoint as the simulator's restart found it, so
// these runs still replay batch for batch (up to the crashed execution's
// label and next watermark, see compareReplay).
func TestExportTraceApproximations(t *testing.T) {
	cfg := exportConfig(tableQuery, 30, map[string]faults.Knobs{
		faults.CrashRandom: {"rate": 0.15}, faults.LostUnsyncedWrite: {"probability": 0.5}, faults.TornWrite: {"probability": 0.5},
		faults.ProducerRetry: {"probability": 0.05},
	})
	approx, restarts := 0, 0
	for seed := uint64(1); seed <= 6; seed++ {
		h := run(t, cfg, seed)
		qy, st, err := ExportTrace(h)
		if err != nil {
			t.Fatal(err)
		}
		r := replayTrace(t, qy, st)
		n := 0
		seen := make([]bool, len(h.Copies))
		for _, s := range r.steps {
			for _, rows := range s.Rows {
				for _, row := range rows {
					c := copyIndex(row.Data)
					if seen[c] {
						t.Fatalf("seed %d: copy %d appended twice", seed, c)
					}
					seen[c] = true
					n++
				}
			}
		}
		if n != len(h.Copies) {
			t.Fatalf("seed %d: %d of %d copies appended", seed, n, len(h.Copies))
		}
		if !bytes.Contains(st, []byte("crash-random")) {
			t.Fatalf("seed %d: no crash-random comment", seed)
		}
		if bytes.Contains(st, []byte("No exec form")) {
			approx++
		}
		if bytes.Contains(st, []byte(`{"restart": true}`)) {
			restarts++
		}
		// These seeds' power losses never erased a batch that had reached
		// the sink, so even the approximated crashes replay batch for batch.
		compareReplay(t, h, r, ExportOptions{}, -1<<63, 1<<63-1, true)
	}
	if approx == 0 || restarts == 0 {
		t.Fatalf("%d runs needed an approximation, %d a clean restart", approx, restarts)
	}
}

// TestExportTraceShapeChange: the first checkpoint ends with a comment, and
// the second exports on its own and replays.
func TestExportTraceShapeChange(t *testing.T) {
	for _, start := range faults.StartingOffsetChoices {
		cfg := exportConfig(tableQuery, 20, map[string]faults.Knobs{
			faults.QueryShapeChange: {"starting_offsets": start}, faults.CrashAfterSinkWrite: {"rate": 0.05}})
		h, err := Run(cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		fresh := h.Restarts[len(h.Restarts)-1]
		for _, r := range h.Restarts {
			if r.FreshCheckpoint {
				fresh = r
			}
		}
		qy, st, err := ExportTrace(h)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(st, []byte("# query-shape-change")) || !bytes.Contains(qy, []byte(h.InitialQuery)) {
			t.Fatalf("%s: no shape-change comment or wrong query", start)
		}
		compareReplay(t, h, replayTrace(t, qy, st), ExportOptions{}, -1<<63, fresh.AtMs, false)
		opt := ExportOptions{Checkpoint: 1}
		qy, st, err = ExportTraceWith(h, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(qy, []byte("shuffle_partitions: 6")) {
			t.Fatalf("%s: checkpoint 1 query:\n%s", start, qy)
		}
		compareReplay(t, h, replayTrace(t, qy, st), opt, fresh.AtMs, 1<<63-1, false)
		if _, _, err := ExportTraceWith(h, ExportOptions{Checkpoint: 2}); err == nil {
			t.Fatal("checkpoint 2 of a run with one shape change exported")
		}
	}
}

// TestExportTraceCleanRestart: a restart with no crash before it (a clean
// stop and start; the simulator has none yet) is a restart line, and the
// restart after a crash is left to exec.
func TestExportTraceCleanRestart(t *testing.T) {
	h := run(t, exportConfig(tableQuery, 5, map[string]faults.Knobs{faults.CrashAfterCommit: {"rate": 0.2}}), 2)
	if len(h.Crashes) == 0 || len(h.Batches) < 10 {
		t.Fatalf("%d crashes, %d batches", len(h.Crashes), len(h.Batches))
	}
	_, st, err := ExportTrace(h)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(st, []byte(`{"restart": true}`)) {
		t.Fatal("a restart after a crash was written out")
	}
	at := h.Batches[5].AtMs
	h.Restarts = append(h.Restarts, history.Restart{AtMs: at})
	slices.SortStableFunc(h.Restarts, func(a, b history.Restart) int { return int(a.AtMs - b.AtMs) })
	_, st, err = ExportTrace(h)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(st, []byte(`{"restart": true}`)); n != 1 {
		t.Fatalf("%d restart lines, want 1", n)
	}
}

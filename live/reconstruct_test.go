package live

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/live/records"
	"github.com/dedupsim/dedupsim/sim/history"
)

// TestReconstruct runs the cases of testdata/reconstruct: the records of
// engine processes killed anywhere (records in), the history's batches and
// sink writes Reconstruct rebuilds from them (batches and writes out).
//
// Commands, each applying to the state built since the last reset:
//
//	records            one engine process; each line of the input a record:
//	                   executed BATCH wall=MS [replay] copies=C,C.. [rows=C,..|-]
//	                     [outcomes=O,..] [wm=MS] [late-wm=MS] [pos=S/P/O,..]
//	                   write BATCH wall=MS kept=N
//	                   batch BATCH wall=MS next-wm=MS [crashed=POINT] [state=T/U/R]
//	                   crash BATCH wall=MS point=POINT | start wall=MS
//	                   (copy C's row is {"id":"eC","ts":C,"_copy":C}; C x is
//	                   a row with no _copy)
//	copies             the produced copies, a line each: S/P/O [ts-us=US]
//	commit BATCH next-wm=MS   commits/BATCH in the checkpoint
//	reconstruct sink=versioned|rewrites|foreachBatch [event-time] [omit-progress]
//	reset
//
// Processing time is the records' wall time.
func TestReconstruct(t *testing.T) {
	datadriven.Walk(t, "testdata/reconstruct", func(t *testing.T, path string) {
		var st reconstructState
		st.reset(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "reset":
				st.reset(t)
				return "ok"
			case "records":
				return st.addProcess(t, d.Input)
			case "copies":
				return st.setCopies(t, d.Input)
			case "commit":
				return st.commit(t, d)
			case "reconstruct":
				return st.reconstruct(t, d)
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		})
	})
}

type reconstructState struct {
	procs  []ProcessRecords
	copies []history.Copy
	ckpt   string
}

func (st *reconstructState) reset(t *testing.T) {
	*st = reconstructState{ckpt: filepath.Join(t.TempDir(), "checkpoint")}
	if err := os.MkdirAll(st.ckpt, 0o755); err != nil {
		t.Fatal(err)
	}
}

// kv parses KEY=VALUE and bare flags of a line after its first two words.
func kv(t *testing.T, fields []string) map[string]string {
	m := map[string]string{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		if _, dup := m[k]; dup {
			t.Fatalf("%s given twice", k)
		}
		m[k] = v
	}
	return m
}

func num(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

func testRow(c string) json.RawMessage {
	if c == "x" {
		return json.RawMessage(`{"id":"x"}`)
	}
	return json.RawMessage(fmt.Sprintf(`{"id":"e%s","ts":%s,"_copy":%s}`, c, c, c))
}

func list(s string) []string {
	if s == "" || s == "-" {
		return nil
	}
	return strings.Split(s, ",")
}

func (st *reconstructState) addProcess(t *testing.T, input string) string {
	var recs []records.Record
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "start" {
			recs = append(recs, records.Record{Kind: records.KindStart, WallMs: num(t, kv(t, f[1:])["wall"])})
			continue
		}
		if len(f) < 2 {
			t.Fatalf("%q: want KIND BATCH ...", line)
		}
		a := kv(t, f[2:])
		r := records.Record{BatchID: num(t, f[1]), WallMs: num(t, a["wall"])}
		switch f[0] {
		case records.KindExecuted:
			r.Kind = records.KindExecuted
			_, r.Replay = a["replay"]
			for _, c := range list(a["copies"]) {
				r.Input = append(r.Input, testRow(c))
				r.Outcomes = append(r.Outcomes, history.Emitted.String())
			}
			if o, ok := a["outcomes"]; ok {
				r.Outcomes = list(o)
			}
			rows := a["copies"]
			if v, ok := a["rows"]; ok {
				rows = v
			}
			for _, c := range list(rows) {
				r.Rows = append(r.Rows, testRow(c))
			}
			for _, p := range list(a["pos"]) {
				var s, q, o int64
				if _, err := fmt.Sscanf(p, "%d/%d/%d", &s, &q, &o); err != nil {
					t.Fatalf("pos %q: %v", p, err)
				}
				r.Pos = append(r.Pos, [3]int64{s, q, o})
			}
			if v, ok := a["wm"]; ok {
				r.WatermarkMs = num(t, v)
			}
			if v, ok := a["late-wm"]; ok {
				r.LateWatermarkMs = num(t, v)
			}
		case records.KindWrite:
			r.Kind, r.Kept = records.KindWrite, int(num(t, a["kept"]))
		case records.KindBatch:
			r.Kind, r.NextWatermarkMs, r.Crashed = records.KindBatch, num(t, a["next-wm"]), a["crashed"]
			if v, ok := a["state"]; ok {
				var op engine.OperatorProgress
				if _, err := fmt.Sscanf(v, "%d/%d/%d", &op.NumRowsTotal, &op.NumRowsUpdated, &op.NumRowsRemoved); err != nil {
					t.Fatalf("state %q: %v", v, err)
				}
				raw, err := json.Marshal(engine.Progress{BatchID: r.BatchID, StateOperators: []engine.OperatorProgress{op}})
				if err != nil {
					t.Fatal(err)
				}
				r.Progress = raw
			}
		case records.KindCrash:
			r.Kind, r.Crashed = records.KindCrash, a["point"]
		default:
			t.Fatalf("%q: unknown record kind", line)
		}
		recs = append(recs, r)
	}
	// Through a records file, as a supervisor reads them.
	path := filepath.Join(filepath.Dir(st.ckpt), fmt.Sprintf("records-%03d.jsonl", len(st.procs)))
	w, err := records.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	back, torn, err := records.Read(path)
	if err != nil || torn {
		t.Fatalf("read back: %v (torn %v)", err, torn)
	}
	st.procs = append(st.procs, ProcessRecords{Name: fmt.Sprintf("records-%03d.jsonl", len(st.procs)), Records: back})
	return fmt.Sprintf("process %d: %d records", len(st.procs)-1, len(back))
}

func (st *reconstructState) setCopies(t *testing.T, input string) string {
	st.copies = nil
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		f := strings.Fields(line)
		var c history.Copy
		if _, err := fmt.Sscanf(f[0], "%d/%d/%d", &c.Source, &c.Partition, &c.Offset); err != nil {
			t.Fatalf("copy %q: %v", line, err)
		}
		if v, ok := kv(t, f[1:])["ts-us"]; ok {
			c.EventTimeUs = num(t, v)
		}
		c.Event = fmt.Sprintf("e%d", len(st.copies))
		st.copies = append(st.copies, c)
	}
	return fmt.Sprintf("%d copies", len(st.copies))
}

func (st *reconstructState) commit(t *testing.T, d *datadriven.TestData) string {
	var batch, wm int64
	d.ScanArgs(t, "batch", &batch)
	d.ScanArgs(t, "next-wm", &wm)
	if err := checkpoint.New(fsys.NewOS(st.ckpt)).WriteCommit(batch, checkpoint.Commit{NextBatchWatermarkMs: wm}); err != nil {
		t.Fatal(err)
	}
	return "ok"
}

func (st *reconstructState) reconstruct(t *testing.T, d *datadriven.TestData) string {
	var sink string
	d.ScanArgs(t, "sink", &sink)
	mode, ok := map[string]SinkMode{"versioned": SinkVersioned, "rewrites": SinkRewrites, "foreachBatch": SinkForeachBatch}[sink]
	if !ok {
		d.Fatalf(t, "sink %q", sink)
	}
	text := "dedup: {api: dropDuplicates, keys: [id]}\n"
	if d.HasArg("event-time") {
		text = "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 1 second}\n"
	}
	q, err := query.Parse("query.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Reconstruct(Reconstruction{Processes: st.procs, Copies: st.copies, Sink: mode, Query: q,
		OmitProgress: d.HasArg("omit-progress"), VirtMs: func(ms int64) int64 { return ms },
		Committed: func(b int64) (int64, error) { return commitWatermark(st.ckpt, b) }})
	if err != nil {
		return "error: " + strings.ReplaceAll(err.Error(), st.ckpt, "$CKPT")
	}
	var sb strings.Builder
	for _, b := range out.Batches {
		fmt.Fprintf(&sb, "batch %d", b.BatchID)
		if b.Replay {
			sb.WriteString(" replay")
		}
		fmt.Fprintf(&sb, " at=%d", b.AtMs)
		if b.Crashed != "" {
			fmt.Fprintf(&sb, " crashed=%s", b.Crashed)
		}
		fmt.Fprintf(&sb, " input=%v outcomes=%v late-wm=%d wm=%d next-wm=%d max-event-time=%d state=%d/%d/%d",
			b.Input, b.Outcomes, b.LateWatermarkMs, b.WatermarkMs, b.NextWatermarkMs, b.MaxEventTimeMs,
			b.NumRowsTotal, b.NumRowsUpdated, b.NumRowsRemoved)
		if b.Progress != nil {
			sb.WriteString(" progress")
		}
		sb.WriteString("\n")
	}
	for _, w := range out.Writes {
		fmt.Fprintf(&sb, "write %d at=%d rows=%v kept=%d\n", w.BatchID, w.AtMs, w.Rows, w.Kept)
	}
	fmt.Fprintf(&sb, "inferred %d", out.Inferred)
	return sb.String()
}

// TestSinkMode: what each engine --sink does with a replay, as RunProcess
// chooses it for the query's sink.
func TestSinkMode(t *testing.T) {
	for _, tc := range []struct {
		kind      sink.Kind
		tableSink string
		flag      string
		want      SinkMode
	}{
		{sink.KindTable, "pebble", "table", SinkVersioned},
		{sink.KindTable, "kafka", "transactional", SinkVersioned},
		{sink.KindMerge, "pebble", "merge", SinkRewrites},
		{sink.KindMerge, "kafka", "merge", SinkRewrites},
		{sink.KindAppend, "pebble", "plain", SinkRewrites},
		{sink.KindForeachBatch, "pebble", "plain", SinkForeachBatch},
	} {
		dur, versioned := durableFor(tc.kind, tc.tableSink)
		d, _ := sink.Lookup(tc.kind)
		p := &procRun{dur: dur, versioned: versioned, h: &history.History{HasTable: d.HasTable}}
		if got := p.sinkMode(); dur.Flag != tc.flag || got != tc.want {
			t.Errorf("%s with table sink %s: --sink %s, mode %d; want --sink %s, mode %d", tc.kind, tc.tableSink, dur.Flag, got, tc.flag, tc.want)
		}
	}
}

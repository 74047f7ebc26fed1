package progress

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/internal/codec"
)

// fixtures are the real Spark outputs of scripts/diagnose/fixtures.py.
func fixtures(t testing.TB) []string {
	t.Helper()
	dirs, err := filepath.Glob("../testdata/spark/*-*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures under ../testdata/spark (scripts/diagnose/fixtures.sh makes them): %v", err)
	}
	return dirs
}

// shapes are one fixture's inputs with the shape each must be read as.
func shapes(t testing.TB, dir string) map[string]Shape {
	t.Helper()
	out := map[string]Shape{
		filepath.Join(dir, "progress.jsonl"): JSONLines,
		filepath.Join(dir, "progress.json"):  JSONArray,
		filepath.Join(dir, "driver.log"):     DriverLog,
	}
	// Three RocksDB runs keep no event log (fixtures.py: EVENTLOG).
	ev, _ := filepath.Glob(filepath.Join(dir, "eventlog", "*"))
	if len(ev) > 1 {
		t.Fatalf("%s: want at most one event log (file or eventlog_v2_* folder), got %v", dir, ev)
	}
	for _, e := range ev {
		out[e] = EventLog
	}
	return out
}

// signature is what every shape must agree on: per record, the run, the
// batch and the state figures.
func signature(l *Log) string {
	var b strings.Builder
	for _, q := range l.Queries {
		for ri, r := range q.Runs {
			for _, p := range r.Records {
				fmt.Fprintf(&b, "%s run%d b%d in=%d", q.ID[:8], ri, p.BatchID, p.NumInputRows)
				for _, s := range p.StateOperators {
					fmt.Fprintf(&b, " %s total=%d upd=%d rm=%d late=%d dup=%d", s.OperatorName, s.NumRowsTotal, s.NumRowsUpdated, s.NumRowsRemoved, s.NumRowsDroppedByWatermark, s.DroppedDuplicates())
				}
				fmt.Fprintf(&b, " wm=%d/%v max=%d\n", p.EventTime.WatermarkMs, p.EventTime.HasWatermark, p.EventTime.MaxMs)
			}
		}
	}
	return b.String()
}

func TestEveryShapeReadsTheSameRecords(t *testing.T) {
	for _, dir := range fixtures(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var want string
			for path, shape := range shapes(t, dir) {
				l, err := Read([]string{path})
				if err != nil {
					t.Fatal(err)
				}
				if l.Files[0].Shape != shape {
					t.Errorf("%s read as %s, want %s", path, l.Files[0].Shape, shape)
				}
				if l.BadTotal != 0 {
					t.Errorf("%s: %d bad lines: %v", path, l.BadTotal, l.Bad)
				}
				if len(l.Queries) != 1 || len(l.Queries[0].Records()) < 8 {
					t.Fatalf("%s: want one query with at least 8 records, got %+v", path, l.Files)
				}
				got := signature(l)
				if want == "" {
					want = got
				} else if got != want {
					t.Errorf("%s disagrees with the other shapes:\n%s\nwant\n%s", path, got, want)
				}
			}
			// All inputs at once: one query, each record once.
			var all []string
			for p := range shapes(t, dir) {
				all = append(all, p)
			}
			l, err := Read(all)
			if err != nil {
				t.Fatal(err)
			}
			if got := signature(l); got != want {
				t.Errorf("all shapes together:\n%s\nwant\n%s", got, want)
			}
			if n := len(l.Queries[0].Records()); l.Duplicates != (len(all)-1)*n {
				t.Errorf("duplicates %d, want %d x %d records", l.Duplicates, len(all)-1, n)
			}
		})
	}
}

// The event logs cover Spark's codecs and both writers.
func TestEventLogCodecs(t *testing.T) {
	seen := map[string]bool{}
	for _, dir := range fixtures(t) {
		for path, shape := range shapes(t, dir) {
			if shape != EventLog {
				continue
			}
			l, err := Read([]string{path})
			if err != nil {
				t.Fatal(err)
			}
			f := l.Files[0]
			kind := "single"
			if f.Parts > 0 {
				kind = "rolling"
			}
			seen[kind] = true
			seen["codec:"+f.Codec] = true
			if want := string(codec.FromName(path)); f.Parts == 0 && f.Codec != want {
				t.Errorf("%s: sniffed %q, the name says %q", path, f.Codec, want)
			}
		}
	}
	for _, k := range []string{"single", "rolling", "codec:", "codec:lz4", "codec:zstd", "codec:snappy"} {
		if !seen[k] {
			t.Errorf("no fixture event log is %s", k)
		}
	}
}

func TestRestartsAreRuns(t *testing.T) {
	l, err := Read([]string{"../testdata/spark/unbounded-hdfs/progress.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	q := l.Queries[0]
	if len(q.Runs) != 2 || q.Runs[0].RunID == q.Runs[1].RunID || !q.Runs[0].Stopped {
		t.Fatalf("want two runs, the first stopped: %+v", q.Runs)
	}
	if a, b := q.Runs[0].Records, q.Runs[1].Records; a[len(a)-1].BatchID+1 != b[0].BatchID {
		t.Errorf("batch ids do not continue across the restart: %d then %d", a[len(a)-1].BatchID, b[0].BatchID)
	}
}

const good = `{"id":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0","runId":"11111111-2222-3333-4444-555555555555","name":null,"timestamp":"2026-12-01T08:45:12.123Z","batchId":3,"numInputRows":5,"inputRowsPerSecond":1.5,"durationMs":{"addBatch":10,"triggerExecution":12},"eventTime":{"max":"2026-12-01T08:45:00.000Z","min":"2026-12-01T08:44:00.000Z","watermark":"2026-12-01T08:40:00.000Z"},"stateOperators":[{"operatorName":"dedupe","numRowsTotal":7,"numRowsUpdated":5}],"sources":[{"description":"x","numInputRows":5}],"sink":{"description":"s","numOutputRows":-1}}`

func TestBadLinesAreCountedAndQuoted(t *testing.T) {
	for _, tc := range []struct {
		name, line, reason string
	}{
		{"not json", `{"id": oops`, "not JSON"},
		{"negative rows", strings.Replace(good, `"numRowsTotal":7`, `"numRowsTotal":-7`, 1), "stateOperators[0].numRowsTotal: -7 is negative"},
		{"bad uuid", strings.Replace(good, `0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0`, `not-a-uuid`, 1), `id: "not-a-uuid" is not a UUID`},
		{"bad time", strings.Replace(good, `2026-12-01T08:45:12.123Z`, `yesterday`, 1), `timestamp: "yesterday" is not a time`},
		{"nan rate", strings.Replace(good, `"inputRowsPerSecond":1.5`, `"inputRowsPerSecond":"fast"`, 1), `inputRowsPerSecond: "fast" is not a number`},
		{"sum", strings.Replace(good, `"numInputRows":5,"input`, `"numInputRows":6,"input`, 1), "not the sum of sources"},
		{"min after max", strings.Replace(good, `"min":"2026-12-01T08:44:00.000Z"`, `"min":"2026-12-01T09:44:00.000Z"`, 1), "eventTime: min"},
		{"no operators", strings.Replace(good, `"stateOperators":[{"operatorName":"dedupe","numRowsTotal":7,"numRowsUpdated":5}],`, ``, 1), "stateOperators: missing"},
		{"trailing", good + ` x`, "not JSON"},
		{"unknown object", `{"hello":"world"}`, "neither a StreamingQueryProgress"},
		{"unknown event", `{"event":"QueryExplodedEvent","id":"x"}`, "unknown listener event"},
		{"plain text", `hello`, "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := good + "\n" + tc.line + "\n" + strings.Replace(good, `"batchId":3`, `"batchId":4`, 1) + "\n"
			l, err := ReadFrom("p.jsonl", strings.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			if l.BadTotal != 1 || len(l.Bad) != 1 {
				t.Fatalf("bad %d %v, want exactly the one line", l.BadTotal, l.Bad)
			}
			if b := l.Bad[0]; b.Where != "p.jsonl:2" || !strings.Contains(b.Reason, tc.reason) || b.Text == "" {
				t.Errorf("bad line %+v: want p.jsonl:2 and %q", b, tc.reason)
			}
			if n := len(l.Queries[0].Records()); n != 2 {
				t.Errorf("%d good records, want 2", n)
			}
		})
	}
}

func TestWrappedAndStructuredAndInterleaved(t *testing.T) {
	pretty := strings.ReplaceAll(strings.ReplaceAll(good, `,"`, ",\n  \""), `{"`, "{\n  \"")
	in := "26/12/01 08:45:12 INFO ProgressReporter: Streaming query made progress: " + pretty + "\n" +
		"26/12/01 08:45:13 INFO WatermarkTracker: Updating event-time watermark from 0 to 5 ms\n" +
		`{"ts":"2026-12-01T08:45:14.000Z","level":"INFO","msg":"Streaming query made progress: ` +
		strings.ReplaceAll(strings.ReplaceAll(strings.Replace(good, `"batchId":3`, `"batchId":4`, 1), `\`, `\\`), `"`, `\"`) + `","logger":"ProgressReporter"}` + "\n" +
		`{"progress":` + strings.Replace(good, `"batchId":3`, `"batchId":5`, 1) + "}\n" +
		"26/12/01 08:45:15 WARN Other: something else\n"
	l, err := ReadFrom("driver.log", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if l.BadTotal != 0 {
		t.Fatalf("bad lines: %v", l.Bad)
	}
	var ids []int64
	for _, p := range l.Queries[0].Records() {
		ids = append(ids, p.BatchID)
	}
	if fmt.Sprint(ids) != "[3 4 5]" || l.Files[0].Other != 2 || l.Files[0].Shape != DriverLog {
		t.Errorf("batches %v, other lines %d, shape %s; want [3 4 5], 2, driver-log", ids, l.Files[0].Other, l.Files[0].Shape)
	}
	// A progress cut off at the end of the file is a bad line, not lost
	// silently (and an input of no record is refused, quoting it).
	l, err = ReadFrom("cut.log", strings.NewReader(good+"\nx INFO P: Streaming query made progress: {\n  \"id\" : \"a\",\n"))
	if err != nil || l.BadTotal != 1 || !strings.Contains(l.Bad[0].Reason, "cut off") {
		t.Errorf("cut progress: %v %+v", err, l)
	}
	_, err = ReadFrom("cut.log", strings.NewReader("x INFO P: Streaming query made progress: {\n  \"id\" : \"a\",\n"))
	if err == nil || !strings.Contains(err.Error(), "cut off") {
		t.Errorf("cut progress alone: %v", err)
	}
}

func TestUnreadableInputs(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read([]string{filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing file was read")
	}
	if _, err := Read([]string{dir}); err == nil || !strings.Contains(err.Error(), "not a rolling event log") {
		t.Errorf("a plain folder: %v", err)
	}
	roll := filepath.Join(dir, "eventlog_v2_local-1")
	os.Mkdir(roll, 0o755)
	os.WriteFile(filepath.Join(roll, "events_2_local-1"), []byte(good+"\n"), 0o644)
	if _, err := Read([]string{roll}); err == nil || !strings.Contains(err.Error(), "part 1 is missing") {
		t.Errorf("a rolling log without part 1: %v", err)
	}
	// A corrupt zstd stream is unreadable input, not bad lines.
	z := filepath.Join(dir, "app.zstd")
	os.WriteFile(z, []byte{0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3, 4, 5, 6, 7}, 0o644)
	var ie *InputError
	if _, err := Read([]string{z}); !errors.As(err, &ie) {
		t.Errorf("corrupt zstd: %v", err)
	}
}

func TestJSONArrayErrors(t *testing.T) {
	l, err := ReadFrom("a.json", strings.NewReader("["+good+", 5, {\"batchId\": -1}]"))
	if err != nil {
		t.Fatal(err)
	}
	if l.BadTotal != 2 || l.Bad[0].Where != "a.json: element 1" || len(l.Queries) != 1 {
		t.Errorf("bad %v", l.Bad)
	}
	l, err = ReadFrom("b.json", strings.NewReader("["+good))
	if err != nil || l.BadTotal != 1 {
		t.Errorf("unclosed array: %v %v", err, l)
	}
}

// FuzzReadFrom: any bytes, in any shape, give a log or an error, never a
// panic, and every record read is within its domain.
func FuzzReadFrom(f *testing.F) {
	f.Add([]byte(good + "\n"))
	f.Add([]byte("[" + good + "]"))
	f.Add([]byte("x INFO P: Streaming query made progress: {\n\"a\": [ {\n} ]\n}\n"))
	f.Add([]byte(`{"Event":"org.apache.spark.sql.streaming.StreamingQueryListener$QueryStartedEvent","id":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0","runId":"11111111-2222-3333-4444-555555555555","timestamp":"2026-12-01T08:45:12.123Z"}` + "\n"))
	for _, dir := range []string{"../testdata/spark/healthy-hdfs"} {
		if b, err := os.ReadFile(filepath.Join(dir, "driver.log")); err == nil {
			f.Add(b[:min(len(b), 8192)])
		}
	}
	// Issue 25's kinds: compressed, an array with brackets in strings, two
	// copies of one batch that differ, a time out of Spark's range, a
	// record with rows and no addBatch.
	f.Add(gzipOf([]byte(good + "\n")))
	f.Add([]byte(`[` + good + `, {"s": "]}\"[{"}, ` + strings.Replace(good, `"batchId":3`, `"batchId":4`, 1) + `]`))
	f.Add([]byte(good + "\n" + strings.Replace(good, `"numRowsTotal":7`, `"numRowsTotal":8`, 1) + "\n"))
	f.Add([]byte(strings.Replace(good, "2026-12-01T08:40", "0000-12-01T08:40", 1) + "\n"))
	f.Add([]byte(strings.Replace(good, `"addBatch":10,`, "", 1) + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ReadFrom("f", bytes.NewReader(data))
		if err != nil {
			return
		}
		if l.Files[0].Records == 0 {
			t.Fatalf("an input of no record was not refused: %+v", l.Files[0])
		}
		if l.ConflictTotal < len(l.Conflicts) || len(l.Conflicts) > MaxConflicts {
			t.Fatalf("conflicts %d / %d", l.ConflictTotal, len(l.Conflicts))
		}
		const minMs, maxMs = -62135596800000, 253402300799999 // years 1 and 9999, UTC
		for _, q := range l.Queries {
			for _, p := range q.Records() {
				if p.BatchID < 0 || p.NumInputRows < 0 {
					t.Fatalf("out of domain: %+v", p)
				}
				if p.Idle && p.NumInputRows > 0 {
					t.Fatalf("an idle record with rows in: %+v", p)
				}
				et := p.EventTime
				for _, ms := range []int64{p.TimestampMs, et.MinMs, et.MaxMs, et.AvgMs, et.WatermarkMs} {
					if ms < minMs || ms > maxMs {
						t.Fatalf("a time outside Spark's range: %d in %+v", ms, p)
					}
				}
				for _, s := range p.StateOperators {
					if s.NumRowsTotal < 0 || s.NumRowsDroppedByWatermark < 0 {
						t.Fatalf("out of domain: %+v", s)
					}
				}
			}
		}
		if l.BadTotal < len(l.Bad) || len(l.Bad) > MaxBad {
			t.Fatalf("bad lines %d / %d", l.BadTotal, len(l.Bad))
		}
	})
}

// The listener's own events: started sets the run's start, terminated its
// exception; the event log's Jackson names and a listener's names both work.
func TestListenerEvents(t *testing.T) {
	id, run := "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "11111111-2222-3333-4444-555555555555"
	in := `{"event":"QueryStartedEvent","id":"` + id + `","runId":"` + run + `","name":"q","timestamp":"2026-12-01T08:00:00.000Z"}` + "\n" +
		good + "\n" +
		`{"Event":"org.apache.spark.sql.streaming.StreamingQueryListener$QueryIdleEvent","id":"` + id + `","runId":"` + run + `","timestamp":"2026-12-01T08:50:00.000Z"}` + "\n" +
		`{"Event":"org.apache.spark.sql.streaming.StreamingQueryListener$QueryTerminatedEvent","id":"` + id + `","runId":"` + run + `","exception":"boom","errorClassOnException":null}` + "\n" +
		`{"Event":"SparkListenerJobStart","Job ID":1}` + "\n"
	l, err := ReadFrom("e.jsonl", strings.NewReader(in))
	if err != nil || l.BadTotal != 0 {
		t.Fatalf("%v %v", err, l.Bad)
	}
	q := l.Queries[0]
	r := q.Runs[0]
	if q.Name != "q" || len(q.Runs) != 1 || r.StartMs != 1796112000000 || !r.Stopped || r.Exception != "boom" || l.Files[0].Events != 3 || l.Files[0].Other != 1 {
		t.Errorf("query %+v, file %+v", q, l.Files[0])
	}
	// A started event without a timestamp is refused, with the field named.
	l, _ = ReadFrom("e.jsonl", strings.NewReader(`{"event":"started","id":"`+id+`","runId":"`+run+`"}`+"\n"+good+"\n"))
	if l == nil || l.BadTotal != 1 || !strings.Contains(l.Bad[0].Reason, "timestamp: missing") {
		t.Errorf("%+v", l)
	}
}

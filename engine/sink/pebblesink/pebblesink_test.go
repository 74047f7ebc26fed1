// External test package: it compares against trace.NewSink, and trace
// imports the engine, which may one day import pebblesink.
package pebblesink_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sink/pebblesink"
	"github.com/dedupsim/dedupsim/engine/trace"
)

func newQuery(s query.Sink) *query.Query {
	return &query.Query{
		Keys:    []string{"id"},
		Sources: []query.Source{{Name: query.DefaultSourceName, Watermark: &query.Watermark{Column: "ts", DelayMs: 10_000}}},
		Sink:    s,
	}
}

// mkRow builds a row with id and event time (micros); the dedup key is not
// the merge key's source (the merge key decodes Data), so it is left empty.
func mkRow(id string, etMicros int64) row.Row {
	return row.Row{Data: json.RawMessage(fmt.Sprintf(`{"id":%q,"ts":%d}`, id, etMicros)), EventTime: etMicros}
}

func mkRows(ids ...string) []row.Row {
	out := make([]row.Row, len(ids))
	for i, id := range ids {
		out[i] = mkRow(id, int64(i)*1_000_000)
	}
	return out
}

func ids(t []json.RawMessage) string {
	var b strings.Builder
	for _, r := range t {
		var v struct{ ID string }
		if err := json.Unmarshal(r, &v); err != nil {
			panic(err)
		}
		b.WriteString(v.ID)
	}
	return b.String()
}

// tb is what the helpers need of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
}

func open(t tb, dir string, q *query.Query) *pebblesink.Sink {
	t.Helper()
	s, err := pebblesink.Open(dir, q)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func add(t tb, s sink.Sink, b sink.Batch) {
	t.Helper()
	if err := s.AddBatch(b); err != nil {
		t.Fatal(err)
	}
}

func closeSink(t tb, s *pebblesink.Sink) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRejectsOtherKinds(t *testing.T) {
	for _, k := range []sink.Kind{sink.KindAppend, sink.KindForeachBatch, "bogus"} {
		_, err := pebblesink.Open(t.TempDir(), newQuery(query.Sink{Kind: k}))
		if err == nil || !strings.Contains(err.Error(), string(k)) {
			t.Errorf("kind %s: err %v", k, err)
		}
	}
	// A DB made for one kind is not reused for another.
	dir := t.TempDir()
	closeSink(t, open(t, dir, newQuery(query.Sink{Kind: sink.KindTable})))
	if _, err := pebblesink.Open(dir, newQuery(query.Sink{Kind: sink.KindMerge})); err == nil {
		t.Error("merge sink opened a table sink's DB")
	}
}

func TestTableSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	q := newQuery(query.Sink{Kind: sink.KindTable})
	s := open(t, dir, q)
	if got, want := s.Description(), "TableSink[txnAppId=]"; got != want {
		t.Errorf("description %q, want %q", got, want)
	}
	add(t, s, sink.Batch{ID: 0, Rows: mkRows("a", "b"), QueryID: "q1", RunID: "r1"})
	add(t, s, sink.Batch{ID: 1, Rows: mkRows("c"), QueryID: "q1", RunID: "r1"})
	closeSink(t, s)

	s = open(t, dir, q)
	if got := ids(s.Table()); got != "abc" {
		t.Fatalf("after reopen: table %q", got)
	}
	add(t, s, sink.Batch{ID: 1, Rows: mkRows("c"), QueryID: "q1", RunID: "r2"}) // replay
	if s.Skipped != 1 {
		t.Fatalf("replay of batch 1: skipped %d, want 1", s.Skipped)
	}
	add(t, s, sink.Batch{ID: 2, Rows: mkRows("d"), QueryID: "q1", RunID: "r2"})
	if got := ids(s.Table()); got != "abcd" || s.Skipped != 1 {
		t.Fatalf("table %q skipped %d, want abcd 1", got, s.Skipped)
	}
	closeSink(t, s)

	got, err := pebblesink.ReadTable(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ids(got) != "abcd" {
		t.Fatalf("ReadTable %q", ids(got))
	}
	// A configured app id wins over the query id, across restarts.
	dir = t.TempDir()
	q = newQuery(query.Sink{Kind: sink.KindTable, AppID: "fixed"})
	s = open(t, dir, q)
	if got, want := s.Description(), "TableSink[txnAppId=fixed]"; got != want {
		t.Errorf("description %q, want %q", got, want)
	}
	add(t, s, sink.Batch{ID: 3, Rows: mkRows("a"), QueryID: "q1"})
	closeSink(t, s)
	s = open(t, dir, q)
	add(t, s, sink.Batch{ID: 3, Rows: mkRows("a"), QueryID: "q2"})
	if got := ids(s.Table()); got != "a" || s.Skipped != 1 {
		t.Fatalf("configured app id: table %q skipped %d", got, s.Skipped)
	}
	closeSink(t, s)
}

// The seed article's mistake: an app id generated at every start makes a
// replay after a restart look like a new writer, and it is appended again.
func TestTablePerRunAppIDReappends(t *testing.T) {
	dir := t.TempDir()
	q := newQuery(query.Sink{Kind: sink.KindTable, GenerateAppID: true})
	s := open(t, dir, q)
	add(t, s, sink.Batch{ID: 0, Rows: mkRows("a"), QueryID: "q1", RunID: "run-1"})
	add(t, s, sink.Batch{ID: 1, Rows: mkRows("b"), QueryID: "q1", RunID: "run-1"})
	add(t, s, sink.Batch{ID: 1, Rows: mkRows("b"), QueryID: "q1", RunID: "run-1"}) // same run: skipped
	closeSink(t, s)
	s = open(t, dir, q)
	add(t, s, sink.Batch{ID: 1, Rows: mkRows("b"), QueryID: "q1", RunID: "run-2"})
	if got := ids(s.Table()); got != "abb" || s.Skipped != 0 {
		t.Fatalf("table %q skipped %d, want abb 0", got, s.Skipped)
	}
	closeSink(t, s)
}

func TestMergeSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	q := newQuery(query.Sink{Kind: sink.KindMerge})
	s := open(t, dir, q)
	if s.Description() != "MergeSink" {
		t.Errorf("description %q", s.Description())
	}
	add(t, s, sink.Batch{ID: 0, Rows: mkRows("a", "b")})
	add(t, s, sink.Batch{ID: 1, Rows: mkRows("c", "c")}) // two copies in one batch: both inserted
	closeSink(t, s)

	s = open(t, dir, q)
	add(t, s, sink.Batch{ID: 1, Rows: mkRows("c", "c")}) // replay: the index survived
	add(t, s, sink.Batch{ID: 0, Rows: mkRows("a", "b")})
	add(t, s, sink.Batch{ID: 2, Rows: mkRows("d", "a")})
	if got := ids(s.Table()); got != "abccd" {
		t.Fatalf("merge %q, want abccd", got)
	}
	closeSink(t, s)
	got, err := pebblesink.ReadTable(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ids(got) != "abccd" {
		t.Fatalf("ReadTable %q", ids(got))
	}
}

func TestMergeLookback(t *testing.T) {
	const sec = 1_000_000 // micros
	q := newQuery(query.Sink{Kind: sink.KindMerge, HasLookback: true, LookbackMs: 10_000})
	mem := trace.NewSink(q).(*sink.Merge)
	dir := t.TempDir()
	s := open(t, dir, q)
	both := func(b sink.Batch) {
		t.Helper()
		add(t, mem, b)
		add(t, s, b)
	}
	both(sink.Batch{ID: 0, TimestampMs: 100_000, Rows: []row.Row{mkRow("a", 95*sec), mkRow("b", 80*sec)}})
	closeSink(t, s)
	s = open(t, dir, q)
	// now 100s, lookback 10s: a (95s) is within, b (80s) is outside, so b
	// is inserted again. Event time exactly at the cutoff matches.
	both(sink.Batch{ID: 1, TimestampMs: 100_000, Rows: []row.Row{mkRow("a", 99*sec), mkRow("b", 99*sec), mkRow("c", 90*sec)}})
	both(sink.Batch{ID: 2, TimestampMs: 100_000, Rows: []row.Row{mkRow("c", 1)}})
	// Later (cutoff 96s), a (95s) and c (90s) fall out of the window; b (99s)
	// still matches.
	both(sink.Batch{ID: 3, TimestampMs: 106_000, Rows: []row.Row{mkRow("a", 1), mkRow("c", 1), mkRow("b", 1)}})
	want := ids(mem.Table())
	if want != "abbcac" {
		t.Fatalf("memory merge %q: test premise broken", want)
	}
	if got := ids(s.Table()); got != want {
		t.Fatalf("pebble merge %q, memory %q", got, want)
	}
	// Negative event times sort below positive ones in the index.
	both(sink.Batch{ID: 4, TimestampMs: 0, Rows: []row.Row{mkRow("n", -5*sec)}})
	both(sink.Batch{ID: 5, TimestampMs: 0, Rows: []row.Row{mkRow("n", 0)}}) // -5s within 10s of 0: matched
	both(sink.Batch{ID: 6, TimestampMs: 0, Rows: []row.Row{mkRow("m", -20*sec)}})
	both(sink.Batch{ID: 7, TimestampMs: 0, Rows: []row.Row{mkRow("m", 0)}}) // -20s outside: inserted
	both(sink.Batch{ID: 8, TimestampMs: 0, Rows: []row.Row{mkRow("p", sec)}})
	both(sink.Batch{ID: 9, TimestampMs: 5_000, Rows: []row.Row{mkRow("p", 0)}}) // cutoff -5s <= 1s: matched
	if got, want := ids(s.Table()), ids(mem.Table()); got != want || want != "abbcacnmmp" {
		t.Fatalf("pebble merge %q, memory %q", got, want)
	}
	closeSink(t, s)
}

// TestMatchesMemorySinks: any sequence of deliveries, replays and restarts
// leaves the Pebble sink's table equal to the memory sink's, which never
// restarts (it is the crash-free reference).
func TestMatchesMemorySinks(t *testing.T) {
	base := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		var qs query.Sink
		switch rapid.IntRange(0, 4).Draw(t, "variant") {
		case 0:
			qs = query.Sink{Kind: sink.KindTable}
		case 1:
			qs = query.Sink{Kind: sink.KindTable, AppID: "fixed"}
		case 2:
			qs = query.Sink{Kind: sink.KindTable, GenerateAppID: true}
		case 3:
			qs = query.Sink{Kind: sink.KindMerge}
		case 4:
			qs = query.Sink{Kind: sink.KindMerge, HasLookback: true, LookbackMs: rapid.Int64Range(0, 5_000).Draw(t, "lookbackMs")}
		}
		q := newQuery(qs)
		mem := trace.NewSink(q).(sink.Tabled)
		dir, err := os.MkdirTemp(base, "db")
		if err != nil {
			t.Fatal(err)
		}
		s := open(t, dir, q)
		defer func() { _ = s.Close() }()
		run, skipped := 1, 0
		memSkipped := func() int {
			if tb, ok := mem.(*sink.Table); ok {
				return tb.Skipped
			}
			return 0
		}
		var sent []sink.Batch
		steps := rapid.IntRange(1, 25).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			switch op := rapid.IntRange(0, 9).Draw(t, "op"); {
			case op < 2: // kill and restart: a new run id
				skipped += s.Skipped
				closeSink(t, s)
				s = open(t, dir, q)
				run++
			case op < 4 && len(sent) > 0: // replay an earlier delivery under the current run
				b := sent[rapid.IntRange(0, len(sent)-1).Draw(t, "replay")]
				b.RunID = fmt.Sprint("run-", run)
				add(t, mem, b)
				add(t, s, b)
			default:
				n := rapid.IntRange(0, 4).Draw(t, "nrows")
				b := sink.Batch{
					ID:          rapid.Int64Range(0, 6).Draw(t, "id"),
					QueryID:     rapid.SampledFrom([]string{"q1", "q1", "q2"}).Draw(t, "query"),
					RunID:       fmt.Sprint("run-", run),
					TimestampMs: rapid.Int64Range(0, 20_000).Draw(t, "ts"),
				}
				for j := 0; j < n; j++ {
					b.Rows = append(b.Rows, mkRow(
						rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(t, "rowid"),
						rapid.Int64Range(-2_000_000, 20_000_000).Draw(t, "et")))
				}
				sent = append(sent, b)
				add(t, mem, b)
				add(t, s, b)
			}
			if got, want := s.Table(), mem.Table(); !equalRows(got, want) {
				t.Fatalf("step %d: pebble %s, memory %s", i, dump(got), dump(want))
			}
		}
		if got, want := skipped+s.Skipped, memSkipped(); got != want {
			t.Fatalf("skipped %d, memory %d", got, want)
		}
		closeSink(t, s)
		got, err := pebblesink.ReadTable(dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := mem.Table(); !equalRows(got, want) {
			t.Fatalf("ReadTable %s, memory %s", dump(got), dump(want))
		}
	})
}

func equalRows(a, b []json.RawMessage) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func dump(rows []json.RawMessage) string {
	b, _ := json.Marshal(rows)
	return string(b)
}

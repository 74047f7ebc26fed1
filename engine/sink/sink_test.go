package sink

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/row"
)

func rows(ids ...string) []row.Row {
	out := make([]row.Row, len(ids))
	for i, id := range ids {
		out[i] = row.Row{Data: json.RawMessage(`{"id":"` + id + `"}`), Key: []byte(id), EventTime: int64(i) * 1_000_000}
	}
	return out
}

func ids(t []json.RawMessage) string {
	s := ""
	for _, r := range t {
		var v struct{ ID string }
		json.Unmarshal(r, &v)
		s += v.ID
	}
	return s
}

func TestTableSkipsCommittedVersions(t *testing.T) {
	s := &Table{}
	s.AddBatch(Batch{ID: 0, Rows: rows("a"), QueryID: "q1"})
	s.AddBatch(Batch{ID: 1, Rows: rows("b"), QueryID: "q1"})
	s.AddBatch(Batch{ID: 1, Rows: rows("b"), QueryID: "q1"}) // replay: same app id, same version
	s.AddBatch(Batch{ID: 0, Rows: rows("x"), QueryID: "q1"}) // older version: skipped too
	if got := ids(s.Table()); got != "ab" || s.Skipped != 2 {
		t.Fatalf("table %q skipped %d", got, s.Skipped)
	}
	// A new app id (an id generated at start-up) disables the protection.
	s.AddBatch(Batch{ID: 1, Rows: rows("b"), QueryID: "q2"})
	if got := ids(s.Table()); got != "abb" {
		t.Fatalf("table %q", got)
	}
	// A configured app id wins over the query id.
	c := &Table{AppID: "fixed"}
	c.AddBatch(Batch{ID: 3, Rows: rows("a"), QueryID: "run-1"})
	c.AddBatch(Batch{ID: 3, Rows: rows("a"), QueryID: "run-2"})
	if got := ids(c.Table()); got != "a" {
		t.Fatalf("configured app id: table %q", got)
	}
}

func TestMerge(t *testing.T) {
	key := func(r row.Row) ([]byte, error) { return r.Key, nil }
	m := &Merge{Key: key}
	m.AddBatch(Batch{ID: 0, Rows: rows("a", "b")})
	m.AddBatch(Batch{ID: 0, Rows: rows("a", "b")}) // replay matches
	m.AddBatch(Batch{ID: 1, Rows: rows("c", "a")})
	if got := ids(m.Table()); got != "abc" {
		t.Fatalf("merge %q", got)
	}
	// Two copies inside one source batch are both inserted (SQL MERGE
	// matches against the table as it was before the statement).
	d := &Merge{Key: key}
	d.AddBatch(Batch{ID: 0, Rows: append(rows("a"), rows("a")...)})
	if got := ids(d.Table()); got != "aa" {
		t.Fatalf("merge with a duplicated source row %q", got)
	}
	// Lookback: only table rows with event time >= now - lookback match.
	lb := &Merge{Key: key, HasLookback: true, LookbackMs: 5_000}
	lb.AddBatch(Batch{ID: 0, Rows: rows("a"), TimestampMs: 1_000}) // a at t=0
	lb.AddBatch(Batch{ID: 1, Rows: rows("a"), TimestampMs: 5_000}) // 0 >= 0: matched
	lb.AddBatch(Batch{ID: 2, Rows: rows("a"), TimestampMs: 5_001}) // 0 < 1 ms: not matched
	if got := ids(lb.Table()); got != "aa" {
		t.Fatalf("lookback %q", got)
	}
	if err := (&Merge{}).AddBatch(Batch{}); err == nil {
		t.Fatal("merge without a key accepted")
	}
	// A row whose match columns do not decode fails the write; nothing of
	// the batch is inserted.
	bad := &Merge{Key: func(r row.Row) ([]byte, error) {
		if string(r.Key) == "b" {
			return nil, fmt.Errorf("missing key column %q", "x")
		}
		return r.Key, nil
	}}
	if err := bad.AddBatch(Batch{ID: 4, Rows: rows("a", "b")}); err == nil || !strings.Contains(err.Error(), `missing key column "x"`) {
		t.Fatalf("undecodable match key: %v", err)
	}
	if got := ids(bad.Table()); got != "" {
		t.Fatalf("a failed merge inserted %q", got)
	}
}

func TestAppendAndForeachBatchKeepReplays(t *testing.T) {
	a := &Append{}
	f := &ForeachBatch{}
	for _, s := range []Sink{a, f} {
		s.AddBatch(Batch{ID: 0, Rows: rows("a")})
		s.AddBatch(Batch{ID: 0, Rows: rows("a")})
	}
	if got := ids(a.Table()); got != "aa" {
		t.Fatalf("append %q", got)
	}
	if len(f.Deliveries) != 2 || f.Deliveries[1].BatchID != 0 {
		t.Fatalf("deliveries %+v", f.Deliveries)
	}
}

// TestMergeNullsAsSQL: the match condition is SQL's t.id = s.id (AND
// t.ts >= now - lookback): a null key never matches, so every copy is
// inserted, replays included; under a lookback a table row with a null
// event time never matches either (spark-semantics.md §16.3).
func TestMergeNullsAsSQL(t *testing.T) {
	dec := row.NewDecoder([]string{"id"}, "ts")
	mk := func(texts ...string) []row.Row {
		var out []row.Row
		for _, s := range texts {
			var r row.Row
			if err := dec.Decode([]byte(s), &r); err != nil {
				t.Fatal(err)
			}
			r.Data = json.RawMessage(s)
			out = append(out, r)
		}
		return out
	}
	d, _ := Lookup(KindMerge)
	s := d.New(Settings{Kind: KindMerge, MatchKeys: []string{"id"}, EventTimeColumn: "ts"}).(*Merge)
	s.AddBatch(Batch{ID: 0, Rows: mk(`{"id":null,"ts":1}`, `{"id":"a","ts":1}`)})
	s.AddBatch(Batch{ID: 0, Rows: mk(`{"id":null,"ts":1}`, `{"id":"a","ts":1}`)})
	if n := len(s.Table()); n != 3 {
		t.Fatalf("null keys: table %s, want both null-key copies and one a", s.Table())
	}
	lb := d.New(Settings{Kind: KindMerge, MatchKeys: []string{"id"}, EventTimeColumn: "ts", HasLookback: true, LookbackMs: 60_000}).(*Merge)
	lb.AddBatch(Batch{ID: 0, Rows: mk(`{"id":"a","ts":null}`), TimestampMs: 1_000})
	lb.AddBatch(Batch{ID: 1, Rows: mk(`{"id":"a","ts":null}`), TimestampMs: 1_000})
	if n := len(lb.Table()); n != 2 {
		t.Fatalf("null event time under a lookback: table %s, want two rows", lb.Table())
	}
}

package expect

import (
	"encoding/json"
	"strings"
	"testing"
)

// Properties hold or not whatever the exact figures: unique over the final
// table (the deliveries without one), no-loss of the keys read, the state's
// peak, late rows counted once per batch id. Each difference names the
// line, and Cases gives one test case per line.
func TestProperties(t *testing.T) {
	rows := func(s ...string) []json.RawMessage {
		var out []json.RawMessage
		for _, r := range s {
			out = append(out, json.RawMessage(r))
		}
		return out
	}
	file := `{"unique": ["id"]}` + "\n" + `{"no-loss": true}` + "\n" + `{"max-state-keys": 2}` + "\n" + `{"late-rows": "<= 0"}` + "\n" + `{"unique": ["id", "ts"]}` + "\n"
	exp, err := Parse("p.jsonl", strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	run := []Execution{
		{BatchID: 0, Rows: rows(`{"id":"a","ts":1}`), NumRowsTotal: 1},
		{BatchID: 1, Rows: rows(`{"id":"a","ts":5}`, `{"id":"b","ts":6}`), NumRowsTotal: 3, NumRowsDroppedByWatermark: 1},
		{BatchID: 1, Rows: rows(`{"id":"a","ts":5}`, `{"id":"b","ts":6}`), NumRowsTotal: 3, NumRowsDroppedByWatermark: 1}, // a replay
	}
	inputs := [][]json.RawMessage{rows(`{"id":"a","ts":1}`), rows(`{"id":"a","ts":5}`, `{"id":"b","ts":6}`, `{"id":"c","ts":0}`, `{"id":"d","ts":7}`), rows()}
	dropped := [][]bool{{false}, {false, false, true, false}, {}}
	check := func(table []json.RawMessage, hasTable bool) ([]string, []Case) {
		o := NewObserver([]string{"id"}, exp, nil)
		if !o.NeedsInput() {
			t.Fatal("no-loss needs the input")
		}
		for i, x := range run {
			if err := o.Observe(x); err != nil {
				t.Fatal(err)
			}
			if err := o.ObserveInput(inputs[i], dropped[i]); err != nil {
				t.Fatal(err)
			}
		}
		d, err := o.Finish(table, hasTable)
		if err != nil {
			t.Fatal(err)
		}
		return d, o.Cases()
	}
	d, cases := check(rows(`{"id":"a","ts":1}`, `{"id":"a","ts":5}`, `{"id":"b","ts":6}`), true)
	got := strings.Join(d, "\n")
	for _, w := range []string{
		`unique [id] (p.jsonl:1): 1 value(s) more than once in the table: "a" (2 rows)`,
		`no-loss (p.jsonl:2): 1 key(s) read (not as late) never reached the table: "d"`,
		`max-state-keys 2 (p.jsonl:3): numRowsTotal reached 3 (after batch 1)`,
		`late-rows <= 0 (p.jsonl:4): 1 row(s) dropped as late (numRowsDroppedByWatermark)`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("differences lack %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "[id, ts]") {
		t.Errorf("unique [id, ts] holds, yet:\n%s", got)
	}
	if len(cases) != 5 || cases[4].Name != "unique [id, ts]" || len(cases[4].Diffs) != 0 || len(cases[0].Diffs) != 1 {
		t.Errorf("cases: %+v", cases)
	}
	// Without a table: the deliveries, the replay's included.
	d, _ = check(nil, false)
	got = strings.Join(d, "\n")
	for _, w := range []string{`in the sink's deliveries: "a" (3 rows), "b" (2 rows)`, `never reached the sink: "d"`, `unique [id, ts] (p.jsonl:5): 2 value(s) more than once in the sink's deliveries: ["a",5] (2 rows), ["b",6] (2 rows)`} {
		if !strings.Contains(got, w) {
			t.Errorf("differences lack %q:\n%s", w, got)
		}
	}
	// A unique column no row has is named, with the columns there are.
	e2, _ := Parse("q.jsonl", strings.NewReader(`{"unique": ["event_id"]}`))
	o := NewObserver([]string{"id"}, e2, nil)
	d, _ = o.Finish(rows(`{"id":"a","ts":1}`), true)
	if len(d) != 1 || !strings.Contains(d[0], "column event_id is in no row of the table (its columns: id, ts)") {
		t.Errorf("absent column: %q", d)
	}
}

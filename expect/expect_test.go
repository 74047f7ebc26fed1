package expect

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Every malformed line is refused with file:line and what is wrong.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"batch": 2}` + "\n" + `{"batch": 2}`, "e.jsonl:2: batch 2 after batch 2 (line 1): batch lines go in increasing batch id"},
		{`{"batch": -1}`, "e.jsonl:1: batch -1: a batch id is >= 0"},
		{`{"batch": 0, "numRowsTotal": -3}`, "numRowsTotal -3: want a count >= 0"},
		{`{"batch": 0, "numOutputRow": 1}`, `unknown object member name "numOutputRow"`},
		{`{"batch": 0, "batch": 1}`, `duplicate object member name "batch"`},
		{`{"run": {}, "table": []}`, `want exactly one of "batch", "run", "table" or a property`},
		{`{"unique": []}`, `"unique": want the columns`},
		{`{"unique": ["id", "id"]}`, `column "id" empty or given twice`},
		{`{"unique": ["id"], "no-loss": true}`, `want exactly one of`},
		{`{"no-loss": false}`, `"no-loss": false checks nothing`},
		{`{"max-state-keys": -1}`, `"max-state-keys" -1: want a count >= 0`},
		{`{"late-rows": 3}`, `late-rows`},
		{`{"late-rows": "about 3"}`, `"late-rows" "about 3": want a comparison with a count: "<= N", "< N", "== N", ">= N" or "> N"`},
		{`{"late-rows": "<= -1"}`, `want a comparison`},
		{`{"numOutputRows": 1}`, `want exactly one of`},
		{`{"run": {}}` + "\n" + `{"run": {}}`, "e.jsonl:2: a second run line (the first: line 1)"},
		{`{"table": [1]}`, "table[0]: want a row object"},
		{"{\"batch\": 0, \"emitted\": [\"\xff\"]}", "invalid UTF-8"},
		{`[1]`, "want a JSON object"},
	} {
		_, err := Parse("e.jsonl", strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

// A recording checks clean against the same run, and a run that differs
// is reported batch by batch, with the run and the table.
func TestRecordThenCheck(t *testing.T) {
	n := func(v int64) int64 { return v }
	rows := func(s ...string) []json.RawMessage {
		var out []json.RawMessage
		for _, r := range s {
			out = append(out, json.RawMessage(r))
		}
		return out
	}
	runA := []Execution{
		{BatchID: 0, Rows: rows(`{"id":"a","ts":1}`, `{"id":"b","ts":2}`), NumDroppedDuplicateRows: 1, NumRowsTotal: 2},
		{BatchID: 1, Rows: rows(`{"id":"c","ts":9}`), NumRowsTotal: n(3)},
		{BatchID: 1, Rows: rows(`{"id":"c","ts":9}`), NumRowsTotal: n(3)}, // a replay
	}
	table := rows(`{"id":"a","ts":1}`, `{"id":"b","ts":2}`, `{"id":"c","ts":9}`)
	var rec bytes.Buffer
	o := NewObserver([]string{"id"}, nil, &rec)
	for _, x := range runA {
		if err := o.Observe(x); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := o.Finish(table, true); err != nil {
		t.Fatal(err)
	}
	exp, err := Parse("rec.jsonl", bytes.NewReader(rec.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, rec.Bytes())
	}
	check := func(run []Execution, table []json.RawMessage) []string {
		o := NewObserver([]string{"id"}, exp, nil)
		for _, x := range run {
			o.Observe(x)
		}
		d, _ := o.Finish(table, true)
		return d
	}
	if d := check(runA, table); len(d) != 0 {
		t.Fatalf("the recorded run differs from itself: %q", d)
	}
	runB := []Execution{
		{BatchID: 0, Rows: rows(`{"id":"a","ts":1}`, `{"id":"b","ts":2}`, `{"id":"b","ts":5}`), NumRowsTotal: 3},
		{BatchID: 1, Rows: rows(`{"id":"c","ts":9}`), NumRowsTotal: 3},
	}
	got := strings.Join(check(runB, table[:2]), "\n")
	for _, w := range []string{
		"batch 0 (rec.jsonl:2): numOutputRows 3, want 2",
		"batch 0 (rec.jsonl:2): numDroppedDuplicateRows 0, want 1",
		`batch 0 (rec.jsonl:2): emitted keys: unexpected "b"`,
		"run (rec.jsonl:4): executions 2, want 3",
		`table (rec.jsonl:5): rows: missing {"id":"c","ts":9}`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("differences lack %q:\n%s", w, got)
		}
	}
}

// Keys are written as exec's rows hold them: one column's value, an array
// for several, the row for none.
func TestKeyOf(t *testing.T) {
	row := json.RawMessage(`{"id": "x", "ts": 1.5, "n": {"a": 1}}`)
	for _, tc := range []struct {
		keys []string
		want string
	}{{[]string{"id"}, `"x"`}, {[]string{"id", "ts"}, `["x",1.5]`}, {nil, `{"id":"x","ts":1.5,"n":{"a":1}}`}, {[]string{"n"}, `{"a":1}`}} {
		k, err := KeyOf(row, tc.keys)
		if err != nil || string(k) != tc.want {
			t.Errorf("%v: %s %v, want %s", tc.keys, k, err, tc.want)
		}
	}
}

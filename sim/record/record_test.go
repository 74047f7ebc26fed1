package record

import (
	"encoding/json"
	"testing"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/dedup"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim/history"
)

func TestCopyIndex(t *testing.T) {
	for _, tc := range []struct {
		row  string
		want int
	}{
		{`{"id":"e0-1","ts":1767225600.123456,"_copy":17}`, 17},
		{`{"id":"e0-1","_copy":0}`, 0},
		{`{"_copy":42,"id":"x"}`, 42},            // not last: decoded
		{`{"id":"x", "_copy": 5 }`, 5},           // spaced: decoded
		{`{"id":"x","n":17}`, -1},                // another column's number is no copy
		{`{"id":"x","_copy":007}`, -1},           // not JSON
		{`{"id":"x","_copy":-3}`, -1},            // no copy index
		{`{"id":"x","_copy":"3"}`, -1},           // a string
		{`{"id":"x"}`, -1},                       // none
		{`not json`, -1},                         // none
		{``, -1},                                 // empty
		{`{"_copy":1234567890123456789012}`, -1}, // out of range
		{`{"_COPY":1,"_copy":2}`, 2},             // the last one, as encoding/json
		{`{"id":"x","_copy":123456789012345678}`, 123456789012345678},
		{`{"a\"_copy":5}`, -1}, // another key, ending in _copy
	} {
		if got := CopyIndex([]byte(tc.row)); got != tc.want {
			t.Errorf("CopyIndex(%s) = %d, want %d", tc.row, got, tc.want)
		}
	}
}

// FuzzCopyIndex: on a JSON object the fast path reads what decoding reads.
func FuzzCopyIndex(f *testing.F) {
	for _, s := range []string{`{"id":"a","_copy":3}`, `{"_copy":0}`, `{"x":1,"_copy":09}`, `{"_copy":3,"_copy":4}`, `{"a":"\"_copy\":5}`, `{"a\"_copy":5}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := CopyIndex(data)
		var v struct {
			Copy *int `json:"_copy"`
		}
		if json.Unmarshal(data, &v) != nil {
			return // not JSON: only the simulator's own rows take the fast path
		}
		want := -1
		if v.Copy != nil && *v.Copy >= 0 {
			want = *v.Copy
		}
		if got != want {
			t.Fatalf("CopyIndex(%q) = %d, decoding gives %d", data, got, want)
		}
	})
}

func TestBatchMaxEventTime(t *testing.T) {
	wm, err := query.Parse("q", []byte("dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\n"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := query.Parse("q", []byte("dedup: {api: dropDuplicates, keys: [id]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	copies := []history.Copy{{EventTimeUs: 5_999}, {EventTimeUs: -1}, {EventTimeUs: 3_000}}
	for _, tc := range []struct {
		name  string
		q     *query.Query
		input []int32
		want  int64
	}{
		{"floor to ms", wm, []int32{0, 2}, 5},
		{"negative times round down", wm, []int32{1}, -1},
		{"rows that are no copy are skipped", wm, []int32{-1, 7, 2}, 3},
		{"no copy: 0", wm, []int32{-1}, 0},
		{"no event-time column: 0", plain, []int32{0}, 0},
	} {
		b := Batch(9, Execution{BatchID: 4, Input: tc.input, Outcomes: make(history.Outcomes, len(tc.input))}, copies, tc.q)
		if b.MaxEventTimeMs != tc.want || b.AtMs != 9 || b.BatchID != 4 {
			t.Errorf("%s: %+v, want maxEventTimeMs %d", tc.name, b, tc.want)
		}
	}
	if b := Batch(0, Execution{}, nil, plain); b.Input == nil || b.Outcomes == nil {
		t.Errorf("an empty batch's input and outcomes are [] in the history, not null: %+v", b)
	}
}

func TestAddProgress(t *testing.T) {
	p := &engine.Progress{StateOperators: []engine.OperatorProgress{{NumRowsTotal: 3, NumRowsUpdated: 2, NumRowsRemoved: 1}}}
	var b history.Batch
	AddProgress(&b, p, nil)
	if b.NumRowsTotal != 3 || b.NumRowsUpdated != 2 || b.NumRowsRemoved != 1 || b.Progress != nil {
		t.Fatalf("%+v", b)
	}
	raw := ProgressJSON(p)
	AddProgress(&b, nil, raw)
	if string(b.Progress) != string(raw) || b.NumRowsTotal != 3 {
		t.Fatalf("%+v", b)
	}
}

func TestHeader(t *testing.T) {
	q, err := query.Parse("q", []byte("dedup: {api: dropDuplicates, keys: [id, ts]}\nwatermark: {column: ts, delay: 1 second}\nsink: {kind: foreachBatch}\n"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := faults.Plan{Faults: map[string]faults.Knobs{faults.CrashRandom: {"rate": 0.25}}}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	cov := map[string]int{"x": 1}
	h := Header(Run{Seed: 7, Query: q, QueryText: "text", Faults: set, HealAtMs: 10, ArrivalRatePerSec: 2.5, Coverage: cov})
	if h.Seed != 7 || h.Query != "text" || h.DelayMs != 1000 || !h.EventTimeInKey || h.HasTable || h.SinkKind != "foreachBatch" ||
		len(h.Faults) != 1 || h.FaultKnobs[faults.CrashRandom]["rate"] != 0.25 || h.Table == nil || h.HealAtMs != 10 || h.ArrivalRatePerSec != 2.5 {
		t.Fatalf("%+v", h)
	}
	cov["y"] = 1
	if h.Coverage["y"] != 1 {
		t.Fatal("the header copied the coverage map: the runner's marks would be lost")
	}
}

// TestOutcomesMapped: every outcome the engine gives a row is one of the
// history's, by name, so none is recorded as no outcome.
func TestOutcomesMapped(t *testing.T) {
	all := []dedup.Outcome{dedup.Emitted, dedup.Duplicate, dedup.Late, dedup.Filtered}
	got := Outcomes(all)
	want := history.Outcomes{history.Emitted, history.Duplicate, history.Late, history.Filtered}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range want {
		if got[i] != want[i] || got[i].String() != all[i].String() {
			t.Errorf("engine %s recorded as %s", all[i], got[i])
		}
	}
	if len(history.OutcomeNames) != len(all) {
		t.Errorf("the history knows %d outcomes, the engine %d", len(history.OutcomeNames), len(all))
	}
}

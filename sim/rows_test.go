package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/sim/history"
)

// TestRowsMatchDecoder: a pre-decoded simulated row (Key, EventTime) is
// exactly what row.Decoder makes of its JSON, for every key shape the
// simulator allows and both timestamp formats, so the engine may skip
// decoding.
func TestRowsMatchDecoder(t *testing.T) {
	queries := []string{
		"dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\n",
		"dedup: {api: dropDuplicates, keys: [id, ts]}\nwatermark: {column: ts, delay: 10 seconds}\n",
		"dedup: {api: dropDuplicates, keys: [ts, id]}\nwatermark: {column: ts, delay: 10 seconds}\n",
		"dedup: {api: dropDuplicates, keys: [id, ts]}\n", // ts is a plain column: a number or a string key
		"dedup: {api: dropDuplicates, keys: [id]}\n",
		"dedup: {api: batchDropDuplicates, keys: [id, ts]}\n",
		"dedup: {api: dropDuplicates, keys: [id, event_time]}\nwatermark: {column: event_time, delay: 1 minute}\n",
	}
	times := []int64{0, 1, 999_999, 1_000_000, 1_767_225_600_123_456, 1_767_225_600_000_000, -1, -1_500_000, -999_999, 253402300799_999_999}
	ids := []string{"e0-0", "e12-345678", "d3-17", "x"}
	for qi, text := range queries {
		q, err := query.Parse("q.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		col := q.EventTimeColumn()
		if col == "" {
			col = "ts"
		}
		dec := row.NewDecoder(q.Keys, q.EventTimeColumn())
		for _, rfc := range []bool{false, true} {
			var copies []history.Copy
			tp := newTopic("t", 1, &copies, newRowEncoder(col, rfc), 0)
			n := 0
			for _, id := range ids {
				for _, us := range times {
					copies = append(copies, history.Copy{Event: id, EventTimeUs: us})
					tp.append(0, n)
					n++
				}
			}
			src := newLogSource(tp, nil, newKeyEncoder(q, col))
			end, _ := src.LatestOffset()
			rows, err := src.Rows(nil, end)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != n {
				t.Fatalf("%d rows, want %d", len(rows), n)
			}
			for i, r := range rows {
				var want row.Row
				if err := dec.Decode(r.Data, &want); err != nil {
					t.Fatalf("query %d rfc3339=%v: %s: %v", qi, rfc, r.Data, err)
				}
				if !bytes.Equal(r.Key, want.Key) || r.EventTime != want.EventTime || r.EventTimeNull != want.EventTimeNull || !r.Decoded {
					t.Fatalf("query %d rfc3339=%v row %s:\n got key %q et %d\nwant key %q et %d", qi, rfc, r.Data, r.Key, r.EventTime, want.Key, want.EventTime)
				}
				if copyIndex(r.Data) != i {
					t.Fatalf("copyIndex(%s) = %d, want %d", r.Data, copyIndex(r.Data), i)
				}
				var m map[string]any
				d := json.NewDecoder(bytes.NewReader(r.Data))
				d.UseNumber()
				if err := d.Decode(&m); err != nil || len(m) != 3 {
					t.Fatalf("row %s: not a flat 3-column JSON object: %v", r.Data, err)
				}
				// The event time reads back exactly.
				if us, _, err := row.ParseEventTime(json.RawMessage(mustJSON(t, m[col]))); err != nil || us != times[i%len(times)] {
					t.Fatalf("row %s: event time %d (%v), want %d", r.Data, us, err, times[i%len(times)])
				}
			}
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	if n, ok := v.(json.Number); ok {
		return []byte(n)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAppendSeconds(t *testing.T) {
	for _, c := range []struct {
		us   int64
		want string
	}{
		{0, "0.000000"}, {1, "0.000001"}, {1_000_000, "1.000000"}, {1_767_225_600_123_456, "1767225600.123456"},
		{-1, "-0.000001"}, {-1_500_000, "-1.500000"},
	} {
		if got := string(appendSeconds(nil, c.us)); got != c.want {
			t.Errorf("appendSeconds(%d) = %s, want %s", c.us, got, c.want)
		}
	}
}

// TestOffsets: Spark's Kafka offset JSON, partitions in numeric order, and
// the ranges the source serves.
func TestOffsets(t *testing.T) {
	var copies []history.Copy
	tp := newTopic("events", 12, &copies, newRowEncoder("ts", false), 0)
	src := newLogSource(tp, nil, &keyEncoder{parts: []keyPart{keyID}, wm: true})
	if o, _ := src.LatestOffset(); o != nil {
		t.Fatalf("empty topic offset %s, want nil", o)
	}
	n := 0
	for p := range 12 {
		for range p + 1 {
			copies = append(copies, history.Copy{Event: fmt.Sprint("k", n), EventTimeUs: int64(n), Partition: int32(p)})
			tp.append(p, n)
			n++
		}
	}
	o, _ := src.LatestOffset()
	want := `{"events":{"0":1,"1":2,"2":3,"3":4,"4":5,"5":6,"6":7,"7":8,"8":9,"9":10,"10":11,"11":12}}`
	if string(o) != want {
		t.Fatalf("offset\n got %s\nwant %s", o, want)
	}
	mid := tp.offsetJSON([]int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	rows, err := src.Rows(nil, mid)
	if err != nil || len(rows) != 12 {
		t.Fatalf("Rows(nil, mid): %d rows, %v", len(rows), err)
	}
	// Partition order, then offset order.
	first := []int{}
	for _, r := range rows {
		first = append(first, copyIndex(r.Data))
	}
	if fmt.Sprint(first) != "[0 1 3 6 10 15 21 28 36 45 55 66]" {
		t.Fatalf("first rows of each partition: %v", first)
	}
	rows, err = src.Rows(mid, o)
	if err != nil || len(rows) != n-12 {
		t.Fatalf("Rows(mid, end): %d rows, %v", len(rows), err)
	}
	if _, err := src.Rows(o, mid); err == nil {
		t.Fatal("a backwards range must fail")
	}
	if _, err := src.Rows(nil, json.RawMessage(`{"other":{"0":1}}`)); err == nil {
		t.Fatal("another topic's offset must fail")
	}
	// Any JSON spelling of the same offsets is read.
	if got, err := tp.parseOffsets(json.RawMessage(`{ "events" : {"11":12,"0":1,"1":2,"2":3,"3":4,"4":5,"5":6,"6":7,"7":8,"8":9,"9":10,"10":11}}`)); err != nil || fmt.Sprint(got) != "[1 2 3 4 5 6 7 8 9 10 11 12]" {
		t.Fatalf("parseOffsets: %v %v", got, err)
	}
	// Starting offsets apply when the engine has none.
	late := newLogSource(tp, tp.ends(), src.keys)
	if rows, _ := late.Rows(nil, o); len(rows) != 0 {
		t.Fatalf("a source starting at the end read %d rows", len(rows))
	}
	if !src.Available(o) || src.Available(tp.offsetJSON([]int64{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})) || !src.Available(nil) {
		t.Fatal("Available")
	}
}

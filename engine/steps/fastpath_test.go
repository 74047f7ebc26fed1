package steps

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
)

// fastSlowQueries are the queries the fast path is held to the slow one
// under: untyped, two sources, an all-columns key, a declared schema, a
// merge sink with its own keys.
var fastSlowQueries = []string{
	singleQuery,
	multiQuery,
	allColQuery,
	"dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 5s}\n",
	"schema: [{name: id, type: string}, {name: ts, type: timestamp}, {name: n, type: bigint}]\ndedup: {api: dropDuplicates, keys: [id, n]}\nwatermark: {column: ts, delay: 5s}\n",
	"dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: merge, keys: [id, region]}\n",
}

// fastSlowSeeds are lines where the two paths could part: space in and
// around rows, escaped and repeated names, the row scanner's stricter
// grammar (lone surrogates), syntax errors after a bad row, trailing data.
var fastSlowSeeds = []string{
	`{"rows": [{"id":"a","ts":1,"value":1,"event_time":1}]}`,
	`  {"rows":[ {"id" : "a b", "ts" : 1 , "value":1,"event_time":1} , {"id":"c","ts":2,"value":2,"event_time":2} ] , "once" : true }  `,
	"{\"rows\":\t[{\"id\":\"a\",\t\"ts\":1,\"n\":1}]}",
	`{"rows": [], "once": true}`,
	`{"rows": [ ]}`,
	`{"rows": []   }`,
	`{"rows": null}`,
	`{"rows": {}}`,
	`{"rows": [1, 2]}`,
	`{"rows": [{"id":"a","ts":1}], "rows": []}`,
	`{"\u0072ows": [{"id":"a","ts":1}]}`,
	`{"rows": [{"\u0069d":"a","ts":1}]}`,
	`{"rows": [{"id":"\ud800","ts":1}]}`,
	`{"rows": [{"id":"a","ts":1},{"id":"\udc00","ts":1}]}`,
	`{"rows": [{"id":"a"},{"id":"b","ts":1}], "x": [}`,
	`{"rows": [{"id":"a","ts":"nope"}], "bogus": 1}`,
	`{"rows": [{"id":"a","ts":1}]} x`,
	`{"rows": [{"id":"a","ts":1}]}}`,
	`{"rows": [{"id":"a","ts":1},]}`,
	`{"rows": [{"id":"a","ts":1,"id":"b"}]}`,
	`{"rows": [{"id":{"x": [1, 2 ,{"y" : "z z"}]},"ts":1,"value":[ ],"event_time":1}]}`,
	`{"rows": [{"id":"a","ts":1e400,"n":12345678901234567890}]}`,
	`{"rows": [{"id":"a","ts":-0.0,"n":-0}]}`,
	`{"rows": [{"id":"a","ts":1,"region":"eu"},{"id":"b","ts":1}]}`,
	`{"sources": {"web": [{"id":1,"ts":1}], "mobile": [ {"id" : 2, "ts" : 2} ]}}`,
	`{"sources": {"web": [], "web": []}}`,
	`{"sources": {"w\u0065b": []}}`,
	`{"sources": {"tv": []}}`,
	`{"sources": []}`,
	`{"restart": true}`,
	`{"restart" : true , "once": true}`,
	`{"tick": true }`,
	`{"crash": "after-commit", "batch": 3}`,
	`{"crash": "after-commit", "batch": -1}`,
	`{"crash": "nowhere"}`,
	`{"crash": "after-commit", "batch": 1, "batch": 2}`,
	`{}`,
	`[]`,
	`"rows"`,
	`{"rows": [{"id":"a","ts":1}]`,
	`{"rows": [{"id":"a","ts":1}], }`,
	`{"rows": [{"id":"a","ts":01}]}`,
	`{"rows": [{"id":"a\u0000b","ts":1}]}`,
	"{\"rows\": [{\"id\":\"é\",\"ts\":1}]}",
}

// parseWith parses data as Parse does, on the fast path or only the slow
// one, through Next or (check) Check.
func parseWith(data []byte, q *query.Query, slow, check bool) ([]Step, error) {
	r, err := NewReader("s.jsonl", bytes.NewReader(data), q)
	if err != nil {
		return nil, err
	}
	r.p.slow = slow
	if check {
		return nil, r.Check()
	}
	return r.All()
}

// inferWith is InferSchema on either path; it returns the schema's text.
func inferWith(data []byte, yaml string, slow bool) (string, error) {
	q, err := query.Parse("q.yaml", []byte(yaml))
	if err != nil {
		return "", err
	}
	if q.Schema != nil {
		return "", nil
	}
	rd, err := NewReader("s.jsonl", bytes.NewReader(data), q)
	if err != nil {
		return "", err
	}
	rd.p.slow = slow
	if err := inferFrom(rd, q); err != nil {
		return "", err
	}
	return fmt.Sprint(q.Schema), nil
}

// sameAnswer fails unless the fast path gives the slow path's steps and
// error, byte for byte, for every query, in every pass exec makes.
func sameAnswer(t *testing.T, data []byte) {
	t.Helper()
	for _, yaml := range fastSlowQueries {
		q, err := query.Parse("q.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		slow, serr := parseWith(data, q, true, false)
		fast, ferr := parseWith(data, q, false, false)
		if fmt.Sprint(ferr) != fmt.Sprint(serr) {
			t.Fatalf("query %q, %q:\nfast error %v\nslow error %v", yaml, data, ferr, serr)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("query %q, %q:\nfast %+v\nslow %+v", yaml, data, fast, slow)
		}
		// Next's promise, which trace.Options.RowsCompact relies on.
		for _, st := range fast {
			for src, rows := range st.Rows {
				for i, r := range rows {
					if !row.ValidCompact(r.Data) {
						t.Fatalf("query %q, %q: line %d %s[%d]: Data %q is not row.ValidCompact", yaml, data, st.Line, src, i, r.Data)
					}
				}
			}
		}
		if _, cerr := parseWith(data, q, false, true); fmt.Sprint(cerr) != fmt.Sprint(serr) {
			t.Fatalf("query %q, %q:\nCheck error %v\nslow error %v", yaml, data, cerr, serr)
		}
		ss, serr := inferWith(data, yaml, true)
		fs, ferr := inferWith(data, yaml, false)
		if fs != ss || fmt.Sprint(ferr) != fmt.Sprint(serr) {
			t.Fatalf("query %q, %q: inferred fast %s %v, slow %s %v", yaml, data, fs, ferr, ss, serr)
		}
	}
}

// TestFastPathSameAnswers holds the row scanner's path to encoding/json's
// on lines chosen to tell them apart, one at a time and as one file.
func TestFastPathSameAnswers(t *testing.T) {
	var all []byte
	for _, s := range fastSlowSeeds {
		sameAnswer(t, []byte(s))
		all = append(append(all, s...), '\n')
	}
	sameAnswer(t, all)
}

// FuzzFastPathSameAnswers is TestFastPathSameAnswers on any input.
func FuzzFastPathSameAnswers(f *testing.F) {
	for _, s := range fastSlowSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAnswer(t, data)
	})
}

// The slow path is what the fast one must equal; it must stay reachable.
func TestSlowPathStillAnswers(t *testing.T) {
	q := mustQuery(t, singleQuery)
	st, err := parseWith([]byte(`{"rows": [ {"value": 1, "event_time": 2} ]}`), q, true, false)
	if err != nil || len(st) != 1 || string(st[0].Rows["default"][0].Data) != `{"value":1,"event_time":2}` {
		t.Fatalf("slow path: %+v %v", st, err)
	}
	if _, err := parseWith([]byte(`{"rows": [}`), q, true, true); err == nil {
		t.Fatal("slow Check took a bad line")
	}
}

package check

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"testing"

	"github.com/dedupsim/dedupsim/sim/history"
)

// FuzzReadHistory: history.Read must not panic on any input (plain or
// gzip-compressed), and Check must not panic (and must be deterministic) on
// any history Read accepts; what Read accepts is in its domain, and a
// history written back reads again.
//
//	go test ./sim/check -run '^$' -fuzz FuzzReadHistory -fuzztime 60s
func FuzzReadHistory(f *testing.F) {
	seeds := []*history.History{
		simulate(with(presetB1, func(c *modelCfg) { c.crashAfterSink = map[int64]bool{1: true} }), steady("e", 8, 300, 200, 0)),
		simulate(with(presetDDW, func(c *modelCfg) { c.sink, c.healAtMs = "merge", 2000 }), steady("e", 8, 300, 700, 2500)),
		simulate(with(presetB, func(c *modelCfg) { c.sink = "append" }), steady("e", 5, 400, 900, 0)),
		simulate(with(presetNoWM, func(c *modelCfg) { c.sink = "foreachBatch" }), steady("e", 5, 400, 900, 0)),
		freshCheckpoint(),
	}
	for _, h := range seeds {
		var b bytes.Buffer
		if err := h.Write(&b); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte(`{"version":1}`))
	// Strict decoding: a gzip-compressed history, trailing data, a repeated
	// key, a report.json, and contradictions the checker must flag.
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	seeds[0].Write(zw)
	zw.Close()
	f.Add(b.Bytes())
	f.Add(b.Bytes()[:b.Len()/2])
	f.Add([]byte(`{"version":1,"api":"dropDuplicates","sinkKind":"table","delayMs":-1}{}`))
	f.Add([]byte(`{"version":1,"version":1,"api":"dropDuplicates","sinkKind":"table","delayMs":-1}`))
	f.Add([]byte(`{"headline":[],"scenario":"x","check":{}}`))
	f.Add([]byte(`{"version":1,"api":"dropDuplicates","sinkKind":"table","delayMs":-1,"hasTable":true,"table":[0],"copies":[{"event":"a","eventTimeUs":1,"appendedAtMs":1}],"sinkWrites":[{"batchId":1000000000,"rows":[0],"kept":1}]}`))
	f.Add([]byte("{\"version\":1,\"api\":\"dropDuplicates\",\"sinkKind\":\"table\",\"delayMs\":-1,\"copies\":[{\"event\":\"\xff\",\"eventTimeUs\":1,\"appendedAtMs\":1}]}"))
	f.Add([]byte(`{"version":1,"api":"dropDuplicatesWithinWatermark","delayMs":9223372036854775807,"copies":[{"event":"a","eventTimeUs":-9223372036854775808,"appendedAtMs":9223372036854775807}],"batches":[{"batchId":0,"input":[0,5,-1],"outcomes":["emitted","late"],"lateWatermarkMs":9223372036854775807,"progress":{"numInputRows":"x"}}],"sinkWrites":[{"batchId":0,"rows":[7],"kept":-3}],"table":[0,0,99],"hasTable":true,"restarts":[{"atMs":-1,"freshCheckpoint":true}]}`))
	f.Add([]byte(`{"version":1,"api":"dropDuplicates","delayMs":-1,"eventTimeInKey":true,"endMs":-5,"healAtMs":-9,"arrivalRatePerSec":1e308,"copies":[{"event":"a"},{"event":"a","copy":1}],"batches":[{"batchId":0,"atMs":-9223372036854775808,"input":[0,1],"outcomes":["emitted","emitted"],"numRowsTotal":9223372036854775807},{"batchId":0,"atMs":9223372036854775807,"input":[1],"outcomes":["duplicate"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := history.Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		r1 := Check(h, DefaultOptions())
		b1, err := json.Marshal(r1)
		if err != nil {
			t.Fatalf("report does not marshal: %v", err)
		}
		if _, err := json.Marshal(Check(h, Options{MaxExamples: 1, StallSpanMs: 1, TriggerIntervalMs: 1, StateMargin: 1e-9})); err != nil {
			t.Fatalf("report does not marshal: %v", err)
		}
		b3, _ := json.Marshal(Check(h, DefaultOptions()))
		if !bytes.Equal(b1, b3) {
			t.Fatal("Check is not deterministic")
		}
		if r1.Verdict.ExactlyOnce != (r1.Verdict.Violations == 0) {
			t.Fatalf("verdict %+v", r1.Verdict)
		}
		if err := history.Validate(h); err != nil {
			t.Fatalf("Read accepted a history out of its domain: %v", err)
		}
		if tb := r1.Table; tb.Once+tb.MoreThanOnce+tb.Never != tb.Events || tb.NeverLate+tb.NeverFiltered+tb.NeverLost != tb.Never {
			t.Fatalf("table %+v", tb)
		}
		var again bytes.Buffer
		if err := h.Write(&again); err != nil {
			t.Fatal(err)
		}
		if _, err := history.Read(&again); err != nil {
			t.Fatalf("a history Read accepted does not read back: %v", err)
		}
	})
}

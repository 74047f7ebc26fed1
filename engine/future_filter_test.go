package engine_test

import (
	"encoding/json"
	"testing"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/dedup"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/ids"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/source"
)

type fixedClock struct{ ms int64 }

func (c *fixedClock) NowMs() int64 { return c.ms }

// drop_future_events removes rows stamped too far ahead of processing time
// before the watermark sees them: a producer a year ahead no longer drags
// the watermark, so the honest rows after it are not late.
func TestDropFutureEvents(t *testing.T) {
	for _, filter := range []bool{false, true} {
		text := "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\n"
		if filter {
			text += "drop_future_events: 1 hour\n"
		}
		q, err := query.Parse("q.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		src := source.NewMemory("default")
		dec := row.NewDecoder(q.Keys, q.EventTimeColumn())
		add := func(data string) {
			var r row.Row
			if err := dec.Decode([]byte(data), &r); err != nil {
				t.Fatal(err)
			}
			src.Append(r)
		}
		clk := &fixedClock{ms: 1_000_000} // processing time: 1000 s
		var recs []*engine.BatchRecord
		e, err := engine.Start(engine.Config{Query: q, Checkpoint: fsys.NewMem(), Sources: []source.Source{src}, Sink: &sink.ForeachBatch{},
			Clock: clk, NewID: ids.Seeded(1), OnBatch: func(r *engine.BatchRecord) { recs = append(recs, r) }})
		if err != nil {
			t.Fatal(err)
		}
		add(`{"id":"honest-1","ts":999}`)
		add(`{"id":"future","ts":31537000}`) // a year ahead
		if err := e.ProcessAllAvailable(); err != nil {
			t.Fatal(err)
		}
		clk.ms += 1000
		add(`{"id":"honest-2","ts":1000}`)
		if err := e.ProcessAllAvailable(); err != nil {
			t.Fatal(err)
		}
		var last *engine.BatchRecord
		for _, r := range recs {
			if len(r.Input) == 1 {
				last = r // the batch that read honest-2
			}
		}
		gotFiltered := recs[0].Outcomes[1] == dedup.Filtered
		if gotFiltered != filter {
			t.Fatalf("filter=%v: future row outcome %v", filter, recs[0].Outcomes[1])
		}
		wantLast := dedup.Late
		if filter {
			wantLast = dedup.Emitted
		}
		if last.Outcomes[0] != wantLast {
			t.Fatalf("filter=%v: honest-2 was %v, want %v (watermark %d)", filter, last.Outcomes[0], wantLast, last.WatermarkMs)
		}
		b, _ := json.Marshal(recs[0].Progress)
		if filter && recs[0].Progress.NumInputRows != 2 {
			t.Fatalf("numInputRows counts filtered rows too: %s", b)
		}
	}
}

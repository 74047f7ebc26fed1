package live

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/live/records"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sim/history"
)

func row(copyIdx int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"id":"e%d","ts":%d,"_copy":%d}`, copyIdx, copyIdx, copyIdx))
}

func executed(batch int64, wall int64, replay bool, copies ...int) records.Record {
	r := records.Record{Kind: records.KindExecuted, WallMs: wall, BatchID: batch, Replay: replay}
	for _, c := range copies {
		r.Input = append(r.Input, row(c))
		r.Outcomes = append(r.Outcomes, history.Emitted)
		r.Rows = append(r.Rows, row(c))
	}
	return r
}

// TestCollectKilledExecutions: the history of processes killed at any
// instruction after an execution went on record, rebuilt by the engine's
// rules (see collect).
func TestCollectKilledExecutions(t *testing.T) {
	type want struct {
		batches []string // "id crashed next"
		writes  []string // "id kept/rows"
	}
	for _, tc := range []struct {
		name   string
		procs  [][]records.Record
		commit map[int64]int64 // checkpoint commits: batch -> next watermark
		sink   string
		want   want
	}{{
		name: "killed during the sink write that landed: inferred from the replay's skip",
		procs: [][]records.Record{
			{executed(0, 10, false, 0, 1), {Kind: records.KindWrite, WallMs: 11, Kept: 2}, {Kind: records.KindBatch, WallMs: 12, NextWatermarkMs: 7},
				executed(1, 20, false, 2)},
			{executed(1, 30, true, 2), {Kind: records.KindWrite, WallMs: 31, BatchID: 1}, {Kind: records.KindBatch, WallMs: 32, BatchID: 1, NextWatermarkMs: 9}},
		},
		sink: "table",
		want: want{batches: []string{"0  7", "1 after-sink-write 0", "1  9"}, writes: []string{"0 2/2", "1 1/1", "1 0/1"}},
	}, {
		name: "a skip explained by an earlier landed write infers nothing",
		procs: [][]records.Record{
			{executed(0, 10, false, 0), {Kind: records.KindWrite, WallMs: 11, Kept: 1}},
			{executed(0, 20, true, 0)},
			{executed(0, 30, true, 0), {Kind: records.KindWrite, WallMs: 31}, {Kind: records.KindBatch, WallMs: 32, NextWatermarkMs: 3}},
		},
		sink: "transactional",
		want: want{batches: []string{"0 after-sink-write 0", "0  3"}, writes: []string{"0 1/1", "0 0/1"}},
	}, {
		name: "killed before the sink write: the execution is dropped",
		procs: [][]records.Record{
			{executed(0, 10, false, 0)},
			{executed(0, 30, true, 0), {Kind: records.KindWrite, WallMs: 31, Kept: 1}, {Kind: records.KindBatch, WallMs: 32, NextWatermarkMs: 3}},
		},
		sink: "table",
		want: want{batches: []string{"0  3"}, writes: []string{"0 1/1"}},
	}, {
		name: "plain sink: a write not on record is not guessed",
		procs: [][]records.Record{
			{executed(0, 10, false, 0)},
			{executed(0, 30, true, 0), {Kind: records.KindWrite, WallMs: 31, Kept: 1}, {Kind: records.KindBatch, WallMs: 32, NextWatermarkMs: 3}},
		},
		sink: "plain",
		want: want{batches: []string{"0  3"}, writes: []string{"0 1/1"}},
	}, {
		name: "foreachBatch: the function was called, that is a delivery",
		procs: [][]records.Record{
			{executed(0, 10, false, 0)},
			{executed(0, 30, true, 0), {Kind: records.KindWrite, WallMs: 31, Kept: 1}, {Kind: records.KindBatch, WallMs: 32, NextWatermarkMs: 3}},
		},
		sink: "foreachBatch",
		want: want{batches: []string{"0 after-sink-write 0", "0  3"}, writes: []string{"0 1/1", "0 1/1"}},
	}, {
		name: "merge: a replay that kept nothing proves nothing",
		procs: [][]records.Record{
			{executed(0, 10, false, 0)},
			{executed(0, 30, true, 0), {Kind: records.KindWrite, WallMs: 31}, {Kind: records.KindBatch, WallMs: 32, NextWatermarkMs: 3}},
		},
		sink: "merge",
		want: want{batches: []string{"0  3"}, writes: []string{"0 0/1"}},
	}, {
		name: "killed after the commit, before the completion: the watermark batch N+1 ran with",
		procs: [][]records.Record{
			{executed(0, 10, false, 0, 1), {Kind: records.KindWrite, WallMs: 11, Kept: 2}},
			{func() records.Record { r := executed(1, 40, false, 2); r.WatermarkMs = 4000; return r }(),
				{Kind: records.KindWrite, WallMs: 41, BatchID: 1, Kept: 1}, {Kind: records.KindBatch, WallMs: 42, BatchID: 1, NextWatermarkMs: 8}},
		},
		sink: "table",
		want: want{batches: []string{"0 after-commit 4000", "1  8"}, writes: []string{"0 2/2", "1 1/1"}},
	}, {
		name: "killed after the commit, before the completion: the watermark from commits/N",
		procs: [][]records.Record{
			{executed(0, 10, false, 0, 1), {Kind: records.KindWrite, WallMs: 11, Kept: 2}},
		},
		commit: map[int64]int64{0: 5000},
		sink:   "table",
		want:   want{batches: []string{"0 after-commit 5000"}, writes: []string{"0 2/2"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			q, err := query.Parse("q", []byte("dedup: {api: dropDuplicates, keys: [id]}\n"))
			if err != nil {
				t.Fatal(err)
			}
			p := &procRun{q: q, sinkFlag: tc.sink, ckpt: filepath.Join(dir, "ckpt"), realStart: time.UnixMilli(0), scale: 1,
				wl: &sim.Workload{}, h: &history.History{}, opt: ProcessOptions{Logf: t.Logf}}
			if err := os.MkdirAll(p.ckpt, 0o755); err != nil {
				t.Fatal(err)
			}
			log := checkpoint.New(fsys.NewOS(p.ckpt))
			for b, wm := range tc.commit {
				if err := log.WriteCommit(b, checkpoint.Commit{NextBatchWatermarkMs: wm}); err != nil {
					t.Fatal(err)
				}
			}
			for i, recs := range tc.procs {
				path := filepath.Join(dir, fmt.Sprintf("records-%d.jsonl", i))
				w, err := records.Create(path)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range recs {
					if err := w.Write(&r); err != nil {
						t.Fatal(err)
					}
				}
				w.Close()
				p.recFiles = append(p.recFiles, path)
			}
			p.h.HasTable = tc.sink != "foreachBatch"
			if tc.sink == "foreachBatch" {
				p.sinkFlag = "plain"
			}
			if err := p.collect(); err != nil {
				t.Fatal(err)
			}
			var got want
			for _, b := range p.h.Batches {
				got.batches = append(got.batches, fmt.Sprintf("%d %s %d", b.BatchID, b.Crashed, b.NextWatermarkMs))
			}
			for _, w := range p.h.Writes {
				got.writes = append(got.writes, fmt.Sprintf("%d %d/%d", w.BatchID, w.Kept, len(w.Rows)))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

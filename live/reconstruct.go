package live

import (
	"encoding/json"
	"fmt"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/live/records"
	"github.com/dedupsim/dedupsim/sim/history"
	"github.com/dedupsim/dedupsim/sim/record"
)

// SinkMode is what a sink does with a replayed batch, which decides what a
// killed execution's sink write can be inferred from.
type SinkMode int

const (
	// SinkVersioned skips a committed (app id, batch id): the table sink
	// (in Pebble) and the transactional Kafka sink. A replay that kept
	// nothing proves the killed write landed.
	SinkVersioned SinkMode = iota
	// SinkRewrites writes a replay again, or keeps what matched nothing
	// (merge, and append over the plain Kafka sink): a replay that kept
	// nothing proves nothing (MERGE keeps nothing when every row matched
	// other batches' rows).
	SinkRewrites
	// SinkForeachBatch calls the user's function: the call is the
	// delivery, whatever happened next.
	SinkForeachBatch
)

// ProcessRecords are the records one engine process wrote (Name, its
// file, for messages).
type ProcessRecords struct {
	Name    string
	Records []records.Record
}

// Reconstruction is what Reconstruct rebuilds a history's batches and sink
// writes from.
type Reconstruction struct {
	// Processes are the engine processes in start order.
	Processes []ProcessRecords
	// Copies are the produced copies, with the offsets the broker gave
	// them: where a row was read names its copy.
	Copies []history.Copy
	Sink   SinkMode
	// Committed reads commits/N's nextBatchWatermarkMs from the
	// checkpoint, for a batch killed after its commit and never followed.
	Committed func(batch int64) (int64, error)
	// Query is the query the processes ran; OmitProgress leaves the
	// progress records out of the batches.
	Query        *query.Query
	OmitProgress bool
	// VirtMs maps a process's wall clock (ms) to the run's processing time.
	VirtMs func(wallMs int64) int64
}

// Reconstructed is a history's batches and sink writes, and how many of
// the writes were inferred (killed during the write, found committed by
// the replay).
type Reconstructed struct {
	Batches  []history.Batch
	Writes   []history.SinkWrite
	Inferred int
}

// execution is one batch execution as its process recorded it.
type execution struct {
	at    int64 // processing time of the executed record
	exec  *records.Record
	write *records.Record // nil: no write recorded
	done  *records.Record // nil: the process died before completing it
}

// Reconstruct builds the batches and sink writes of a history from the
// produced copies and the records of every engine process. It reads
// nothing but in (Committed is its only access to the checkpoint).
//
// An execution is on record from the moment its sink is called
// (records.KindExecuted); a SIGKILL can land anywhere after that, so a
// record may lack its write or its completion. The history is completed
// the way the engine's own rules allow:
//   - no write recorded, the next execution of the batch id found it
//     already committed by a versioned sink (kept 0), and no earlier write
//     of it landed: the killed write did; it is recorded with all its rows
//     kept;
//   - foreachBatch: the function was called, which is the delivery;
//   - otherwise no write: the process died before any output, as a crash
//     before the sink; the execution is dropped, as the simulator never
//     records one (an append sink's write cut by a kill is not guessed:
//     its rows in the topic show up as table duplicates);
//   - a write but no completion: died after the sink write; if the batch
//     ran again it had no commit (crashed after-sink-write, the watermark
//     unchanged), else its commit landed (crashed after-commit, the next
//     watermark the one batch N+1 ran with, or commits/N's).
func Reconstruct(in Reconstruction) (Reconstructed, error) {
	execs, err := executions(in)
	if err != nil {
		return Reconstructed{}, err
	}
	pos := record.NewPositions(in.Copies)
	var out Reconstructed
	landed := map[int64]bool{} // batch ids a write already landed for: a later skip is explained by it
	for i, x := range execs {
		later := nextOf(execs[i+1:], x.exec.BatchID)
		rows := record.RawCopies(x.exec.Rows)
		kept := -1
		switch {
		case x.write != nil:
			kept = x.write.Kept
		case in.Sink == SinkVersioned && len(rows) > 0 && !landed[x.exec.BatchID] && later != nil && later.write != nil &&
			later.write.Kept == 0 && len(later.exec.Rows) > 0:
			kept = len(rows)
			out.Inferred++
		case in.Sink == SinkForeachBatch:
			kept = len(rows)
		}
		if kept < 0 && x.done == nil {
			continue // died before any output
		}
		b, err := in.batch(x, later, execs[i+1:], pos)
		if err != nil {
			return Reconstructed{}, err
		}
		out.Batches = append(out.Batches, b)
		if kept > 0 {
			landed[b.BatchID] = true
		}
		if kept >= 0 {
			out.Writes = append(out.Writes, record.Write(b.BatchID, x.at, rows, kept))
		}
	}
	return out, nil
}

// executions pairs every executed record with the write and completion
// records that follow it in its process.
func executions(in Reconstruction) ([]*execution, error) {
	var execs []*execution
	for _, p := range in.Processes {
		var cur *execution
		for i := range p.Records {
			r := &p.Records[i]
			switch r.Kind {
			case records.KindExecuted:
				cur = &execution{at: in.VirtMs(r.WallMs), exec: r}
				execs = append(execs, cur)
			case records.KindWrite, records.KindBatch:
				if cur == nil || cur.exec.BatchID != r.BatchID {
					return nil, fmt.Errorf("live: %s: %s record of batch %d without its execution", p.Name, r.Kind, r.BatchID)
				}
				if r.Kind == records.KindWrite {
					cur.write = r
				} else {
					cur.done = r
				}
			}
		}
	}
	return execs, nil
}

// nextOf is the first execution of batch id among execs, or nil.
func nextOf(execs []*execution, id int64) *execution {
	for _, y := range execs {
		if y.exec.BatchID == id {
			return y
		}
	}
	return nil
}

// batch is the history's batch of execution x: later is the next
// execution of the same batch id (nil: none), rest every execution after
// x.
func (in *Reconstruction) batch(x, later *execution, rest []*execution, pos record.Positions) (history.Batch, error) {
	b := in.executed(x.exec, x.at, pos)
	switch {
	case x.done != nil:
		b.NextWatermarkMs, b.Crashed = x.done.NextWatermarkMs, x.done.Crashed
		in.addProgress(&b, x.done.Progress)
	case later != nil:
		b.Crashed, b.NextWatermarkMs = string(crashpoint.AfterSinkWrite), b.WatermarkMs
	default:
		b.Crashed = string(crashpoint.AfterCommit)
		// The watermark it committed is the one batch N+1 ran with;
		// commits/N holds it too while the log retains it.
		if next := nextOf(rest, b.BatchID+1); next != nil {
			b.NextWatermarkMs = next.exec.WatermarkMs
		} else {
			wm, err := in.Committed(b.BatchID)
			if err != nil {
				return b, err
			}
			b.NextWatermarkMs = wm
		}
		for _, o := range b.Outcomes {
			if o == history.Emitted {
				b.NumRowsUpdated++ // its progress died with it; the engine's figure is the emitted rows
			}
		}
	}
	return b, nil
}

// executed is the batch an executed record describes, its input mapped to
// copies by where each row was read (a broker that appended the same
// bytes twice, on a dropped ack, holds two copies with one _copy).
func (in *Reconstruction) executed(r *records.Record, at int64, pos record.Positions) history.Batch {
	input := make([]int32, len(r.Input))
	for i, raw := range r.Input {
		var where [3]int64
		if r.Pos != nil {
			where = r.Pos[i]
		}
		input[i] = record.Copy32(pos.Index(raw, where, r.Pos != nil))
	}
	// Every outcome is one the history knows: records.Read refuses any
	// other, naming its line.
	outcomes := make(history.Outcomes, len(r.Outcomes))
	for i, o := range r.Outcomes {
		outcomes[i], _ = history.OutcomeOf(o)
	}
	x := record.Execution{BatchID: r.BatchID, Replay: r.Replay, Input: input, Outcomes: outcomes,
		LateWatermarkMs: r.LateWatermarkMs, WatermarkMs: r.WatermarkMs}
	return record.Batch(at, x, in.Copies, in.Query)
}

// addProgress adds a completed execution's progress and state figures.
func (in *Reconstruction) addProgress(b *history.Batch, raw json.RawMessage) {
	var prog *engine.Progress
	if len(raw) > 0 {
		var v engine.Progress
		if json.Unmarshal(raw, &v) == nil {
			prog = &v
		}
	}
	if in.OmitProgress {
		raw = nil
	}
	record.AddProgress(b, prog, raw)
}

// Package records is the file an engine process (`dedupsim engine
// --records FILE`, live/driver) appends one JSON line to per event, and
// its reader. Each line is written with a single write(2), so it is in the
// page cache before the process can die at the next crash point, and a
// SIGKILL loses at most the line being built. A harness reads the file
// after the process ended and turns it into a history for the checker
// (live.Reconstruct): that is how a live run knows what a process that was
// killed did.
package records

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/sim/history"
)

// Record kinds, in the order one batch execution writes them.
const (
	KindStart    = "start"    // the engine started on the checkpoint
	KindExecuted = "executed" // a batch ran; its sink is about to be called
	KindWrite    = "write"    // the sink accepted the batch (before the commit log)
	KindBatch    = "batch"    // the execution completed (or dies at an armed point after its sink write)
	KindCrash    = "crash"    // the process is about to kill itself at a crash point
)

// Record is one line of the records file.
type Record struct {
	Kind   string `json:"kind"`
	WallMs int64  `json:"wallMs"` // the process's wall clock
	RunID  string `json:"runId"`

	BatchID int64 `json:"batchId,omitempty"`
	// executed: the rows read, in union order, with their fate, the rows
	// handed to the sink, and the batch's watermarks.
	Replay   bool              `json:"replay,omitempty"`
	Input    []json.RawMessage `json:"input,omitempty"`
	Outcomes []string          `json:"outcomes,omitempty"`
	// Pos[i] is where Input[i] was read: source index, partition, offset
	// (nil when the source does not say).
	Pos             [][3]int64        `json:"pos,omitempty"`
	Rows            []json.RawMessage `json:"rows,omitempty"`
	LateWatermarkMs int64             `json:"lateWatermarkMs,omitempty"`
	WatermarkMs     int64             `json:"watermarkMs,omitempty"`
	// write: how many of the rows the sink kept (0 for a batch it had
	// already committed).
	Kept int `json:"kept,omitempty"`
	// batch: the watermark after the batch and the StreamingQueryProgress;
	// batch and crash: the crash point the process dies at.
	NextWatermarkMs int64           `json:"nextWatermarkMs,omitempty"`
	Progress        json.RawMessage `json:"progress,omitempty"`
	Crashed         string          `json:"crashed,omitempty"`
}

// Executed is the record of a batch about to reach its sink.
func Executed(r *engine.BatchRecord, runID string, wallMs int64) *Record {
	rec := &Record{Kind: KindExecuted, WallMs: wallMs, RunID: runID, BatchID: r.BatchID,
		Replay: r.Replay, Input: make([]json.RawMessage, len(r.Input)), Outcomes: make([]string, len(r.Input)),
		Rows: make([]json.RawMessage, len(r.Output)), LateWatermarkMs: r.LateWatermarkMs, WatermarkMs: r.WatermarkMs}
	for i := range r.Input {
		in := &r.Input[i]
		rec.Input[i] = in.Data
		rec.Outcomes[i] = r.Outcomes[i].String()
		if in.Positioned {
			if rec.Pos == nil {
				rec.Pos = make([][3]int64, len(r.Input))
			}
			rec.Pos[i] = [3]int64{int64(in.Source), int64(in.Partition), in.Offset}
		}
	}
	for i := range r.Output {
		rec.Rows[i] = r.Output[i].Data
	}
	return rec
}

// Completed is the record of a completed batch execution (or of one that
// dies at an armed point after its sink write).
func Completed(r *engine.BatchRecord, runID string, wallMs int64) *Record {
	rec := &Record{Kind: KindBatch, WallMs: wallMs, RunID: runID, BatchID: r.BatchID,
		NextWatermarkMs: r.NextWatermarkMs, Crashed: string(r.Crashed)}
	if p, err := json.Marshal(r.Progress); err == nil {
		rec.Progress = p
	}
	return rec
}

// Writer appends records to a file.
type Writer struct{ f *os.File }

// Create opens path for appending (creating it).
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f}, nil
}

// Write appends one record as one line in one write call.
func (w *Writer) Write(r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.f.Write(append(b, '\n'))
	return err
}

// Close closes the file.
func (w *Writer) Close() error { return w.f.Close() }

// Read reads a records file. A last line cut short by a kill is ignored
// (reported in torn); any other bad line is an error naming it.
func Read(path string) (recs []Record, torn bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	line := 0
	for sc.Scan() {
		line++
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			if !bytes.HasSuffix(data, []byte("\n")) && bytes.HasSuffix(data, sc.Bytes()) { // the last line, cut
				return recs, true, nil
			}
			return nil, false, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if err := check(&r); err != nil {
			return nil, false, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return recs, false, nil
}

// check refuses what a record cannot hold: an outcome the history does
// not know (which the history would otherwise record as no outcome, and
// then could not write), or an executed record whose outcomes are not
// one per row read.
func check(r *Record) error {
	for i, o := range r.Outcomes {
		if _, ok := history.OutcomeOf(o); !ok {
			return fmt.Errorf("outcomes[%d]: %q is not one of %s", i, o, strings.Join(history.OutcomeNames, ", "))
		}
	}
	if r.Kind == KindExecuted && len(r.Outcomes) != len(r.Input) {
		return fmt.Errorf("outcomes: %d for %d rows of input", len(r.Outcomes), len(r.Input))
	}
	return nil
}

package live

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// The engine process (`dedupsim engine --records FILE`) appends one JSON
// line per event to FILE, each with a single write(2), so a line is in the
// page cache before the process can die at the next crash point and a
// SIGKILL loses at most the line being built. A harness reads the file
// after the process ended and turns it into a history for the checker:
// that is how a live run knows what a process that was killed did.

// Record kinds, in the order one batch execution writes them.
const (
	RecordStart    = "start"    // the engine started on the checkpoint
	RecordExecuted = "executed" // a batch ran; its sink is about to be called
	RecordWrite    = "write"    // the sink accepted the batch (before the commit log)
	RecordBatch    = "batch"    // the execution completed (or dies at an armed point after its sink write)
	RecordCrash    = "crash"    // the process is about to kill itself at a crash point
)

// EngineRecord is one line of the records file.
type EngineRecord struct {
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

// RecordWriter appends records to a file.
type RecordWriter struct{ f *os.File }

// CreateRecords opens path for appending (creating it).
func CreateRecords(path string) (*RecordWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &RecordWriter{f: f}, nil
}

// Write appends one record as one line in one write call.
func (w *RecordWriter) Write(r *EngineRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.f.Write(append(b, '\n'))
	return err
}

// Close closes the file.
func (w *RecordWriter) Close() error { return w.f.Close() }

// ReadRecords reads a records file. A last line cut short by a kill is
// ignored (reported in torn); any other bad line is an error naming it.
func ReadRecords(path string) (recs []EngineRecord, torn bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	line := 0
	for sc.Scan() {
		line++
		var r EngineRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			if !bytes.HasSuffix(data, []byte("\n")) && bytes.HasSuffix(data, sc.Bytes()) { // the last line, cut
				return recs, true, nil
			}
			return nil, false, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return recs, false, nil
}

package history

import (
	"bytes"
	"encoding/json"
	"testing"

	"pgregory.net/rapid"
)

// The types as they were before the held form shrank (commit 25baabd):
// strings for the fault and the outcomes, int for the counters and the
// copy indices. history.json must keep their bytes: files written before
// read the same, and files written now read in older builds.
type oldHistory struct {
	Version           int                       `json:"version"`
	Seed              uint64                    `json:"seed"`
	Query             string                    `json:"query"`
	API               string                    `json:"api"`
	Keys              []string                  `json:"keys"`
	DelayMs           int64                     `json:"delayMs"`
	Partitions        int                       `json:"partitions"`
	SinkKind          string                    `json:"sinkKind"`
	EventTimeInKey    bool                      `json:"eventTimeInKey"`
	HealAtMs          int64                     `json:"healAtMs"`
	EndMs             int64                     `json:"endMs"`
	ArrivalRatePerSec float64                   `json:"arrivalRatePerSec"`
	Copies            []oldCopy                 `json:"copies"`
	Batches           []oldBatch                `json:"batches"`
	Crashes           []Crash                   `json:"crashes"`
	Restarts          []Restart                 `json:"restarts"`
	Writes            []oldSinkWrite            `json:"sinkWrites"`
	Table             []int                     `json:"table"`
	HasTable          bool                      `json:"hasTable"`
	Faults            []string                  `json:"faultsEnabled"`
	Coverage          map[string]int            `json:"coverage"`
	FaultKnobs        map[string]map[string]any `json:"faultKnobs,omitempty"`
	InitialQuery      string                    `json:"initialQuery,omitempty"`
	Live              *Live                     `json:"live,omitempty"`
}

type oldCopy struct {
	Event        string `json:"event"`
	CopyNo       int    `json:"copy"`
	Source       int    `json:"source"`
	Partition    int    `json:"partition"`
	Offset       int64  `json:"offset"`
	EventTimeUs  int64  `json:"eventTimeUs"`
	AppendedAtMs int64  `json:"appendedAtMs"`
	Fault        string `json:"fault,omitempty"`
}

type oldBatch struct {
	BatchID         int64           `json:"batchId"`
	AtMs            int64           `json:"atMs"`
	Replay          bool            `json:"replay,omitempty"`
	Crashed         string          `json:"crashed,omitempty"`
	Input           []int           `json:"input"`
	Outcomes        []string        `json:"outcomes"`
	LateWatermarkMs int64           `json:"lateWatermarkMs"`
	WatermarkMs     int64           `json:"watermarkMs"`
	NextWatermarkMs int64           `json:"nextWatermarkMs"`
	MaxEventTimeMs  int64           `json:"maxEventTimeMs"`
	NumRowsTotal    int64           `json:"numRowsTotal"`
	NumRowsUpdated  int64           `json:"numRowsUpdated"`
	NumRowsRemoved  int64           `json:"numRowsRemoved"`
	Progress        json.RawMessage `json:"progress,omitempty"`
}

type oldSinkWrite struct {
	BatchID int64 `json:"batchId"`
	AtMs    int64 `json:"atMs"`
	Rows    []int `json:"rows"`
	Kept    int   `json:"kept"`
}

func ints(xs []int32) []int {
	if xs == nil {
		return nil
	}
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x)
	}
	return out
}

// old is h in the old layout, field for field.
func old(h *History) *oldHistory {
	o := &oldHistory{Version: h.Version, Seed: h.Seed, Query: h.Query, API: h.API, Keys: h.Keys, DelayMs: h.DelayMs, Partitions: h.Partitions,
		SinkKind: h.SinkKind, EventTimeInKey: h.EventTimeInKey, HealAtMs: h.HealAtMs, EndMs: h.EndMs, ArrivalRatePerSec: h.ArrivalRatePerSec,
		Crashes: h.Crashes, Restarts: h.Restarts, Table: ints(h.Table), HasTable: h.HasTable, Faults: h.Faults, Coverage: h.Coverage,
		FaultKnobs: h.FaultKnobs, InitialQuery: h.InitialQuery, Live: h.Live}
	if h.Copies != nil {
		o.Copies = []oldCopy{}
	}
	for _, c := range h.Copies {
		o.Copies = append(o.Copies, oldCopy{Event: c.Event, CopyNo: int(c.CopyNo), Source: int(c.Source), Partition: int(c.Partition),
			Offset: c.Offset, EventTimeUs: c.EventTimeUs, AppendedAtMs: c.AppendedAtMs, Fault: c.Fault.String()})
	}
	if h.Batches != nil {
		o.Batches = []oldBatch{}
	}
	for _, b := range h.Batches {
		ob := oldBatch{BatchID: b.BatchID, AtMs: b.AtMs, Replay: b.Replay, Crashed: b.Crashed, Input: ints(b.Input),
			LateWatermarkMs: b.LateWatermarkMs, WatermarkMs: b.WatermarkMs, NextWatermarkMs: b.NextWatermarkMs, MaxEventTimeMs: b.MaxEventTimeMs,
			NumRowsTotal: b.NumRowsTotal, NumRowsUpdated: b.NumRowsUpdated, NumRowsRemoved: b.NumRowsRemoved, Progress: b.Progress}
		if b.Outcomes != nil {
			ob.Outcomes = []string{}
		}
		for _, x := range b.Outcomes {
			ob.Outcomes = append(ob.Outcomes, x.String())
		}
		o.Batches = append(o.Batches, ob)
	}
	if h.Writes != nil {
		o.Writes = []oldSinkWrite{}
	}
	for _, w := range h.Writes {
		o.Writes = append(o.Writes, oldSinkWrite{BatchID: w.BatchID, AtMs: w.AtMs, Rows: ints(w.Rows), Kept: w.Kept})
	}
	return o
}

func encodedOld(t interface{ Fatal(...any) }, h *History) []byte {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(old(h)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestWriteKeepsOldBytes: Write writes the bytes encoding/json wrote for
// the old types, for the fixed histories (review finding 1: the encoder
// of the new types goes through Copy.MarshalJSON too, so comparing with
// it pins nothing about the old file).
func TestWriteKeepsOldBytes(t *testing.T) {
	fixture, err := ReadLimit(bytes.NewReader([]byte(good)), MaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	empty := &History{Copies: []Copy{}, Batches: []Batch{{Input: []int32{}, Outcomes: Outcomes{}}}, Writes: []SinkWrite{{Rows: []int32{}}}, Table: []int32{}, Crashes: []Crash{}, Restarts: []Restart{}}
	for name, h := range map[string]*History{"zero": {}, "full": full(), "empty slices": empty, "fixture": fixture} {
		if got, want := written(t, h), encodedOld(t, h); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	// The fixture is a file of the old layout: it is written back as read.
	if got := written(t, fixture); string(bytes.TrimSuffix(got, []byte("\n"))) != good {
		t.Errorf("fixture:\n got %s\nwant %s", got, good)
	}
}

// TestWriteKeepsOldBytesProperty: the same over drawn copies (every field,
// every fault, strings encoding/json escapes), outcomes, inputs and rows.
func TestWriteKeepsOldBytesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := full()
		h.Copies = rapid.SliceOf(rapid.Custom(func(t *rapid.T) Copy {
			return Copy{Event: rapid.String().Draw(t, "event"), CopyNo: rapid.Int32().Draw(t, "no"), Source: rapid.Int32().Draw(t, "source"),
				Partition: rapid.Int32().Draw(t, "partition"), Offset: rapid.Int64().Draw(t, "off"), EventTimeUs: rapid.Int64().Draw(t, "et"),
				AppendedAtMs: rapid.Int64().Draw(t, "at"), Fault: Fault(rapid.IntRange(0, len(faultNames)-1).Draw(t, "fault"))}
		})).Draw(t, "copies")
		outcome := rapid.Custom(func(t *rapid.T) Outcome { return Outcome(rapid.IntRange(int(Emitted), int(Filtered)).Draw(t, "o")) })
		h.Batches = rapid.SliceOf(rapid.Custom(func(t *rapid.T) Batch {
			return Batch{BatchID: rapid.Int64().Draw(t, "id"), Input: rapid.SliceOf(rapid.Int32()).Draw(t, "input"),
				Outcomes: Outcomes(rapid.SliceOf(outcome).Draw(t, "outcomes")), Crashed: rapid.String().Draw(t, "crashed")}
		})).Draw(t, "batches")
		h.Writes = rapid.SliceOf(rapid.Custom(func(t *rapid.T) SinkWrite {
			return SinkWrite{BatchID: rapid.Int64().Draw(t, "id"), Rows: rapid.SliceOf(rapid.Int32()).Draw(t, "rows"), Kept: rapid.Int().Draw(t, "kept")}
		})).Draw(t, "writes")
		h.Table = rapid.SliceOf(rapid.Int32()).Draw(t, "table")
		if got, want := written(t, h), encodedOld(t, h); !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

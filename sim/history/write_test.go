package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// encoded is what json.NewEncoder(w).Encode(h) writes: the format Write
// streams.
func encoded(t interface{ Fatal(...any) }, h *History) []byte {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(h); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func written(t interface{ Fatal(...any) }, h *History) []byte {
	var b bytes.Buffer
	if err := h.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// full sets every field of a history, the optional ones included, with
// values encoding/json escapes (HTML characters, a control character,
// invalid UTF-8) and a progress record with spaces (compacted).
func full() *History {
	return &History{Version: Version, Seed: 7, Query: "a: <b> & \"c\"\n\x01", API: "dropDuplicates", Keys: []string{"id", "t\xff"},
		DelayMs: 5, Partitions: 3, SinkKind: "merge", EventTimeInKey: true, HealAtMs: 9, EndMs: 12, ArrivalRatePerSec: 1.5e-7,
		Copies: []Copy{{Event: "e<1>", CopyNo: 1, Source: 2, Partition: 3, Offset: 4, EventTimeUs: -5, AppendedAtMs: 6, Fault: MustFault("producer-retry")}, {Event: "e2"}},
		Batches: []Batch{{BatchID: 1, AtMs: 2, Replay: true, Crashed: "after-sink-write", Input: []int32{0, 1}, Outcomes: Outcomes{Emitted, Late},
			LateWatermarkMs: 1, WatermarkMs: 2, NextWatermarkMs: 3, MaxEventTimeMs: 4, NumRowsTotal: 5, NumRowsUpdated: 6, NumRowsRemoved: 7,
			Progress: json.RawMessage(`{ "batchId" : 1, "x": [1, 2] }`)}, {}},
		Crashes:      []Crash{{AtMs: 1, Point: "random", BatchID: -1, LostFiles: []string{"offsets/1"}, TornFile: "commits/0"}},
		Restarts:     []Restart{{AtMs: 3, FreshCheckpoint: true, Query: "q"}},
		Writes:       []SinkWrite{{BatchID: 1, AtMs: 2, Rows: []int32{0}, Kept: 1}, {}},
		Table:        []int32{0, 1},
		HasTable:     true,
		Faults:       []string{"producer-retry"},
		Coverage:     map[string]int{"b": 2, "a": 1},
		FaultKnobs:   map[string]map[string]any{"producer-retry": {"probability": 0.5, "gap": "1s"}},
		InitialQuery: "first",
		Live:         &Live{Cluster: "kfake", Engine: "process", TriggerMs: 200, EngineProcesses: 3, Dir: "/tmp/x"},
	}
}

// TestWriteMatchesEncoder: Write streams exactly the bytes the encoder
// writes for the whole struct, for an empty history (nil slices are
// null), a full one, the empty-but-not-nil slices of a recorded one, and
// the fixture.
func TestWriteMatchesEncoder(t *testing.T) {
	fixture, err := ReadLimit(bytes.NewReader([]byte(good)), MaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	empty := &History{Copies: []Copy{}, Batches: []Batch{}, Writes: []SinkWrite{}, Table: []int32{}, Crashes: []Crash{}, Restarts: []Restart{}}
	for name, h := range map[string]*History{"zero": {}, "full": full(), "empty slices": empty, "fixture": fixture} {
		if got, want := written(t, h), encoded(t, h); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	// Every field of History is written: a field added to the struct and
	// not to Write fails here.
	if n := reflect.TypeFor[History]().NumField(); n != 24 {
		t.Fatalf("History has %d fields, Write writes 24: add the new one to Write", n)
	}
}

// TestWriteMatchesEncoderProperty: the same over drawn histories.
func TestWriteMatchesEncoderProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := full()
		h.Query = rapid.String().Draw(t, "query")
		h.Copies = rapid.SliceOf(rapid.Custom(func(t *rapid.T) Copy {
			return Copy{Event: rapid.String().Draw(t, "event"), CopyNo: rapid.Int32().Draw(t, "no"), Offset: rapid.Int64().Draw(t, "off"),
				EventTimeUs: rapid.Int64().Draw(t, "et"), Fault: rapid.SampledFrom([]Fault{NoFault, MustFault("duplicate-append")}).Draw(t, "fault")}
		})).Draw(t, "copies")
		if rapid.Bool().Draw(t, "nil table") {
			h.Table = nil
		}
		h.ArrivalRatePerSec = rapid.Float64Range(0, 1e12).Draw(t, "rate")
		if rapid.Bool().Draw(t, "no live") {
			h.Live, h.FaultKnobs, h.InitialQuery = nil, nil, ""
		}
		if got, want := written(t, h), encoded(t, h); !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

// failingWriter fails after n bytes.
type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

// TestWriteReportsErrors: a failing writer's error and an unencodable
// value (NaN) come back from Write.
func TestWriteReportsErrors(t *testing.T) {
	h := full()
	for i := 0; i < 20_000; i++ {
		h.Copies = append(h.Copies, Copy{Event: "e"})
	}
	if err := h.Write(&failingWriter{n: 1000}); err == nil || err.Error() != "disk full" {
		t.Fatalf("failing writer: %v", err)
	}
	h.ArrivalRatePerSec = nan()
	if err := h.Write(&bytes.Buffer{}); err == nil {
		t.Fatal("NaN rate written")
	}
}

func nan() float64 { z := 0.0; return z / z }

// TestWriteCopiesWithoutAllocation: writing a copy allocates nothing (a
// run writes millions; review finding 5: MarshalJSON allocated twice per
// copy), so 10,000 copies cost what 10 do.
func TestWriteCopiesWithoutAllocation(t *testing.T) {
	allocs := func(n int) float64 {
		h := full()
		h.Copies = nil
		for i := range n {
			h.Copies = append(h.Copies, Copy{Event: "e" + strconv.Itoa(i), CopyNo: 1, Offset: int64(i), EventTimeUs: 1e12, Fault: MustFault("duplicate-append")})
		}
		return testing.AllocsPerRun(5, func() {
			if err := h.Write(io.Discard); err != nil {
				t.Fatal(err)
			}
		})
	}
	few, many := allocs(10), allocs(10_000)
	if many > few+5 {
		t.Fatalf("10 copies: %.0f allocations, 10,000: %.0f", few, many)
	}
}

package diagnose

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/diagnose/progress"
)

// TestStateBytesPerKey: diagnose prints memoryUsedBytes / numRowsTotal of
// operator 0 over its plateau batches (those with at least half the
// largest numRowsTotal), says whether it is heap, and carries it in the
// JSON; no line and no field when no batch has state rows.
func TestStateBytesPerKey(t *testing.T) {
	const t0 = 1_800_000_000_000
	op := func(store string, total, mem int64) progress.StateOperator {
		return progress.StateOperator{OperatorName: "dedupeWithinWatermark", NumRowsTotal: total, MemoryUsedBytes: mem,
			NumRowsUpdated: 10, NumShufflePartitions: 2, DroppedDuplicateRows: -1, StoreProvider: store}
	}
	// Batches of 100, 1000, 1200 and 1000 rows: the plateau is the last
	// three (100 is under half of 1200): (300,000 + 360,000 + 330,000) /
	// 3,200 = 309.375 B.
	logFor := func(store string, totals, mems []int64) *progress.Log {
		var recs []progress.Progress
		for i := range totals {
			recs = append(recs, prog(int64(i), t0+int64(i)*10_000, 10, op(store, totals[i], mems[i]), progress.EventTime{}, 100))
		}
		return logOf(recs...)
	}
	totals, mems := []int64{100, 1000, 1200, 1000}, []int64{20_000, 300_000, 360_000, 330_000}
	for _, tc := range []struct {
		name, store string
		totals      []int64
		wantLine    string // "" : no line
		wantMemory  string
		wantPerKey  float64
		wantPlateau int
	}{
		{"hdfs", "hdfs", totals,
			"state bytes per key: 309.4 B (memoryUsedBytes / numRowsTotal of operator 0 over its 3 largest of 4 batches; at batch 3 330,000 B / 1,000 keys); JVM heap: the HDFS-backed store's versions in memory",
			progress.MemoryHeap, 309.375, 3},
		{"rocksdb", "rocksdb", totals,
			"state bytes per key: 309.4 B (memoryUsedBytes / numRowsTotal of operator 0 over its 3 largest of 4 batches; at batch 3 330,000 B / 1,000 keys); not heap: RocksDB's native memory",
			progress.MemoryNative, 309.375, 3},
		{"unknown store", "", totals,
			"state bytes per key: 309.4 B (", progress.MemoryUnknown, 309.375, 3},
		{"empty state", "hdfs", []int64{0, 0, 0, 0}, "", "", 0, 0},
		{"thousands", "rocksdb", []int64{100, 100, 100, 100},
			"state bytes per key: 2,525 B (memoryUsedBytes / numRowsTotal of operator 0 over its 4 largest of 4 batches; at batch 3 330,000 B / 100 keys); not heap",
			progress.MemoryNative, 2525, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Diagnose(logFor(tc.store, tc.totals, mems), Options{})
			var text bytes.Buffer
			r.WriteText(&text)
			raw, err := r.JSON()
			if err != nil {
				t.Fatal(err)
			}
			var js struct {
				Queries []struct {
					Facts struct {
						StateBytes *struct {
							Store       string
							Memory      string
							BytesPerKey float64
							Plateau     int `json:"plateauBatches"`
						} `json:"stateBytesPerKey"`
					}
				}
			}
			if err := json.Unmarshal(raw, &js); err != nil {
				t.Fatal(err)
			}
			got := js.Queries[0].Facts.StateBytes
			if tc.wantLine == "" {
				if strings.Contains(text.String(), "state bytes per key") || got != nil {
					t.Fatalf("empty state: want no figure, got %+v in\n%s", got, text.String())
				}
				return
			}
			if !strings.Contains(text.String(), "\n  "+tc.wantLine) {
				t.Errorf("text: want a line starting %q in\n%s", tc.wantLine, text.String())
			}
			if got == nil || got.Memory != tc.wantMemory || got.BytesPerKey != tc.wantPerKey || got.Plateau != tc.wantPlateau || got.Store != tc.store {
				t.Errorf("json stateBytesPerKey: got %+v, want memory %s, %v B/key over %d batches", got, tc.wantMemory, tc.wantPerKey, tc.wantPlateau)
			}
		})
	}
}

package conform

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/sink"
)

func TestDeltaRelease(t *testing.T) {
	for _, tc := range []struct{ spark, artifact, version, err string }{
		{"4.1.1", "delta-spark_4.1_2.13", "4.4.0", ""},
		{"4.2.1", "delta-spark_4.2_2.13", "4.4.0", ""},
		{"4.0.5", "delta-spark_4.0_2.13", "4.4.0", ""},
		{"3.5.9", "delta-spark_2.12", "3.3.3", ""},
		{"4.3.0", "", "", "no Delta Lake release serves Spark 4.3"},
		{"5.0.0", "", "", "Spark 5.0 is not in conform/sparkrunner/delta.tsv"},
		{"4.1", "", "", "not MAJOR.MINOR.PATCH"},
	} {
		a, v, err := DeltaRelease(tc.spark)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.spark, err, tc.err)
			}
			continue
		}
		if err != nil || a != tc.artifact || v != tc.version {
			t.Errorf("%s: %s %s %v, want %s %s", tc.spark, a, v, err, tc.artifact, tc.version)
		}
	}
}

// TestTableLineCompared: the runner's final {"table": ..., "txn": ...}
// line is read, the tables compared as multisets, and the txn versions
// compared with each app id named by its order of first appearance.
func TestTableLineCompared(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.jsonl")
	os.WriteFile(p, []byte(`{"batchId":0,"rows":[{"id":"b"},{"id":"a"}]}
{"table":[{"id":"b"},{"id":"a"}],"txn":[{"appId":"q-spark","version":0},{"appId":"run-2","version":0}]}
`), 0o644)
	sp, err := readSparkOut(p)
	if err != nil {
		t.Fatal(err)
	}
	if !sp.HasTable || strings.Join(sp.Table, " ") != `{"id":"a"} {"id":"b"}` || !sp.HasTxn || len(sp.Txn) != 2 {
		t.Fatalf("read %+v", sp)
	}
	eng := &Outcome{Execs: sp.Execs, HasTable: true, Table: []string{`{"id":"a"}`, `{"id":"b"}`}, HasTxn: true,
		Txn: []sink.Txn{{AppID: "q-exec", Version: 0}, {AppID: "run-b", Version: 0}}}
	if d := Compare(eng, sp); d != nil {
		t.Fatalf("equal outcomes differ: %v", d)
	}
	eng.Txn[1].AppID = "q-exec" // the same app id twice: a replay would have been skipped
	if d := Compare(eng, sp); d == nil || d.Field != "txn" || d.Engine != "[app#1:0 app#1:0]" {
		t.Fatalf("txn difference: %v", d)
	}
	eng.Table = []string{`{"id":"a"}`, `{"id":"a"}`}
	if d := Compare(eng, sp); d == nil || d.Field != "table" {
		t.Fatalf("table difference: %v", d)
	}
	eng.HasTable = false
	if d := Compare(eng, sp); d == nil || d.Field != "table" {
		t.Fatalf("missing table: %v", d)
	}
}

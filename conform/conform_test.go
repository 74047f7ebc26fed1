package conform

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sparkver"
	"github.com/dedupsim/dedupsim/engine/steps"
)

func TestGenerateIsDeterministic(t *testing.T) {
	a, b := Generate(7, 40), Generate(7, 40)
	for i := range a {
		if !bytes.Equal(a[i].Query, b[i].Query) || !bytes.Equal(a[i].Steps, b[i].Steps) {
			t.Fatalf("case %d differs between two draws of seed 7", i)
		}
	}
	// Case i depends on (seed, i) only.
	if c := GenerateCase(7, 17); !bytes.Equal(c.Steps, a[17].Steps) {
		t.Fatal("GenerateCase(7, 17) is not Generate(7, 40)[17]")
	}
	other := Generate(8, 40)
	same := 0
	for i := range a {
		if bytes.Equal(a[i].Steps, other[i].Steps) {
			same++
		}
	}
	if same == len(a) {
		t.Fatal("seeds 7 and 8 draw the same cases")
	}
}

// TestGenerateCovers checks that the 300 cases make test-spark runs by
// default exercise every flavour and feature the suite promises, and that
// dedupsim accepts them all but the designed absent-field cases.
func TestGenerateCovers(t *testing.T) {
	cases := Generate(1, 300)
	flavours := map[string]int{}
	features := map[string]int{}
	bad := 0
	ckpts := map[string]*fsys.Mem{}
	for _, c := range cases {
		c.Engine = RunEngine(c, ckpts)
		// A map key or a key type changed on restart: Spark refuses these
		// too, with the class the engine names.
		if c.Engine.Err != "" && !typedRefusal(c) {
			if !c.Engine.BadInput || !hasAbsentField(c) {
				t.Fatalf("%s: dedupsim failed: %s\n%s\n%s", c.Name, c.Engine.Err, c.Query, c.Steps)
			}
			bad++
		}
		fl, fs := Describe(c)
		flavours[fl]++
		for _, f := range fs {
			features[f]++
		}
	}
	for _, fl := range Flavours {
		if flavours[fl] < 30 {
			t.Errorf("flavour %s: %d cases, want >= 30", fl, flavours[fl])
		}
	}
	for _, f := range []string{"1 partition", "2-8 partitions", "all-column keys", "numeric keys", "null keys",
		"null event times", "fractional seconds", "RFC 3339 times", "delay 0", "rows at the watermark", "late rows",
		"evictions", "empty batches", "no-data batches off", "two sources (min)", "two sources (max)", "restart",
		"crash after-offsets-write", "crash after-state-commit", "crash after-sink-write", "crash after-commit",
		"replays", "absent field", "mixed JSON types", "nested keys", "typed numbers", "declared schema",
		"key type changed on restart", "5+ key columns"} {
		if features[f] == 0 {
			t.Errorf("no case has %q", f)
		}
	}
	if bad > 15 {
		t.Errorf("%d of 300 cases are refused by dedupsim; the absent-field cases should be rare", bad)
	}
	t.Logf("flavours %v", flavours)
	t.Logf("features %v", features)
}

// typedRefusal: the engine refused a generated typed case with the error
// class Spark raises for it: a map key (analysis) or a key whose type the
// resumed run changed.
func typedRefusal(c *Case) bool {
	switch c.Engine.ErrClass {
	case "UNSUPPORTED_FEATURE.SET_OPERATION_ON_MAP_TYPE":
		return !c.Engine.BadInput
	case "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE":
		return strings.HasSuffix(c.Name, "(key type changed)")
	}
	return false
}

func TestGoldenCases(t *testing.T) {
	cases, err := GoldenCases("../engine/testdata")
	if err != nil {
		t.Fatal(err)
	}
	// Every exec command of the golden files, counted independently.
	files, _ := filepath.Glob("../engine/testdata/*.txt")
	want := 0
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(data), "\n") {
			if line == "exec" || strings.HasPrefix(line, "exec ") {
				want++
			}
		}
	}
	if len(cases) != want || want == 0 {
		t.Fatalf("got %d cases, want %d (the exec commands)", len(cases), want)
	}
	shared := 0
	for _, c := range cases {
		if c.Checkpoint != "" {
			shared++
		}
		if !strings.HasPrefix(c.Name, "golden ") {
			t.Errorf("case name %q", c.Name)
		}
	}
	if shared == 0 {
		t.Error("no golden case shares a checkpoint (ckpt=NAME)")
	}
	// The golden files' own expectations hold for the extracted pairs: the
	// engine runs them (the files' errors are their expected outputs).
	ckpts := map[string]*fsys.Mem{}
	ran := 0
	for _, c := range cases {
		if RunEngine(c, ckpts).Err == "" {
			ran++
		}
	}
	if ran < want*2/3 {
		t.Errorf("only %d of %d golden cases ran without error", ran, want)
	}
}

func TestGoldenFileErrors(t *testing.T) {
	for _, in := range []string{"exec\ndedup: {api: dropDuplicates}\n", "exec\ndedup: {api: dropDuplicates}\n----\n"} {
		if _, err := goldenFile("x.txt", []byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func exec1(id int64, rows ...string) Exec {
	e := Exec{BatchID: id, Rows: rows, Progress: &Prog{NumInputRows: int64(len(rows)),
		EventTime: map[string]string{"watermark": "1970-01-01T00:00:00.000Z"},
		Ops:       []Op{{Name: "dedupe", Total: 1, Updated: 1, ShufflePartitions: 2, StoreInstances: 2}}}}
	e.sortRows()
	return e
}

func TestCompare(t *testing.T) {
	base := func() *Outcome { return &Outcome{Execs: []Exec{exec1(0, `{"a":1}`, `{"a":2}`), exec1(1)}} }
	for _, tc := range []struct {
		name  string
		edit  func(e, s *Outcome)
		field string // "" = agree
	}{
		{"same", func(e, s *Outcome) {}, ""},
		{"rows in another order", func(e, s *Outcome) { s.Execs[0] = exec1(0, `{"a":2}`, `{"a":1}`) }, ""},
		{"a failed execution has no progress in Spark", func(e, s *Outcome) { s.Execs[1].Progress = nil }, ""},
		{"batch id", func(e, s *Outcome) { s.Execs[1].BatchID = 2 }, "batchId"},
		{"replay", func(e, s *Outcome) { s.Execs[1].Replay = true }, "replay"},
		{"crashed", func(e, s *Outcome) { s.Execs[1].Crashed = "after-sink-write" }, "crashed"},
		{"rows", func(e, s *Outcome) { s.Execs[0] = exec1(0, `{"a":1}`, `{"a":1}`) }, "rows"},
		{"one more execution", func(e, s *Outcome) { s.Execs = append(s.Execs, exec1(2)) }, "execution"},
		{"numRowsTotal", func(e, s *Outcome) { s.Execs[0].Progress.Ops[0].Total = 5 }, "stateOperators[0].numRowsTotal"},
		{"dups", func(e, s *Outcome) { s.Execs[0].Progress.Ops[0].Dups = 1 }, "stateOperators[0].customMetrics.numDroppedDuplicateRows"},
		{"late", func(e, s *Outcome) { s.Execs[0].Progress.Ops[0].Late = 1 }, "stateOperators[0].numRowsDroppedByWatermark"},
		{"removed", func(e, s *Outcome) { s.Execs[0].Progress.Ops[0].Removed = 1 }, "stateOperators[0].numRowsRemoved"},
		{"partitions", func(e, s *Outcome) { s.Execs[0].Progress.Ops[0].ShufflePartitions = 3 }, "stateOperators[0].numShufflePartitions"},
		{"line metrics agree", func(e, s *Outcome) {
			e.Execs[0].Progress.Ops[0].Line = map[string]int64{"numRowsReadDuringEviction": 2, "SnapshotLastUploaded.partition_0_default": -1}
			s.Execs[0].Progress.Ops[0].Line = map[string]int64{"numRowsReadDuringEviction": 2, "SnapshotLastUploaded.partition_0_default": -1}
		}, ""},
		{"numRowsReadDuringEviction", func(e, s *Outcome) {
			e.Execs[0].Progress.Ops[0].Line = map[string]int64{"numRowsReadDuringEviction": 2}
			s.Execs[0].Progress.Ops[0].Line = map[string]int64{"numRowsReadDuringEviction": 3}
		}, "stateOperators[0].customMetrics.numRowsReadDuringEviction"},
		{"a line metric only in Spark", func(e, s *Outcome) {
			s.Execs[0].Progress.Ops[0].Line = map[string]int64{"forceSnapshotCount": 0}
		}, "stateOperators[0].customMetrics.forceSnapshotCount"},
		{"SnapshotLastUploaded by name only", func(e, s *Outcome) {
			e.Execs[0].Progress.Ops[0].Line = map[string]int64{"SnapshotLastUploaded.partition_0_default": -1}
			s.Execs[0].Progress.Ops[0].Line = map[string]int64{"SnapshotLastUploaded.partition_0_default": 10}
		}, ""},
		{"SnapshotLastUploaded of another partition", func(e, s *Outcome) {
			e.Execs[0].Progress.Ops[0].Line = map[string]int64{"SnapshotLastUploaded.partition_0_default": -1}
			s.Execs[0].Progress.Ops[0].Line = map[string]int64{"SnapshotLastUploaded.partition_1_default": -1}
		}, "stateOperators[0].customMetrics.SnapshotLastUploaded.partition_0_default"},
		{"watermark", func(e, s *Outcome) { s.Execs[1].Progress.EventTime["watermark"] = "x" }, "eventTime.watermark"},
		{"avg", func(e, s *Outcome) { s.Execs[1].Progress.EventTime["avg"] = "x" }, "eventTime.avg"},
		{"only Spark failed", func(e, s *Outcome) { s.Err = "boom" }, "error"},
		{"both failed, no class", func(e, s *Outcome) { e.Err, s.Err = "a", "b" }, ""},
		{"both failed, other class", func(e, s *Outcome) {
			e.Err, e.ErrClass, s.Err, s.ErrClass = "[A] x", "A", "[B] y", "B"
		}, "error class"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, s := base(), base()
			tc.edit(e, s)
			d := Compare(e, s)
			switch {
			case tc.field == "" && d != nil:
				t.Fatalf("want agreement, got %s", d)
			case tc.field != "" && (d == nil || d.Field != tc.field):
				t.Fatalf("want a difference in %s, got %v", tc.field, d)
			}
		})
	}
}

func TestErrorClass(t *testing.T) {
	for in, want := range map[string]string{
		"[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema": "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
		"line 2: [DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] x":         "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE",
		"ops: [(OperatorId: 0 -> x)] [A_B]":                           "A_B",
		"no class here [lower]":                                       "",
		"":                                                            "",
	} {
		if got := errorClass(in); got != want {
			t.Errorf("errorClass(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestExpectedDifferences: each expected difference fires on its exact
// situation and not on a near miss.
func TestExpectedDifferences(t *testing.T) {
	const q = "dedup: {api: dropDuplicates, keys: [id]}\n"
	fire := func(c *Case, d *Diff) string {
		if e := explain(c, d); e != nil {
			return e.ID
		}
		return ""
	}
	const bq = "dedup: {api: batchDropDuplicates, keys: [id]}\n"
	const bsteps = `{"rows": [{"id":4,"n":1},{"id":null,"n":2},{"id":4,"n":3}]}` + "\n"
	const zq = "dedup: {api: dropDuplicates, keys: [id, d]}\n"
	const zsteps = `{"rows": [{"id":1,"d":0.0}]}` + "\n" + `{"rows": [{"id":1,"d":-0.0}]}` + "\n"
	const wq = "dedup: {api: dropDuplicates, keys: [s, m, id, l, d]}\n"
	wprev := []string{"d", "l", "id", "m", "s"}
	errDiff := &Diff{Exec: -1, Field: "error"}
	rowsDiff := &Diff{Exec: 0, Field: "rows"}
	for _, tc := range []struct {
		name string
		c    *Case
		d    *Diff
		want string
	}{
		{"key types changed on restart", &Case{Checkpoint: "k", Query: []byte(q),
			Engine: &Outcome{Execs: []Exec{exec1(2)}}, Spark: &Outcome{Err: "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] x", ErrClass: "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"}},
			errDiff, ""}, // no longer excused: dedupsim types keys (spark-semantics.md §15)
		{"same error without a resumed checkpoint", &Case{Query: []byte(q),
			Engine: &Outcome{}, Spark: &Outcome{Err: "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] x", ErrClass: "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"}},
			errDiff, ""},
		{"checked at start, no batch in Spark", &Case{Checkpoint: "k", Query: []byte(q),
			Engine: &Outcome{Err: "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] x", ErrClass: "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"}, Spark: &Outcome{}},
			errDiff, "checkpoint-check-at-start"},
		{"checked at start, but Spark ran a batch", &Case{Checkpoint: "k", Query: []byte(q),
			Engine: &Outcome{Err: "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] x", ErrClass: "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"}, Spark: &Outcome{Execs: []Exec{exec1(1)}}},
			&Diff{Exec: 0, Field: "execution"}, ""},
		{"key schema refused, Spark 3.5's class", &Case{Checkpoint: "k", Query: []byte(q),
			Engine: &Outcome{Err: "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] x", ErrClass: "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"},
			Spark:  &Outcome{Err: "StateSchemaNotCompatible: Provided schema doesn't match", ErrClass: "StateSchemaNotCompatible"}},
			&Diff{Exec: -1, Field: "error class"}, "key-schema-refusal-named-in-4.0"},
		{"key schema refused, a Spark 3.5 task failed the row format first", &Case{Checkpoint: "k", Query: []byte(q),
			Engine: &Outcome{Err: "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] x", ErrClass: "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"},
			Spark:  &Outcome{Err: "InvalidUnsafeRowException: The streaming query failed by state format invalidation.", ErrClass: "InvalidUnsafeRowException"}},
			&Diff{Exec: -1, Field: "error class"}, "key-schema-refusal-named-in-4.0"},
		{"row format refused without a resumed checkpoint", &Case{Query: []byte(q),
			Engine: &Outcome{Err: "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] x", ErrClass: "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"},
			Spark:  &Outcome{Err: "InvalidUnsafeRowException: x", ErrClass: "InvalidUnsafeRowException"}},
			&Diff{Exec: -1, Field: "error class"}, ""},
		{"operator change refused, Spark 3.5 named a schema", &Case{Checkpoint: "k", Query: []byte(q),
			Engine: &Outcome{Err: "[STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA] x", ErrClass: "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA"},
			Spark:  &Outcome{Err: "StateSchemaNotCompatible: Provided schema doesn't match", ErrClass: "StateSchemaNotCompatible"}},
			&Diff{Exec: -1, Field: "error class"}, ""},
		{"key schema refused by dedupsim, Spark failed otherwise", &Case{Checkpoint: "k", Query: []byte(q),
			Engine: &Outcome{Err: "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] x", ErrClass: "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"},
			Spark:  &Outcome{Err: "[STREAM_FAILED] y", ErrClass: "STREAM_FAILED"}},
			&Diff{Exec: -1, Field: "error class"}, ""},
		{"absent field, all-column key", &Case{Query: []byte("dedup: {api: dropDuplicates}\n"),
			Steps:  []byte(`{"rows": [{"k":"a"},{"k":"a","x":null}]}` + "\n"),
			Engine: &Outcome{BadInput: true, Err: "steps.jsonl:1: rows[1]: field \"x\" is not in the schema set by the first row (line 1 rows[0]: k); with dedup.keys empty every row must have the same fields"},
			Spark:  &Outcome{Execs: []Exec{exec1(0, `{"k":"a"}`)}}},
			errDiff, ""}, // no longer excused: an absent field is null under the schema
		{"refused for another reason", &Case{Query: []byte(q), Steps: []byte(`{"rows": [{"k":"a"},{"k":"a","x":null}]}` + "\n"),
			Engine: &Outcome{BadInput: true, Err: "missing key column \"id\""}, Spark: &Outcome{}},
			errDiff, ""},
		{"\"1\" and 1 in a key column", &Case{Query: []byte(q), Steps: []byte(`{"rows": [{"id":"1"},{"id":1}]}` + "\n"),
			Engine: &Outcome{}, Spark: &Outcome{}}, rowsDiff, ""}, // no longer excused: one string column
		{"\"1\" and 2 in a key column", &Case{Query: []byte(q), Steps: []byte(`{"rows": [{"id":"1"},{"id":2}]}` + "\n"),
			Engine: &Outcome{}, Spark: &Outcome{}}, rowsDiff, ""},
		{"\"1\" and 1 in a non-key column", &Case{Query: []byte(q), Steps: []byte(`{"rows": [{"id":"a","v":"1"},{"id":"b","v":1}]}` + "\n"),
			Engine: &Outcome{}, Spark: &Outcome{}}, rowsDiff, ""},
		{"batch dedup kept another copy, null key in the steps", &Case{Query: []byte(bq), Steps: []byte(bsteps),
			Engine: &Outcome{Execs: []Exec{exec1(0, `{"id":4,"n":1}`, `{"id":null,"n":2}`)}},
			Spark:  &Outcome{Execs: []Exec{exec1(0, `{"id":4,"n":3}`, `{"id":null,"n":2}`)}}}, rowsDiff, "batch-copy-with-null-keys"},
		{"batch dedup kept another copy into a table sink", &Case{Query: []byte(bq), Steps: []byte(bsteps),
			Engine: &Outcome{Execs: []Exec{exec1(0, `{"id":4,"n":1}`, `{"id":null,"n":2}`)}, HasTable: true, Table: []string{`{"id":4,"n":1}`, `{"id":null,"n":2}`}},
			Spark:  &Outcome{Execs: []Exec{exec1(0, `{"id":4,"n":3}`, `{"id":null,"n":2}`)}, HasTable: true, Table: []string{`{"id":4,"n":3}`, `{"id":null,"n":2}`}}}, rowsDiff, "batch-copy-with-null-keys"},
		{"batch dedup kept another copy, the tables hold other keys", &Case{Query: []byte(bq), Steps: []byte(bsteps),
			Engine: &Outcome{Execs: []Exec{exec1(0, `{"id":4,"n":1}`, `{"id":null,"n":2}`)}, HasTable: true, Table: []string{`{"id":4,"n":1}`, `{"id":null,"n":2}`}},
			Spark:  &Outcome{Execs: []Exec{exec1(0, `{"id":4,"n":3}`, `{"id":null,"n":2}`)}, HasTable: true, Table: []string{`{"id":4,"n":3}`, `{"id":4,"n":3}`, `{"id":null,"n":2}`}}}, rowsDiff, ""},
		{"batch dedup kept another copy, no null key", &Case{Query: []byte(bq), Steps: []byte(`{"rows": [{"id":4,"n":1},{"id":4,"n":3}]}` + "\n"),
			Engine: &Outcome{Execs: []Exec{exec1(0, `{"id":4,"n":1}`)}},
			Spark:  &Outcome{Execs: []Exec{exec1(0, `{"id":4,"n":3}`)}}}, rowsDiff, ""},
		{"batch dedup emitted another key", &Case{Query: []byte(bq), Steps: []byte(bsteps),
			Engine: &Outcome{Execs: []Exec{exec1(0, `{"id":4,"n":1}`, `{"id":null,"n":2}`)}},
			Spark:  &Outcome{Execs: []Exec{exec1(0, `{"id":4,"n":3}`)}}}, rowsDiff, ""},
		{"batch dedup emitted a row not in the steps", &Case{Query: []byte(bq), Steps: []byte(bsteps),
			Engine: &Outcome{Execs: []Exec{exec1(0, `{"id":4,"n":1}`, `{"id":null,"n":2}`)}},
			Spark:  &Outcome{Execs: []Exec{exec1(0, `{"id":4,"n":9}`, `{"id":null,"n":2}`)}}}, rowsDiff, ""},
		{"streaming dedup kept another copy", &Case{Query: []byte(q), Steps: []byte(bsteps),
			Engine: &Outcome{Execs: []Exec{exec1(0, `{"id":4,"n":1}`, `{"id":null,"n":2}`)}},
			Spark:  &Outcome{Execs: []Exec{exec1(0, `{"id":4,"n":3}`, `{"id":null,"n":2}`)}}}, rowsDiff, ""},
		{"opposite-sign zero key on 4.3", &Case{Query: []byte(zq), Steps: []byte(zsteps),
			Engine: &Outcome{Execs: []Exec{exec1(0, `{"id":1,"d":0.0}`), exec1(1, `{"id":1,"d":-0.0}`)}},
			Spark:  &Outcome{Version: "4.3.0", Execs: []Exec{exec1(0, `{"id":1,"d":0.0}`), exec1(1)}}}, &Diff{Exec: 1, Field: "rows"}, "negative-zero-key-one-from-4.2"},
		{"opposite-sign zero key on 4.2", &Case{Query: []byte(zq), Steps: []byte(zsteps),
			Engine: &Outcome{}, Spark: &Outcome{Version: "4.2.1"}}, &Diff{Exec: 1, Field: "rows"}, "negative-zero-key-one-from-4.2"},
		{"opposite-sign zero key on 4.1", &Case{Query: []byte(zq), Steps: []byte(zsteps),
			Engine: &Outcome{}, Spark: &Outcome{Version: "4.1.4"}}, &Diff{Exec: 1, Field: "rows"}, ""},
		{"opposite-sign zero under another key on 4.3", &Case{Query: []byte(zq), Steps: []byte(`{"rows": [{"id":1,"d":0.0}]}` + "\n" + `{"rows": [{"id":2,"d":-0.0}]}` + "\n"),
			Engine: &Outcome{}, Spark: &Outcome{Version: "4.3.0"}}, &Diff{Exec: 1, Field: "rows"}, ""},
		{"same-sign zeros on 4.3", &Case{Query: []byte(zq), Steps: []byte(`{"rows": [{"id":1,"d":-0.0},{"id":1,"d":-0.0}]}` + "\n"),
			Engine: &Outcome{}, Spark: &Outcome{Version: "4.3.0"}}, rowsDiff, ""},
		{"opposite-sign zeros in a batch dedup on 4.3", &Case{Query: []byte("dedup: {api: batchDropDuplicates, keys: [id, d]}\n"), Steps: []byte(zsteps),
			Engine: &Outcome{}, Spark: &Outcome{Version: "4.3.0"}}, rowsDiff, ""},
		{"5 keys reordered on restart, refused by 4.3", &Case{Checkpoint: "k", Query: []byte(wq), prevKeys: wprev,
			Engine: &Outcome{Execs: []Exec{exec1(2)}}, Spark: &Outcome{Version: "4.3.0", Err: "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] x", ErrClass: "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"}},
			&Diff{Exec: 0, Field: "execution"}, "key-order-call-order-in-4.3"},
		{"5 keys reordered on restart, other rows on 4.3, engine as 4.3", &Case{Checkpoint: "k", Query: []byte(wq), prevKeys: wprev, engineVersion: sparkver.Version{Line: "4.3", Full: "4.3.0"},
			Engine: &Outcome{Execs: []Exec{exec1(1, `{"s":1}`)}}, Spark: &Outcome{Version: "4.3.0", Execs: []Exec{exec1(1, `{"s":2}`)}}},
			&Diff{Exec: 0, Field: "rows"}, ""},
		{"5 keys reordered on restart, refused by 4.1", &Case{Checkpoint: "k", Query: []byte(wq), prevKeys: wprev,
			Engine: &Outcome{Execs: []Exec{exec1(2)}}, Spark: &Outcome{Version: "4.1.4", Err: "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] x", ErrClass: "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"}},
			&Diff{Exec: 0, Field: "execution"}, ""},
		{"5 keys reordered on restart, other rows on 4.3", &Case{Checkpoint: "k", Query: []byte(wq), prevKeys: wprev,
			Engine: &Outcome{Execs: []Exec{exec1(1, `{"s":1}`)}}, Spark: &Outcome{Version: "4.3.0", Execs: []Exec{exec1(1, `{"s":2}`)}}},
			&Diff{Exec: 0, Field: "rows"}, "key-order-call-order-in-4.3"},
		{"5 keys in the same order on restart, other rows on 4.3", &Case{Checkpoint: "k", Query: []byte(wq), prevKeys: []string{"s", "m", "id", "l", "d"},
			Engine: &Outcome{Execs: []Exec{exec1(1, `{"s":1}`)}}, Spark: &Outcome{Version: "4.3.0", Execs: []Exec{exec1(1, `{"s":2}`)}}},
			&Diff{Exec: 0, Field: "rows"}, ""},
		{"other 5 keys on restart, refused by 4.3", &Case{Checkpoint: "k", Query: []byte(wq), prevKeys: []string{"s", "m", "id", "l", "x"},
			Engine: &Outcome{Execs: []Exec{exec1(2)}}, Spark: &Outcome{Version: "4.3.0", Err: "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] x", ErrClass: "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"}},
			&Diff{Exec: 0, Field: "execution"}, ""},
		{"5 keys, refused by 4.3 without a resumed checkpoint", &Case{Query: []byte(wq), prevKeys: wprev,
			Engine: &Outcome{Execs: []Exec{exec1(2)}}, Spark: &Outcome{Version: "4.3.0", Err: "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] x", ErrClass: "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"}},
			&Diff{Exec: 0, Field: "execution"}, ""},
		{"mixed types but a watermark differs", &Case{Query: []byte(q), Steps: []byte(`{"rows": [{"id":"1"},{"id":1}]}` + "\n"),
			Engine: &Outcome{}, Spark: &Outcome{}}, &Diff{Field: "eventTime.watermark"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fire(tc.c, tc.d); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSparkQuery(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want map[string]any
	}{
		{"dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 1m30s}\nshuffle_partitions: 3\n",
			map[string]any{"api": "dropDuplicatesWithinWatermark", "keys": []any{"id"}, "shufflePartitions": 3.0,
				"sources": []any{map[string]any{"name": "default", "watermark": map[string]any{"column": "ts", "delayMs": 90000.0}}}}},
		{"dedup: {api: dropDuplicates}\nsources:\n  - name: a\n    watermark: {column: t, delay: 2 seconds}\n  - name: b\n    watermark: {column: t, delay: 0 seconds}\nwatermark_policy: max\nno_data_batches: false\n",
			map[string]any{"keys": []any{}, "watermarkPolicy": "max", "noDataBatches": false,
				"sources": []any{map[string]any{"name": "a", "watermark": map[string]any{"column": "t", "delayMs": 2000.0}},
					map[string]any{"name": "b", "watermark": map[string]any{"column": "t", "delayMs": 0.0}}}}},
	} {
		q, err := query.Parse("q.yaml", []byte(tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		b, err := SparkQuery(q, []byte(tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.want {
			if g, _ := json.Marshal(got[k]); string(g) != mustJSON(v) {
				t.Errorf("%s: got %s, want %s", k, g, mustJSON(v))
			}
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestRawSchema: a query's schema: reaches the runner as written, a DDL
// string or a list.
func TestRawSchema(t *testing.T) {
	for in, want := range map[string]string{
		"dedup: {api: dropDuplicates}\nschema: \"id STRING, ts TIMESTAMP\"\n":      `"id STRING, ts TIMESTAMP"`,
		"dedup: {api: dropDuplicates}\nschema: [\"id STRING\", {ts: TIMESTAMP}]\n": `["id STRING",{"ts":"TIMESTAMP"}]`,
		"dedup: {api: dropDuplicates}\n":                                           `null`,
		"dedup: {api: dropDuplicates}\nschema:\n  - {name: id, type: BIGINT}\n":    `[{"name":"id","type":"BIGINT"}]`,
	} {
		v, err := rawSchema([]byte(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := mustJSON(v); got != want {
			t.Errorf("%q: got %s, want %s", in, got, want)
		}
	}
	if _, err := rawSchema([]byte("schema: 3\n")); err == nil {
		t.Error("schema: 3 accepted")
	}
}

func TestSparkSteps(t *testing.T) {
	qy := "dedup: {api: dropDuplicates, keys: [id]}\nsources:\n  - name: a\n    watermark: {column: ts, delay: 1 second}\n  - name: b\n    watermark: {column: ts, delay: 1 second}\n"
	q, err := query.Parse("q.yaml", []byte(qy))
	if err != nil {
		t.Fatal(err)
	}
	in := `{"sources": {"b": [{ "id" : "x", "ts": 1.50 }], "a": []}}
{"crash": "after-commit", "batch": 3}
{"restart": true}
{"crash": "after-sink-write"}
`
	st, err := steps.Parse("s.jsonl", []byte(in), q)
	if err != nil {
		t.Fatal(err)
	}
	got := string(SparkSteps(q, st))
	want := `{"rows":{"a":[],"b":["{\"id\":\"x\",\"ts\":1.50}"]}}
{"crash":"after-commit","batch":3}
{"restart":true}
{"crash":"after-sink-write"}
`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestShrinkCandidates(t *testing.T) {
	c := &Case{Query: []byte("dedup: {api: dropDuplicates, keys: [id]}\n"),
		Steps: []byte("{\"rows\": [{\"id\":\"a\"},{\"id\":\"b\"}]}\n# comment\n{\"restart\": true}\n{\"rows\": [{\"id\":\"c\"}]}\n")}
	lines := dropLines(c)
	if len(lines) != 3 {
		t.Fatalf("dropLines: %d candidates, want 3", len(lines))
	}
	if got := string(lines[1].Steps); got != "{\"rows\": [{\"id\":\"a\"},{\"id\":\"b\"}]}\n{\"rows\": [{\"id\":\"c\"}]}\n" {
		t.Errorf("dropLines[1] = %q", got)
	}
	rows := dropRows(c)
	if len(rows) != 3 {
		t.Fatalf("dropRows: %d candidates, want 3", len(rows))
	}
	if got := string(rows[0].Steps); !strings.HasPrefix(got, `{"rows":[{"id":"b"}]}`) {
		t.Errorf("dropRows[0] = %q", got)
	}
	for _, k := range append(lines, rows...) {
		if RunEngine(k, map[string]*fsys.Mem{}).Err != "" {
			t.Errorf("candidate does not run: %q", k.Steps)
		}
	}
}

func TestReadOutcome(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.jsonl")
	os.WriteFile(p, []byte(`{"batchId":0,"rows":[{"b":1},{"a":1}],"progress":{"batchId":0,"numInputRows":2,"eventTime":{"watermark":"1970-01-01T00:00:00.000Z"},"stateOperators":[{"operatorName":"dedupe","numRowsTotal":2,"numRowsUpdated":2,"numRowsRemoved":0,"numRowsDroppedByWatermark":0,"numShufflePartitions":1,"numStateStoreInstances":1,"customMetrics":{"numDroppedDuplicateRows":3,"loadedMapCacheHitCount":0}}]}}
{"batchId":1,"crashed":"after-sink-write","rows":[]}
{"error":"[X_Y] boom","errorClass":"X_Y"}
`), 0o644)
	o, err := ReadOutcome(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Execs) != 2 || o.Execs[0].Rows[0] != `{"a":1}` || o.Execs[0].Progress.Ops[0].Dups != 3 ||
		o.Execs[1].Progress != nil || o.Execs[1].Crashed != "after-sink-write" || o.ErrClass != "X_Y" {
		t.Fatalf("read %+v", o)
	}
	os.WriteFile(p, []byte("{\"unsupported\":\"why\"}\n"), 0o644)
	if o, err := ReadOutcome(p); err != nil || o.Unsupported != "why" {
		t.Fatalf("unsupported: %+v %v", o, err)
	}
	for _, bad := range []string{"{", `{"something":1}`, `{"batchId":"x"}`} {
		os.WriteFile(p, []byte(bad+"\n"), 0o644)
		if _, err := ReadOutcome(p); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzReadOutcome(f *testing.F) {
	f.Add([]byte(`{"batchId":0,"rows":[],"progress":{"batchId":0}}` + "\n"))
	f.Add([]byte(`{"unsupported":"x"}`))
	f.Add([]byte(`{"error":"e","errorClass":"C"}` + "\n\n"))
	f.Add([]byte(`{"table":[]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "out.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		o, err := ReadOutcome(p)
		if err == nil && o == nil {
			t.Fatal("nil outcome without error")
		}
	})
}

func FuzzGoldenFile(f *testing.F) {
	f.Add([]byte("exec\ndedup: {api: dropDuplicates}\n===\n{\"rows\": []}\n----\nbatch 0\n"))
	f.Add([]byte("exec ckpt=a\nq\n===\n----\n\nfiles ckpt=a\n----\n"))
	f.Add([]byte("exec\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := goldenFile("f.txt", data)
		if err != nil {
			return
		}
		for _, c := range cs {
			if !strings.HasPrefix(c.Name, "golden f.txt:") {
				t.Fatalf("name %q", c.Name)
			}
		}
	})
}

func TestTable(t *testing.T) {
	c1 := GenerateCase(1, 0)
	c1.Engine = RunEngine(c1, map[string]*fsys.Mem{})
	c1.Spark = &Outcome{Execs: slices.Clone(c1.Engine.Execs)}
	c2 := GenerateCase(1, 1)
	c2.Engine = RunEngine(c2, map[string]*fsys.Mem{})
	c2.Spark = &Outcome{Unsupported: "line 3: a tick step is one processing-time trigger"}
	r := &Result{SparkVersion: "4.1.1", Random: 3, Cases: []CaseResult{judge(c1), judge(c2)}}
	bad := judge(c1)
	bad.Verdict, bad.Diff, bad.Repro = Disagree, &Diff{Exec: 0, Field: "rows", Engine: "[]", Spark: "[x]"}, "/tmp/repro-007"
	r.Cases = append(r.Cases, bad)
	var b strings.Builder
	if err := r.Table(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Apache Spark 4.1.1", "agree 1, disagree 1", "all cases", "/tmp/repro-007",
		"execution #0 rows: dedupsim [], Spark [x]", "a tick step is one processing-time trigger", r.Cases[0].Flavour} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !r.Failed() {
		t.Error("a disagreement does not fail the result")
	}
}

// TestSparkProtocol drives Spark.Run against a stand-in runner (python3
// without pyspark) that answers every request with an unsupported line:
// the request, status and output plumbing without Spark.
func TestSparkProtocol(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake.py")
	os.WriteFile(fake, []byte(`import json, sys
print(json.dumps({"status": "started", "sparkVersion": "0.0.0"}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    for r in req.get("group") or [req]:
        steps = open(r["steps"]).read()
        with open(r["out"], "w") as f:
            f.write(json.dumps({"unsupported": "fake: %d steps lines%s" % (steps.count("\n"), " ckpt" if r.get("checkpoint") else "")}) + "\n")
        print(json.dumps({"out": r["out"], "status": "unsupported"}), flush=True)
`), 0o644)
	sp := &Spark{Python: py, Runner: fake}
	if err := sp.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	cases := Generate(3, 4)
	cases = append(cases, &Case{Name: "k1", Query: cases[0].Query, Steps: cases[0].Steps, Checkpoint: "k"},
		&Case{Name: "k2", Query: cases[0].Query, Steps: cases[0].Steps, Checkpoint: "k"},
		&Case{Name: "bad", Query: []byte("dedup: {api: nope}\n")})
	for _, c := range cases {
		c.Engine = RunEngine(c, map[string]*fsys.Mem{})
	}
	if err := sp.Run(context.Background(), dir, cases); err != nil {
		t.Fatal(err)
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	if sp.Version() != "0.0.0" {
		t.Errorf("version %q", sp.Version())
	}
	for _, c := range cases {
		switch {
		case c.Spark == nil:
			t.Fatalf("%s: no Spark outcome", c.Name)
		case c.Name == "bad":
			if !strings.Contains(c.Spark.Unsupported, "bad input") {
				t.Errorf("bad: %q", c.Spark.Unsupported)
			}
		case !strings.HasPrefix(c.Spark.Unsupported, "fake: "):
			t.Errorf("%s: %q", c.Name, c.Spark.Unsupported)
		case c.Checkpoint != "" && !strings.HasSuffix(c.Spark.Unsupported, " ckpt"):
			t.Errorf("%s: checkpoint not passed: %q", c.Name, c.Spark.Unsupported)
		}
	}
}

// TestEnvScriptRefusesBadVersions: the embedded env.sh refuses a version
// it cannot serve before touching pip (exit status 2, bad input).
func TestEnvScriptRefusesBadVersions(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	dir := t.TempDir()
	for _, v := range []string{"latest", "4.1", "2.4.8", "3.4.1", "4.1.1; rm -rf /"} {
		_, err := EnsureEnv(context.Background(), v, dir, nil)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("version %q: got %v, want exit status 2", v, err)
		}
	}
	_ = bash
	if entries, _ := os.ReadDir(dir); len(entries) != 1 { // env.sh only: no venv was started
		t.Errorf("cache holds %d entries after refused versions", len(entries))
	}
}

// TestGenerateTyped: GenerateTyped keeps the first n typed cases of the
// seed, their resumed runs after them on their checkpoints; untyped cases
// carry no schema and no checkpoint of the typed draw.
func TestGenerateTyped(t *testing.T) {
	cases := GenerateTyped(1, 40)
	main, follows := 0, 0
	for _, c := range cases {
		if strings.HasSuffix(c.Name, "(key type changed)") {
			follows++
			if c.Checkpoint == "" || main != 40 {
				t.Errorf("%s: a resumed run must come after the 40 cases, on a checkpoint", c.Name)
			}
			continue
		}
		main++
		var i int
		if _, err := fmt.Sscanf(c.Name, "random seed=1 #%d", &i); err != nil {
			t.Fatal(err)
		}
		if _, typed := typedStream(1, i); !typed {
			t.Errorf("%s is not a typed case", c.Name)
		}
	}
	if main != 40 || follows == 0 {
		t.Errorf("%d typed cases, %d resumed runs", main, follows)
	}
	for i := range 40 {
		if _, typed := typedStream(1, i); typed {
			continue
		}
		if c := GenerateCase(1, i); bytes.Contains(c.Query, []byte("schema:")) || c.Checkpoint != "" {
			t.Errorf("case %d: untyped, yet %s", i, c.Query)
		}
	}
}

// TestRewriteIDs: every row's id is replaced by its ordinal's value, null
// stays null, and the rest of the row is untouched.
func TestRewriteIDs(t *testing.T) {
	in := `{"rows": [{"id":3,"ts":1,"n":0},{"id":"b","ts":2},{"id":null,"ts":3},{"id":"4","ts":"1970-01-01T00:00:04Z"}]}` + "\n"
	got := rewriteIDs(in, func(k int) string { return fmt.Sprintf(`{"k":[%d]}`, k) })
	want := `{"rows": [{"id":{"k":[3]},"ts":1,"n":0},{"id":{"k":[2]},"ts":2},{"id":null,"ts":3},{"id":{"k":[9]},"ts":"1970-01-01T00:00:04Z"}]}` + "\n"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestGenerateSinks: about one random case in eight writes a table, merge or
// append sink (each kind, a merge lookback and a generated app id among the
// first 200 of seed 1), and every such case is valid exec input with a
// table line.
func TestGenerateSinks(t *testing.T) {
	cases := Generate(1, 200)
	seen := map[string]int{}
	ckpts := map[string]*fsys.Mem{} // resumed runs go on their case's checkpoint
	for _, c := range cases {
		_, feats := Describe(c)
		for _, f := range feats {
			seen[f]++
		}
		if !c.needsDelta() {
			continue
		}
		out := RunEngine(c, ckpts)
		if out.BadInput {
			t.Fatalf("%s: refused: %s\n%s", c.Name, out.Err, c.Query)
		}
		if out.Err == "" && !out.HasTable {
			t.Fatalf("%s: no table line", c.Name)
		}
	}
	for _, f := range []string{"table sink", "merge sink", "append sink", "merge lookback", "generated app id"} {
		if seen[f] == 0 {
			t.Errorf("no case with %s among 200", f)
		}
	}
	if n := seen["table sink"] + seen["merge sink"] + seen["append sink"]; n < 12 || n > 40 {
		t.Errorf("%d of 200 cases have a table sink, want about one in eight", n)
	}
}

// TestGenerateWide checks the wide-key cases: drawn from a stream of their
// own, so that every other case of a seed is byte for byte what it was
// before (the hash of seed 1's 300 cases drawn without wide keys is the
// one measured before wide keys existed), each dedups on 5 or 6 keys, and
// some are resumed with their keys in the reverse call order.
func TestGenerateWide(t *testing.T) {
	h := sha256.New()
	for i := range 300 {
		c := generateCase(1, i, false)
		h.Write([]byte(c.Name))
		h.Write(c.Query)
		h.Write(c.Steps)
	}
	// The follow-ups of typed cases are appended after the 300: hash them
	// as Generate did before wide keys.
	for i := range 300 {
		if f := generateCase(1, i, false).followUp; f != nil {
			h.Write([]byte(f.Name))
			h.Write(f.Query)
			h.Write(f.Steps)
		}
	}
	if got, want := fmt.Sprintf("%x", h.Sum(nil)), "422dc411ad6fa4f504f43ce4adf159e9928ee7797daf2787a5b12f1055d03542"; got != want {
		t.Errorf("seed 1's cases without wide keys hash to %s, want %s (as before wide keys)", got, want)
	}
	wide, resumed := 0, 0
	ckpts := map[string]*fsys.Mem{}
	for i, c := range Generate(1, 300) {
		if i < 300 {
			if old := generateCase(1, i, false); !bytes.Equal(old.Query, c.Query) {
				wide++
				q, err := query.Parse("query.yaml", c.Query)
				if err != nil {
					t.Fatalf("%s: %v\n%s", c.Name, err, c.Query)
				}
				if n := len(q.Keys); n < 5 || n > 6 {
					t.Errorf("%s: %d keys, want 5 or 6\n%s", c.Name, n, c.Query)
				}
				if !bytes.Contains(c.Steps, []byte(`"d":`)) && !bytes.Contains(c.Steps, []byte(`"l":`)) {
					t.Errorf("%s: the rows have no wide column\n%s", c.Name, c.Steps)
				}
			} else if !bytes.Equal(old.Steps, c.Steps) {
				t.Errorf("%s: not wide, but its steps changed", c.Name)
			}
		}
		c.Engine = RunEngine(c, ckpts)
		if strings.HasSuffix(c.Name, "(key order changed)") {
			resumed++
			// dedupsim stores 5+ keys in Spark's hash-set order, which the
			// call order does not change: the restart is accepted.
			if c.Engine.Err != "" {
				t.Errorf("%s: %s", c.Name, c.Engine.Err)
			}
		}
		if _, fs := Describe(c); slices.Contains(fs, "5+ key columns") != (i >= 300 && strings.HasSuffix(c.Name, "(key order changed)") || i < 300 && !bytes.Equal(generateCase(1, i, false).Query, c.Query)) {
			t.Errorf("%s: feature 5+ key columns is %v", c.Name, slices.Contains(fs, "5+ key columns"))
		}
	}
	if wide < 15 || resumed < 3 {
		t.Errorf("%d wide cases and %d resumed in 300, want >= 15 and >= 3", wide, resumed)
	}
}

// TestLineMetricsKept: the comparison keeps the customMetrics a Spark line
// adds and drops the provider's own (cache counts, sizes, rocksdb*).
func TestLineMetricsKept(t *testing.T) {
	got := lineMetrics(map[string]int64{"numRowsReadDuringEviction": 3, "numRowsIncrementallyRemoved": 0, "forceSnapshotCount": 0,
		"numSnapshotsAutoRepaired": 0, "SnapshotLastUploaded.partition_4_default": -1, "numDroppedDuplicateRows": 1,
		"loadedMapCacheHitCount": 7, "stateOnCurrentVersionSizeBytes": 800, "rocksdbForceSnapshotCount": 0})
	want := map[string]int64{"numRowsReadDuringEviction": 3, "numRowsIncrementallyRemoved": 0, "forceSnapshotCount": 0,
		"numSnapshotsAutoRepaired": 0, "SnapshotLastUploaded.partition_4_default": -1}
	if !maps.Equal(got, want) {
		t.Fatalf("lineMetrics = %v, want %v", got, want)
	}
	if lineMetrics(map[string]int64{"numDroppedDuplicateRows": 1}) != nil {
		t.Fatal("no line metric: want nil")
	}
}

package checkpoint

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

func TestOffsetAndCommitLogFormat(t *testing.T) {
	fs := fsys.NewMem()
	l := New(fs)
	o := Offsets{Metadata: Metadata{BatchWatermarkMs: 15000, BatchTimestampMs: 42, Conf: map[string]string{ConfShufflePartitions: "2"}},
		Sources: []json.RawMessage{json.RawMessage(`3`), nil}}
	if err := l.WriteOffsets(7, o); err != nil {
		t.Fatal(err)
	}
	b, _ := fs.ReadFile("offsets/7")
	want := "v1\n{\"batchWatermarkMs\":15000,\"batchTimestampMs\":42,\"conf\":{\"spark.sql.shuffle.partitions\":\"2\"}}\n3\n-"
	if string(b) != want {
		t.Fatalf("offsets/7 =\n%s\nwant\n%s", b, want)
	}
	got, err := l.ReadOffsets(7)
	if err != nil || got.Metadata.BatchWatermarkMs != 15000 || string(got.Sources[0]) != "3" || got.Sources[1] != nil {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if err := l.WriteCommit(7, Commit{NextBatchWatermarkMs: 20000}); err != nil {
		t.Fatal(err)
	}
	b, _ = fs.ReadFile("commits/7")
	if string(b) != "v1\n{\"nextBatchWatermarkMs\":20000}" {
		t.Fatalf("commits/7 = %q", b)
	}
	if c, err := l.ReadCommit(7); err != nil || c.NextBatchWatermarkMs != 20000 {
		t.Fatalf("commit %+v %v", c, err)
	}
}

func TestReadErrorsNameTheFile(t *testing.T) {
	fs := fsys.NewMem()
	l := New(fs)
	for name, content := range map[string]string{"offsets/1": "v2\n{}", "offsets/2": "v1\nnot json", "commits/3": "garbage", "offsets/4": "v1\n{}\n{bad"} {
		if err := fsys.WriteAtomic(fs, name, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		read func() error
		name string
	}{
		{func() error { _, err := l.ReadOffsets(1); return err }, "offsets/1"},
		{func() error { _, err := l.ReadOffsets(2); return err }, "offsets/2"},
		{func() error { _, err := l.ReadCommit(3); return err }, "commits/3"},
		{func() error { _, err := l.ReadOffsets(4); return err }, "offsets/4"},
	} {
		err := tc.read()
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: error %v does not name the file", tc.name, err)
		}
	}
}

func TestBatchesPurgeAndOperators(t *testing.T) {
	fs := fsys.NewMem()
	l := New(fs)
	for i := int64(0); i < 5; i++ {
		l.WriteOffsets(i, Offsets{})
		l.WriteCommit(i, Commit{})
	}
	if n, _ := l.Latest("offsets"); n != 4 {
		t.Fatalf("latest %d", n)
	}
	if err := l.Purge(3); err != nil {
		t.Fatal(err)
	}
	ids, _ := l.Batches("commits")
	if len(ids) != 2 || ids[0] != 3 {
		t.Fatalf("after purge: %v", ids)
	}
	if err := l.WriteOperatorMetadata(0, "dedupe", 4); err != nil {
		t.Fatal(err)
	}
	ops, err := l.Operators()
	if err != nil || ops[0] != "dedupe" {
		t.Fatalf("operators %v %v", ops, err)
	}
	if got := FormatOperators(ops); got != "(OperatorId: 0 -> OperatorName: dedupe)" {
		t.Fatalf("format %q", got)
	}
	key := Schema{Type: "struct", Fields: []Field{{Name: "id", Type: "string", Nullable: true}}}
	value := Schema{Type: "struct", Fields: []Field{{Name: "__dummy__", Type: "null", Nullable: true}}}
	if err := l.WriteSchema(0, StateSchemas{Key: key, Value: value}); err != nil {
		t.Fatal(err)
	}
	s, ok, err := l.ReadSchema(0)
	if err != nil || !ok || !s.Key.Compatible(key) {
		t.Fatalf("schema %+v %v %v", s, ok, err)
	}
	renamed := Schema{Type: "struct", Fields: []Field{{Name: "user", Type: "string"}}}
	wider := Schema{Type: "struct", Fields: []Field{{Name: "id", Type: "string"}, {Name: "ts", Type: "timestamp"}}}
	if !key.Compatible(renamed) || key.Compatible(wider) {
		t.Fatal("Spark compares count and types, not names")
	}
}

// RemoveTemps deletes the temp files of killed writers and nothing else.
func TestRemoveTemps(t *testing.T) {
	fs := fsys.NewMem()
	for _, n := range []string{"offsets/.3.ab12.tmp", "offsets/3", "state/0/1/.4.delta.tmp", "state/0/1/4.delta", ".metadata.x.tmp", "metadata", ".dedupsim.lock", "state/0/0/_metadata/.schema.tmp"} {
		if err := fsys.WriteAtomic(fs, n, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveTemps(fs); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs.Files() {
		got = append(got, f)
	}
	if strings.Join(got, " ") != ".dedupsim.lock metadata offsets/3 state/0/1/4.delta" {
		t.Fatalf("after RemoveTemps: %v", got)
	}
}

// TestKeySchemaCompatible is Spark's rule, StateSchemaCompatibilityChecker's
// equalsIgnoreNameAndCompatibleNullability(new, stored): by position and
// type, names ignored, a non-nullable stored field only for a
// non-nullable new one.
func TestKeySchemaCompatible(t *testing.T) {
	f := func(name, typ string, null bool) Field { return Field{Name: name, Type: typ, Nullable: null} }
	st := func(fs ...Field) Schema { return Schema{Type: "struct", Fields: fs} }
	kn := st(f("k", "string", true), f("n", "long", true))
	for _, c := range []struct {
		name         string
		stored, next Schema
		want         bool
	}{
		{"same", kn, kn, true},
		{"renamed", kn, st(f("a", "string", true), f("b", "long", true)), true},
		{"reorder of different types", kn, st(f("n", "long", true), f("k", "string", true)), false},
		{"type change", kn, st(f("k", "string", true), f("n", "string", true)), false},
		{"added", kn, st(f("k", "string", true), f("n", "long", true), f("m", "string", true)), false},
		{"removed", kn, st(f("k", "string", true)), false},
		{"nullable stored, non-nullable new", kn, st(f("k", "string", false), f("n", "long", false)), true},
		{"non-nullable stored, nullable new", st(f("k", "string", false)), st(f("k", "string", true)), false},
		{"non-nullable both", st(f("k", "string", false)), st(f("k", "string", false)), true},
	} {
		if got := c.stored.Compatible(c.next); got != c.want {
			t.Errorf("%s: Compatible = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestTypedSchemaRoundTrip: every type name the engine writes reads back.
func TestTypedSchemaRoundTrip(t *testing.T) {
	l := New(fsys.NewMem())
	var fields []Field
	for _, typ := range []string{"string", "long", "integer", "double", "boolean", "timestamp", "decimal(21,0)", "decimal(38,0)", "struct", "array"} {
		fields = append(fields, Field{Name: "c_" + typ, Type: typ, Nullable: true})
	}
	key := Schema{Type: "struct", Fields: fields}
	value := Schema{Type: "struct", Fields: []Field{{Name: "__dummy__", Type: "null", Nullable: true}}}
	if err := l.WriteSchema(0, StateSchemas{Key: key, Value: value}); err != nil {
		t.Fatal(err)
	}
	s, ok, err := l.ReadSchema(0)
	if err != nil || !ok || !s.Key.Compatible(key) || !key.Compatible(s.Key) {
		t.Fatalf("read back %+v %v %v", s, ok, err)
	}
	for _, bad := range []string{"decimal(39,0)", "decimal(0,0)", "decimal(10,2)", "blob"} {
		l := New(fsys.NewMem())
		k := Schema{Type: "struct", Fields: []Field{{Name: "x", Type: bad, Nullable: true}}}
		if err := l.WriteSchema(0, StateSchemas{Key: k, Value: value}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.ReadSchema(0); err == nil {
			t.Errorf("type %q accepted", bad)
		}
	}
}

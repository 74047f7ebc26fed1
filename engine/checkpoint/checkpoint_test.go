package checkpoint

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/schema"
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
	key := Schema{Type: "struct", Fields: []Field{{Name: "id", Type: Atomic("string"), Nullable: true}}}
	value := Schema{Type: "struct", Fields: []Field{{Name: "__dummy__", Type: Atomic("null"), Nullable: true}}}
	if err := l.WriteSchema(0, StateSchemas{Key: key, Value: value}); err != nil {
		t.Fatal(err)
	}
	s, ok, err := l.ReadSchema(0)
	if err != nil || !ok || !s.Key.Compatible(key) {
		t.Fatalf("schema %+v %v %v", s, ok, err)
	}
	renamed := Schema{Type: "struct", Fields: []Field{{Name: "user", Type: Atomic("string")}}}
	wider := Schema{Type: "struct", Fields: []Field{{Name: "id", Type: Atomic("string")}, {Name: "ts", Type: Atomic("timestamp")}}}
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
	got = append(got, fs.Files()...)
	if strings.Join(got, " ") != ".dedupsim.lock metadata offsets/3 state/0/1/4.delta" {
		t.Fatalf("after RemoveTemps: %v", got)
	}
}

// TestKeySchemaCompatible is Spark's rule, StateSchemaCompatibilityChecker's
// equalsIgnoreNameAndCompatibleNullability(new, stored): by position and
// type, names ignored, a non-nullable stored field only for a
// non-nullable new one.
func TestKeySchemaCompatible(t *testing.T) {
	f := func(name, typ string, null bool) Field { return Field{Name: name, Type: Atomic(typ), Nullable: null} }
	nf := func(name string, typ DataType, null bool) Field { return Field{Name: name, Type: typ, Nullable: null} }
	arr := func(e DataType, cn bool) DataType { return DataType{Kind: "array", Elem: &e, ContainsNull: cn} }
	mp := func(k, v DataType, cn bool) DataType {
		return DataType{Kind: "map", Key: &k, Elem: &v, ContainsNull: cn}
	}
	sct := func(fs ...Field) DataType { return DataType{Kind: "struct", Fields: fs} }
	st := func(fs ...Field) Schema { return Schema{Type: "struct", Fields: fs} }
	sa := st(nf("s", sct(f("a", "long", true)), true))
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
		// Nested (measured on pyspark 4.1.1: struct<a:bigint> then
		// struct<a:string> or struct<a:bigint,b:...> fail the restart,
		// struct<b:bigint> runs on).
		{"struct field type", sa, st(nf("s", sct(f("a", "string", true)), true)), false},
		{"struct field added", sa, st(nf("s", sct(f("a", "long", true), f("b", "long", true)), true)), false},
		{"struct field renamed", sa, st(nf("s", sct(f("b", "long", true)), true)), true},
		{"struct to array", sa, st(nf("s", arr(sct(f("a", "long", true)), true), true)), false},
		{"struct to bare struct", sa, st(f("s", "struct", true)), false},
		{"non-nullable stored struct field", st(nf("s", sct(f("a", "long", false)), true)), sa, false},
		{"non-nullable new struct field", sa, st(nf("s", sct(f("a", "long", false)), true)), true},
		{"array element", st(f("a", "long", true)), st(nf("a", arr(Atomic("long"), true), true)), false},
		{"array element type", st(nf("a", arr(Atomic("long"), true), true)), st(nf("a", arr(Atomic("string"), true), true)), false},
		{"array containsNull stored false", st(nf("a", arr(Atomic("long"), false), true)), st(nf("a", arr(Atomic("long"), true), true)), false},
		{"array containsNull new false", st(nf("a", arr(Atomic("long"), true), true)), st(nf("a", arr(Atomic("long"), false), true)), true},
		{"map value type", st(nf("m", mp(Atomic("string"), Atomic("long"), true), true)), st(nf("m", mp(Atomic("string"), Atomic("string"), true), true)), false},
		{"map same", st(nf("m", mp(Atomic("string"), Atomic("long"), true), true)), st(nf("x", mp(Atomic("string"), Atomic("long"), true), true)), true},
		{"map valueContainsNull", st(nf("m", mp(Atomic("string"), Atomic("long"), false), true)), st(nf("m", mp(Atomic("string"), Atomic("long"), true), true)), false},
		{"decimal scale", st(f("d", "decimal(10,2)", true)), st(f("d", "decimal(10,0)", true)), false},
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
	for _, typ := range []string{"string", "long", "integer", "double", "boolean", "timestamp", "decimal(21,0)", "decimal(38,0)", "decimal(10,2)", "struct", "array"} {
		fields = append(fields, Field{Name: "c_" + typ, Type: Atomic(typ), Nullable: true})
	}
	nested, err := schema.ParseDDL("s STRUCT<a: BIGINT, `b c`: ARRAY<MAP<STRING, DECIMAL(5,2)>>>, e STRUCT<>")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range nested.Fields {
		fields = append(fields, Field{Name: f.Name, Type: FromType(f.Type), Nullable: true})
	}
	key := Schema{Type: "struct", Fields: fields}
	value := Schema{Type: "struct", Fields: []Field{{Name: "__dummy__", Type: Atomic("null"), Nullable: true}}}
	if err := l.WriteSchema(0, StateSchemas{Key: key, Value: value}); err != nil {
		t.Fatal(err)
	}
	s, ok, err := l.ReadSchema(0)
	if err != nil || !ok || !s.Key.Compatible(key) || !key.Compatible(s.Key) {
		t.Fatalf("read back %+v %v %v", s, ok, err)
	}
	if got := s.Key.String(); !strings.Contains(got, "StructField(s,StructType(StructField(a,LongType,true),StructField(b c,ArrayType(MapType(StringType,DecimalType(5,2),true),true),true)),true),StructField(e,StructType(),true)") {
		t.Errorf("Spark's toString: %s", got)
	}
	for _, bad := range []string{`"decimal(39,0)"`, `"decimal(0,0)"`, `"blob"`, `{"type":"array","elementType":"long"}`,
		`{"type":"map","keyType":"string","valueContainsNull":true}`, `{"type":"struct"}`, `{"type":"struct","fields":[{"name":"","type":"long"}]}`,
		`{"type":"array","elementType":"long","containsNull":true,"x":1}`, `{"type":"udt"}`} {
		l := New(fsys.NewMem())
		line := `{"type":"struct","fields":[{"name":"x","type":` + bad + `,"nullable":true}]}`
		if err := fsys.WriteAtomic(l.FS(), "state/0/0/_metadata/schema", []byte("v2\n"+line+"\n"+line+"\n")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.ReadSchema(0); err == nil {
			t.Errorf("type %s accepted", bad)
		}
	}
}

// TestRowChecksumRefused: a checkpoint whose offsets pin the row checksum
// on is refused (its state rows carry a checksum dedupsim does not read);
// pinned off it reads, and the conf map keeps the file's key order.
func TestRowChecksumRefused(t *testing.T) {
	fs := fsys.NewMem()
	l := New(fs)
	on := `v1` + "\n" + `{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{"spark.sql.streaming.stateStore.rowChecksum.enabled":"true"}}` + "\n" + `{"a":1}`
	off := `v1` + "\n" + `{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{"spark.sql.streaming.stateStore.rowChecksum.enabled":"false","a.b":"1"}}` + "\n" + `{"a":1}`
	for name, content := range map[string]string{"offsets/0": on, "offsets/1": off} {
		if err := fsys.WriteAtomic(fs, name, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.ReadOffsets(0); err == nil || !strings.Contains(err.Error(), "row checksum") || !strings.Contains(err.Error(), "offsets/0") {
		t.Fatalf("rowChecksum true: %v", err)
	}
	o, err := l.ReadOffsets(1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := EncodeOffsets(o)
	if err != nil || string(b) != off {
		t.Fatalf("re-encoded %q, %v; want the file's bytes", b, err)
	}
}

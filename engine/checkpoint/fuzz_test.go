package checkpoint

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

// The checkpoint parsers take any bytes: they accept a file only when its
// values are in their domain, and refuse everything else with a
// *CorruptError naming the file, never a panic.

func checkCorrupt(t *testing.T, err error, file string) {
	t.Helper()
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.File != file || !strings.HasPrefix(err.Error(), "checkpoint error: "+file+": ") {
		t.Fatalf("error %T %v is not a CorruptError naming %s", err, err, file)
	}
}

func onFile(t *testing.T, name string, data []byte) *Log {
	t.Helper()
	fs := fsys.NewMem()
	if err := fsys.WriteAtomic(fs, name, data); err != nil {
		t.Fatal(err)
	}
	return New(fs)
}

func FuzzReadOffsets(f *testing.F) {
	for _, s := range []string{
		"v1\n" + `{"batchWatermarkMs":15000,"batchTimestampMs":42,"conf":{"spark.sql.shuffle.partitions":"2"}}` + "\n3\n-",
		"v1\n" + `{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":null}` + "\n" + `{"t":{"0":5}}`,
		"v1\n" + `{"batchWatermarkMs":9223372036854775807,"batchTimestampMs":0,"conf":{}}` + "\n1",
		"v1\n" + `{"batchWatermarkMs":1,"batchWatermarkMs":2,"batchTimestampMs":0,"conf":{}}` + "\n1\n",
		"v2\n{}", "", "v1\n", "v1\n{}\n{bad",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l := onFile(t, "offsets/7", data)
		o, err := l.ReadOffsets(7)
		if err != nil {
			checkCorrupt(t, err, "offsets/7")
			return
		}
		m := o.Metadata
		if m.BatchWatermarkMs < minWatermarkMs || m.BatchWatermarkMs > maxWatermarkMs || m.BatchTimestampMs < minTimestampMs || m.BatchTimestampMs > maxTimestampMs {
			t.Fatalf("accepted out-of-range metadata %+v", m)
		}
		for k, v := range m.Conf {
			if checkConf(k, v) != nil {
				t.Fatalf("accepted conf %s=%s", k, v)
			}
		}
		// What is accepted survives a write and a read unchanged.
		l2 := New(fsys.NewMem())
		if err := l2.WriteOffsets(1, o); err != nil {
			t.Fatal(err)
		}
		again, err := l2.ReadOffsets(1)
		if err != nil || !reflect.DeepEqual(again.Metadata, o.Metadata) || len(again.Sources) != len(o.Sources) {
			t.Fatalf("round trip: %+v vs %+v (%v)", again, o, err)
		}
		for i := range o.Sources {
			if string(again.Sources[i]) != string(o.Sources[i]) || (o.Sources[i] != nil && !json.Valid(o.Sources[i])) {
				t.Fatalf("source %d: %q vs %q", i, again.Sources[i], o.Sources[i])
			}
		}
	})
}

func FuzzReadCommit(f *testing.F) {
	for _, s := range []string{"v1\n{\"nextBatchWatermarkMs\":20000}", "v1\n{\"nextBatchWatermarkMs\":-1}", "v1\n{}", "garbage", "v1\n{\"nextBatchWatermarkMs\":1}\n", "v1\n{\"nextBatchWatermarkMs\":1e3}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := onFile(t, "commits/3", data).ReadCommit(3)
		if err != nil {
			checkCorrupt(t, err, "commits/3")
			return
		}
		if c.NextBatchWatermarkMs < minWatermarkMs || c.NextBatchWatermarkMs > maxWatermarkMs {
			t.Fatalf("accepted %d", c.NextBatchWatermarkMs)
		}
	})
}

func FuzzQueryID(f *testing.F) {
	for _, s := range []string{`{"id":"6b1c2a56-8f2e-4c1e-9d2b-0a1b2c3d4e5f"}` + "\n", `{"id":""}`, `{"id":"x","id":"y"}`, `{}`, `[]`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		id, ok, err := onFile(t, "metadata", data).QueryID()
		if err != nil {
			checkCorrupt(t, err, "metadata")
			return
		}
		if !ok || !uuidRe.MatchString(id) {
			t.Fatalf("accepted id %q (ok %v)", id, ok)
		}
	})
}

func FuzzReadSchema(f *testing.F) {
	for _, s := range []string{
		"v2\n{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"string\",\"nullable\":true}]}\n{\"type\":\"struct\",\"fields\":[{\"name\":\"__dummy__\",\"type\":\"null\",\"nullable\":true}]}\n",
		"v2\n{}\n{}\n", "v1\n", "",
		"v2\n{\"type\":\"struct\",\"fields\":[{\"name\":\"s\",\"type\":{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":{\"type\":\"array\",\"elementType\":{\"type\":\"map\",\"keyType\":\"string\",\"valueType\":\"decimal(5,2)\",\"valueContainsNull\":true},\"containsNull\":false},\"nullable\":true}]},\"nullable\":true}]}\n{\"type\":\"struct\",\"fields\":[{\"name\":\"x\",\"type\":\"long\"}]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, ok, err := onFile(t, "state/0/0/_metadata/schema", data).ReadSchema(0)
		if err != nil {
			checkCorrupt(t, err, "state/0/0/_metadata/schema")
			return
		}
		if !ok || s.Key.Type != "struct" || len(s.Key.Fields) == 0 || len(s.Value.Fields) == 0 {
			t.Fatalf("accepted %+v", s)
		}
		// What was read writes back to a file that reads as the same
		// schema.
		l := New(fsys.NewMem())
		if err := l.WriteSchema(0, s); err != nil {
			t.Fatal(err)
		}
		again, ok, err := l.ReadSchema(0)
		if err != nil || !ok || again.Key.String() != s.Key.String() || !again.Key.Compatible(s.Key) || !s.Key.Compatible(again.Key) {
			t.Fatalf("%+v does not read back: %+v %v", s, again, err)
		}
	})
}

func FuzzOperators(f *testing.F) {
	for _, s := range []string{
		"v1\n" + `{"operatorInfo":{"operatorId":0,"operatorName":"dedupe"},"stateStoreInfo":[{"storeName":"default","numColsPrefixKey":0,"numPartitions":4}]}`,
		"v1\n" + `{"operatorInfo":{"operatorId":1,"operatorName":"dedupe"},"stateStoreInfo":[]}`,
		"v1\n{}", "x",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, err := onFile(t, "state/0/_metadata/metadata", data).Operators()
		if err != nil {
			checkCorrupt(t, err, "state/0/_metadata/metadata")
			return
		}
		if len(ops) != 1 || ops[0] == "" {
			t.Fatalf("accepted %v", ops)
		}
	})
}

package checkpoint

import (
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

const (
	ckA = "427de593-b812-4091-a44f-1dccefca4d2a"
	ckB = "fab142ec-e8b0-41f8-a6c2-f8324fc7a148"
)

// commits/N in format v2: written as "v2" with stateUniqueIds, read back
// to the same ids and bytes; every malformed id list refused naming the
// file.
func TestCommitV2(t *testing.T) {
	fs := fsys.NewMem()
	l := New(fs)
	c := Commit{NextBatchWatermarkMs: 7, StateUniqueIDs: map[string][][]string{"0": {{ckA}, {ckB}}}}
	if err := l.WriteCommit(4, c); err != nil {
		t.Fatal(err)
	}
	b, _ := fs.ReadFile("commits/4")
	if want := `v2
{"nextBatchWatermarkMs":7,"stateUniqueIds":{"0":[["` + ckA + `"],["` + ckB + `"]]}}`; string(b) != want {
		t.Fatalf("wrote %q, want Spark's %q", b, want)
	}
	got, err := l.ReadCommit(4)
	if err != nil || got.NextBatchWatermarkMs != 7 || got.StateUniqueIDs["0"][1][0] != ckB {
		t.Fatalf("read %+v %v", got, err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"v2 without ids", "v2\n{\"nextBatchWatermarkMs\":7}", "without stateUniqueIds"},
		{"ids in v1", "v1\n{\"nextBatchWatermarkMs\":7,\"stateUniqueIds\":{\"0\":[[\"" + ckA + "\"]]}}", "unknown field \"stateUniqueIds\""},
		{"not a uuid", "v2\n{\"nextBatchWatermarkMs\":7,\"stateUniqueIds\":{\"0\":[[\"x\"]]}}", "is not a checkpoint id"},
		{"id twice", "v2\n{\"nextBatchWatermarkMs\":7,\"stateUniqueIds\":{\"0\":[[\"" + ckA + "\"],[\"" + ckA + "\"]]}}", "named twice"},
		{"no partitions", "v2\n{\"nextBatchWatermarkMs\":7,\"stateUniqueIds\":{\"0\":[]}}", "want 1 to"},
		{"no stores", "v2\n{\"nextBatchWatermarkMs\":7,\"stateUniqueIds\":{\"0\":[[]]}}", "0 ids"},
		{"bad operator", "v2\n{\"nextBatchWatermarkMs\":7,\"stateUniqueIds\":{\"-1\":[[\"" + ckA + "\"]]}}", "not an operator id"},
		{"operator twice", "v2\n{\"nextBatchWatermarkMs\":7,\"stateUniqueIds\":{\"0\":[[\"" + ckA + "\"]],\"0\":[[\"" + ckB + "\"]]}}", "given twice"},
		{"v3", "v3\n{\"nextBatchWatermarkMs\":7}", "want a v1 or v2 header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := onFile(t, "commits/3", []byte(tc.in)).ReadCommit(3)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			checkCorrupt(t, err, "commits/3")
		})
	}
}

func FuzzReadCommitV2(f *testing.F) {
	f.Add([]byte("v2\n{\"nextBatchWatermarkMs\":7,\"stateUniqueIds\":{\"0\":[[\"" + ckA + "\"],[\"" + ckB + "\"]]}}"))
	f.Add([]byte("v2\n{\"nextBatchWatermarkMs\":7,\"stateUniqueIds\":{\"0\":[[\"" + ckA + "\"]],\"1\":[[\"" + ckB + "\"]]}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l := onFile(t, "commits/3", data)
		c, err := l.ReadCommit(3)
		if err != nil {
			checkCorrupt(t, err, "commits/3")
			return
		}
		seen := map[string]bool{}
		for op, parts := range c.StateUniqueIDs {
			if len(parts) == 0 {
				t.Fatalf("operator %s: no partitions", op)
			}
			for _, ids := range parts {
				for _, id := range ids {
					if !uuidRe.MatchString(id) || seen[id] {
						t.Fatalf("id %q", id)
					}
					seen[id] = true
				}
			}
		}
		// What was accepted writes back and reads back the same.
		fs := fsys.NewMem()
		if err := New(fs).WriteCommit(3, c); err != nil {
			t.Fatal(err)
		}
		again, err := New(fs).ReadCommit(3)
		if err != nil || again.NextBatchWatermarkMs != c.NextBatchWatermarkMs || len(again.StateUniqueIDs) != len(c.StateUniqueIDs) {
			t.Fatalf("round trip: %+v %v", again, err)
		}
	})
}

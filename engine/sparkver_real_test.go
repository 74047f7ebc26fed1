package engine_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
)

var confRe = regexp.MustCompile(`"conf":\{[^}]*\}`)

// TestPinnedConfsMatchRealSpark: for every line, the conf map dedupsim
// writes in offsets/0 of a new query is byte for byte the one real pyspark
// wrote (engine/sparkver/testdata/real-offsets): the same keys, values and
// order (spark-semantics.md §17.1, §17.2).
func TestPinnedConfsMatchRealSpark(t *testing.T) {
	for _, v := range []string{"3.5.9", "4.0.5", "4.1.1", "4.2.1", "4.3.0"} {
		real, err := os.ReadFile("sparkver/testdata/real-offsets/" + v)
		if err != nil {
			t.Fatal(err)
		}
		want := confRe.Find(real)
		q, err := query.Parse("query.yaml", []byte("dedup: {api: dropDuplicates, keys: [id, n, l, d, b, ts]}\nshuffle_partitions: 2\nspark_version: "+v+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		st, err := steps.ParseTyped("steps.jsonl", []byte(`{"rows": [{"id":1,"n":1,"l":1,"d":1,"b":1,"ts":1}]}`+"\n"), q)
		if err != nil {
			t.Fatal(err)
		}
		fs := fsys.NewMem()
		if _, err := trace.Run(q, st, trace.Options{Checkpoint: fs}); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		got, err := fs.ReadFile("offsets/0")
		if err != nil {
			t.Fatal(err)
		}
		if g := confRe.Find(got); string(g) != string(want) {
			t.Errorf("%s:\n dedupsim %s\n spark    %s", v, g, want)
		}
	}
}

// TestRestartConfsMatchRealSpark: a 4.1.1 checkpoint restarted on 4.2.1
// or 4.3.0 writes the conf map real pyspark wrote in that case (§17.4).
func TestRestartConfsMatchRealSpark(t *testing.T) {
	for _, to := range []string{"4.2.1", "4.3.0"} {
		restartConfs(t, to)
	}
}

func restartConfs(t *testing.T, to string) {
	real, err := os.ReadFile("sparkver/testdata/real-offsets/4.1.1-restarted-on-" + to)
	if err != nil {
		t.Fatal(err)
	}
	fs := fsys.NewMem()
	rows := `{"rows": [{"id":1,"n":1,"l":1,"d":1,"b":1,"ts":1}]}` + "\n"
	for i, v := range []string{"4.1.1", to} {
		q, err := query.Parse("query.yaml", []byte("dedup: {api: dropDuplicates, keys: [id, n, l, d, b, ts]}\nshuffle_partitions: 2\nspark_version: "+v+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			rows += `{"rows": [{"id":2,"n":1,"l":1,"d":1,"b":1,"ts":1}]}` + "\n"
		}
		st, err := steps.ParseTyped("steps.jsonl", []byte(rows), q)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := trace.Run(q, st, trace.Options{Checkpoint: fs}); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
	got, err := fs.ReadFile("offsets/1")
	if err != nil {
		t.Fatal(err)
	}
	if g, w := confRe.Find(got), confRe.Find(real); string(g) != string(w) {
		t.Errorf("4.1.1 restarted on %s:\n dedupsim %s\n spark    %s", to, g, w)
	}
}

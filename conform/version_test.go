package conform

import (
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/sparkver"
)

// TestEngineFollowsRunnerLine: a case whose query names no Spark version
// is run by the engine as the runner's line (4.3: state keys in call
// order), and the shrinker's candidates keep the line.
func TestEngineFollowsRunnerLine(t *testing.T) {
	v43, err := sparkver.Parse("4.3.0")
	if err != nil {
		t.Fatal(err)
	}
	q := "dedup: {api: dropDuplicates, keys: [id, n, l, d, b, ts]}\nwatermark: {column: ts, delay: 1 second}\n"
	c := &Case{Name: "wide", Query: []byte(q), Steps: []byte(`{"rows": [{"id":"a","n":"1","l":"x","d":"y","b":"z","ts":5}]}` + "\n")}
	p, err := c.parse()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.q.StateKeys(), ","); got != "n,ts,id,b,l,d" {
		t.Errorf("default: state keys %s, want the Set order n,ts,id,b,l,d", got)
	}
	c.engineVersion = v43
	if p, err = c.parse(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.q.StateKeys(), ","); got != "id,n,l,d,b,ts" || p.q.SparkVersion.Line != "4.3" {
		t.Errorf("on 4.3: state keys %s (line %q), want the call order id,n,l,d,b,ts on 4.3", got, p.q.SparkVersion.Line)
	}
	// The shrinker's candidates keep the line.
	c.Query = []byte(q)
	c.Steps = []byte(`{"rows": [{"id":"a","n":"1","l":"x","d":"y","b":"z","ts":5},{"id":"b","n":"1","l":"x","d":"y","b":"z","ts":6}]}` + "\n" + `{"rows": []}` + "\n")
	cands := append(dropRows(c), dropLines(c)...)
	if len(cands) == 0 {
		t.Fatal("no shrink candidates")
	}
	for _, k := range cands {
		if k.engineVersion != v43 {
			t.Fatalf("a shrunk candidate lost the engine's line: %+v", k.engineVersion)
		}
	}
}

// TestGoldenVersionCasesSkipped: a golden exec naming a Spark version or
// confs, every later exec on its checkpoint, and the execs after an rm on
// a checkpoint are not run on Spark; the others are.
func TestGoldenVersionCasesSkipped(t *testing.T) {
	g := `exec ckpt=a
dedup: {api: dropDuplicates, keys: [id]}
spark_version: 4.3.0
===
----

exec ckpt=a
dedup: {api: dropDuplicates, keys: [id]}
===
----

exec ckpt=b
dedup: {api: dropDuplicates, keys: [id]}
===
----

rm ckpt=b file=metadata
----

exec ckpt=b
dedup: {api: dropDuplicates, keys: [id]}
===
----

exec
dedup: {api: dropDuplicates, keys: [id]}
spark_conf:
  spark.sql.shuffle.partitions: 2
===
----

exec
dedup: {api: dropDuplicates, keys: [id]}
===
----
`
	cs, err := goldenFile("v.txt", []byte(g))
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, true, false, true, true, false}
	if len(cs) != len(want) {
		t.Fatalf("%d cases, want %d", len(cs), len(want))
	}
	for i, c := range cs {
		if (c.skip != "") != want[i] {
			t.Errorf("%s: skip %q, want skipped=%v", c.Name, c.skip, want[i])
		}
	}
}

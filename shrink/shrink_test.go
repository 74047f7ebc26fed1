package shrink

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"pgregory.net/rapid"

	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/sim/check"
)

// TestCatalogue shrinks the catalogue's table-duplicate failures (seed 1),
// and a production query with its own column names and payload, and holds
// each result to testdata/catalogue.txt: the pair, the story and the sizes. Every pair must still hold its witness twice under exec, in
// at most 12 rows, and the shrunk scenario must still give the finding on
// the simulator with the same seed.
func TestCatalogue(t *testing.T) {
	datadriven.RunTest(t, "testdata/catalogue.txt", func(t *testing.T, d *datadriven.TestData) string {
		var name string
		var seed uint64 = 1
		if d.HasArg("file") {
			d.ScanArgs(t, "file", &name)
		} else {
			d.ScanArgs(t, "scenario", &name)
		}
		if d.HasArg("seed") {
			d.ScanArgs(t, "seed", &seed)
		}
		s, err := scenarios.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Shrink(s, seed, Options{})
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		if r.After.Rows > 12 {
			t.Errorf("%s: %d rows, want at most 12", name, r.After.Rows)
		}
		if r.Exhausted {
			t.Errorf("%s: budget exhausted", name)
		}
		// The pair as written still fails under exec, by the same road.
		p, err := parsePair(r.Query, r.Steps)
		if err != nil {
			t.Fatal(err)
		}
		if j := judge(p, r.IDColumn); !j.has(r.Class) {
			t.Errorf("%s: the written pair does not hold an event twice (%s): %v", name, r.Class, j.err)
		}
		// And the scenario still gives the finding on the simulator.
		ms, err := scenarios.Parse("scenario.yaml", r.ScenarioYAML)
		if err != nil {
			t.Fatal(err)
		}
		run, err := scenarios.Run(ms, seed, scenarios.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if f := run.Report.Find(r.Finding); f == nil || !run.Passed {
			t.Errorf("%s: the shrunk scenario lost %s or its expectations: %+v", name, r.Finding, run.Expect)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "finding %s (%s), witness %s; %d -> %d rows, %d -> %d lines\n", r.Finding, r.Class, r.Witness, r.Before.Rows, r.After.Rows, r.Before.Lines, r.After.Lines)
		b.WriteString("---- query.yaml\n" + string(r.Query))
		b.WriteString("---- steps.jsonl\n" + string(r.Steps))
		b.WriteString("---- expected.jsonl\n" + string(r.Expected))
		b.WriteString("---- story.md\n" + r.Story)
		return b.String()
	})
}

// TestDeterministic: the same scenario, seed and budget give the same
// bytes; a smaller budget stops early and says so.
func TestDeterministic(t *testing.T) {
	s, err := scenarios.Load("replay-append-sink")
	if err != nil {
		t.Fatal(err)
	}
	a, err := Shrink(s, 3, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Shrink(s, 3, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		x, y []byte
	}{{"query", a.Query, b.Query}, {"steps", a.Steps, b.Steps}, {"scenario", a.ScenarioYAML, b.ScenarioYAML}, {"story", []byte(a.Story), []byte(b.Story)}} {
		if !bytes.Equal(f.x, f.y) {
			t.Errorf("%s differs between two shrinks of the same seed", f.name)
		}
	}
	c, err := Shrink(s, 3, Options{Budget: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Exhausted || c.Runs != 10 || !strings.Contains(c.Story, "exhausted") {
		t.Errorf("budget 10: exhausted %v after %d runs; story %q", c.Exhausted, c.Runs, c.Story)
	}
	if c.After.Rows >= c.Before.Rows || c.After.Rows < a.After.Rows {
		t.Errorf("budget 10: %d rows (run %d, full shrink %d)", c.After.Rows, c.Before.Rows, a.After.Rows)
	}
}

// TestRefuses: a seed without the finding, a finding shrink cannot keep,
// a budget out of range, a swarm scenario.
func TestRefuses(t *testing.T) {
	ok, err := scenarios.Load("replay-table-stable-app-id")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Shrink(ok, 1, Options{}); err == nil || !strings.Contains(err.Error(), "has no table-duplicate") {
		t.Errorf("no finding: %v", err)
	}
	dup, _ := scenarios.Load("replay-append-sink")
	for _, o := range []Options{{Finding: check.LateDropped}, {Budget: -1}, {Budget: MaxBudget + 1}} {
		if _, err := Shrink(dup, 1, o); err == nil {
			t.Errorf("%+v: accepted", o)
		}
	}
	sw := *dup
	sw.Config.Plan.Swarm = true
	if _, err := Shrink(&sw, 1, Options{}); err == nil || !strings.Contains(err.Error(), "swarm") {
		t.Errorf("swarm: %v", err)
	}
}

// TestDDMin: for a monotone test (a set fails when it holds every item of
// a hidden target), ddmin keeps exactly the target within a budget of
// O(k log n) runs, and never runs past its budget.
func TestDDMin(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 300).Draw(t, "n")
		target := map[int]bool{}
		for _, i := range rapid.SliceOfNDistinct(rapid.IntRange(0, n-1), 1, min(n, 6), func(i int) int { return i }).Draw(t, "target") {
			target[i] = true
		}
		test := func(keep []bool) bool {
			for i := range target {
				if !keep[i] {
					return false
				}
			}
			return true
		}
		b := &budget{left: 100000}
		keep := ddmin(n, test, b)
		for i, k := range keep {
			if k != target[i] {
				t.Fatalf("item %d kept %v, in target %v", i, k, target[i])
			}
		}
		small := &budget{left: rapid.IntRange(0, 20).Draw(t, "budget")}
		left := small.left
		keep = ddmin(n, test, small)
		if small.used > left || !test(keep) {
			t.Fatalf("budget %d: used %d, result fails the test: %v", left, small.used, !test(keep))
		}
	})
}

// TestPairRoundTrip: parsing an exported steps file and rendering it again
// keeps every step, and rows keep their bytes.
func TestPairRoundTrip(t *testing.T) {
	q := []byte("dedup: {api: dropDuplicates, keys: [id]}\nsources:\n  - name: a\n  - name: b\nsink: {kind: append}\n")
	steps := []byte("# comment\n" +
		`{"sources": {"b": [{"id":"x","_copy":1}], "a": [{"id":"y","_copy":0}]}, "once": true}` + "\n" +
		`{"crash": "after-sink-write", "batch": 3}` + "\n" +
		`{"tick": true}` + "\n" + `{"restart": true}` + "\n" +
		`{"sources": {"a": []}}` + "\n")
	p, err := parsePair(q, steps)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"sources": {"a": [{"id":"y","_copy":0}], "b": [{"id":"x","_copy":1}]}, "once": true}` + "\n" +
		`{"crash": "after-sink-write", "batch": 3}` + "\n" + `{"tick": true}` + "\n" + `{"restart": true}` + "\n" +
		`{"sources": {"a": []}}` + "\n"
	if got := string(p.steps()); got != want {
		t.Errorf("render:\n%s\nwant:\n%s", got, want)
	}
	s := stripCopies(p)
	if got := string(s.render(s.lines[0])); got != `{"sources": {"a": [{"id":"y"}], "b": [{"id":"x"}]}, "once": true}` {
		t.Errorf("strip: %s", got)
	}
	for _, bad := range []string{`{"rows": [{}]}`, `{"sources": {"c": []}}`, `{"what": 1}`, `{}`, `[1]`} {
		if _, err := parsePair(q, []byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// FuzzParsePair: parsePair never panics, and what it accepts renders to
// steps it parses again to the same steps.
func FuzzParsePair(f *testing.F) {
	q := []byte("dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: table}\n")
	f.Add([]byte(`{"rows": [{"id":"a","ts":1,"_copy":0}], "once": true}` + "\n" + `{"crash": "after-commit", "batch": 0}`))
	f.Add([]byte(`{"tick": true}` + "\n# x\n" + `{"restart": true}`))
	f.Fuzz(func(t *testing.T, steps []byte) {
		p, err := parsePair(q, steps)
		if err != nil {
			return
		}
		again, err := parsePair(q, p.steps())
		if err != nil {
			t.Fatalf("rendered steps do not parse: %v\n%s", err, p.steps())
		}
		if !bytes.Equal(again.steps(), p.steps()) {
			t.Fatalf("not stable:\n%s\n%s", p.steps(), again.steps())
		}
	})
}

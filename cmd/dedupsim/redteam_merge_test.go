package main

import (
	"testing"

	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/dedupsim/dedupsim/sweep"
)

// TestRedteamMerge: a shard manifest that contradicts itself (issue 25
// item 5: a run saying passed while an expectation says not ok was merged
// as green) is refused with exit 2 naming the file and the field; a
// consistent failed run is still exit 1.
func TestRedteamMerge(t *testing.T) {
	shard := func(text string) map[string]string {
		return map[string]string{"a/shard.json": text, "a/x-1/report.json": "{}", "a/x-2/report.json": "{}"}
	}
	lost := func(count int) check.Report {
		return check.Report{Findings: []check.Finding{{Kind: "lost", Severity: check.Violation, Count: count}}}
	}
	// run 2 expects no lost event; its report counts got of them.
	m := func(passed bool, e result.Expectation, rep check.Report) map[string]string {
		return shard(manifestText(t, func(m *sweep.Manifest) {
			m.Runs[1].Passed = passed
			m.Runs[1].Expect = []result.Expectation{e}
			m.Runs[1].Report = rep
		}))
	}
	g := []string{"merge", "--out", "$DIR/merged", "$DIR/a"}
	absent := func(got int, ok bool) result.Expectation {
		return result.Expectation{Finding: "lost", Want: "absent", Got: got, OK: ok}
	}
	exactly := func(want string, got int, ok bool) result.Expectation {
		return result.Expectation{Finding: "exactly-once", Want: want, Got: got, OK: ok}
	}
	cases := []badCase{
		{name: "passed with a failed expectation", files: m(true, absent(1, false), lost(1)), args: g, code: 2,
			want: []string{"$DIR/a/shard.json: runs[1].passed: true, but an expectation of the run is not ok"}},
		{name: "failed with every expectation ok", files: m(false, absent(0, true), check.Report{}), args: g, code: 2,
			want: []string{"runs[1].passed: false, but every expectation of the run is ok"}},
		{name: "failed without expectations", files: m(false, result.Expectation{}, check.Report{}), args: g, code: 2,
			want: []string{"runs[1].expect[0].want"}},
		{name: "ok against want and got", files: m(true, absent(1, true), lost(1)), args: g, code: 2,
			want: []string{"runs[1].expect[0].ok: true, but lost want absent got 1 is false"}},
		{name: "got against the report", files: m(true, absent(0, true), lost(3)), args: g, code: 2,
			want: []string{"runs[1].expect[0].got: 0, but the run's check report counts 3 lost"}},
		{name: "negative got", files: m(true, absent(-1, true), check.Report{}), args: g, code: 2,
			want: []string{"runs[1].expect[0].got: -1"}},
		{name: "bad want", files: m(true, result.Expectation{Finding: "lost", Want: "maybe", OK: true}, check.Report{}), args: g, code: 2,
			want: []string{"runs[1].expect[0].want: bad condition \"maybe\""}},
		{name: "exactly-once against the verdict", files: m(true, exactly("true", 1, true), check.Report{}), args: g, code: 2,
			want: []string{"runs[1].expect[0].got: 1, but the run's check verdict says exactlyOnce false"}},
		{name: "exactly-once want", files: m(true, exactly("yes", 0, true), check.Report{}), args: g, code: 2,
			want: []string{"runs[1].expect[0].want: \"yes\": want true or false"}},
		{name: "strict against the table", files: m(true, result.Expectation{Finding: "table-clean", Want: "0", Got: 0, OK: true},
			check.Report{Table: check.Table{NeverLost: 2}}), args: g, code: 2,
			want: []string{"runs[1].expect[0].got: 0, but the run's table has 0 events more than once and 2 lost"}},
		{name: "fault that fired said missing", files: m(true, result.Expectation{Finding: "fault-fired:crash", Want: "present", OK: true}, check.Report{}), args: g, code: 2,
			want: []string{"runs[1].expect[0].ok: true"}},
		// Consistent: a failed run is a failed merge (1), never green.
		{name: "consistent failed run", files: m(false, absent(1, false), lost(1)), args: g, code: 1,
			want: []string{"1 of 2 runs did not meet their expectations: x (seed 2)"}},
	}
	t.Logf("merge red-team: %d cases", badInputCorpus(t, cases))
}

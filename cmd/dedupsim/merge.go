package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/spf13/cobra"
)

// mergeLong is merge's --help text.
const mergeLong = `merge reads the shard.json each shard of a sweep wrote into its output folder (SHARD_OUT)
and writes DIR/index.html (linking to the shards' report folders), DIR/junit.xml and
DIR/summary.md over every run, in the order one unsharded sweep would have listed them; when
GITHUB_STEP_SUMMARY is set (GitHub Actions), summary.md is appended to it.

Exit status: 1 when a shard is missing (none of the folders holds it, or a folder has no
shard.json), a shard is missing seeds (it stopped early, or report folders are gone), a fault a
scenario asks for never fired in any seed of any shard, or a run missed its expectations; 2
when the folders are not shards of one sweep (other scenarios, seeds, shard count or dedupsim
version), a shard is given twice, or a shard.json is malformed; 0 otherwise.`

func newMergeCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge [--out DIR] SHARD_OUT...",
		Short: "Combine the outputs of a sharded sweep into one index.html, junit.xml and summary",
		Long:  mergeLong,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMerge(cmd.OutOrStdout(), args, out)
		},
	}
	cmd.Flags().StringVar(&out, "out", "out", "folder for the merged index.html, junit.xml and summary.md")
	return cmd
}

// runMerge is merge's RunE (its one flag is --out): it reads the shards
// in dirs, checks that they are one sweep, and writes the reports over
// all their runs into out.
func runMerge(w io.Writer, dirs []string, out string) error {
	if err := checkOut("merge", out); err != nil {
		return badInput(err)
	}
	shards, problems, err := loadShards(dirs, out) // problems: missing shards and seeds, exit 1
	if err != nil {
		return err
	}
	// Nothing is written yet: the reports must not land inside a shard.
	var shardDirs []namedPath
	for _, d := range dirs {
		shardDirs = append(shardDirs, readsDir("the shard folder", d))
	}
	if err := refuseOverlap("merge", shardDirs, writesInFolder("--out", out, "index.html", "junit.xml", "summary.md")); err != nil {
		return badInput(err)
	}
	if len(shards) == 0 {
		return &exitError{code: 1, err: fmt.Errorf("merge: no shard to merge: %s", strings.Join(problems, "; "))}
	}
	if err := sameSweep(shards); err != nil {
		return badInput(fmt.Errorf("merge: %w", err))
	}
	sort.Slice(shards, func(a, b int) bool { return shards[a].m.Shard < shards[b].m.Shard })
	ref := shards[0].m
	problems = append(problems, absentShards(shards, ref.Shards)...)
	items, cov, missing := mergeItems(shards, len(ref.Scenarios))
	problems = append(problems, missing...)
	runs, entries, err := mergedEntries(out, items)
	if err != nil {
		return err
	}
	for i, sc := range ref.Scenarios {
		if miss := faults.Missing(sc.Faults, cov[i]); len(miss) > 0 {
			problems = append(problems, fmt.Sprintf("%s: faults never fired in any seed of any shard: %s", sc.Name, strings.Join(miss, ", ")))
		}
	}
	return finishMerge(w, out, fmt.Sprintf("%d of %d shards", len(shards), ref.Shards), runs, entries, problems)
}

// loadShards reads the shard.json of every folder in dirs. A folder
// without one is a problem (exit 1, reported with the others at the end);
// a folder that is not one, is out, or holds a malformed shard.json is bad
// input.
func loadShards(dirs []string, out string) (shards []loadedShard, problems []string, err error) {
	for _, dir := range dirs {
		fi, err := os.Stat(dir)
		switch {
		case err != nil:
			return nil, nil, badInput(fmt.Errorf("merge: %s: no such folder", dir))
		case !fi.IsDir():
			return nil, nil, badInput(fmt.Errorf("merge: %s: not a folder (want a sweep's --out folder)", dir))
		}
		if same, _ := sameFolder(dir, out); same {
			return nil, nil, badInput(fmt.Errorf("merge: --out %s is the shard folder %s: merge into another folder", out, dir))
		}
		m, err := readManifest(filepath.Join(dir, "shard.json"))
		if errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, fmt.Sprintf("%s has no shard.json (its sweep did not finish, or it is not a sweep's output)", dir))
			continue
		}
		if err != nil {
			return nil, nil, badInput(fmt.Errorf("merge: %w", err))
		}
		shards = append(shards, loadedShard{dir: dir, m: m})
	}
	return shards, problems, nil
}

// absentShards is the problem of the shards of n that none of the folders
// holds, if any (the first ten named).
func absentShards(shards []loadedShard, n int) []string {
	have := map[int]bool{}
	for _, s := range shards {
		have[s.m.Shard] = true
	}
	var absent []string
	for i := 0; i < n; i++ {
		if !have[i] {
			absent = append(absent, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(absent) == 0 {
		return nil
	}
	if len(absent) > 10 {
		absent = append(absent[:10], fmt.Sprintf("and %d more", len(absent)-10))
	}
	return []string{"shards missing: " + strings.Join(absent, ", ")}
}

// mergeItem is one run of a shard, placed in the merged sweep.
type mergeItem struct {
	si   int // the scenario's index in the sweep
	seed uint64
	run  *result.Run
	dir  string // the run's report folder
}

// mergeItems lists the runs of every shard in the order of one unsharded
// sweep (scenario, then seed), with the faults that fired per scenario
// over every shard and the seeds each shard owed but misses.
func mergeItems(shards []loadedShard, nScenarios int) ([]mergeItem, []faults.Coverage, []string) {
	var items []mergeItem
	var missing []string
	cov := make([]faults.Coverage, nScenarios)
	for i := range cov {
		cov[i] = faults.Coverage{}
	}
	for _, s := range shards {
		missing = append(missing, s.missing()...)
		pos := map[string]int{}
		for i, sc := range s.m.Scenarios {
			pos[sc.Name] = i
			cov[i].Merge(sc.Coverage)
		}
		for _, r := range s.m.Runs {
			items = append(items, mergeItem{pos[r.Scenario], r.Seed, r.run(), filepath.Join(s.dir, r.Dir)})
		}
	}
	sort.Slice(items, func(a, b int) bool {
		if items[a].si != items[b].si {
			return items[a].si < items[b].si
		}
		return items[a].seed < items[b].seed
	})
	return items, cov, missing
}

// mergedEntries are the runs of items and their index entries, each
// linking to its report folder relative to out.
func mergedEntries(out string, items []mergeItem) ([]*result.Run, []reports.IndexEntry, error) {
	absOut, err := filepath.Abs(out)
	if err != nil {
		return nil, nil, &exitError{code: 1, err: err}
	}
	var runs []*result.Run
	var entries []reports.IndexEntry
	for _, it := range items {
		abs, err := filepath.Abs(it.dir)
		if err != nil {
			return nil, nil, &exitError{code: 1, err: err}
		}
		rel, err := filepath.Rel(absOut, abs)
		if err != nil {
			return nil, nil, &exitError{code: 1, err: err}
		}
		runs = append(runs, it.run)
		entries = append(entries, reports.IndexEntry{Run: it.run, Dir: filepath.ToSlash(rel)})
	}
	return runs, entries, nil
}

// finishMerge prints the runs that missed their expectations and a line
// over the merged shards, writes the reports, and gives the exit status:
// 1 for any problem (missing shards, seeds or faults), then the runs'
// expectations.
func finishMerge(w io.Writer, out, merged string, runs []*result.Run, entries []reports.IndexEntry, problems []string) error {
	for _, r := range runs {
		if !r.Passed {
			printRun(w, r)
		}
	}
	if err := writeOutputs(out, runs, entries, true); err != nil {
		return err
	}
	passed := 0
	for _, r := range runs {
		if r.Passed {
			passed++
		}
	}
	fmt.Fprintf(w, "merged %s: %d of %d runs met their expectations; report: %s\n",
		merged, passed, len(runs), filepath.Join(out, "index.html"))
	if len(problems) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("merge: %s", strings.Join(problems, "; "))}
	}
	return failed(runs)
}

type loadedShard struct {
	dir string
	m   *manifest
}

// maxManifestBytes bounds what merge reads of one shard.json (a summary
// is about 2 KB per run).
const maxManifestBytes = 1 << 30

// readManifest decodes a shard.json strictly and checks it against its own
// sweep: every value in its domain, every run one the shard owed.
func readManifest(path string) (*manifest, error) {
	m, err := decodeManifest(path)
	if err != nil {
		return nil, err
	}
	if err := m.check(path); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeManifest reads a shard.json of at most maxManifestBytes: one JSON
// object, no unknown field, nothing after it.
func decodeManifest(path string) (*manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, maxManifestBytes>>20)
	}
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: not a shard manifest: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: trailing data after the manifest", path)
	}
	return &m, nil
}

// fieldError makes the error of one field of the file at path:
// "PATH: FIELD: WHAT".
type fieldError func(field, format string, a ...any) error

func fieldErrors(path string) fieldError {
	return func(field, format string, a ...any) error {
		return fmt.Errorf("%s: %s: %s", path, field, fmt.Sprintf(format, a...))
	}
}

// check checks a decoded shard.json (read from path) against its own
// sweep: the shard and its seeds, then its scenarios, then its runs.
func (m *manifest) check(path string) error {
	bad := fieldErrors(path)
	switch {
	case m.Format != manifestFormat:
		return bad("format", "%q: want %q (a shard.json written by dedupsim sweep)", m.Format, manifestFormat)
	case m.Shards < 1 || m.Shards > maxShards:
		return bad("shards", "%d: want a number of shards in [1, %d]", m.Shards, maxShards)
	case m.Shard < 0 || m.Shard >= m.Shards:
		return bad("shard", "%d: want a shard index in [0, %d]", m.Shard, m.Shards-1)
	case checkSeedRange(m.FirstSeed, m.Seeds) != nil:
		return bad("seeds", "firstSeed %d and seeds %d: want at least one seed, the last at most 2^64-1", m.FirstSeed, m.Seeds)
	case uint64(m.Shards) > m.Seeds:
		return bad("shards", "%d shards of %d seeds", m.Shards, m.Seeds)
	case len(m.Scenarios) == 0:
		return bad("scenarios", "none")
	}
	pos, err := m.checkScenarios(bad)
	if err != nil {
		return err
	}
	return m.checkRuns(bad, pos)
}

// checkScenarios checks the manifest's scenarios (safe, distinct names,
// the seeds the shard owes, coverage counts) and returns each one's index.
func (m *manifest) checkScenarios(bad fieldError) (map[string]int, error) {
	want := shardSeeds(m.Seeds, m.Shard, m.Shards)
	pos := map[string]int{}
	for i, s := range m.Scenarios {
		field := fmt.Sprintf("scenarios[%d]", i)
		if err := checkRunName(s.Name); err != nil {
			return nil, bad(field+".name", "%v", err)
		}
		if _, dup := pos[s.Name]; dup {
			return nil, bad(field+".name", "%q given twice", s.Name)
		}
		if s.Expected != want {
			return nil, bad(field+".expected", "%d: shard %d/%d of %d seeds owes %d", s.Expected, m.Shard, m.Shards, m.Seeds, want)
		}
		for k, v := range s.Coverage {
			if v < 0 {
				return nil, bad(field+".coverage."+k, "%d: want a count >= 0", v)
			}
		}
		pos[s.Name] = i
	}
	return pos, nil
}

// checkRuns checks that every run of the manifest is one the shard owed
// (a scenario in pos, a seed of the shard, each once) in its report folder.
func (m *manifest) checkRuns(bad fieldError, pos map[string]int) error {
	seen := map[string]bool{}
	perScenario := map[string]int{}
	for i, r := range m.Runs {
		field := fmt.Sprintf("runs[%d]", i)
		if _, ok := pos[r.Scenario]; !ok {
			return bad(field+".scenario", "%q is not a scenario of the sweep", r.Scenario)
		}
		k := r.Seed - m.FirstSeed
		if r.Seed < m.FirstSeed || k >= m.Seeds || k%uint64(m.Shards) != uint64(m.Shard) {
			return bad(field+".seed", "%d is not a seed of shard %d/%d (seeds %d + k, k = %d, %d+%d, ... below %d)", r.Seed, m.Shard, m.Shards, m.FirstSeed, m.Shard, m.Shard, m.Shards, m.Seeds)
		}
		key := fmt.Sprintf("%s-%d", r.Scenario, r.Seed)
		if seen[key] {
			return bad(field, "%s seed %d given twice", r.Scenario, r.Seed)
		}
		seen[key] = true
		if r.Dir != key {
			return bad(field+".dir", "%q: want %q", r.Dir, key)
		}
		if r.ElapsedMs < 0 || r.ElapsedMs != r.ElapsedMs {
			return bad(field+".elapsedMs", "%v: want a duration >= 0", r.ElapsedMs)
		}
		if err := checkVerdict(bad, field, &r.Run); err != nil {
			return err
		}
		perScenario[r.Scenario]++
	}
	for i, s := range m.Scenarios {
		if n := perScenario[s.Name]; uint64(n) > s.Expected {
			return bad(fmt.Sprintf("scenarios[%d].expected", i), "%d, but the manifest holds %d runs of %s", s.Expected, n, s.Name)
		}
	}
	return nil
}

// checkVerdict refuses a run whose verdict contradicts its own record
// (issue 25: a run saying passed while one of its expectations says not
// ok was merged green): passed is exactly "every expectation ok"; each
// expectation's ok is re-judged from its want and got; a finding's got is
// the count of that finding in the run's check report, the exactly-once
// got the report's verdict.
func checkVerdict(bad fieldError, field string, r *result.Run) error {
	all := true
	for j, e := range r.Expect {
		ef := fmt.Sprintf("%s.expect[%d]", field, j)
		if e.Got < 0 {
			return bad(ef+".got", "%d: want a count >= 0", e.Got)
		}
		var ok bool
		switch {
		case e.Finding == "exactly-once":
			if e.Want != "true" && e.Want != "false" {
				return bad(ef+".want", "%q: want true or false", e.Want)
			}
			got := 0
			if r.Report.Verdict.ExactlyOnce {
				got = 1
			}
			if e.Got != got {
				return bad(ef+".got", "%d, but the run's check verdict says exactlyOnce %v", e.Got, r.Report.Verdict.ExactlyOnce)
			}
			ok = (e.Got == 1) == (e.Want == "true")
		case e.Finding == scenarios.StrictExpectation:
			if tb := r.Report.Table; e.Got != tb.MoreThanOnce+tb.NeverLost {
				return bad(ef+".got", "%d, but the run's table has %d events more than once and %d lost", e.Got, tb.MoreThanOnce, tb.NeverLost)
			}
			ok = e.Got == 0
		case strings.HasPrefix(e.Finding, "fault-fired:"):
			ok = false // listed only for a fault that never fired
		default:
			h, err := scenarios.ExpectationHolds(e.Want, e.Got)
			if err != nil {
				return bad(ef+".want", "%v", err)
			}
			got := 0
			if f := r.Report.Find(check.Kind(e.Finding)); f != nil {
				got = f.Count
			}
			if e.Got != got {
				return bad(ef+".got", "%d, but the run's check report counts %d %s", e.Got, got, e.Finding)
			}
			ok = h
		}
		if e.OK != ok {
			return bad(ef+".ok", "%v, but %s want %s got %d is %v", e.OK, e.Finding, e.Want, e.Got, ok)
		}
		all = all && ok
	}
	if r.Passed != all {
		if r.Passed {
			return bad(field+".passed", "true, but an expectation of the run is not ok: a contradiction, not merged")
		}
		return bad(field+".passed", "false, but every expectation of the run is ok: a contradiction, not merged")
	}
	return nil
}

// sameSweep refuses shards of different sweeps, or one shard twice.
func sameSweep(shards []loadedShard) error {
	a := shards[0]
	key := func(m *manifest) string {
		var b strings.Builder
		for _, s := range m.Scenarios {
			fmt.Fprintf(&b, "%s=%s[%s];", s.Name, s.File, strings.Join(s.Faults, ","))
		}
		return b.String()
	}
	seen := map[int]string{}
	for _, s := range shards {
		diff := ""
		switch {
		case s.m.Dedupsim != a.m.Dedupsim:
			diff = fmt.Sprintf("dedupsim versions %q and %q", a.m.Dedupsim, s.m.Dedupsim)
		case s.m.Shards != a.m.Shards:
			diff = fmt.Sprintf("%d and %d shards", a.m.Shards, s.m.Shards)
		case s.m.FirstSeed != a.m.FirstSeed || s.m.Seeds != a.m.Seeds:
			diff = fmt.Sprintf("seeds %d+%d and %d+%d", a.m.FirstSeed, a.m.Seeds, s.m.FirstSeed, s.m.Seeds)
		case s.m.Swarm != a.m.Swarm:
			diff = "swarm mode on in one, off in the other"
		case s.m.Strict != a.m.Strict:
			diff = "--strict in one, not in the other"
		case key(s.m) != key(a.m):
			diff = "other scenarios (names, files or faults)"
		}
		if diff != "" {
			return fmt.Errorf("%s and %s are not shards of one sweep: %s", a.dir, s.dir, diff)
		}
		if prev, dup := seen[s.m.Shard]; dup {
			return fmt.Errorf("shard %d/%d given twice: %s and %s", s.m.Shard, s.m.Shards, prev, s.dir)
		}
		seen[s.m.Shard] = s.dir
	}
	return nil
}

// missing lists the seeds the shard owed but has no run (or no report
// folder) for.
func (s loadedShard) missing() []string {
	var out []string
	name := fmt.Sprintf("shard %d/%d (%s)", s.m.Shard, s.m.Shards, s.dir)
	if s.m.Stopped != "" {
		out = append(out, fmt.Sprintf("%s stopped before its last seed: %s", name, s.m.Stopped))
	}
	bySc := map[string][]uint64{}
	for _, r := range s.m.Runs {
		if _, err := os.Lstat(filepath.Join(s.dir, r.Dir, "report.json")); err != nil {
			out = append(out, fmt.Sprintf("%s: the report folder %s is missing", name, r.Dir))
			continue
		}
		bySc[r.Scenario] = append(bySc[r.Scenario], r.Seed)
	}
	for _, sc := range s.m.Scenarios {
		got := bySc[sc.Name]
		if uint64(len(got)) == sc.Expected {
			continue
		}
		slices.Sort(got)
		first, cur := uint64(0), newSeedCursor(s.m.FirstSeed, s.m.Seeds, s.m.Shard, s.m.Shards)
		for i := 0; ; i++ {
			seed, ok := cur.next()
			if !ok {
				break
			}
			if i >= len(got) || got[i] != seed {
				first = seed
				break
			}
		}
		out = append(out, fmt.Sprintf("%s: %s: %d of %d seeds missing, the first %d", name, sc.Name, sc.Expected-uint64(len(got)), sc.Expected, first))
	}
	return out
}

// sameFolder says whether a and b are one folder (b may not exist yet).
func sameFolder(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

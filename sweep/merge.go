package sweep

import (
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
	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/scenarios/result"
)

// Merging: `dedupsim merge` reads the shard.json of every shard's folder
// (LoadShards), checks that they are shards of one sweep and lists their
// runs in the order one unsharded sweep would have (Merge), and writes
// the reports over all of them (Merged.Finish).

// LoadShards reads the shard.json of every folder in dirs. A folder
// without one is a problem (exit 1, reported with the others at the end,
// by Merge or Merged.Finish); a folder that is not one, is out, or holds a
// malformed shard.json is bad input.
func LoadShards(dirs []string, out string) (shards []Shard, problems []string, err error) {
	for _, dir := range dirs {
		fi, err := os.Stat(dir)
		switch {
		case err != nil:
			return nil, nil, exitcode.Bad(fmt.Errorf("merge: %s: no such folder", dir))
		case !fi.IsDir():
			return nil, nil, exitcode.Bad(fmt.Errorf("merge: %s: not a folder (want a sweep's --out folder)", dir))
		}
		if same, _ := sameFolder(dir, out); same {
			return nil, nil, exitcode.Bad(fmt.Errorf("merge: --out %s is the shard folder %s: merge into another folder", out, dir))
		}
		m, err := ReadManifest(filepath.Join(dir, "shard.json"))
		if errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, fmt.Sprintf("%s has no shard.json (its sweep did not finish, or it is not a sweep's output)", dir))
			continue
		}
		if err != nil {
			return nil, nil, exitcode.Bad(fmt.Errorf("merge: %w", err))
		}
		shards = append(shards, Shard{dir: dir, m: m})
	}
	return shards, problems, nil
}

// absentShards is the problem of the shards of n that none of the folders
// holds, if any (the first ten named).
func absentShards(shards []Shard, n int) []string {
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
func mergeItems(shards []Shard, nScenarios int) ([]mergeItem, []faults.Coverage, []string) {
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
		return nil, nil, exitcode.Fail(err)
	}
	var runs []*result.Run
	var entries []reports.IndexEntry
	for _, it := range items {
		abs, err := filepath.Abs(it.dir)
		if err != nil {
			return nil, nil, exitcode.Fail(err)
		}
		rel, err := filepath.Rel(absOut, abs)
		if err != nil {
			return nil, nil, exitcode.Fail(err)
		}
		runs = append(runs, it.run)
		entries = append(entries, reports.IndexEntry{Run: it.run, Dir: filepath.ToSlash(rel)})
	}
	return runs, entries, nil
}

// Merged is the merge of the shards of one sweep: its runs in the order
// of one unsharded sweep, and the problems found (missing shards, seeds or
// faults).
type Merged struct {
	Runs     []*result.Run
	entries  []reports.IndexEntry
	problems []string
	label    string // "k of n shards"
}

// Merge checks that shards (LoadShards' shards and problems) are shards of
// one sweep, and lists their runs with index entries that link to each
// report folder from out. Nothing is written yet.
func Merge(shards []Shard, problems []string, out string) (*Merged, error) {
	if len(shards) == 0 {
		return nil, exitcode.Fail(fmt.Errorf("merge: no shard to merge: %s", strings.Join(problems, "; ")))
	}
	if err := sameSweep(shards); err != nil {
		return nil, exitcode.Bad(fmt.Errorf("merge: %w", err))
	}
	sort.Slice(shards, func(a, b int) bool { return shards[a].m.Shard < shards[b].m.Shard })
	ref := shards[0].m
	problems = append(problems, absentShards(shards, ref.Shards)...)
	items, cov, missing := mergeItems(shards, len(ref.Scenarios))
	problems = append(problems, missing...)
	runs, entries, err := mergedEntries(out, items)
	if err != nil {
		return nil, err
	}
	for i, sc := range ref.Scenarios {
		if miss := faults.Missing(sc.Faults, cov[i]); len(miss) > 0 {
			problems = append(problems, fmt.Sprintf("%s: faults never fired in any seed of any shard: %s", sc.Name, strings.Join(miss, ", ")))
		}
	}
	return &Merged{Runs: runs, entries: entries, problems: problems, label: fmt.Sprintf("%d of %d shards", len(shards), ref.Shards)}, nil
}

// Finish writes the reports over the merged runs into out, prints a line
// over the merged shards on w, and gives the exit status: 1 for any
// problem (missing shards, seeds or faults), then the runs'
// expectations. The caller prints the runs that missed their
// expectations first.
func (m *Merged) Finish(w io.Writer, out string) error {
	if err := WriteOutputs(out, m.Runs, m.entries, true); err != nil {
		return err
	}
	passed := 0
	for _, r := range m.Runs {
		if r.Passed {
			passed++
		}
	}
	fmt.Fprintf(w, "merged %s: %d of %d runs met their expectations; report: %s\n",
		m.label, passed, len(m.Runs), filepath.Join(out, "index.html"))
	if len(m.problems) > 0 {
		return exitcode.Fail(fmt.Errorf("merge: %s", strings.Join(m.problems, "; ")))
	}
	return Failed(m.Runs)
}

// Shard is one shard of a sweep: its folder and its manifest.
type Shard struct {
	dir string
	m   *Manifest
}

// sameSweep refuses shards of different sweeps, or one shard twice.
func sameSweep(shards []Shard) error {
	a := shards[0]
	key := func(m *Manifest) string {
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
func (s Shard) missing() []string {
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

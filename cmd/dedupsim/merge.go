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
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/spf13/cobra"
)

func newMergeCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge [--out DIR] SHARD_OUT...",
		Short: "Combine the outputs of a sharded sweep into one index.html, junit.xml and summary",
		Long: `merge reads the shard.json each shard of a sweep wrote into its output folder (SHARD_OUT)
and writes DIR/index.html (linking to the shards' report folders), DIR/junit.xml and
DIR/summary.md over every run, in the order one unsharded sweep would have listed them; when
GITHUB_STEP_SUMMARY is set (GitHub Actions), summary.md is appended to it.

Exit status: 1 when a shard is missing (none of the folders holds it, or a folder has no
shard.json), a shard is missing seeds (it stopped early, or report folders are gone), a fault a
scenario asks for never fired in any seed of any shard, or a run missed its expectations; 2
when the folders are not shards of one sweep (other scenarios, seeds, shard count or dedupsim
version), a shard is given twice, or a shard.json is malformed; 0 otherwise.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOut("merge", out); err != nil {
				return badInput(err)
			}
			var problems []string // missing shards and seeds: exit 1
			var shards []loadedShard
			for _, dir := range args {
				fi, err := os.Stat(dir)
				switch {
				case err != nil:
					return badInput(fmt.Errorf("merge: %s: no such folder", dir))
				case !fi.IsDir():
					return badInput(fmt.Errorf("merge: %s: not a folder (want a sweep's --out folder)", dir))
				}
				if same, _ := sameFolder(dir, out); same {
					return badInput(fmt.Errorf("merge: --out %s is the shard folder %s: merge into another folder", out, dir))
				}
				m, err := readManifest(filepath.Join(dir, "shard.json"))
				if errors.Is(err, fs.ErrNotExist) {
					problems = append(problems, fmt.Sprintf("%s has no shard.json (its sweep did not finish, or it is not a sweep's output)", dir))
					continue
				}
				if err != nil {
					return badInput(fmt.Errorf("merge: %w", err))
				}
				shards = append(shards, loadedShard{dir: dir, m: m})
			}
			if len(shards) == 0 {
				return &exitError{code: 1, err: fmt.Errorf("merge: no shard to merge: %s", strings.Join(problems, "; "))}
			}
			if err := sameSweep(shards); err != nil {
				return badInput(fmt.Errorf("merge: %w", err))
			}
			sort.Slice(shards, func(a, b int) bool { return shards[a].m.Shard < shards[b].m.Shard })
			ref := shards[0].m
			have := map[int]bool{}
			for _, s := range shards {
				have[s.m.Shard] = true
			}
			var absent []string
			for i := 0; i < ref.Shards; i++ {
				if !have[i] {
					absent = append(absent, fmt.Sprintf("%d/%d", i, ref.Shards))
				}
			}
			if len(absent) > 0 {
				if len(absent) > 10 {
					absent = append(absent[:10], fmt.Sprintf("and %d more", len(absent)-10))
				}
				problems = append(problems, "shards missing: "+strings.Join(absent, ", "))
			}
			// Runs in the order of one unsharded sweep: scenario, then seed.
			type item struct {
				si   int
				seed uint64
				run  *result.Run
				dir  string
			}
			var items []item
			cov := make([]faults.Coverage, len(ref.Scenarios))
			for i := range cov {
				cov[i] = faults.Coverage{}
			}
			for _, s := range shards {
				problems = append(problems, s.missing()...)
				pos := map[string]int{}
				for i, sc := range s.m.Scenarios {
					pos[sc.Name] = i
					cov[i].Merge(sc.Coverage)
				}
				for _, r := range s.m.Runs {
					items = append(items, item{pos[r.Scenario], r.Seed, r.run(), filepath.Join(s.dir, r.Dir)})
				}
			}
			sort.Slice(items, func(a, b int) bool {
				if items[a].si != items[b].si {
					return items[a].si < items[b].si
				}
				return items[a].seed < items[b].seed
			})
			absOut, err := filepath.Abs(out)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			var runs []*result.Run
			var entries []reports.IndexEntry
			for _, it := range items {
				abs, err := filepath.Abs(it.dir)
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				rel, err := filepath.Rel(absOut, abs)
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				runs = append(runs, it.run)
				entries = append(entries, reports.IndexEntry{Run: it.run, Dir: filepath.ToSlash(rel)})
			}
			for i, sc := range ref.Scenarios {
				if miss := faults.Missing(sc.Faults, cov[i]); len(miss) > 0 {
					problems = append(problems, fmt.Sprintf("%s: faults never fired in any seed of any shard: %s", sc.Name, strings.Join(miss, ", ")))
				}
			}
			w := cmd.OutOrStdout()
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
			fmt.Fprintf(w, "merged %d of %d shards: %d of %d runs met their expectations; report: %s\n",
				len(shards), ref.Shards, passed, len(runs), filepath.Join(out, "index.html"))
			if len(problems) > 0 {
				return &exitError{code: 1, err: fmt.Errorf("merge: %s", strings.Join(problems, "; "))}
			}
			return failed(runs)
		},
	}
	cmd.Flags().StringVar(&out, "out", "out", "folder for the merged index.html, junit.xml and summary.md")
	return cmd
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
	bad := func(field, f string, a ...any) error {
		return fmt.Errorf("%s: %s: %s", path, field, fmt.Sprintf(f, a...))
	}
	switch {
	case m.Format != manifestFormat:
		return nil, bad("format", "%q: want %q (a shard.json written by dedupsim sweep)", m.Format, manifestFormat)
	case m.Shards < 1 || m.Shards > maxShards:
		return nil, bad("shards", "%d: want a number of shards in [1, %d]", m.Shards, maxShards)
	case m.Shard < 0 || m.Shard >= m.Shards:
		return nil, bad("shard", "%d: want a shard index in [0, %d]", m.Shard, m.Shards-1)
	case checkSeedRange(m.FirstSeed, m.Seeds) != nil:
		return nil, bad("seeds", "firstSeed %d and seeds %d: want at least one seed, the last at most 2^64-1", m.FirstSeed, m.Seeds)
	case uint64(m.Shards) > m.Seeds:
		return nil, bad("shards", "%d shards of %d seeds", m.Shards, m.Seeds)
	case len(m.Scenarios) == 0:
		return nil, bad("scenarios", "none")
	}
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
	seen := map[string]bool{}
	for i, r := range m.Runs {
		field := fmt.Sprintf("runs[%d]", i)
		if _, ok := pos[r.Scenario]; !ok {
			return nil, bad(field+".scenario", "%q is not a scenario of the sweep", r.Scenario)
		}
		k := r.Seed - m.FirstSeed
		if r.Seed < m.FirstSeed || k >= m.Seeds || k%uint64(m.Shards) != uint64(m.Shard) {
			return nil, bad(field+".seed", "%d is not a seed of shard %d/%d (seeds %d + k, k = %d, %d+%d, ... below %d)", r.Seed, m.Shard, m.Shards, m.FirstSeed, m.Shard, m.Shard, m.Shards, m.Seeds)
		}
		key := fmt.Sprintf("%s-%d", r.Scenario, r.Seed)
		if seen[key] {
			return nil, bad(field, "%s seed %d given twice", r.Scenario, r.Seed)
		}
		seen[key] = true
		if r.Dir != key {
			return nil, bad(field+".dir", "%q: want %q", r.Dir, key)
		}
		if r.ElapsedMs < 0 || r.ElapsedMs != r.ElapsedMs {
			return nil, bad(field+".elapsedMs", "%v: want a duration >= 0", r.ElapsedMs)
		}
	}
	return &m, nil
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

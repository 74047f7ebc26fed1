package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dedupsim/dedupsim/internal/atomicfile"
	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sim/check"
)

// The shard manifest, shard.json, is what `dedupsim merge` reads: the sweep
// it belongs to (scenarios, seeds, shard i of n, the binary's version), the
// seeds this shard owed per scenario with the faults fired, and a summary
// of every run in job order.

// ManifestFormat is the format line of a shard.json.
const ManifestFormat = "dedupsim-shard/1"

// Manifest is a shard.json.
type Manifest struct {
	Format string `json:"format"`
	// Dedupsim is the version line of the binary that ran the shard;
	// merge refuses shards of different binaries.
	Dedupsim  string             `json:"dedupsim"`
	Shard     int                `json:"shard"`
	Shards    int                `json:"shards"`
	FirstSeed uint64             `json:"firstSeed"`
	Seeds     uint64             `json:"seeds"` // of the whole sweep; this shard ran its share
	Swarm     bool               `json:"swarm"`
	Strict    bool               `json:"strict,omitempty"`
	Scenarios []ManifestScenario `json:"scenarios"`
	Runs      []ManifestRun      `json:"runs"`
	// Stopped says why the shard stopped before its last seed (an engine
	// failure, bad input): its runs are then incomplete.
	Stopped string `json:"stopped,omitempty"`
}

// ManifestScenario is a scenario of the sweep, as one shard ran it.
type ManifestScenario struct {
	Name string `json:"name"`
	// File is the scenario's file, or catalogue:<name>.yaml.
	File string `json:"file"`
	// Expected is how many seeds this shard owed the scenario.
	Expected uint64 `json:"expected"`
	// Faults are the faults the scenario asks for: each must fire in some
	// seed of the whole sweep.
	Faults []string `json:"faults"`
	// Coverage counts what fired over this shard's runs of the scenario.
	Coverage map[string]int `json:"coverage"`
}

// ManifestRun is one run of the shard: its summary, where its report
// folder is, and how long it took.
type ManifestRun struct {
	// Dir is the run's report folder, relative to the shard's folder.
	Dir       string  `json:"dir"`
	ElapsedMs float64 `json:"elapsedMs"`
	result.Run
}

func newManifestRun(r *result.Run, dir string) ManifestRun {
	return ManifestRun{Dir: dir, ElapsedMs: float64(r.Elapsed) / float64(time.Millisecond), Run: *r}
}

// run is the summary merge renders, its elapsed time restored.
func (m ManifestRun) run() *result.Run {
	r := m.Run
	r.Elapsed = time.Duration(m.ElapsedMs * float64(time.Millisecond))
	return &r
}

// maxManifestBytes bounds what merge reads of one shard.json (a summary
// is about 2 KB per run).
const maxManifestBytes = 1 << 30

// ReadManifest decodes a shard.json strictly and checks it against its own
// sweep: every value in its domain, every run one the shard owed. Its
// errors start with path and name the field.
func ReadManifest(path string) (*Manifest, error) {
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
func decodeManifest(path string) (*Manifest, error) {
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
	var m Manifest
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
func (m *Manifest) check(path string) error {
	bad := fieldErrors(path)
	switch {
	case m.Format != ManifestFormat:
		return bad("format", "%q: want %q (a shard.json written by dedupsim sweep)", m.Format, ManifestFormat)
	case m.Shards < 1 || m.Shards > maxShards:
		return bad("shards", "%d: want a number of shards in [1, %d]", m.Shards, maxShards)
	case m.Shard < 0 || m.Shard >= m.Shards:
		return bad("shard", "%d: want a shard index in [0, %d]", m.Shard, m.Shards-1)
	case CheckSeedRange(m.FirstSeed, m.Seeds) != nil:
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
func (m *Manifest) checkScenarios(bad fieldError) (map[string]int, error) {
	want := shardSeeds(m.Seeds, m.Shard, m.Shards)
	pos := map[string]int{}
	for i, s := range m.Scenarios {
		field := fmt.Sprintf("scenarios[%d]", i)
		if err := CheckRunName(s.Name); err != nil {
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
func (m *Manifest) checkRuns(bad fieldError, pos map[string]int) error {
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

// writeManifest writes out/shard.json.
func writeManifest(out string, m Manifest) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return exitcode.Fail(err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return exitcode.Fail(err)
	}
	if err := atomicfile.WriteFile(filepath.Join(out, "shard.json"), append(b, '\n')); err != nil {
		return exitcode.Output(err)
	}
	return nil
}

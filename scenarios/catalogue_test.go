package scenarios

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/scenarios/result"
)

// catalogueSeeds are the seeds every catalogue scenario must pass with. A
// sweep over more seeds (`dedupsim sweep NAME --seeds 10`) is the stronger
// check; these keep `go test` fast.
var catalogueSeeds = []uint64{1, 2}

// tableShape is what a scenario says about its final table beyond the
// findings: no finding covers "the table holds an event twice because the
// operator emitted it twice" (sink-replay-duplicate only counts rows beyond
// the emissions), so the MERGE scenarios' point, that the tail and the
// overlap never reach the table twice, is checked here from the counts.
var tableShape = map[string]string{
	"retry-gap-beyond-delay":                "duplicates", // the idempotent table keeps both emissions
	"retry-gap-beyond-delay-merge":          "unique",     // the MERGE skips the second one
	"shape-change-fresh-checkpoint-merge":   "unique",
	"foreachbatch-dedup-misses-cross-batch": "duplicates",
	"restamped-retries-event-time-key":      "duplicates",
	"restamped-retries-within-watermark":    "unique",
	"replay-table-stable-app-id":            "unique",
	"payments-sizing-scaled":                "unique",
	"production-columns-event-id":           "unique",
}

// TestCatalogue runs every catalogue scenario with catalogueSeeds and
// requires each run to meet the scenario's expectations.
func TestCatalogue(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("empty catalogue")
	}
	for _, s := range all {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			for _, seed := range catalogueSeeds {
				r, err := Run(s, seed, Options{})
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if !r.Passed {
					t.Errorf("seed %d: %s\n%s\nreplay: %s", seed, r.Report.Verdict.Summary, unmet(r), r.Replay)
				}
				checkTable(t, s.Name, seed, r)
			}
		})
	}
}

func unmet(r *result.Run) string {
	var b strings.Builder
	for _, e := range r.Expect {
		if !e.OK {
			b.WriteString("  expected " + e.Finding + " " + e.Want + ", got " + strconv.Itoa(e.Got) + "\n")
		}
	}
	return b.String()
}

func checkTable(t *testing.T, name string, seed uint64, r *result.Run) {
	t.Helper()
	want, ok := tableShape[name]
	if !ok {
		return
	}
	c := r.Report.Counts
	if !c.HasTable {
		t.Errorf("seed %d: no final table, but the catalogue test expects a %s table", seed, want)
		return
	}
	switch {
	case want == "unique" && c.TableRows != c.TableEvents:
		t.Errorf("seed %d: the final table holds %d rows for %d events: some event is in it twice", seed, c.TableRows, c.TableEvents)
	case want == "duplicates" && c.TableRows <= c.TableEvents:
		t.Errorf("seed %d: the final table holds %d rows for %d events: the scenario is meant to show events held twice", seed, c.TableRows, c.TableEvents)
	}
}

// TestCatalogueFiles holds every catalogue file to the catalogue's rules:
// its name is its file name, it says what it reproduces and where from,
// and it states a verdict.
func TestCatalogueFiles(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		base := strings.TrimSuffix(path.Base(strings.TrimPrefix(s.File, "catalogue:")), ".yaml")
		if s.Name != base {
			t.Errorf("%s: name %q differs from the file name", s.File, s.Name)
		}
		if s.Description == "" || s.Source == "" {
			t.Errorf("%s: a catalogue scenario needs a description and a source (the seed article)", s.File)
		}
		if s.Expect.ExactlyOnce == nil || len(s.Expect.Findings) == 0 {
			t.Errorf("%s: a catalogue scenario states its verdict (expect.exactly_once) and its findings", s.File)
		}
	}
	for name := range tableShape {
		if _, err := Find(name); err != nil {
			t.Errorf("tableShape names %q: %v", name, err)
		}
	}
}

// TestCatalogueDocumented: scenarios/README.md lists every catalogue
// scenario in its table (rows that start with a link to the file), and
// nothing else.
func TestCatalogueDocumented(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| \\[`([a-z0-9-]+)`\\]\\(catalogue/([a-z0-9-]+)\\.yaml\\)")
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(data), -1) {
		if m[1] != m[2] {
			t.Errorf("scenarios/README.md: %s links to catalogue/%s.yaml", m[1], m[2])
		}
		documented[m[1]] = true
	}
	var missing []string
	for _, s := range all {
		if !documented[s.Name] {
			missing = append(missing, s.Name)
		}
		delete(documented, s.Name)
	}
	var extra []string
	for n := range documented {
		extra = append(extra, n)
	}
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("scenarios/README.md's catalogue table misses %s", strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		t.Errorf("scenarios/README.md's catalogue table lists %s, not in the catalogue", strings.Join(extra, ", "))
	}
}

// TestIncidents runs every incident file (scenarios/incidents) on two
// seeds: each is a regression test that must keep passing.
func TestIncidents(t *testing.T) {
	files, err := filepath.Glob("incidents/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no incident files: %v", err)
	}
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, seed := range []uint64{1, 2} {
			r, err := Run(s, seed, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Passed {
				t.Errorf("%s seed %d: %s (replay: %s)", f, seed, r.Report.Verdict.Summary, r.Replay)
			}
		}
	}
}

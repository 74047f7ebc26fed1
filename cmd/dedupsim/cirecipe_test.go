package main

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// workflow is the part of a GitHub Actions workflow the recipe uses.
type workflow struct {
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Needs    any `yaml:"needs"`
		Strategy struct {
			Matrix map[string][]int `yaml:"matrix"`
		} `yaml:"strategy"`
		Env   map[string]string `yaml:"env"`
		Steps []struct {
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// recipe is the GitHub Actions workflow of docs/ci.md.
func recipe(t *testing.T) workflow {
	b, err := os.ReadFile("../../docs/ci.md")
	if err != nil {
		t.Fatal(err)
	}
	const start = "```yaml\n# .github/workflows/dedup.yml\n"
	i := strings.Index(string(b), start)
	if i < 0 {
		t.Fatal("docs/ci.md has no workflow block")
	}
	body := string(b)[i+len("```yaml\n"):]
	body = body[:strings.Index(body, "```")]
	var wf workflow
	if err := yaml.Unmarshal([]byte(body), &wf); err != nil {
		t.Fatal(err)
	}
	return wf
}

// pseudoVersion is a Go pseudo-version: the commit is its last part.
var pseudoVersion = regexp.MustCompile(`^v\d+\.\d+\.\d+-(?:\d+\.)?\d{14}-([0-9a-f]{12})$`)

// TestCIRecipe holds docs/ci.md's workflow to what it promises: a
// DEDUPSIM_VERSION that exists (a tag, or the pseudo-version of a commit of
// this repository, as `dedupsim version`'s pin line prints it), --strict on
// every run and sweep, artifact names that cannot collide and a download
// pattern that matches the shards only; then it runs the recipe's commands
// job by job in a scratch repository (fewer seeds), passing the artifacts
// on as GitHub would.
func TestCIRecipe(t *testing.T) {
	wf := recipe(t)
	v := wf.Env["DEDUPSIM_VERSION"]
	var commit string
	if m := pseudoVersion.FindStringSubmatch(v); m != nil {
		commit = m[1]
	}
	readme, _ := os.ReadFile("../../README.md")
	if !strings.Contains(string(readme), "DEDUPSIM_VERSION: "+v) {
		t.Errorf("README.md's recipe pins another version than docs/ci.md's %s", v)
	}
	if out, err := exec.Command("git", "-C", "../..", "rev-parse", "--is-shallow-repository").Output(); err != nil || strings.TrimSpace(string(out)) == "true" {
		t.Logf("no full git history here (%v): the version %s is not checked against it", err, v)
	} else if commit != "" {
		if err := exec.Command("git", "-C", "../..", "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
			t.Errorf("DEDUPSIM_VERSION %s: commit %s is not in this repository", v, commit)
		}
	} else if err := exec.Command("git", "-C", "../..", "rev-parse", "--verify", "--quiet", "refs/tags/"+v).Run(); err != nil {
		t.Errorf("DEDUPSIM_VERSION %s: neither a tag of this repository nor a commit's pseudo-version", v)
	}

	// Artifacts: every upload's name (matrix expanded) is its own, and
	// each download pattern matches uploads of the jobs it needs only.
	uploads := map[string]string{} // name -> job
	expand := func(s string, shard int) string {
		return strings.ReplaceAll(s, "${{ matrix.shard }}", strconv.Itoa(shard))
	}
	jobs := []string{"scenarios", "sweep", "merge"}
	for _, j := range jobs {
		if _, ok := wf.Jobs[j]; !ok {
			t.Fatalf("no job %s", j)
		}
	}
	shardsOf := func(j string) []int {
		if m := wf.Jobs[j].Strategy.Matrix["shard"]; len(m) > 0 {
			return m
		}
		return []int{0}
	}
	for _, j := range jobs {
		for _, shard := range shardsOf(j) {
			for _, st := range wf.Jobs[j].Steps {
				if strings.HasPrefix(st.Uses, "actions/upload-artifact") {
					name := expand(st.With["name"], shard)
					if prev, ok := uploads[name]; ok {
						t.Errorf("artifact %q uploaded by %s and %s", name, prev, j)
					}
					uploads[name] = j
				}
				if (strings.HasPrefix(st.Run, "dedupsim run") || strings.HasPrefix(st.Run, "dedupsim sweep")) && !strings.Contains(st.Run, "--strict") {
					t.Errorf("%s: %q without --strict", j, st.Run)
				}
				if strings.HasPrefix(st.Run, "go install") && !strings.HasSuffix(strings.TrimSpace(st.Run), "@${DEDUPSIM_VERSION}") {
					t.Errorf("%s: %q does not install DEDUPSIM_VERSION", j, st.Run)
				}
			}
		}
	}
	for _, st := range wf.Jobs["merge"].Steps {
		if p := st.With["pattern"]; strings.HasPrefix(st.Uses, "actions/download-artifact") {
			for name, from := range uploads {
				if ok, _ := path.Match(p, name); ok != (from == "sweep") {
					t.Errorf("download pattern %q and artifact %q of job %s", p, name, from)
				}
			}
		}
	}

	// The commands, in a scratch repository.
	bin := binary(t)
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	for name, text := range map[string]string{
		"dedup/scenarios/payments.yaml": `name: payments
query:
  dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}
  watermark: {column: ts, delay: 30 seconds}
  shuffle_partitions: 2
  sink: {kind: table, app_id: payments-dedup-v1}
fault_phase: 10s
heal_phase: 10s
sources:
  - {name: default, rate: {per_sec: 20}}
faults:
  crash-after-sink-write: {rate: 0.3}
  producer-retry: {probability: 0.1, gap_ms: 2s}
expect:
  findings: {table-duplicate: absent, sink-replay-duplicate: absent}
`,
		// An exec query left beside the scenarios: skipped with a note.
		"dedup/scenarios/scratch/query.yaml":   "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: table}\n",
		"dedup/incidents/inc-1/query.yaml":     "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 2 minutes}\nsink: {kind: table}\n",
		"dedup/incidents/inc-1/steps.jsonl":    `{"rows": [{"id":"a","ts":1}, {"id":"a","ts":20}]}` + "\n",
		"dedup/incidents/inc-1/expected.jsonl": `{"unique": ["id"]}` + "\n",
	} {
		p := filepath.Join(repo, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	artifacts := filepath.Join(root, "artifacts")
	env := append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "GITHUB_STEP_SUMMARY=")
	for _, j := range jobs {
		job := wf.Jobs[j]
		for _, shard := range shardsOf(j) {
			work := filepath.Join(root, "jobs", j+"-"+strconv.Itoa(shard))
			os.MkdirAll(work, 0o755)
			jenv := append([]string{}, env...)
			for k, v := range job.Env {
				v = strings.ReplaceAll(v, "${{ strategy.job-index }}", strconv.Itoa(shard))
				v = strings.ReplaceAll(v, "${{ strategy.job-total }}", strconv.Itoa(len(shardsOf(j))))
				jenv = append(jenv, k+"="+v)
			}
			for _, st := range job.Steps {
				switch {
				case strings.HasPrefix(st.Uses, "actions/checkout"):
					if out, err := exec.Command("cp", "-r", repo+"/.", work).CombinedOutput(); err != nil {
						t.Fatalf("checkout: %v %s", err, out)
					}
				case strings.HasPrefix(st.Uses, "actions/upload-artifact"):
					dst := filepath.Join(artifacts, expand(st.With["name"], shard))
					for _, p := range strings.Fields(st.With["path"]) {
						os.MkdirAll(dst, 0o755)
						if out, err := exec.Command("cp", "-r", filepath.Join(work, p), dst+"/").CombinedOutput(); err != nil {
							t.Fatalf("%s: upload %s: %v %s", j, p, err, out)
						}
					}
				case strings.HasPrefix(st.Uses, "actions/download-artifact"):
					names, _ := os.ReadDir(artifacts)
					for _, n := range names {
						if ok, _ := path.Match(st.With["pattern"], n.Name()); ok {
							dst := filepath.Join(work, st.With["path"], n.Name())
							os.MkdirAll(dst, 0o755)
							// GitHub puts the artifact's files (out/...) in the folder.
							if out, err := exec.Command("cp", "-r", filepath.Join(artifacts, n.Name(), "out")+"/.", dst).CombinedOutput(); err != nil {
								t.Fatalf("download %s: %v %s", n.Name(), err, out)
							}
						}
					}
				case st.Uses != "", strings.HasPrefix(st.Run, "go install"):
				case st.Run != "":
					cmdline := strings.ReplaceAll(st.Run, "--seeds 200", "--seeds 8")
					c := exec.Command("bash", "-euo", "pipefail", "-c", cmdline)
					c.Dir, c.Env = work, jenv
					out, err := c.CombinedOutput()
					if err != nil {
						t.Fatalf("%s (shard %d): %s: %v\n%s", j, shard, cmdline, err, out)
					}
					if strings.HasPrefix(cmdline, "dedupsim run") && !strings.Contains(string(out), "scratch/query.yaml: skipped, not a scenario") {
						t.Errorf("run did not note the exec query it skipped:\n%s", out)
					}
				}
			}
		}
	}
	var got []string
	filepath.WalkDir(artifacts, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, "junit.xml") || strings.HasSuffix(p, "index.html")) {
			r, _ := filepath.Rel(artifacts, p)
			got = append(got, r)
		}
		return nil
	})
	sort.Strings(got)
	for _, w := range []string{"dedup-reports/out/junit.xml", "dedup-reports/out/incidents/inc-1/junit.xml", "dedup-sweep-merged/merged/index.html",
		"dedup-sweep-merged/merged/junit.xml", "dedup-sweep-shard-3/out/junit.xml"} {
		if !slices.Contains(got, w) {
			t.Errorf("artifacts lack %s: %v", w, got)
		}
	}
}

// TestVersionPin: the pin line installs the very build: a module version
// (a tag or a commit's pseudo-version), else the commit; none for a build
// with uncommitted changes or without a version.
func TestVersionPin(t *testing.T) {
	for _, tc := range []struct {
		b        build
		ref, why string
	}{
		{build{version: "v1.2.0"}, "v1.2.0", ""},
		{build{version: "v0.0.0-20261206045228-195ed9eb13c9", revision: "195ed9eb13c909a2c5c47c26b98604e014166075"}, "v0.0.0-20261206045228-195ed9eb13c9", ""},
		{build{version: "(devel)", revision: "195ed9eb13c909a2c5c47c26b98604e014166075"}, "195ed9eb13c909a2c5c47c26b98604e014166075", ""},
		{build{version: "v0.0.0-20261206045228-195ed9eb13c9+dirty", revision: "195ed9eb13c9", modified: true}, "", "uncommitted changes"},
		{build{version: "(devel)", revision: "195ed9eb13c9", modified: true}, "", "uncommitted changes"},
		{build{version: "(devel)"}, "", "no version recorded"},
	} {
		ref, why := tc.b.pin()
		if ref != tc.ref || !strings.Contains(why, tc.why) || (tc.why == "") != (why == "") {
			t.Errorf("%+v: pin %q (%q), want %q (%q)", tc.b, ref, why, tc.ref, tc.why)
		}
	}
}

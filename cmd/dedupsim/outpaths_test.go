package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/scenarios"
	"pgregory.net/rapid"
)

// TestRedteamOverlapProperties: a path spelt another way (./, a/.., a
// doubled slash, relative or absolute) is still the same file, and a
// file in a folder read is inside it, whatever the spelling.
func TestRedteamOverlapProperties(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "f"), nil, 0o644)
	t.Chdir(dir)
	rapid.Check(t, func(t *rapid.T) {
		// A spelling of a/f: detours into b and back, dots, slashes.
		var parts []string
		if rapid.Bool().Draw(t, "absolute") {
			parts = append(parts, dir)
		}
		for range rapid.IntRange(0, 3).Draw(t, "dots") {
			parts = append(parts, ".")
		}
		parts = append(parts, "a")
		for range rapid.IntRange(0, 3).Draw(t, "detours") {
			parts = append(parts, "b", "..")
		}
		sep := rapid.SampledFrom([]string{"/", "//"}).Draw(t, "sep")
		name := rapid.SampledFrom([]string{"f", "new"}).Draw(t, "name")
		p := strings.Join(append(parts, name), sep)
		want := filepath.Join(dir, "a", name)
		if !samePath(p, want) {
			t.Fatalf("%s and %s: not the same file", p, want)
		}
		if !inside(p, filepath.Join(dir, "a")) {
			t.Fatalf("%s is not inside %s", p, filepath.Join(dir, "a"))
		}
		if err := refuseOverlap("v", []namedPath{readsFile("--in", want)}, []namedPath{writesFile("--out", p)}); err == nil || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s over %s: %v", p, want, err)
		}
		if err := refuseOverlap("v", []namedPath{readsFile("--in", filepath.Join(dir, "a", "other"))}, []namedPath{writesFile("--out", p)}); err != nil {
			t.Fatalf("a different file refused: %v", err)
		}
	})
}

// A terminal or /dev/null read and written replaces nothing: allowed.
func TestOverlapDevicesAllowed(t *testing.T) {
	if err := refuseOverlap("exec", []namedPath{readsFile("--input", "/dev/null")}, []namedPath{writesFile("--out", "/dev/null")}); err != nil {
		t.Fatal(err)
	}
}

// TestRunFolders: which scenario files lie inside a report folder a run
// writes (<out>/<scenario>-<seed>/), by table.
func TestRunFolders(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "o")
	list := func(files ...string) []*scenarios.Scenario {
		var l []*scenarios.Scenario
		for _, f := range files {
			l = append(l, &scenarios.Scenario{Name: "x", File: f})
		}
		return l
	}
	one := func(s uint64) bool { return s == 3 }
	for _, tc := range []struct {
		name   string
		list   []*scenarios.Scenario
		refuse bool
	}{
		{"inside the run's folder", list(filepath.Join(out, "x-3", "s.yaml")), true},
		{"deeper inside", list(filepath.Join(out, "x-3", "a", "b.yaml")), true},
		{"another seed's folder", list(filepath.Join(out, "x-4", "s.yaml")), false},
		{"a seed written with a leading zero", list(filepath.Join(out, "x-03", "s.yaml")), false},
		{"another name", list(filepath.Join(out, "y-3", "s.yaml")), false},
		{"top of out", list(filepath.Join(out, "s.yaml")), false},
		{"outside out", list(filepath.Join(dir, "x-3", "s.yaml")), false},
		{"the catalogue", []*scenarios.Scenario{{Name: "x", File: "catalogue:x.yaml"}}, false},
		{"another scenario's folder", []*scenarios.Scenario{{Name: "x", File: filepath.Join(out, "y-3", "s.yaml")}, {Name: "y", File: filepath.Join(dir, "y.yaml")}}, true},
	} {
		err := refuseRunFolders("run", out, tc.list, one)
		if (err != nil) != tc.refuse {
			t.Errorf("%s: err %v, want refused %v", tc.name, err, tc.refuse)
		}
	}
	exp := filepath.Join(dir, "e")
	for _, tc := range []struct {
		path   string
		refuse bool
	}{
		{filepath.Join(exp, "checkpoint-1", "s.yaml"), true},
		{filepath.Join(exp, "checkpoint-12"), true},
		{filepath.Join(exp, "checkpoint-0", "s.yaml"), false},
		{filepath.Join(exp, "checkpoint-x", "s.yaml"), false},
		{filepath.Join(exp, "s.yaml"), false},
		{filepath.Join(dir, "checkpoint-1", "s.yaml"), false},
	} {
		err := refuseExportFolders(exp, readsFile("the scenario", tc.path))
		if (err != nil) != tc.refuse {
			t.Errorf("export %s: err %v, want refused %v", tc.path, err, tc.refuse)
		}
	}
}

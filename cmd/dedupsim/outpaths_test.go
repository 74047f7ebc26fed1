package main

import (
	"path/filepath"
	"testing"

	"github.com/dedupsim/dedupsim/internal/pathcheck"
	"github.com/dedupsim/dedupsim/scenarios"
)

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
		err := refuseExportFolders(exp, pathcheck.ReadsFile("the scenario", tc.path))
		if (err != nil) != tc.refuse {
			t.Errorf("export %s: err %v, want refused %v", tc.path, err, tc.refuse)
		}
	}
}

package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiscoverSkipsNonScenarios: in a folder, YAML files that are no
// scenario (an exec pair's query.yaml, a CI workflow, a list) are skipped
// with one note each; a file with a scenario key stays a scenario, errors
// and all; a folder of nothing but such files is an error.
func TestDiscoverSkipsNonScenarios(t *testing.T) {
	dir := t.TempDir()
	put := func(name, text string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("pair/query.yaml", "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: table}\n")
	put("ci.yml", "on: [push]\njobs: {}\n")
	put("list.yaml", "- a\n- b\n")
	var notes []string
	note := func(s string) { notes = append(notes, s) }
	if _, err := DiscoverNoting([]string{dir}, note); err == nil || !strings.Contains(err.Error(), "no scenario file in this folder or below it (3 YAML files, none a scenario") {
		t.Errorf("only non-scenarios: %v", err)
	}
	put("s.yaml", "name: s\nfault_phase: 10s\nheal_phase: 10s\n")
	notes = nil
	list, err := DiscoverNoting([]string{dir}, note)
	if err != nil || len(list) != 1 || list[0].Name != "s" {
		t.Fatalf("%v %v", list, err)
	}
	want := []string{
		filepath.Join(dir, "ci.yml") + ": skipped, not a scenario (top-level keys on, jobs)",
		filepath.Join(dir, "list.yaml") + ": skipped, not a scenario (its top level is not a mapping)",
		filepath.Join(dir, "pair/query.yaml") + ": skipped, not a scenario (top-level keys dedup, sink: an exec query file)",
	}
	if strings.Join(notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(notes, "\n"), strings.Join(want, "\n"))
	}
	// A scenario key with a typo beside it is a scenario with an error.
	put("typo.yaml", "name: t\nfault_phase: 10s\nheal_phse: 10s\n")
	if _, err := DiscoverNoting([]string{dir}, note); err == nil || !strings.Contains(err.Error(), "heal_phse") {
		t.Errorf("a misspelt scenario: %v", err)
	}
	// A file named as an argument is read as a scenario.
	if _, err := Discover([]string{filepath.Join(dir, "pair/query.yaml")}); err == nil {
		t.Error("an exec query named as a scenario was accepted")
	}
}

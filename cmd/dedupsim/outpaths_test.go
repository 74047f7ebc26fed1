package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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

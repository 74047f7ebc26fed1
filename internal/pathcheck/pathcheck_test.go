package pathcheck

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
		if !SamePath(p, want) {
			t.Fatalf("%s and %s: not the same file", p, want)
		}
		if !Inside(p, filepath.Join(dir, "a")) {
			t.Fatalf("%s is not inside %s", p, filepath.Join(dir, "a"))
		}
		if err := RefuseOverlap("v", []Path{ReadsFile("--in", want)}, []Path{WritesFile("--out", p)}); err == nil || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s over %s: %v", p, want, err)
		}
		if err := RefuseOverlap("v", []Path{ReadsFile("--in", filepath.Join(dir, "a", "other"))}, []Path{WritesFile("--out", p)}); err != nil {
			t.Fatalf("a different file refused: %v", err)
		}
	})
}

// A terminal or /dev/null read and written replaces nothing: allowed.
func TestOverlapDevicesAllowed(t *testing.T) {
	if err := RefuseOverlap("exec", []Path{ReadsFile("--input", "/dev/null")}, []Path{WritesFile("--out", "/dev/null")}); err != nil {
		t.Fatal(err)
	}
}

// TestRefuseOverlap: each refusal's one-line message, by table, and the
// cases allowed.
func TestRefuseOverlap(t *testing.T) {
	dir := t.TempDir()
	in, out, sub := filepath.Join(dir, "in"), filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	os.WriteFile(in, nil, 0o644)
	os.MkdirAll(sub, 0o755)
	for _, tc := range []struct {
		name            string
		inputs, outputs []Path
		want            string // "" for allowed
	}{
		{"apart", []Path{ReadsFile("--in", in)}, []Path{WritesFile("--out", out)}, ""},
		{"flags not given", []Path{ReadsFile("--in", ""), ReadsDir("--ck", "")}, []Path{WritesFile("--out", ""), WritesFile("--rec", "")}, ""},
		{"same file", []Path{ReadsFile("--in", in)}, []Path{WritesFile("--out", in)},
			"v: --out " + in + " is the same file as --in " + in + ", which this run reads: refusing to write over it"},
		{"inside a folder read", []Path{ReadsDir("--ck", sub)}, []Path{WritesFile("--out", filepath.Join(sub, "x", "y"))},
			"v: --out " + filepath.Join(sub, "x", "y") + " is inside --ck " + sub + ", which this run reads: refusing to write there"},
		{"a file read is no folder", []Path{ReadsFile("--ck", sub)}, []Path{WritesFile("--out", filepath.Join(sub, "x"))}, ""},
		{"two outputs", nil, []Path{WritesFile("--out", out), WritesFile("--rec", out)},
			"v: --rec " + out + " is the same file as --out " + out + ": one run cannot write both"},
		{"in folder", nil, append(WritesInFolder("--out", dir, "a.json", "b.json"), WritesFile("--rec", filepath.Join(dir, "b.json"))),
			"v: --rec " + filepath.Join(dir, "b.json") + " is the same file as --out (b.json) " + filepath.Join(dir, "b.json") + ": one run cannot write both"},
	} {
		err := RefuseOverlap("v", tc.inputs, tc.outputs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s: got %v\nwant %s", tc.name, err, tc.want)
		}
	}
	if WritesInFolder("--out", "", "a") != nil {
		t.Error("WritesInFolder of no folder: want none")
	}
}

// TestFirstFolderUnder, by table.
func TestFirstFolderUnder(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		p             string
		first         string
		nested, found bool
	}{
		{filepath.Join(dir, "a", "b", "c"), "a", true, true},
		{filepath.Join(dir, "a"), "a", false, true},
		{dir, "", false, false},
		{filepath.Dir(dir), "", false, false},
		{filepath.Join(filepath.Dir(dir), "other", "x"), "", false, false},
	} {
		first, nested, ok := FirstFolderUnder(dir, tc.p)
		if first != tc.first || nested != tc.nested || ok != tc.found {
			t.Errorf("%s: got %q %v %v, want %q %v %v", tc.p, first, nested, ok, tc.first, tc.nested, tc.found)
		}
	}
}

package shrink

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResultWrite: Write creates the folder and writes each of Files with
// its part of the result; a folder that is a file is refused.
func TestResultWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "pair")
	r := &Result{Query: []byte("q"), Steps: []byte("s"), Expected: []byte("e"), ScenarioYAML: []byte("y"), Story: "t"}
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"q", "s", "e", "y", "t"} {
		got, err := os.ReadFile(filepath.Join(dir, Files[i]))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q %v, want %q", Files[i], got, err, want)
		}
	}
	file := filepath.Join(dir, "query.yaml")
	if err := r.Write(file); err == nil {
		t.Errorf("Write into the file %s: no error", file)
	}
}

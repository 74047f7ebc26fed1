package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// badCase is one entry of a verb's bad-input corpus: the files it needs,
// the arguments (where "$DIR" stands for the case's own temporary folder),
// the exit status the CLI must give and fragments of the one-line error.
type badCase struct {
	name  string
	files map[string]string // name -> content, written into $DIR
	args  []string
	code  int      // the exit status expected (2: bad input, 1: a failed run)
	want  []string // fragments the error (standard error) must hold
}

// badInputCorpus runs every case against the built binary: the exit status
// must be the one stated, standard error must hold every fragment (and be
// a single line for bad input, exit 2), and nothing may panic.
// It returns the number of cases run, for the issue notes.
func badInputCorpus(t *testing.T, cases []badCase) int {
	t.Helper()
	bin := binary(t)
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("corpus: two cases named %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "$DIR", dir)
			}
			_, errOut, code := run(bin, args...)
			if strings.Contains(errOut, "panic:") || strings.Contains(errOut, "goroutine ") {
				t.Fatalf("panicked:\n%s", errOut)
			}
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			if code == 2 && strings.Count(strings.TrimRight(errOut, "\n"), "\n") != 0 {
				t.Errorf("bad input should give one line on stderr, got:\n%s", errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, strings.ReplaceAll(w, "$DIR", dir)) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
	return len(cases)
}

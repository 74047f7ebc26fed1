package execpipe

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/internal/exitcode"
)

// Run reports every failure as an *exitcode.Error with the exit status of
// docs/exit-codes.md, whichever step refused, and --out stays as it was.
func TestRunExitStatus(t *testing.T) {
	ex := filepath.Join("..", "examples", "worked-example")
	q, s := filepath.Join(ex, "query.yaml"), filepath.Join(ex, "steps.jsonl")
	dir := t.TempDir()
	badSteps := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(badSteps, []byte("{\"rows\": [}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	for _, tc := range []struct {
		name string
		o    Options
		code int    // 0: success
		want string // in the message
	}{
		{"ok", Options{QueryPath: q, InputPath: s, OutPath: out}, 0, ""},
		{"ok as a table", Options{QueryPath: q, InputPath: s, OutPath: out, Format: "table"}, 0, ""},
		{"no input", Options{QueryPath: q}, 2, "--query and --input are required"},
		{"format", Options{QueryPath: q, InputPath: s, Format: "csv"}, 2, `--format "csv"`},
		{"engine", Options{QueryPath: q, InputPath: s, Engine: "sparc"}, 2, `--engine "sparc"`},
		{"spark table", Options{QueryPath: q, InputPath: s, Engine: "spark", Format: "table"}, 2, "--engine spark writes jsonl only"},
		{"missing input", Options{QueryPath: q, InputPath: filepath.Join(dir, "none.jsonl"), OutPath: out}, 2, "--input"},
		{"bad steps", Options{QueryPath: q, InputPath: badSteps, OutPath: out}, 2, "bad.jsonl:1"},
		{"spark version", Options{QueryPath: q, InputPath: s, SparkVersion: "9.9"}, 2, "--spark-version"},
		{"report without check", Options{QueryPath: q, InputPath: s, OutPath: out, ReportDir: dir}, 2, "give --check FILE too"},
		{"out is a folder", Options{QueryPath: q, InputPath: s, OutPath: dir}, 2, "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(out, []byte("before\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := Run(tc.o)
			var e *exitcode.Error
			switch {
			case tc.code == 0 && err != nil:
				t.Fatalf("got %v, want success", err)
			case tc.code == 0:
				return
			case !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("got %#v (%v), want exit %d with %q", err, err, tc.code, tc.want)
			}
			if b, _ := os.ReadFile(out); string(b) != "before\n" {
				t.Fatalf("--out changed by a failed run: %q", b)
			}
		})
	}
	// A write that fails is not bad input.
	if _, err := os.Stat("/dev/full"); err == nil {
		var e *exitcode.Error
		if err := Run(Options{QueryPath: q, InputPath: s, OutPath: "/dev/full"}); !errors.As(err, &e) || e.Code != 1 {
			t.Fatalf("/dev/full: got %v, want exit 1", err)
		}
	}
}

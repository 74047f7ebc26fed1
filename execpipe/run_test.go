package execpipe

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
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

// Without --checkpoint, exec keeps its checkpoint in memory, its large
// files spilled to unlinked files of the temp directory, a Pebble store's
// working databases there too; with more than maxMemoryScratchPartitions
// partitions, in a folder of the temp directory. Either way the output is
// the one a checkpoint on the disk gives, and nothing is left in the temp
// directory.
func TestScratchCheckpoint(t *testing.T) {
	ex := filepath.Join("..", "examples", "worked-example")
	orig, err := os.ReadFile(filepath.Join(ex, "query.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ store, partitions string }{
		{"memory", "2"}, {"pebble", "2"}, {"memory", "257"},
	} {
		store := tc.store
		base := []byte(strings.Replace(string(orig), "shuffle_partitions: 2\n", "shuffle_partitions: "+tc.partitions+"\n", 1))
		if !strings.Contains(string(base), "shuffle_partitions: "+tc.partitions+"\n") {
			t.Fatalf("the worked example's query no longer says shuffle_partitions: 2")
		}
		t.Run(store+"/"+tc.partitions, func(t *testing.T) {
			dir := t.TempDir()
			tmp := filepath.Join(dir, "tmp")
			if err := os.Mkdir(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("TMPDIR", tmp)
			q := filepath.Join(dir, "query.yaml")
			if err := os.WriteFile(q, append(base, "state_store: "+store+"\n"...), 0o644); err != nil {
				t.Fatal(err)
			}
			s := filepath.Join(ex, "steps.jsonl")
			onDisk, scratch := filepath.Join(dir, "disk.jsonl"), filepath.Join(dir, "scratch.jsonl")
			if err := Run(Options{QueryPath: q, InputPath: s, OutPath: onDisk, CheckpointDir: filepath.Join(dir, "ckpt")}); err != nil {
				t.Fatal(err)
			}
			if err := Run(Options{QueryPath: q, InputPath: s, OutPath: scratch}); err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(onDisk)
			got, _ := os.ReadFile(scratch)
			if len(want) == 0 || string(got) != string(want) {
				t.Fatalf("output without --checkpoint differs from the one with it:\n%s\nwant\n%s", got, want)
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Fatalf("left in the temp directory: %v", left)
			}
		})
	}
}

// The temporary checkpoint is in memory up to maxMemoryScratchPartitions
// partitions and a folder of the temp directory above, removed by release.
func TestScratchCheckpointKind(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	for _, tc := range []struct {
		partitions int
		inMemory   bool
	}{{1, true}, {maxMemoryScratchPartitions, true}, {maxMemoryScratchPartitions + 1, false}} {
		q := &query.Query{ShufflePartitions: tc.partitions}
		dir, ckpt, release, err := openCheckpoint(Options{}, q)
		if err != nil {
			t.Fatal(err)
		}
		_, mem := ckpt.(*fsys.Mem)
		if mem != tc.inMemory || (dir == "") != tc.inMemory {
			t.Fatalf("%d partitions: checkpoint %T in %q, want in memory %v", tc.partitions, ckpt, dir, tc.inMemory)
		}
		release()
		if dir != "" {
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Fatalf("%d partitions: %s left after release (%v)", tc.partitions, dir, err)
			}
		}
	}
}

// --out is 0644 less the umask, as the shell's redirection would make it
// (os.CreateTemp's 0600 hid it from the other users of a CI machine).
func TestOutModeFollowsTheUmask(t *testing.T) {
	ex := filepath.Join("..", "examples", "worked-example")
	for _, tc := range []struct {
		umask int
		want  os.FileMode
	}{{0o022, 0o644}, {0o027, 0o640}, {0o077, 0o600}} {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		old := syscall.Umask(tc.umask)
		err := Run(Options{QueryPath: filepath.Join(ex, "query.yaml"), InputPath: filepath.Join(ex, "steps.jsonl"), OutPath: out})
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != tc.want {
			t.Errorf("umask %03o: --out is %v, want %v", tc.umask, fi.Mode().Perm(), tc.want)
		}
	}
}

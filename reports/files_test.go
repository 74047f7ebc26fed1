//go:build unix

package reports

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dedupsim/dedupsim/internal/atomicfile"
)

// TestNeverThroughALink: WriteRun refuses a symbolic link planted where a
// run folder or one of its report files goes, and what the link points at
// is untouched (issue 10.12); a link at a single file's name is
// internal/atomicfile's TestNeverThroughALink.
func TestNeverThroughALink(t *testing.T) {
	out := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	victimDir := t.TempDir()
	if err := os.Symlink(victimDir, filepath.Join(out, "sample-7")); err != nil {
		t.Fatal(err)
	}
	err := WriteRun(filepath.Join(out, "sample-7"), sample())
	if !errors.Is(err, atomicfile.ErrUnsafePath) || !strings.Contains(err.Error(), "sample-7 is a symbolic link") {
		t.Fatalf("write into a linked run folder: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the link's target was overwritten: %q", b)
	}
	if entries, _ := os.ReadDir(victimDir); len(entries) != 0 {
		t.Fatalf("the linked folder received %d files", len(entries))
	}
	// A link inside a real run folder, at a report's name, is refused too.
	run := filepath.Join(out, "real-1")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(run, "report.json")); err != nil {
		t.Fatal(err)
	}
	if err := WriteRun(run, sample()); !errors.Is(err, atomicfile.ErrUnsafePath) {
		t.Fatalf("report.json as a link: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the link's target was overwritten: %q", b)
	}
	// A file where the run folder goes (a link or a folder at a single
	// file's name: internal/atomicfile's TestNeverThroughALink).
	if err := os.WriteFile(filepath.Join(out, "file-1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteRun(filepath.Join(out, "file-1"), sample()); !errors.Is(err, atomicfile.ErrUnsafePath) {
		t.Fatalf("a file at the run folder: %v", err)
	}
}

// TestModesFollowTheUmask: report files are 0644 and folders 0755, less
// the umask (os.CreateTemp used to leave 0600).
func TestModesFollowTheUmask(t *testing.T) {
	for _, tc := range []struct {
		umask     int
		file, dir os.FileMode
	}{{0o022, 0o644, 0o755}, {0o027, 0o640, 0o750}, {0o077, 0o600, 0o700}} {
		old := syscall.Umask(tc.umask)
		out := filepath.Join(t.TempDir(), "out")
		run := filepath.Join(out, "sample-7")
		err := WriteRun(run, sample(), File{Name: "history.json.gz", Write: func(w io.Writer) error { _, err := w.Write([]byte("x")); return err }})
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{out, run} {
			if fi, _ := os.Stat(p); fi.Mode().Perm() != tc.dir {
				t.Errorf("umask %03o: %s is %v, want %v", tc.umask, p, fi.Mode().Perm(), tc.dir)
			}
		}
		for _, p := range []string{"sample-7/report.json", "sample-7/report.html", "sample-7/summary.md", "sample-7/history.json.gz"} {
			if fi, _ := os.Stat(filepath.Join(out, p)); fi.Mode().Perm() != tc.file {
				t.Errorf("umask %03o: %s is %v, want %v", tc.umask, p, fi.Mode().Perm(), tc.file)
			}
		}
	}
}

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

// TestNeverThroughALink: a symbolic link planted where a report file or a
// run folder goes is refused, and the file it points at is untouched
// (issue 10.12).
func TestNeverThroughALink(t *testing.T) {
	out := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	victimDir := t.TempDir()
	if err := os.Symlink(victim, filepath.Join(out, "summary.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victimDir, filepath.Join(out, "sample-7")); err != nil {
		t.Fatal(err)
	}
	err := atomicfile.WriteFile(filepath.Join(out, "summary.md"), []byte("pwned"))
	if !errors.Is(err, atomicfile.ErrUnsafePath) || !strings.Contains(err.Error(), "summary.md is a symbolic link") {
		t.Fatalf("write over a link: %v", err)
	}
	err = WriteRun(filepath.Join(out, "sample-7"), sample())
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
	// A folder where a file goes, and a file where the run folder goes.
	if err := os.Mkdir(filepath.Join(out, "junit.xml"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(filepath.Join(out, "junit.xml"), nil); !errors.Is(err, atomicfile.ErrUnsafePath) {
		t.Fatalf("a folder at junit.xml: %v", err)
	}
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
		if err == nil {
			err = atomicfile.WriteFile(filepath.Join(out, "index.html"), []byte("<html>"))
		}
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{out, run} {
			if fi, _ := os.Stat(p); fi.Mode().Perm() != tc.dir {
				t.Errorf("umask %03o: %s is %v, want %v", tc.umask, p, fi.Mode().Perm(), tc.dir)
			}
		}
		for _, p := range []string{"sample-7/report.json", "sample-7/report.html", "sample-7/summary.md", "sample-7/history.json.gz", "index.html"} {
			if fi, _ := os.Stat(filepath.Join(out, p)); fi.Mode().Perm() != tc.file {
				t.Errorf("umask %03o: %s is %v, want %v", tc.umask, p, fi.Mode().Perm(), tc.file)
			}
		}
	}
}

//go:build unix

package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWriteIsWhole: a write replaces the file whole; a failed write keeps
// the old content and leaves no temporary file behind.
func TestWriteIsWhole(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "summary.md")
	if err := WriteFile(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteFileFunc(p, func(w io.Writer) error {
		w.Write([]byte("half of thr"))
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "summary.md") {
		t.Fatalf("failed write: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "two" {
		t.Fatalf("content %q after a failed write, want the previous one", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("folder holds %q, want only summary.md", names)
	}
}

// TestNeverThroughALink: a symbolic link where a file or a folder goes is
// refused and what it points at is untouched; so is a folder where a file
// goes and a file where a folder goes.
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
	if err := os.Symlink(victimDir, filepath.Join(out, "run-7")); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(filepath.Join(out, "summary.md"), []byte("pwned"))
	if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), "summary.md is a symbolic link") {
		t.Fatalf("write over a link: %v", err)
	}
	if _, err := OpenDir(filepath.Join(out, "run-7")); !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), "run-7 is a symbolic link") {
		t.Fatalf("open a linked folder: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the link's target was overwritten: %q", b)
	}
	if entries, _ := os.ReadDir(victimDir); len(entries) != 0 {
		t.Fatalf("the linked folder received %d files", len(entries))
	}
	if err := os.Mkdir(filepath.Join(out, "junit.xml"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(out, "junit.xml"), nil); !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), "is not a regular file") {
		t.Fatalf("a folder at junit.xml: %v", err)
	}
	if err := os.WriteFile(filepath.Join(out, "file-1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(filepath.Join(out, "file-1")); !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), "is not a folder") {
		t.Fatalf("a file at a folder's name: %v", err)
	}
}

// TestModesFollowTheUmask: files are 0644 and folders 0755, less the umask
// (a file CreateTemp began and Commit ended too).
func TestModesFollowTheUmask(t *testing.T) {
	for _, tc := range []struct {
		umask     int
		file, dir os.FileMode
	}{{0o022, 0o644, 0o755}, {0o027, 0o640, 0o750}, {0o077, 0o600, 0o700}} {
		old := syscall.Umask(tc.umask)
		dir := filepath.Join(t.TempDir(), "out", "run-1")
		root, err := OpenDir(dir)
		if err == nil {
			err = WriteIn(root, "a", "a", Bytes([]byte("x")))
			root.Close()
		}
		if err == nil {
			err = WriteFile(filepath.Join(dir, "b"), []byte("y"))
		}
		if err == nil {
			var f *os.File
			if f, err = CreateTemp(filepath.Join(dir, "c")); err == nil {
				err = Commit(f, filepath.Join(dir, "c"))
			}
		}
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{filepath.Dir(dir), dir} {
			if fi, _ := os.Stat(p); fi.Mode().Perm() != tc.dir {
				t.Errorf("umask %03o: %s is %v, want %v", tc.umask, p, fi.Mode().Perm(), tc.dir)
			}
		}
		for _, p := range []string{"a", "b", "c"} {
			if fi, _ := os.Stat(filepath.Join(dir, p)); fi.Mode().Perm() != tc.file {
				t.Errorf("umask %03o: %s is %v, want %v", tc.umask, p, fi.Mode().Perm(), tc.file)
			}
		}
	}
}

// TestCommit: a partial file becomes the target whole, replacing a link
// at the target's name rather than writing through it.
func TestCommit(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "out.jsonl")
	if err := os.Symlink(victim, target); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".out.jsonl.partial"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("whole\n"); err != nil {
		t.Fatal(err)
	}
	if err := Commit(f, target); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "whole\n" {
		t.Fatalf("target %q, %v", b, err)
	}
	if fi, _ := os.Lstat(target); !fi.Mode().IsRegular() {
		t.Fatalf("target is %v, want a regular file", fi.Mode())
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the link's target was overwritten: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("folder holds %d entries, want only the target", len(entries))
	}
}

// Package atomicfile writes files whole, the one way dedupsim's outputs
// outside the engine reach the disk (reports, diagnose's reports,
// conform's files, capture's output; the engine writes through engine/fsys
// instead, which the simulator can replace).
//
// A file is written as a temporary file in the target folder (created 0644
// less the umask, never over an existing name), written, fsynced, renamed
// over the target, and the folder fsynced, so a reader (or a crash) sees
// the old file or the new one, never a part. Nothing is written through a
// symbolic link: a link (or any other kind of file) where a file or a
// folder goes is refused, not followed, so a link planted in an output
// folder cannot redirect a file elsewhere. Folders are created 0755 less
// the umask. The folder a path names as its parent (an --out folder) is
// the user's choice and may be, or sit below, a link.
package atomicfile

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrUnsafePath is wrapped by the error for a path that is a symbolic link
// or not the kind of file it should be.
var ErrUnsafePath = errors.New("files are never written through a link or over another kind of file")

// OpenDir creates dir (and its parents) if needed and opens it, refusing a
// dir that is a symbolic link or not a folder. Operations through the
// returned root stay inside dir.
func OpenDir(dir string) (*os.Root, error) {
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	pr, err := os.OpenRoot(parent)
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	fi, err := pr.Lstat(base)
	if errors.Is(err, fs.ErrNotExist) {
		if err := pr.Mkdir(base, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if err := SyncDir(pr); err != nil {
			return nil, err
		}
		fi, err = pr.Lstat(base)
	}
	if err != nil {
		return nil, err
	}
	if err := kindOK(dir, fi, true); err != nil {
		return nil, err
	}
	return pr.OpenRoot(base)
}

// WriteFile writes data to path atomically; path's folder must exist.
func WriteFile(path string, data []byte) error {
	return WriteFileFunc(path, Bytes(data))
}

// WriteFileFunc writes what fill streams to path atomically.
func WriteFileFunc(path string, fill func(io.Writer) error) error {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer root.Close()
	if err := WriteIn(root, path, filepath.Base(path), fill); err != nil {
		return err
	}
	return SyncDir(root)
}

// WriteIn writes name in root atomically, but for the fsync of root's
// folder: a caller writing several files syncs it once, after the last
// (SyncDir). display names the file in errors.
func WriteIn(root *os.Root, display, name string, fill func(io.Writer) error) (err error) {
	fi, err := root.Lstat(name)
	switch {
	case err == nil:
		if err := kindOK(display, fi, false); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	tmp := "." + name + ".tmp-" + rand.Text()[:12]
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			root.Remove(tmp)
			err = fmt.Errorf("%s: %w", display, err)
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := fill(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return root.Rename(tmp, name)
}

// CreateTemp creates the temporary file a writer that streams (exec's
// --out) fills and then hands to Commit: in target's folder, named
// ".<base>.tmp-<random>", 0644 less the umask, never over an existing name
// nor through a link.
func CreateTemp(target string) (*os.File, error) {
	name := "." + filepath.Base(target) + ".tmp-" + rand.Text()[:12]
	return os.OpenFile(filepath.Join(filepath.Dir(target), name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
}

// Commit makes f, a file written in target's folder under another name
// (a partial file a writer kept open, possibly across restarts), the
// target: fsync, close, rename over target, fsync of the folder. The
// rename replaces whatever entry target is; it never writes through it.
func Commit(f *os.File, target string) error {
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), target); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(target))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// kindOK refuses a symbolic link, and a file where a folder goes or the
// other way round.
func kindOK(display string, fi fs.FileInfo, wantDir bool) error {
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: %w", display, ErrUnsafePath)
	case wantDir && !m.IsDir():
		return fmt.Errorf("%s is not a folder: %w", display, ErrUnsafePath)
	case !wantDir && !m.IsRegular():
		return fmt.Errorf("%s is not a regular file: %w", display, ErrUnsafePath)
	}
	return nil
}

// SyncDir makes the folder's entries (a rename, a new folder) durable.
func SyncDir(root *os.Root) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Bytes is a fill function that writes b.
func Bytes(b []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}
}

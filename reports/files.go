package reports

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dedupsim/dedupsim/scenarios/result"
)

// How reports reach the disk. Every file is written whole: a temporary file
// in the target folder (created 0644 less the umask, never over an existing
// name), written, fsynced, renamed over the target, and the folder fsynced,
// so a reader (or a crash) sees the old file or the new one, never a part.
// Nothing is written through a symbolic link: a link (or any other kind of
// file) where a report or a run folder goes is refused, not followed, so a
// link planted in the output folder cannot redirect a report elsewhere.
// Folders are created 0755 less the umask. The output folder itself (--out)
// is the user's choice and may be, or sit below, a link.

// ErrUnsafePath is wrapped by the error for a report path that is a
// symbolic link or not the kind of file it should be.
var ErrUnsafePath = errors.New("reports are never written through a link or over another kind of file")

// File is an extra file of a run folder: Write streams its content.
type File struct {
	Name  string
	Write func(io.Writer) error
}

// WriteRun writes report.html, report.json, summary.md and the extra files
// of one run into dir, created if needed and refused if it is a symbolic
// link.
func WriteRun(dir string, r *result.Run, extra ...File) error {
	pts := Points(r.History) // once for both reports
	j, err := jsonWith(r, pts)
	if err != nil {
		return err
	}
	h, err := htmlWith(r, pts)
	if err != nil {
		return err
	}
	md := []byte(Markdown([]*result.Run{r}))
	root, err := OpenRunDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	files := append([]File{{"report.json", bytesOf(j)}, {"report.html", bytesOf(h)}, {"summary.md", bytesOf(md)}}, extra...)
	for _, f := range files {
		if err := writeIn(root, filepath.Join(dir, f.Name), f.Name, f.Write); err != nil {
			return err
		}
	}
	return syncDir(root)
}

// OpenRunDir creates dir (and its parents) if needed and opens it, refusing
// a dir that is a symbolic link or not a folder. Operations through the
// returned root stay inside dir.
func OpenRunDir(dir string) (*os.Root, error) {
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
		if err := syncDir(pr); err != nil {
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

// WriteFile writes data to path atomically (see the top of this file);
// path's folder must exist.
func WriteFile(path string, data []byte) error {
	return WriteFileFunc(path, bytesOf(data))
}

// WriteFileFunc writes what fill streams to path atomically.
func WriteFileFunc(path string, fill func(io.Writer) error) error {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer root.Close()
	if err := writeIn(root, path, filepath.Base(path), fill); err != nil {
		return err
	}
	return syncDir(root)
}

// writeFile is WriteFile, for this package's writers.
func writeFile(path string, data []byte) error { return WriteFile(path, data) }

// writeIn writes name in root atomically; display names it in errors.
func writeIn(root *os.Root, display, name string, fill func(io.Writer) error) (err error) {
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

// syncDir makes the folder's entries (a rename, a new folder) durable.
func syncDir(root *os.Root) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func bytesOf(b []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}
}

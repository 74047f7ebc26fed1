package execpipe

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dedupsim/dedupsim/internal/atomicfile"
	"github.com/dedupsim/dedupsim/internal/exitcode"
)

// outFile is --out: a temp file next to the target, renamed over it when
// the run succeeds (never written through a symbolic link, never left
// half-written), or standard output, or a device named by the user.
type outFile struct {
	io.Writer
	name   string
	target string   // "" when not renamed (stdout, a device)
	tmp    *os.File // the temp file, or a device
}

func createOut(path string) (*outFile, error) {
	if path == "" {
		return &outFile{Writer: os.Stdout, name: "standard output"}, nil
	}
	st, err := os.Lstat(path)
	switch {
	case err == nil && st.Mode()&os.ModeSymlink != 0:
		return nil, exitcode.Bad(fmt.Errorf("exec: --out %s is a symbolic link: refusing to write through it (give the real path)", path))
	case err == nil && st.IsDir():
		return nil, exitcode.Bad(fmt.Errorf("exec: --out %s is a directory", path))
	case err == nil && !st.Mode().IsRegular():
		// A device or a pipe (/dev/null): written as it is, nothing to
		// replace atomically.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, exitcode.Bad(fmt.Errorf("exec: --out: %w", err))
		}
		return &outFile{Writer: f, name: path, tmp: f}, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, exitcode.Bad(fmt.Errorf("exec: --out: %w", err))
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, exitcode.Bad(fmt.Errorf("exec: --out %s: folder %s does not exist", path, dir))
	}
	// 0644 less the umask, as a shell's redirection makes it:
	// os.CreateTemp's 0600 would hide the output from the other users a CI
	// job hands it to.
	tmp, err := atomicfile.CreateTemp(path)
	if err != nil {
		return nil, exitcode.Bad(fmt.Errorf("exec: --out: %w", err))
	}
	return &outFile{Writer: tmp, name: path, target: path, tmp: tmp}, nil
}

// commit makes the output final: fsync, rename over the target, fsync of
// its folder.
func (o *outFile) commit() error {
	if o.tmp == nil {
		return nil
	}
	if o.target == "" {
		return o.tmp.Close()
	}
	if err := atomicfile.Commit(o.tmp, o.target); err != nil {
		return err // discard removes the temp file
	}
	o.tmp = nil
	return nil
}

// discard drops the temp file of a failed run: the target is unchanged.
func (o *outFile) discard() {
	if o.tmp == nil {
		return
	}
	o.tmp.Close()
	if o.target != "" {
		os.Remove(o.tmp.Name())
	}
	o.tmp = nil
}

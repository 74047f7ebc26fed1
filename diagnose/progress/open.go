package progress

import (
	"fmt"
	"os"
	"syscall"

	"github.com/dedupsim/dedupsim/internal/filekind"
)

// openRegular opens path for reading only if it is a regular file (or a
// link to one). It opens without blocking (O_NONBLOCK: a named pipe with no
// writer would block the open, and its reads, forever) and checks the file
// it got, not the name, so a file swapped for a pipe between a stat and
// the open is caught too. O_NONBLOCK changes nothing for a regular file.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("not a regular file (%s): diagnose reads files and rolling event log folders only", filekind.Name(st.Mode()))
	}
	return f, nil
}

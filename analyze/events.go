package analyze

import (
	"fmt"
	"io"
	"os"
)

// OpenEvents opens the events analyze reads: standard input for "-",
// else the file, with its size when it is a regular file (-1 otherwise).
func OpenEvents(file string) (in io.Reader, size int64, closeFn func(), err error) {
	if file == "-" {
		return os.Stdin, -1, func() {}, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, 0, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, 0, nil, fmt.Errorf("%s is a folder: give a JSON Lines file of events", file)
	}
	size = -1
	if st.Mode().IsRegular() {
		size = st.Size()
	}
	return f, size, func() { f.Close() }, nil
}

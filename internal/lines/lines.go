// Package lines reads a text file one bounded line at a time: the one
// reader of the line-oriented files whose readers cap a line (expectations
// files, Delta's JSON commits).
package lines

import (
	"bufio"
	"fmt"
	"io"
)

// Read returns the next line without its newline; the last line may lack
// one. A line longer than max bytes is an error ("line longer than N
// bytes" and what), and io.EOF ends the input. At most max bytes plus the
// reader's buffer are held.
func Read(br *bufio.Reader, max int, what string) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > max {
			return nil, fmt.Errorf("line longer than %d bytes%s", max, what)
		}
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case err == bufio.ErrBufferFull:
		case err == io.EOF && len(buf) > 0:
			return buf, nil
		default:
			return nil, err
		}
	}
}

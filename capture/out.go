package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/dedupsim/dedupsim/internal/atomicfile"
)

// The output is built in a partial file next to the target,
// ".<name>.capture-partial", and renamed over the target (after an fsync,
// then an fsync of the folder) once the capture is complete: the target is
// never half-written, and never written through a symbolic link. An
// interrupted capture (a signal, a Kafka failure, a bad record, even
// SIGKILL) leaves the partial file; --resume continues it from the last
// complete record (JSON Lines) or batch (steps) it holds.

// InputError is bad input about the output files (exit 2 in the CLI).
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

// resumeState is what a partial capture says about where to go on.
type resumeState struct {
	// next is each partition's next offset to read.
	next map[int32]int64
	// mark is the steps writer's state after its last batch.
	mark *stepsMark
	// records and batches are what the partial file already holds.
	records, batches int64
}

// stepsMark is the "# next" comment the steps writer puts after every
// batch line, so that a resumed capture cuts its batches where the
// interrupted one would have.
type stepsMark struct {
	Next map[int32]int64 `json:"next"`
	// MaxTs is each partition's largest record timestamp so far (Unix ms;
	// --trigger's running maximum).
	MaxTs map[int32]int64 `json:"maxTimestampMs,omitempty"`
	// WindowEnd is the end of the last batch's trigger window (Unix ms).
	WindowEnd int64 `json:"windowEndMs,omitempty"`
	Records   int64 `json:"records"`
	Batches   int64 `json:"batches"`
}

const markPrefix = "# next "

// outFile is the partial file being written.
type outFile struct {
	target, partial string
	f               *os.File
	w               *bufio.Writer
}

// PartialPath is where the capture into target is built.
func PartialPath(target string) string {
	return filepath.Join(filepath.Dir(target), "."+filepath.Base(target)+".capture-partial")
}

// openOut opens the partial file of target: a fresh one holding header,
// or with resume the interrupted one (or, without one, a copy of a target
// that exists, so that a finished capture can be extended with a later
// --end), cut after its last complete record or batch.
func openOut(target, header string, resume, steps bool) (*outFile, *resumeState, error) {
	if err := checkPath("--out", target); err != nil {
		return nil, nil, err
	}
	partial := PartialPath(target)
	if err := checkPath("the partial file", partial); err != nil {
		return nil, nil, err
	}
	if d := filepath.Dir(target); !isDir(d) {
		return nil, nil, inputErrorf("--out %s: folder %s does not exist", target, d)
	}
	_, perr := os.Lstat(partial)
	hasPartial := perr == nil
	if hasPartial && !resume {
		return nil, nil, inputErrorf("--out %s: an interrupted capture left %s: give --resume to continue it, or remove it", target, partial)
	}
	o := &outFile{target: target, partial: partial}
	if !resume || (!hasPartial && !isFile(target)) {
		f, err := os.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("capture: %w", err)
		}
		o.f, o.w = f, bufio.NewWriterSize(f, 1<<20)
		o.w.WriteString(header + "\n")
		return o, &resumeState{next: map[int32]int64{}}, nil
	}
	if !hasPartial {
		if err := copyFile(target, partial); err != nil {
			return nil, nil, err
		}
	}
	f, err := os.OpenFile(partial, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("capture: %w", err)
	}
	st, keep, err := scan(partial, f, header, steps)
	if err == nil {
		err = f.Truncate(keep)
	}
	if err == nil {
		_, err = f.Seek(keep, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	o.f, o.w = f, bufio.NewWriterSize(f, 1<<20)
	return o, st, nil
}

func checkPath(what, p string) error {
	st, err := os.Lstat(p)
	switch {
	case err == nil && st.Mode()&os.ModeSymlink != 0:
		return inputErrorf("%s %s is a symbolic link: refusing to write through it (give the real path)", what, p)
	case err == nil && !st.Mode().IsRegular():
		return inputErrorf("%s %s is not a regular file", what, p)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return inputErrorf("%s: %v", what, err)
	}
	return nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func isFile(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.Mode().IsRegular()
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("capture: copy %s: %w", from, err)
	}
	return out.Close()
}

// scan reads a partial (or finished) capture: its header must be header,
// and it returns where to go on and the length to keep (everything after
// the last complete record, or with steps the last "# next" mark, was cut
// short by the interruption).
func scan(name string, r io.Reader, header string, steps bool) (*resumeState, int64, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	st := &resumeState{next: map[int32]int64{}}
	var pos, keep int64
	for n := 1; ; n++ {
		line, err := readLine(br)
		if err == io.EOF {
			return st, keep, nil
		}
		if err == io.ErrUnexpectedEOF {
			return st, keep, nil // torn last line: cut
		}
		if err != nil {
			return nil, 0, fmt.Errorf("capture: read %s: %w", name, err)
		}
		pos += int64(len(line)) + 1
		text := bytes.TrimRight(line, "\r")
		switch {
		case n == 1:
			if string(text) != header {
				return nil, 0, inputErrorf("%s:1: the capture was made with other settings (%q; now %q): --resume continues the same topic, isolation, value format and batching", name, text, header)
			}
			keep = pos
		case steps && bytes.HasPrefix(text, []byte(markPrefix)):
			var m stepsMark
			if err := json.Unmarshal(text[len(markPrefix):], &m); err != nil || m.Next == nil {
				return nil, 0, inputErrorf("%s:%d: a damaged %q mark: %v", name, n, markPrefix, err)
			}
			st.mark, st.next, st.records, st.batches = &m, m.Next, m.Records, m.Batches
			keep = pos
		case steps:
			// A batch line: counted once its mark follows.
		case len(text) == 0 || text[0] == '#':
			keep = pos
		default:
			p, off, _, err := readPosition(text)
			if err != nil {
				return nil, 0, inputErrorf("%s:%d: %v", name, n, err)
			}
			if prev, ok := st.next[p]; ok && off < prev {
				return nil, 0, inputErrorf("%s:%d: partition %d offset %d after offset %d: not a capture's order", name, n, p, off, prev-1)
			}
			st.next[p] = off + 1
			st.records++
			keep = pos
		}
	}
}

// readLine returns one line without its '\n'; io.ErrUnexpectedEOF for a
// last line without one.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case err == bufio.ErrBufferFull:
			if len(buf) > maxLine {
				return nil, fmt.Errorf("a line longer than %d bytes", maxLine)
			}
		case err == io.EOF && len(buf) == 0:
			return nil, io.EOF
		case err == io.EOF:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// maxLine is the longest line capture writes or reads back: a steps line
// (one batch) may be 256 MiB, as exec reads it.
const maxLine = 256 << 20

// write appends bytes to the partial file.
func (o *outFile) write(b []byte) error {
	_, err := o.w.Write(b)
	return err
}

// sync makes everything written so far durable, so that a SIGKILL loses
// nothing before it.
func (o *outFile) sync() error {
	if err := o.w.Flush(); err != nil {
		return err
	}
	return o.f.Sync()
}

// commit makes the capture final: flush, then atomicfile.Commit (fsync,
// rename over the target, fsync of the folder).
func (o *outFile) commit() error {
	if err := o.w.Flush(); err != nil {
		return err
	}
	return atomicfile.Commit(o.f, o.target)
}

// stop keeps the partial file for a --resume: flushed and synced.
func (o *outFile) stop() error {
	err := o.sync()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	return err
}

package termprogress

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRunsPlain: off a terminal, the last line counts the runs and the
// failures, once however often Finish is called; with no total the line
// has no "of"; --quiet, or nothing run, prints nothing.
func TestRunsPlain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		quiet  bool
		total  uint64
		passed []bool
		want   string
	}{
		{"counted", false, 3, []bool{true, false}, "dedupsim sweep: 2 of 3 runs done, 1 failed, 0s\n"},
		{"no total", false, 0, []bool{true}, "dedupsim sweep: 1 runs done, 0 failed, 0s\n"},
		{"quiet", true, 3, []bool{true}, ""},
		{"nothing ran", false, 3, nil, ""},
	} {
		var errOut, out bytes.Buffer
		p := NewRuns(&errOut, tc.quiet, "sweep", tc.total, time.Hour)
		for _, ok := range tc.passed {
			p.Add(ok)
		}
		p.Print(&out, func(w io.Writer) { io.WriteString(w, "report\n") })
		p.Finish()
		p.Finish()
		if errOut.String() != tc.want {
			t.Errorf("%s: stderr %q, want %q", tc.name, errOut.String(), tc.want)
		}
		if out.String() != "report\n" {
			t.Errorf("%s: Print wrote %q", tc.name, out.String())
		}
	}
}

// TestRunsTicks: the plain lines come every interval, each ending in a
// newline, never a carriage return.
func TestRunsTicks(t *testing.T) {
	var mu lockedBuffer
	p := NewRuns(&mu, false, "run", 2, time.Millisecond)
	p.Add(true)
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(mu.String(), "\n") < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	p.Finish()
	got := mu.String()
	if strings.Count(got, "\n") < 3 || strings.Contains(got, "\r") {
		t.Fatalf("plain lines: %q", got)
	}
	for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if !strings.HasPrefix(l, "dedupsim run: 1 of 2 runs done, 0 failed, ") {
			t.Errorf("line %q", l)
		}
	}
}

// TestEvents: the bar starts only past Lines lines, judged from a file's
// size up front or counted on stdin.
func TestEvents(t *testing.T) {
	input := strings.Repeat("{}\n", 10) // 3 bytes a line
	for _, tc := range []struct {
		name  string
		size  int64
		lines int64
		read  int64 // lines reported through the callback
		bar   bool
	}{
		{"small file", 30, 100, 10, false},
		{"big file", 3000, 100, 10, true},
		{"stdin under", -1, 100, 10, false},
		{"stdin past", -1, 10, 10, true},
	} {
		var w bytes.Buffer
		b := &Events{W: &w, Name: "f", Size: tc.size, Lines: tc.lines}
		in, progress := b.Watch(strings.NewReader(input))
		all, _ := io.ReadAll(in)
		if string(all) != input {
			t.Fatalf("%s: Watch changed the input: %q", tc.name, all)
		}
		progress(tc.read, int64(len(all)))
		b.Finish()
		if got := b.bar != nil; got != tc.bar || (w.Len() > 0) != tc.bar {
			t.Errorf("%s: bar %v, %d bytes drawn; want a bar: %v", tc.name, got, w.Len(), tc.bar)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for the ticker's goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Package termprogress is the progress display of the verbs on standard
// error: the bar of a batch of runs (run, sweep) and the bar of an
// events file read (analyze). It is driven by the wall clock and drawn for
// a person; nothing it prints is part of a report, so it is outside the
// determinism rule of internal/arch.
package termprogress

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Runs tells how far a batch of runs is, on standard error: a bar redrawn
// in place when standard error is a terminal, otherwise (a CI log) a plain
// line every interval and one at the end, never a carriage return;
// nothing with --quiet.
type Runs struct {
	mu       sync.Mutex
	w        io.Writer
	label    string
	total    uint64 // 0: unknown
	done     uint64
	failed   uint64
	start    time.Time
	bar      *progressbar.ProgressBar
	plain    bool
	stop     chan struct{}
	stopped  sync.WaitGroup
	finished bool
}

// IsTerminal says whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// NewRuns starts the progress of total runs (0: unknown).
func NewRuns(w io.Writer, quiet bool, label string, total uint64, interval time.Duration) *Runs {
	p := &Runs{w: w, label: label, total: total, start: time.Now()}
	switch {
	case quiet:
	case IsTerminal(w):
		max := int64(-1) // a spinner when the total does not fit
		if total > 0 && total <= math.MaxInt64 {
			max = int64(total)
		}
		p.bar = progressbar.NewOptions64(max, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(label),
			progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
	default:
		p.plain = true
		p.stop = make(chan struct{})
		p.stopped.Add(1)
		go func() {
			defer p.stopped.Done()
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					p.mu.Lock()
					p.line()
					p.mu.Unlock()
				case <-p.stop:
					return
				}
			}
		}()
	}
	return p
}

// line prints the plain progress line (p.mu held).
func (p *Runs) line() {
	of := ""
	if p.total > 0 {
		of = fmt.Sprintf(" of %d", p.total)
	}
	fmt.Fprintf(p.w, "dedupsim %s: %d%s runs done, %d failed, %s\n", p.label, p.done, of, p.failed,
		time.Since(p.start).Round(time.Second))
}

// Add counts one finished run.
func (p *Runs) Add(passed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if !passed {
		p.failed++
	}
	if p.bar != nil {
		p.bar.Add(1)
	}
}

// Print writes to out (standard output) without tearing the bar: the bar
// is cleared first and redrawn by the next Add.
func (p *Runs) Print(out io.Writer, f func(io.Writer)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Clear()
	}
	f(out)
}

// Finish clears the bar, or prints the last plain line.
func (p *Runs) Finish() {
	p.mu.Lock()
	if p.finished {
		p.mu.Unlock()
		return
	}
	p.finished = true
	if p.bar != nil {
		p.bar.Finish()
	}
	p.mu.Unlock()
	if p.plain {
		close(p.stop)
		p.stopped.Wait()
		p.mu.Lock()
		if p.done > 0 { // nothing ran: the error says why, alone
			p.line()
		}
		p.mu.Unlock()
	}
}

// Events is analyze's progress bar on W (standard error), shown past
// Lines lines: for a file, judged up front by its size over the bytes per
// line of its first 64 KiB, so the bar starts at 0 and its rate is right;
// for stdin, once that many lines are read.
type Events struct {
	W     io.Writer
	Name  string
	Size  int64 // -1: unknown (stdin, a pipe)
	Lines int64
	bar   *progressbar.ProgressBar
}

func (b *Events) start() {
	b.bar = progressbar.NewOptions64(b.Size, progressbar.OptionSetWriter(b.W),
		progressbar.OptionSetDescription("analyze "+b.Name), progressbar.OptionShowBytes(true),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	b.bar.RenderBlank() // starts the clock the rate is measured from
}

// Watch returns in, buffered, and the analyze.Options.Progress callback
// that moves the bar; for a file with Lines lines or more the bar starts
// now.
func (b *Events) Watch(in io.Reader) (io.Reader, func(lines, read int64)) {
	br := bufio.NewReaderSize(in, 1<<16)
	if b.Size > 0 {
		head, _ := br.Peek(1 << 16)
		if n := bytes.Count(head, []byte("\n")); n > 0 && b.Size/int64(len(head)/n) >= b.Lines {
			b.start()
		}
	}
	return br, func(lines, read int64) {
		if b.bar == nil && b.Size < 0 && lines >= b.Lines {
			b.start()
		}
		if b.bar != nil {
			b.bar.Set64(read)
		}
	}
}

// Finish ends the bar, if one started.
func (b *Events) Finish() {
	if b.bar != nil {
		b.bar.Finish()
	}
}

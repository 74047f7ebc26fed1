package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress tells how far a batch of runs is, on standard error: a bar
// redrawn in place when standard error is a terminal, otherwise (a CI log)
// a plain line every interval and one at the end, never a carriage return;
// nothing with --quiet.
type progress struct {
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

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newProgress starts the progress of total runs (0: unknown).
func newProgress(w io.Writer, quiet bool, label string, total uint64, interval time.Duration) *progress {
	p := &progress{w: w, label: label, total: total, start: time.Now()}
	switch {
	case quiet:
	case isTerminal(w):
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
func (p *progress) line() {
	of := ""
	if p.total > 0 {
		of = fmt.Sprintf(" of %d", p.total)
	}
	fmt.Fprintf(p.w, "dedupsim %s: %d%s runs done, %d failed, %s\n", p.label, p.done, of, p.failed,
		time.Since(p.start).Round(time.Second))
}

// add counts one finished run.
func (p *progress) add(passed bool) {
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

// print writes to out (standard output) without tearing the bar: the bar is
// cleared first and redrawn by the next add.
func (p *progress) print(out io.Writer, f func(io.Writer)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Clear()
	}
	f(out)
}

// finish clears the bar, or prints the last plain line.
func (p *progress) finish() {
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

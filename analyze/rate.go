package analyze

import "time"

// Defaults of the key rate the state is sized from.
const (
	// DefaultRateWindow is the window of event time distinct keys are
	// counted in.
	DefaultRateWindow = time.Minute
	// DefaultRatePercentile: the sizing rate is this percentile of the
	// per-window rates, a peak that a few odd windows do not set.
	DefaultRatePercentile = 99.0
	// RateTolerance is how far behind the newest event time a window
	// stays open: an event whose window closed before it arrived is left
	// out of the rate (and counted). A day of slack costs 8 bytes per
	// window: 1,441 counters at the default window, 86,401 at 1 s.
	RateTolerance = 24 * time.Hour
)

// rateWindows counts distinct keys per tumbling window of event time
// (aligned to the epoch, like Spark's window()), keeping only the windows
// within RateTolerance of the newest one open, in a ring of counters; a
// window's count goes into a histogram when it closes. Memory is fixed by
// the window: the ring plus the histogram, whatever the input.
//
// Whether a copy is new to its window is decided by the caller from the
// key tracker, which already holds every recent key: a key counts once in
// the window of each copy, unless the key's first or last copy so far was
// already in that window. That is exact for keys whose copies fall in at
// most three windows (almost every key); a fourth copy landing in a window
// strictly between its first and last copies' windows, which already had
// one, is counted again: the count errs high, never low.
type rateWindows struct {
	width  int64 // µs
	ring   []int64
	lo, hi int64 // the open windows are [lo, hi]
	open   bool
	counts Hist // distinct keys of each closed window that had any
	late   int64
}

func newRateWindows(width time.Duration) *rateWindows {
	w := width.Microseconds()
	n := (RateTolerance.Microseconds()+w-1)/w + 1
	return &rateWindows{width: w, ring: make([]int64, n)}
}

// of is the window of an event time (>= 0: impossible times are filtered
// before).
func (r *rateWindows) of(et int64) int64 { return et / r.width }

// add counts one distinct key in window w, opening it (and closing those
// that fall out of the ring) as needed. It says false for a window that
// had already closed.
func (r *rateWindows) add(w int64) bool {
	n := int64(len(r.ring))
	switch {
	case !r.open:
		r.lo, r.hi, r.open = w, w, true
	case w > r.hi:
		// Windows up to w-n close; the slots of the new windows are the
		// ones just emptied, or were never used.
		keep := w - n + 1
		for x := r.lo; x < keep && x <= r.hi; x++ {
			r.emit(x)
		}
		r.lo, r.hi = max(r.lo, keep), w
	case w < r.hi-n+1:
		r.late++
		return false
	case w < r.lo:
		r.lo = w
	}
	r.ring[w%n]++
	return true
}

func (r *rateWindows) emit(x int64) {
	s := &r.ring[x%int64(len(r.ring))]
	if *s > 0 {
		r.counts.Add(*s)
	}
	*s = 0
}

// finish closes every open window.
func (r *rateWindows) finish() {
	if r.open {
		for x := r.lo; x <= r.hi; x++ {
			r.emit(x)
		}
		r.open = false
	}
}

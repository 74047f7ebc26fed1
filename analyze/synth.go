package analyze

import (
	"bufio"
	"container/heap"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// Synth generates a trace of events with a known shape, for tests,
// benchmarks and demonstrations: Keys distinct ids at RatePerSec per
// second of event time, DupFraction of them sent a second time, the copy
// stamped Gap later and written where its event time falls (the trace is in
// event-time order, which is arrival order for a source without lateness).
type Synth struct {
	Keys        int
	RatePerSec  float64
	DupFraction float64
	// Gap is the event-time gap of the i-th copy (i from 0).
	Gap   func(i int, r *rand.Rand) time.Duration
	Start time.Time
	Seed  uint64
}

// PaymentsGap is seed 000's payments stream: most retries within seconds,
// 99.99% of copies within 40 minutes, and a tail of hours from offline
// clients (one copy in 20,000, copy 7 first).
func PaymentsGap(i int, r *rand.Rand) time.Duration {
	if i%20000 == 7 {
		return 2*time.Hour + time.Duration(r.Int64N(int64(4*time.Hour)))
	}
	u := r.Float64()
	switch {
	case u < 0.90: // fast retries, mean 2 s
		return time.Duration(math.Min(r.ExpFloat64()*2, 60) * float64(time.Second))
	case u < 0.995:
		return time.Minute + time.Duration(r.Int64N(int64(9*time.Minute)))
	default:
		return 10*time.Minute + time.Duration(r.Int64N(int64(30*time.Minute)))
	}
}

// Payments is a payments-like trace of about n events: 0.4% of ids sent
// twice (seed 000's ratio) at 500 ids per second, with PaymentsGap.
func Payments(n int) Synth {
	return Synth{Keys: int(float64(n) / 1.004), RatePerSec: 500, DupFraction: 0.004, Gap: PaymentsGap,
		Start: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC), Seed: 1}
}

// RetriedBurst is issue 11's trace: 1,000 new ids a second for 5 minutes
// (300,000 ids), 3% of them retried once, up to 6 hours later (uniformly),
// each retry written where its event time falls. Its mean key rate over
// the whole span is a few keys a second; its peak is 1,000.
func RetriedBurst() Synth {
	return Synth{Keys: 300_000, RatePerSec: 1000, DupFraction: 0.03,
		Gap:   func(_ int, r *rand.Rand) time.Duration { return time.Duration(1 + r.Int64N(int64(6*time.Hour))) },
		Start: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC), Seed: 11}
}

type copyEvent struct {
	at time.Duration // since Start
	id int
}

type copyHeap []copyEvent

func (h copyHeap) Len() int           { return len(h) }
func (h copyHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h copyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *copyHeap) Push(x any)        { *h = append(*h, x.(copyEvent)) }
func (h *copyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Each calls f with every line of the trace, without its newline; the
// buffer is reused.
func (s Synth) Each(f func(line []byte) error) error {
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x5eed))
	start := s.Start.UnixMilli()
	step := float64(time.Second) / s.RatePerSec
	var pending copyHeap
	var buf []byte
	emit := func(id int, at time.Duration) error {
		buf = append(buf[:0], `{"id":"p`...)
		buf = strconv.AppendInt(buf, int64(id), 10)
		buf = append(buf, `","ts":`...)
		ms := start + at.Milliseconds()
		buf = strconv.AppendInt(buf, ms/1000, 10)
		buf = append(buf, '.')
		frac := ms % 1000
		buf = append(buf, byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
		buf = append(buf, '}')
		return f(buf)
	}
	copies := 0
	for id := range s.Keys {
		at := time.Duration(float64(id) * step)
		for len(pending) > 0 && pending[0].at <= at {
			c := heap.Pop(&pending).(copyEvent)
			if err := emit(c.id, c.at); err != nil {
				return err
			}
		}
		if err := emit(id, at); err != nil {
			return err
		}
		if r.Float64() < s.DupFraction {
			heap.Push(&pending, copyEvent{at: at + s.Gap(copies, r), id: id})
			copies++
		}
	}
	for len(pending) > 0 {
		c := heap.Pop(&pending).(copyEvent)
		if err := emit(c.id, c.at); err != nil {
			return err
		}
	}
	return nil
}

// Write writes the trace as JSON Lines.
func (s Synth) Write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	err := s.Each(func(line []byte) error {
		bw.Write(line)
		return bw.WriteByte('\n')
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

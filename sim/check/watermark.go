package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dedupsim/dedupsim/sim/history"
)

// checkWatermark: the watermark never goes down within a checkpoint
// (watermark-regressed), and it advances while data flows
// (watermark-stalled).
func (c *checker) checkWatermark() {
	h := c.h
	for _, i := range c.authByTime {
		b := &h.Batches[i]
		c.counts.WatermarkMs = max(c.counts.WatermarkMs, b.WatermarkMs, b.NextWatermarkMs)
	}
	c.checkRegressed()
	c.checkStalled()
}

// checkRegressed: within a checkpoint, every execution of a batch id runs
// with a watermark and a late watermark at least as high as every execution
// of a smaller batch id, and its next watermark is not below its own.
func (c *checker) checkRegressed() {
	h := c.h
	byEpoch := map[int][]int{}
	var epochs []int
	for i := range h.Batches {
		e := c.epochOf[i]
		if _, ok := byEpoch[e]; !ok {
			epochs = append(epochs, e)
		}
		byEpoch[e] = append(byEpoch[e], i)
	}
	sort.Ints(epochs)
	details := map[int][]string{}
	involved := map[int][]int64{}
	var execs []int
	flag := func(i int, other int64, d string) {
		if _, ok := details[i]; !ok {
			execs = append(execs, i)
		}
		details[i] = append(details[i], d)
		involved[i] = append(involved[i], other, h.Batches[i].BatchID)
	}
	for _, e := range epochs {
		l := byEpoch[e]
		sort.SliceStable(l, func(a, b int) bool { return h.Batches[l[a]].BatchID < h.Batches[l[b]].BatchID })
		mono := func(name string, get func(*history.Batch) int64) {
			prevBy := -1
			var prevMax int64
			for lo := 0; lo < len(l); {
				hi := lo
				for hi < len(l) && h.Batches[l[hi]].BatchID == h.Batches[l[lo]].BatchID {
					hi++
				}
				for _, i := range l[lo:hi] {
					if prevBy >= 0 && get(&h.Batches[i]) < prevMax {
						p := &h.Batches[prevBy]
						flag(i, p.BatchID, fmt.Sprintf("batch %d ran with %s %s after batch %d ran with %s", h.Batches[i].BatchID, name, c.at(get(&h.Batches[i])), p.BatchID, c.at(prevMax)))
					}
				}
				for _, i := range l[lo:hi] {
					if prevBy < 0 || get(&h.Batches[i]) > prevMax {
						prevBy, prevMax = i, get(&h.Batches[i])
					}
				}
				lo = hi
			}
		}
		mono("watermark", func(b *history.Batch) int64 { return b.WatermarkMs })
		mono("late watermark", func(b *history.Batch) int64 { return b.LateWatermarkMs })
		for _, i := range l {
			b := &h.Batches[i]
			if b.NextWatermarkMs < b.WatermarkMs {
				flag(i, b.BatchID, fmt.Sprintf("batch %d: next watermark %s below the watermark %s it ran with", b.BatchID, c.wm(b.NextWatermarkMs), c.wm(b.WatermarkMs)))
			}
		}
	}
	var ex []Example
	for _, i := range execs {
		ex = append(ex, Example{Batches: sortedUniqueIDs(involved[i]), Detail: fmt.Sprintf("checkpoint %d, execution %d: %s", c.epochOf[i], i, strings.Join(details[i], "; "))})
	}
	sortExamples(ex)
	c.add(WatermarkRegressed, len(ex), fmt.Sprintf("%d batch executions ran with a watermark below an earlier batch's (the global watermark only moves forward, §6.3)", len(ex)), ex)
}

type span struct{ a, b int64 }

// checkStalled: split the run at every watermark advance (a rise of
// NextWatermarkMs over its running max, or the start of a checkpoint); data
// flows while copies keep arriving with gaps of at most StallSpanMs/3. A
// stall is the overlap of a no-advance interval and a flow that lasts at
// least StallSpanMs once the driver's downtime (from a crash to the next
// restart) is taken out: a dead driver is the crash's story, not the
// watermark's.
func (c *checker) checkStalled() {
	h := c.h
	var auth []int
	for _, i := range c.authByTime {
		if sh := c.sh(c.epochOf[i]); sh.stateful() && sh.hasWatermark {
			auth = append(auth, i)
		}
	}
	if len(auth) == 0 {
		if !(c.final.stateful() && c.final.hasWatermark) {
			c.note("watermark-stalled: not checked, the query has no streaming watermark")
		}
		return
	}
	stallMs := c.opts.StallSpanMs
	type iv struct {
		a, b int64
		wm   int64
	}
	var ivs []iv
	curEpoch := -1
	var cur int64
	for _, i := range auth {
		bt := &h.Batches[i]
		if c.epochOf[i] != curEpoch {
			curEpoch, cur = c.epochOf[i], bt.WatermarkMs
			ivs = append(ivs, iv{a: bt.AtMs, wm: cur})
		}
		if bt.NextWatermarkMs > cur {
			cur = bt.NextWatermarkMs
			ivs = append(ivs, iv{a: bt.AtMs, wm: cur})
		}
	}
	end := max(h.EndMs, h.Batches[auth[len(auth)-1]].AtMs)
	for k := range ivs {
		if k+1 < len(ivs) {
			ivs[k].b = ivs[k+1].a
		} else {
			ivs[k].b = end
		}
	}
	appends := make([]int64, 0, len(h.Copies))
	for _, cp := range h.Copies {
		appends = append(appends, cp.AppendedAtMs)
	}
	sort.Slice(appends, func(i, j int) bool { return appends[i] < appends[j] })
	gap := max(stallMs/3, 1)
	var flows []span
	for _, t := range appends {
		if n := len(flows); n > 0 && t-flows[n-1].b <= gap {
			flows[n-1].b = t
			continue
		}
		flows = append(flows, span{t, t})
	}
	batchTimes := make([]int64, len(auth))
	for k, i := range auth {
		batchTimes[k] = h.Batches[i].AtMs
	}
	down := c.downtime()
	var ex []Example
	j := 0
	for _, v := range ivs {
		for j < len(flows) && flows[j].b < v.a {
			j++
		}
		for k := j; k < len(flows) && flows[k].a < v.b; k++ {
			o1, o2 := max(v.a, flows[k].a), min(v.b, flows[k].b)
			if o2-o1 < stallMs {
				continue
			}
			downMs := overlapMs(down, o1, o2)
			if o2-o1-downMs < stallMs {
				continue
			}
			n := sort.Search(len(appends), func(x int) bool { return appends[x] > o2 }) - sort.Search(len(appends), func(x int) bool { return appends[x] >= o1 })
			lo := sort.Search(len(batchTimes), func(x int) bool { return batchTimes[x] >= o1 })
			hi := sort.Search(len(batchTimes), func(x int) bool { return batchTimes[x] > o2 })
			var ids []int64
			if lo < hi {
				ids = []int64{c.batchID(auth[lo]), c.batchID(auth[hi-1])}
			}
			ahead := ""
			if v.wm > o2 {
				ahead = fmt.Sprintf(" (%s ahead of the processing clock)", Dur(v.wm-o2))
			}
			ex = append(ex, Example{Batches: sortedUniqueIDs(ids),
				Detail: fmt.Sprintf("watermark stayed at %s%s from %s to %s (%s up, %s down after crashes; >= %s) while %d copies arrived; %d batches ran meanwhile", SparkTime(v.wm), ahead, c.at(o1), c.at(o2), Dur(o2-o1-downMs), Dur(downMs), Dur(stallMs), n, hi-lo)})
		}
	}
	c.add(WatermarkStalled, len(ex), fmt.Sprintf("the watermark did not advance for %s or more while data flowed, %d times (a quiet input under the min policy, a future-clock producer, old event times, or a stuck engine); state is not evicted meanwhile", Dur(stallMs), len(ex)), ex)
}

// downtime lists the spans from each crash to its restart (or the end of
// the run), sorted and merged.
func (c *checker) downtime() []span {
	h := c.h
	crashes := make([]int64, 0, len(h.Crashes))
	for _, cr := range h.Crashes {
		crashes = append(crashes, cr.AtMs)
	}
	restarts := make([]int64, 0, len(h.Restarts))
	for _, r := range h.Restarts {
		restarts = append(restarts, r.AtMs)
	}
	sort.Slice(crashes, func(i, j int) bool { return crashes[i] < crashes[j] })
	sort.Slice(restarts, func(i, j int) bool { return restarts[i] < restarts[j] })
	// Pair each crash with the next restart not yet paired: a restart at
	// the very instant of a crash is the one that came before it.
	var out []span
	j := 0
	for _, a := range crashes {
		for j < len(restarts) && restarts[j] < a {
			j++
		}
		b := max(h.EndMs, a)
		if j < len(restarts) {
			b = restarts[j]
			j++
		}
		if n := len(out); n > 0 && a <= out[n-1].b {
			out[n-1].b = max(out[n-1].b, b)
			continue
		}
		out = append(out, span{a, b})
	}
	return out
}

// overlapMs is how much of [a, b] the sorted, disjoint spans cover.
func overlapMs(spans []span, a, b int64) int64 {
	var n int64
	k := sort.Search(len(spans), func(i int) bool { return spans[i].b > a })
	for _, s := range spans[k:] {
		if s.a >= b {
			break
		}
		n += min(s.b, b) - max(s.a, a)
	}
	return n
}

package check

import (
	"fmt"
	"math"
	"sort"
)

type statePt struct {
	x     int64 // AtMs
	y     int64 // NumRowsTotal
	exec  int
	epoch int
}

// checkState: the state-size rules over authoritative batches in time order.
//
// Retention (how long a key stays in state, in event time) for the APIs that
// evict: delay + trigger for dropDuplicates with the event time in the key (a
// key (id, t) goes once the watermark, max event time - delay, passes t, and
// the watermark a batch evicts with trails by one trigger), 2 x delay +
// trigger for dropDuplicatesWithinWatermark (expiry t + delay). The bound is
// ArrivalRatePerSec x retention x (1 + StateMargin), checked on batches after
// a warm-up of one retention period from the start of their checkpoint.
func (c *checker) checkState() {
	h := c.h
	var pts []statePt
	epochStart := map[int]int64{}
	for _, i := range c.authByTime {
		b := &h.Batches[i]
		e := c.epochOf[i]
		if !c.sh(e).stateful() {
			continue
		}
		if s, ok := epochStart[e]; !ok || b.AtMs < s {
			epochStart[e] = b.AtMs
		}
		pts = append(pts, statePt{x: b.AtMs, y: b.NumRowsTotal, exec: i, epoch: e})
	}
	if len(pts) == 0 {
		if !c.final.stateful() {
			c.note("state checks: not applicable, %s keeps no state", c.final.name())
		} else {
			c.note("state checks: no batch ran")
		}
		return
	}
	for _, p := range pts {
		c.counts.StateRowsMax = max(c.counts.StateRowsMax, p.y)
	}
	c.counts.StateRowsLast = pts[len(pts)-1].y
	if c.final.evicting() {
		c.counts.RetentionMs = c.final.retentionMs(c.triggerMs)
	}
	warm := func(p statePt) bool {
		sh := c.sh(p.epoch)
		return !sh.evicting() || p.x >= satAdd(epochStart[p.epoch], sh.retentionMs(c.triggerMs))
	}
	c.stateBound(pts, warm)
	c.stateGrowth(pts, warm)
}

// boundOf is arrival rate x retention x (1 + margin), in rows, plus three
// standard deviations of a Poisson count with that mean: at a few events per
// second the count of keys in state fluctuates by more than any fixed margin.
func (c *checker) boundOf(sh *shape) float64 {
	mean := c.h.ArrivalRatePerSec * float64(sh.retentionMs(c.triggerMs)) / 1000
	return mean*(1+c.opts.StateMargin) + 3*math.Sqrt(mean)
}

func (c *checker) stateBound(pts []statePt, warm func(statePt) bool) {
	h := c.h
	var ev []statePt
	for _, p := range pts {
		if c.sh(p.epoch).evicting() {
			ev = append(ev, p)
		}
	}
	if len(ev) == 0 {
		c.note("state-over-bound: not applicable, %s (%s) never evicts state; state-unbounded applies instead", c.final.name(), c.final.guarantee())
		return
	}
	rate := h.ArrivalRatePerSec
	if !(rate > 0) || math.IsInf(rate, 0) {
		c.note("state-over-bound: not checked, arrivalRatePerSec is %v", rate)
		return
	}
	if c.final.evicting() {
		c.counts.StateBound = c.boundOf(&c.final)
	}
	var warmPts, over []statePt
	for _, p := range ev {
		if !warm(p) {
			continue
		}
		warmPts = append(warmPts, p)
		if float64(p.y) > c.boundOf(c.sh(p.epoch)) {
			over = append(over, p)
		}
	}
	if len(warmPts) == 0 {
		c.note("state-over-bound: not checked, no batch after the warm-up of one retention period (%s)", Dur(c.sh(ev[0].epoch).retentionMs(c.triggerMs)))
		return
	}
	last := warmPts[len(warmPts)-1]
	lastBound := c.boundOf(c.sh(last.epoch))
	c.stateOverAtEnd = last == pts[len(pts)-1] && float64(last.y) > lastBound
	if len(over) == 0 {
		return
	}
	top := append([]statePt(nil), over...)
	sort.SliceStable(top, func(i, j int) bool { return top[i].y > top[j].y })
	if len(top) > c.opts.MaxExamples {
		top = top[:c.opts.MaxExamples]
	}
	sort.SliceStable(top, func(i, j int) bool { return top[i].x < top[j].x })
	var ex []Example
	for _, p := range top {
		ex = append(ex, Example{Batches: []int64{c.batchID(p.exec)},
			Detail: fmt.Sprintf("batch %d at %s: numRowsTotal %d > bound %.0f", c.batchID(p.exec), c.at(p.x), p.y, c.boundOf(c.sh(p.epoch)))})
	}
	end := fmt.Sprintf("back under the bound by the last batch (%d rows)", last.y)
	if c.stateOverAtEnd {
		end = fmt.Sprintf("still over the bound at the last batch (batch %d: %d rows): the healed phase did not bring state back", c.batchID(last.exec), last.y)
	}
	sh := c.sh(last.epoch)
	c.add(StateOverBound, len(over), fmt.Sprintf("%d batches held more state than arrival rate x retention x (1+margin) = %g/s x %s x %g = %.0f rows (max %d); %s",
		len(over), rate, Dur(sh.retentionMs(c.triggerMs)), 1+c.opts.StateMargin, lastBound, c.counts.StateRowsMax, end), ex)
}

// stateGrowth: least-squares slope of numRowsTotal against time over the
// second half of the run (after warm-up). It grows when the fitted growth
// over that window exceeds GrowthFraction of the window's mean AND the last
// quarter's max exceeds the second quarter's max.
func (c *checker) stateGrowth(pts []statePt, warm func(statePt) bool) {
	t0, tEnd := pts[0].x, pts[len(pts)-1].x
	span := float64(tEnd) - float64(t0)
	if !(span > 0) {
		c.note("state-unbounded: not checked, all batches at one instant")
		return
	}
	at := func(f float64) float64 { return float64(t0) + f*span }
	var win []statePt
	for _, p := range pts {
		if float64(p.x) >= at(0.5) && warm(p) {
			win = append(win, p)
		}
	}
	if len(win) < 4 || float64(win[len(win)-1].x-win[0].x) < span/4 {
		c.note("state-unbounded: not checked, too few batches in the second half after warm-up (%d)", len(win))
		return
	}
	n := float64(len(win))
	var mx, my float64
	for _, p := range win {
		mx += float64(p.x)
		my += float64(p.y)
	}
	mx /= n
	my /= n
	var sxy, sxx float64
	for _, p := range win {
		dx := float64(p.x) - mx
		sxy += dx * (float64(p.y) - my)
		sxx += dx * dx
	}
	if !(sxx > 0) {
		return
	}
	slope := sxy / sxx
	width := float64(win[len(win)-1].x - win[0].x)
	growth := slope * width
	q2, q2ok := int64(math.MinInt64), false
	q2any := int64(math.MinInt64)
	q4 := int64(math.MinInt64)
	for _, p := range pts {
		x := float64(p.x)
		if x < at(0.5) {
			q2any = max(q2any, p.y)
			if x >= at(0.25) {
				q2, q2ok = max(q2, p.y), true
			}
		}
		if x >= at(0.75) {
			q4 = max(q4, p.y)
		}
	}
	if !q2ok {
		q2 = q2any
	}
	if !(my > 0) || !(growth > c.opts.GrowthFraction*my) || q4 <= q2 {
		return
	}
	a, b := win[0], win[len(win)-1]
	// State that evicts and ends under its bound is recovering (from a
	// stalled or lagging watermark, say), not growing without bound.
	if sh := c.sh(b.epoch); sh.evicting() && c.h.ArrivalRatePerSec > 0 && float64(b.y) <= c.boundOf(sh) {
		return
	}
	why := "eviction is not keeping up (is the watermark advancing?)"
	if sh := c.sh(b.epoch); !sh.evicting() {
		why = fmt.Sprintf("expected: %s never evicts state (%s)", sh.name(), sh.guarantee())
	}
	c.add(StateUnbounded, 1, fmt.Sprintf("numRowsTotal is still growing over the second half of the run: %s", why), []Example{{
		Batches: []int64{c.batchID(a.exec), c.batchID(b.exec)},
		Detail: fmt.Sprintf("numRowsTotal %d at %s (batch %d) -> %d at %s (batch %d); fitted growth %.0f rows over %s (%.0f%% of the mean %.0f); last-quarter max %d > second-quarter max %d",
			a.y, c.at(a.x), c.batchID(a.exec), b.y, c.at(b.x), c.batchID(b.exec), growth, Dur(int64(width)), 100*growth/my, my, q4, q2),
	}})
}

package check

import (
	"fmt"
	"sort"

	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/sim/history"
)

// rd is one row of a batch execution: a copy read and its fate.
type rd struct {
	copy    int
	exec    int // index into History.Batches
	outcome string
}

// checker holds the history, its derived index, and the findings so far.
type checker struct {
	h        *history.History
	opts     Options
	findings []Finding
	notes    []string
	counts   Counts

	stateOverAtEnd bool
	table          Table
	margin         *Margin

	// Query shapes: per checkpoint epoch, and the final one (the history's
	// fields).
	shapes      []shape
	final       shape
	mixedShapes bool

	nCopies int
	epochOf []int  // per execution
	auth    []bool // per execution: last of its (epoch, batch id)
	rows    [][]rd // per execution: the valid rows
	// authByTime: authoritative executions by (AtMs, index).
	authByTime []int
	// reads: per copy, its rows in authoritative executions.
	reads [][]rd
	// events in natural order; copiesOf an event in index order.
	events   []string
	copiesOf map[string][]int
	// emits: per event, its emitted rows (authoritative).
	emits map[string][]rd
	// writeEpoch: per sink write, its checkpoint epoch.
	writeEpoch []int
	malformed  []Example
	triggerMs  int64

	// Shared between the event rules.
	lostEx     []Example
	lostEvents map[string]bool
	ncEx       []Example
	ncCopies   int
}

func newChecker(h *history.History, opts Options) *checker {
	if !(opts.StateMargin > 0) || opts.StateMargin > 1e6 {
		opts.StateMargin = DefaultStateMargin
	}
	if opts.MaxExamples <= 0 {
		opts.MaxExamples = DefaultMaxExamples
	}
	if !(opts.GrowthFraction > 0) || opts.GrowthFraction > 1e6 {
		opts.GrowthFraction = DefaultGrowthFraction
	}
	if opts.StallSpanMs < 0 {
		opts.StallSpanMs = 0
	}
	if opts.TriggerIntervalMs < 0 {
		opts.TriggerIntervalMs = 0
	}
	return &checker{h: h, opts: opts, lostEvents: map[string]bool{}}
}

func (c *checker) bad(e Example) { c.malformed = append(c.malformed, e) }

// index validates the record and builds the views every check uses.
func (c *checker) index() {
	h := c.h
	c.nCopies = len(h.Copies)
	for i, cp := range h.Copies {
		if i == 0 || cp.AppendedAtMs < c.counts.StartMs {
			c.counts.StartMs = cp.AppendedAtMs
		}
	}
	c.resolveShapes(c.assignEpochs())

	// Rows, with validation.
	c.rows = make([][]rd, len(h.Batches))
	for i := range h.Batches {
		b := &h.Batches[i]
		if len(b.Outcomes) != len(b.Input) {
			c.bad(Example{Batches: []int64{b.BatchID}, Detail: fmt.Sprintf("execution %d of batch %d: %d inputs but %d outcomes", i, b.BatchID, len(b.Input), len(b.Outcomes))})
		}
		n := min(len(b.Input), len(b.Outcomes))
		rows := make([]rd, 0, n)
		for j := 0; j < n; j++ {
			ci, o := b.Input[j], b.Outcomes[j]
			if ci < 0 || ci >= c.nCopies {
				c.bad(Example{Batches: []int64{b.BatchID}, Detail: fmt.Sprintf("execution %d of batch %d: input %d is copy %d, out of range [0,%d)", i, b.BatchID, j, ci, c.nCopies)})
				continue
			}
			if o != history.Emitted && o != history.Duplicate && o != history.Late && o != history.Filtered {
				c.bad(Example{Copies: []int{ci}, Batches: []int64{b.BatchID}, Detail: fmt.Sprintf("execution %d of batch %d: unknown outcome %q", i, b.BatchID, o)})
				continue
			}
			rows = append(rows, rd{copy: ci, exec: i, outcome: o})
		}
		c.rows[i] = rows
	}
	for wi, w := range h.Writes {
		for _, ci := range w.Rows {
			if ci < 0 || ci >= c.nCopies {
				c.bad(Example{Batches: []int64{w.BatchID}, Detail: fmt.Sprintf("sink write %d (batch %d): row is copy %d, out of range [0,%d)", wi, w.BatchID, ci, c.nCopies)})
			}
		}
		if w.Kept < 0 || w.Kept > len(w.Rows) {
			c.bad(Example{Batches: []int64{w.BatchID}, Detail: fmt.Sprintf("sink write %d (batch %d): kept %d of %d rows", wi, w.BatchID, w.Kept, len(w.Rows))})
		}
	}
	for ti, ci := range h.Table {
		if ci < 0 || ci >= c.nCopies {
			c.bad(Example{Detail: fmt.Sprintf("table row %d is copy %d, out of range [0,%d)", ti, ci, c.nCopies)})
		}
	}
	if len(h.Table) > 0 && !h.HasTable {
		c.bad(Example{Detail: fmt.Sprintf("table has %d rows but hasTable is false; the table is ignored", len(h.Table))})
	}
	c.contradictions()

	// Authoritative executions: the last of each (epoch, batch id).
	type bk struct {
		epoch int
		id    int64
	}
	last := map[bk]int{}
	for i := range h.Batches {
		last[bk{c.epochOf[i], h.Batches[i].BatchID}] = i
	}
	c.auth = make([]bool, len(h.Batches))
	for _, i := range last {
		c.auth[i] = true
	}
	for i := range h.Batches {
		if c.auth[i] {
			c.authByTime = append(c.authByTime, i)
		}
	}
	sort.SliceStable(c.authByTime, func(a, b int) bool {
		return h.Batches[c.authByTime[a]].AtMs < h.Batches[c.authByTime[b]].AtMs
	})

	// Copies and events.
	c.copiesOf = map[string][]int{}
	for i, cp := range h.Copies {
		if _, ok := c.copiesOf[cp.Event]; !ok {
			c.events = append(c.events, cp.Event)
		}
		c.copiesOf[cp.Event] = append(c.copiesOf[cp.Event], i)
	}
	sort.Slice(c.events, func(i, j int) bool { return naturalLess(c.events[i], c.events[j]) })

	c.reads = make([][]rd, c.nCopies)
	c.emits = map[string][]rd{}
	for i := range h.Batches {
		if !c.auth[i] {
			continue
		}
		for _, r := range c.rows[i] {
			c.reads[r.copy] = append(c.reads[r.copy], r)
			if r.outcome == history.Emitted {
				ev := h.Copies[r.copy].Event
				c.emits[ev] = append(c.emits[ev], r)
			}
		}
	}

	c.triggerMs = c.opts.TriggerIntervalMs
	if c.triggerMs == 0 {
		c.triggerMs = c.inferTrigger()
		c.opts.TriggerIntervalMs = c.triggerMs
	}
	if c.opts.StallSpanMs == 0 {
		c.opts.StallSpanMs = satMul(max(c.final.delayMs, c.triggerMs, DefaultStallFloorMs), 3)
	}

	c.counts.Copies = c.nCopies
	c.counts.Events = len(c.events)
	c.counts.Executions = len(h.Batches)
	c.counts.Batches = len(last)
	c.counts.Superseded = len(h.Batches) - len(last)
	c.counts.SinkWrites = len(h.Writes)
	c.counts.HasTable = h.HasTable

	if len(c.malformed) > 0 {
		sortExamples(c.malformed)
		c.add(MalformedHistory, len(c.malformed), fmt.Sprintf("%d contradictions in the record; the affected rows are ignored", len(c.malformed)), c.malformed)
	}
}

// assignEpochs splits executions and sink writes into checkpoint epochs. It
// returns, for each epoch after the first, the query of the fresh restart
// that opened it ("" when not recorded).
func (c *checker) assignEpochs() []string {
	h := c.h
	var restarts []history.Restart
	for _, r := range h.Restarts {
		if r.FreshCheckpoint {
			restarts = append(restarts, r)
		}
	}
	sort.SliceStable(restarts, func(i, j int) bool { return restarts[i].AtMs < restarts[j].AtMs })
	fresh := make([]int64, len(restarts))
	for i, r := range restarts {
		fresh[i] = r.AtMs
	}
	var openers []string
	c.epochOf = make([]int, len(h.Batches))
	epoch, p := 0, 0
	for i, b := range h.Batches {
		if p < len(fresh) && b.BatchID == 0 && b.AtMs >= fresh[p] {
			q := ""
			for p < len(fresh) && fresh[p] <= b.AtMs {
				if restarts[p].Query != "" {
					q = restarts[p].Query
				}
				p++
			}
			openers = append(openers, q)
			epoch++
		}
		c.epochOf[i] = epoch
	}
	c.counts.Checkpoints = epoch + 1

	// A write belongs to the epoch of the latest execution of its batch id
	// at or before it; failing that, to the count of fresh restarts before it.
	byID := map[int64][]int{}
	for i, b := range h.Batches {
		byID[b.BatchID] = append(byID[b.BatchID], i)
	}
	for _, l := range byID {
		sort.SliceStable(l, func(a, b int) bool { return h.Batches[l[a]].AtMs < h.Batches[l[b]].AtMs })
	}
	c.writeEpoch = make([]int, len(h.Writes))
	for wi, w := range h.Writes {
		l := byID[w.BatchID]
		k := sort.Search(len(l), func(j int) bool { return h.Batches[l[j]].AtMs > w.AtMs })
		if k > 0 {
			c.writeEpoch[wi] = c.epochOf[l[k-1]]
			continue
		}
		c.writeEpoch[wi] = min(sort.Search(len(fresh), func(j int) bool { return fresh[j] > w.AtMs }), epoch)
	}
	return openers
}

// inferTrigger is the median gap between consecutive authoritative batches
// that read data (0 when there are fewer than two).
func (c *checker) inferTrigger() int64 {
	var prev int64
	var have bool
	var gaps []int64
	for _, i := range c.authByTime {
		b := &c.h.Batches[i]
		if len(b.Input) == 0 {
			continue
		}
		if have && b.AtMs > prev {
			gaps = append(gaps, b.AtMs-prev)
		}
		prev, have = b.AtMs, true
	}
	if len(gaps) == 0 {
		return 0
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	return gaps[len(gaps)/2]
}

func (c *checker) batchID(exec int) int64 { return c.h.Batches[exec].BatchID }

// contradictions finds records that cannot all be true: a sink write for a
// batch that never ran or of a row its batch did not emit, a table row no
// sink write kept, a sink that keeps a table recorded without one, two
// copies at one offset.
func (c *checker) contradictions() {
	h := c.h
	if d, ok := sink.Lookup(sink.Kind(h.SinkKind)); ok && d.HasTable && !h.HasTable {
		c.bad(Example{Detail: fmt.Sprintf("sink kind %q keeps a table, but hasTable is false", h.SinkKind)})
	}
	type pk struct {
		source, partition int
		offset            int64
	}
	at := map[pk]int{}
	for i, cp := range h.Copies {
		k := pk{cp.Source, cp.Partition, cp.Offset}
		if j, ok := at[k]; ok {
			c.bad(Example{Event: cp.Event, Copies: []int{j, i}, Detail: fmt.Sprintf("copies %d and %d are both at source %d partition %d offset %d", j, i, cp.Source, cp.Partition, cp.Offset)})
			continue
		}
		at[k] = i
	}
	emitted := map[int64]map[int]bool{} // batch id -> copies some execution of it emitted
	for i := range h.Batches {
		b := &h.Batches[i]
		m := emitted[b.BatchID]
		if m == nil {
			m = map[int]bool{}
			emitted[b.BatchID] = m
		}
		for j, ci := range b.Input {
			if j < len(b.Outcomes) && b.Outcomes[j] == history.Emitted {
				m[ci] = true
			}
		}
	}
	keptRows := map[int]int{} // copy -> deliveries with rows kept that hold it
	anyKept := false
	for wi, w := range h.Writes {
		m, ran := emitted[w.BatchID]
		if !ran {
			c.bad(Example{Batches: []int64{w.BatchID}, Detail: fmt.Sprintf("sink write %d is for batch %d, which never ran", wi, w.BatchID)})
			continue
		}
		for _, ci := range w.Rows {
			if ci >= 0 && ci < c.nCopies && !m[ci] {
				c.bad(Example{Copies: []int{ci}, Batches: []int64{w.BatchID}, Detail: fmt.Sprintf("sink write %d (batch %d) delivers copy %d, which no execution of batch %d emitted", wi, w.BatchID, ci, w.BatchID)})
				break
			}
		}
		if w.Kept > 0 {
			anyKept = true
			for _, ci := range w.Rows {
				keptRows[ci]++
			}
		}
	}
	if !h.HasTable || len(h.Table) == 0 {
		return
	}
	if !anyKept {
		c.bad(Example{Detail: fmt.Sprintf("the table has %d rows but no sink write kept a row", len(h.Table))})
		return
	}
	inTable := map[int]int{}
	for _, ci := range h.Table {
		inTable[ci]++
	}
	var over []int
	for ci, n := range inTable {
		if ci >= 0 && ci < c.nCopies && n > keptRows[ci] {
			over = append(over, ci)
		}
	}
	sort.Ints(over)
	for _, ci := range over {
		c.bad(Example{Event: h.Copies[ci].Event, Copies: []int{ci}, Detail: fmt.Sprintf("copy %d is in the table %d times, but only %d sink writes that kept rows delivered it", ci, inTable[ci], keptRows[ci])})
		if len(over) > 1 {
			c.bad(Example{Detail: fmt.Sprintf("%d more copies in the table have fewer sink writes that kept rows than table rows", len(over)-1)})
			break
		}
	}
}

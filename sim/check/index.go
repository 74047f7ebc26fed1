package check

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"

	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/internal/radix"
	"github.com/dedupsim/dedupsim/sim/history"
)

// rd is one row of a batch execution: a copy read and its fate (12
// bytes: a copy index fits in 32 bits, as an event number does in evOf,
// since 2^31 copies would take 170 GB in History.Copies alone).
type rd struct {
	copy    int32
	exec    int32 // index into History.Batches
	outcome history.Outcome
}

// csr is a list of lists in two arrays (compressed sparse rows): list i is
// items[start[i]:start[i+1]]. The checker's per-copy and per-event views
// are csr instead of a slice or map entry per copy, which cost a header
// and an allocation each. Positions are 32 bits (4 bytes a list): a csr
// holds at most one item per row read or copy, fewer than 2^31 in any
// history that fits in memory (its Input alone would be 16 GiB).
type csr[T any] struct {
	start []int32
	items []T
}

func (l *csr[T]) of(i int) []T { return l.items[l.start[i]:l.start[i+1]:l.start[i+1]] }

// len is the number of lists.
func (l *csr[T]) len() int { return max(len(l.start)-1, 0) }

// csrBuilder fills a csr in two passes over the same items in the same
// order: count, then put; each list keeps the order its items came in.
type csrBuilder[T any] struct {
	csr[T]
	counts []int32 // per list, in the counting pass
	next   []int32
}

func newCSRBuilder[T any](lists int) *csrBuilder[T] {
	return &csrBuilder[T]{counts: make([]int32, lists)}
}

func (b *csrBuilder[T]) count(i int) {
	if b.counts[i] == math.MaxInt32 {
		panic(fmt.Sprintf("check: more than %d items in one list of an index", math.MaxInt32))
	}
	b.counts[i]++
}

// alloc ends the counting pass.
func (b *csrBuilder[T]) alloc() {
	b.start = make([]int32, len(b.counts)+1)
	n := 0
	for i, k := range b.counts {
		n += int(k)
		if n > math.MaxInt32 {
			panic(fmt.Sprintf("check: more than %d items in one index", math.MaxInt32))
		}
		b.start[i+1] = int32(n)
	}
	b.counts = nil
	b.items = make([]T, n)
	b.next = append([]int32(nil), b.start[:len(b.start)-1]...)
}

func (b *csrBuilder[T]) put(i int, v T) {
	b.items[b.next[i]] = v
	b.next[i]++
}

func (b *csrBuilder[T]) done() csr[T] {
	b.next = nil
	return b.csr
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
	epochOf []int   // per execution
	auth    []bool  // per execution: last of its (epoch, batch id)
	rows    csr[rd] // per execution: the valid rows
	// authByTime: authoritative executions by (AtMs, index).
	authByTime []int
	// reads: per copy, its rows in authoritative executions.
	reads csr[rd]
	// Events are numbered 0..nEvents-1 in natural order of their names
	// (event(e) is e's name, read from its first copy: no string per
	// event); evOf is each copy's event; copiesOf an event's copies in
	// index order.
	nEvents  int
	evOf     []int32
	copiesOf csr[int]
	// emits: per event, its emitted rows (authoritative).
	emits csr[rd]
	// writeEpoch: per sink write, its checkpoint epoch.
	writeEpoch []int
	malformed  []Example
	triggerMs  int64

	// Shared between the event rules.
	lostEx     []Example
	lostEvents map[int32]bool
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
	return &checker{h: h, opts: opts, lostEvents: map[int32]bool{}}
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
	rows := newCSRBuilder[rd](len(h.Batches))
	for pass := 0; pass < 2; pass++ {
		if pass == 1 {
			rows.alloc()
		}
		for i := range h.Batches {
			b := &h.Batches[i]
			if pass == 0 && len(b.Outcomes) != len(b.Input) {
				c.bad(Example{Batches: []int64{b.BatchID}, Detail: fmt.Sprintf("execution %d of batch %d: %d inputs but %d outcomes", i, b.BatchID, len(b.Input), len(b.Outcomes))})
			}
			n := min(len(b.Input), len(b.Outcomes))
			for j := 0; j < n; j++ {
				ci := int(b.Input[j])
				if ci < 0 || ci >= c.nCopies {
					if pass == 0 {
						c.bad(Example{Batches: []int64{b.BatchID}, Detail: fmt.Sprintf("execution %d of batch %d: input %d is copy %d, out of range [0,%d)", i, b.BatchID, j, ci, c.nCopies)})
					}
					continue
				}
				o := b.Outcomes[j]
				ok := o.Valid()
				if !ok {
					if pass == 0 {
						c.bad(Example{Copies: []int{ci}, Batches: []int64{b.BatchID}, Detail: fmt.Sprintf("execution %d of batch %d: unknown outcome %q", i, b.BatchID, b.Outcomes[j])})
					}
					continue
				}
				if pass == 0 {
					rows.count(i)
				} else {
					rows.put(i, rd{copy: int32(ci), exec: int32(i), outcome: o})
				}
			}
		}
	}
	c.rows = rows.done()
	for wi, w := range h.Writes {
		for _, c32 := range w.Rows {
			ci := int(c32)
			if ci < 0 || ci >= c.nCopies {
				c.bad(Example{Batches: []int64{w.BatchID}, Detail: fmt.Sprintf("sink write %d (batch %d): row is copy %d, out of range [0,%d)", wi, w.BatchID, ci, c.nCopies)})
			}
		}
		if w.Kept < 0 || w.Kept > len(w.Rows) {
			c.bad(Example{Batches: []int64{w.BatchID}, Detail: fmt.Sprintf("sink write %d (batch %d): kept %d of %d rows", wi, w.BatchID, w.Kept, len(w.Rows))})
		}
	}
	for ti, c32 := range h.Table {
		ci := int(c32)
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

	// Copies and events: the copies sorted by (event in natural order,
	// index) are the lists of copiesOf one after the other, and each run
	// of one event name in them is an event, numbered in natural order.
	// (naturalLess is a total order: it ties only equal names.) Sorting
	// the copies needs their indices and nothing more, where a map from
	// name to number held about 35 bytes a copy while it was built.
	// The simulator's names ("e0-123") compare as one number each
	// (NaturalKey), in an array read in place of the copies' strings.
	order, keys, names := naturalOrder(h.Copies)
	if keys != nil { // not sorted yet
		sortNatural(order, keys, h.Copies)
	}
	c.evOf = make([]int32, c.nCopies)
	var starts []int32
	for k, ci := range order {
		if k == 0 || (names != nil && names[k] != names[k-1]) ||
			(names == nil && h.Copies[ci].Event != h.Copies[order[k-1]].Event) {
			starts = append(starts, int32(k))
		}
		c.evOf[ci] = int32(len(starts) - 1)
	}
	c.nEvents = len(starts)
	c.copiesOf = csr[int]{start: append(starts, int32(len(order))), items: order}

	reads, emits := newCSRBuilder[rd](c.nCopies), newCSRBuilder[rd](c.nEvents)
	for pass := 0; pass < 2; pass++ {
		if pass == 1 {
			reads.alloc()
			emits.alloc()
		}
		for i := range h.Batches {
			if !c.auth[i] {
				continue
			}
			for _, r := range c.rows.of(i) {
				e := int(c.evOf[r.copy])
				if pass == 0 {
					reads.count(int(r.copy))
					if r.outcome == history.Emitted {
						emits.count(e)
					}
					continue
				}
				reads.put(int(r.copy), r)
				if r.outcome == history.Emitted {
					emits.put(e, r)
				}
			}
		}
	}
	c.reads, c.emits = reads.done(), emits.done()

	c.triggerMs = c.opts.TriggerIntervalMs
	if c.triggerMs == 0 {
		c.triggerMs = c.inferTrigger()
		c.opts.TriggerIntervalMs = c.triggerMs
	}
	if c.opts.StallSpanMs == 0 {
		c.opts.StallSpanMs = satMul(max(c.final.delayMs, c.triggerMs, DefaultStallFloorMs), 3)
	}

	c.counts.Copies = c.nCopies
	c.counts.Events = c.nEvents
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

// rowBatch is the batch id of the execution that read r.
func (c *checker) rowBatch(r rd) int64 { return c.batchID(int(r.exec)) }

// event is the name of event e.
func (c *checker) event(e int) string {
	return c.h.Copies[c.copiesOf.items[c.copiesOf.start[e]]].Event
}

// eventOf is the number of the event named ev (-1: no copy of it).
func (c *checker) eventOf(ev string) int {
	lo, hi := 0, c.nEvents
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if naturalLess(c.event(m), ev) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < c.nEvents && c.event(lo) == ev {
		return lo
	}
	return -1 // naturalLess is a total order: a miss is a miss
}

// contradictions finds records that cannot all be true: a sink write for a
// batch that never ran or of a row its batch did not emit, a table row no
// sink write kept, a sink that keeps a table recorded without one, two
// copies at one offset.
func (c *checker) contradictions() {
	h := c.h
	if d, ok := sink.Lookup(sink.Kind(h.SinkKind)); ok && d.HasTable && !h.HasTable {
		c.bad(Example{Detail: fmt.Sprintf("sink kind %q keeps a table, but hasTable is false", h.SinkKind)})
	}
	c.sameOffset()
	// Per batch id, the copies some execution of it emitted, built for
	// one batch id at a time: a write delivers the rows of its batch.
	execsOf := map[int64][]int{}
	for i := range h.Batches {
		execsOf[h.Batches[i].BatchID] = append(execsOf[h.Batches[i].BatchID], i)
	}
	emitted := map[int]bool{}
	emittedFor, haveEmitted := int64(0), false
	var keptRows []int32 // copy -> deliveries with rows kept that hold it (nil: no write kept a row)
	for wi, w := range h.Writes {
		execs, ran := execsOf[w.BatchID]
		if !ran {
			c.bad(Example{Batches: []int64{w.BatchID}, Detail: fmt.Sprintf("sink write %d is for batch %d, which never ran", wi, w.BatchID)})
			continue
		}
		if !haveEmitted || emittedFor != w.BatchID {
			clear(emitted)
			emittedFor, haveEmitted = w.BatchID, true
			for _, i := range execs {
				b := &h.Batches[i]
				for j, ci := range b.Input {
					if j < len(b.Outcomes) && b.Outcomes[j] == history.Emitted {
						emitted[int(ci)] = true
					}
				}
			}
		}
		for _, c32 := range w.Rows {
			ci := int(c32)
			if ci >= 0 && ci < c.nCopies && !emitted[ci] {
				c.bad(Example{Copies: []int{ci}, Batches: []int64{w.BatchID}, Detail: fmt.Sprintf("sink write %d (batch %d) delivers copy %d, which no execution of batch %d emitted", wi, w.BatchID, ci, w.BatchID)})
				break
			}
		}
		if w.Kept > 0 {
			if keptRows == nil {
				keptRows = make([]int32, c.nCopies)
			}
			for _, c32 := range w.Rows {
				ci := int(c32)
				if ci >= 0 && ci < c.nCopies {
					keptRows[ci]++
				}
			}
		}
	}
	if !h.HasTable || len(h.Table) == 0 {
		return
	}
	if keptRows == nil {
		c.bad(Example{Detail: fmt.Sprintf("the table has %d rows but no sink write kept a row", len(h.Table))})
		return
	}
	inTable := make([]int32, c.nCopies)
	for _, c32 := range h.Table {
		ci := int(c32)
		if ci >= 0 && ci < c.nCopies {
			inTable[ci]++
		}
	}
	var over []int
	for ci, n := range inTable {
		if n > keptRows[ci] {
			over = append(over, ci)
		}
	}
	for _, ci := range over {
		c.bad(Example{Event: h.Copies[ci].Event, Copies: []int{ci}, Detail: fmt.Sprintf("copy %d is in the table %s, but only %d sink writes that kept rows delivered it", ci, Times(int(inTable[ci])), keptRows[ci])})
		if len(over) > 1 {
			c.bad(Example{Detail: fmt.Sprintf("%d more copies in the table have fewer sink writes that kept rows than table rows", len(over)-1)})
			break
		}
	}
}

// sameOffset finds two copies at one (source, partition, offset). A log
// appends each partition's offsets in increasing order, which is checked
// with one offset per partition; only a history that does not (a merged
// or hand-written one) is sorted, instead of a map entry per copy.
func (c *checker) sameOffset() {
	h := c.h
	type pk struct{ source, partition int32 }
	last := map[pk]int64{}
	increasing := true
	for i := range h.Copies {
		cp := &h.Copies[i]
		k := pk{cp.Source, cp.Partition}
		if o, ok := last[k]; ok && cp.Offset <= o {
			increasing = false
			break
		}
		last[k] = cp.Offset
	}
	if increasing {
		return
	}
	order := make([]int32, c.nCopies)
	for i := range order {
		order[i] = int32(i)
	}
	at := func(i int32) (int32, int32, int64) {
		cp := &h.Copies[i]
		return cp.Source, cp.Partition, cp.Offset
	}
	slices.SortFunc(order, func(a, b int32) int {
		sa, pa, oa := at(a)
		sb, pb, ob := at(b)
		if sa != sb {
			return cmp.Compare(sa, sb)
		}
		if pa != pb {
			return cmp.Compare(pa, pb)
		}
		if oa != ob {
			if oa < ob {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	type pair struct{ first, i int }
	var pairs []pair
	same := func(a, b int32) bool {
		s0, p0, o0 := at(a)
		s1, p1, o1 := at(b)
		return s0 == s1 && p0 == p1 && o0 == o1
	}
	for k, gs := 1, 0; k < len(order); k++ {
		if !same(order[gs], order[k]) {
			gs = k
			continue
		}
		pairs = append(pairs, pair{int(order[gs]), int(order[k])})
	}
	// In copy order, as a scan of the copies would find them.
	slices.SortFunc(pairs, func(a, b pair) int { return a.i - b.i })
	for _, p := range pairs {
		cp := &h.Copies[p.i]
		c.bad(Example{Event: cp.Event, Copies: []int{p.first, p.i}, Detail: fmt.Sprintf("copies %d and %d are both at source %d partition %d offset %d", p.first, p.i, cp.Source, cp.Partition, cp.Offset)})
	}
}

// maxRadixHeads is how many distinct name heads (the byte and first
// number of a simulator's name, "e0-") naturalOrder ranks before it
// leaves the copies to the comparison sort: a run has one per source.
const maxRadixHeads = 1 << 12

// naturalOrder returns the copies' indices and, when some name has no
// NaturalKey, every copy's key, for the comparison sort of the index to
// finish. When every name has one (a simulated run's), it sorts the
// indices itself, by (key, index), with one radix sort of packed
// integers: the rank of the name's head, its second number and the
// index, each in the bits its largest value needs. The order is the
// comparison sort's (keys nil: nothing is left to sort), and
// names[k] is then a number for the name of copy order[k], equal for
// equal names (comparing the strings was a cache miss a copy); a pdqsort
// of 10 M copies on a comparison function was 5% of a run's CPU.
func naturalOrder(copies []history.Copy) (order []int, keys, names []uint64) {
	n := len(copies)
	order = make([]int, n)
	keys = make([]uint64, n)
	heads := map[uint64]uint64{}
	var maxB uint64
	all := true
	lastHead := ^uint64(0) // no head: a key's is below 2^36
	for i := range copies {
		order[i] = i
		k := NaturalKey(copies[i].Event)
		keys[i] = k
		if !all {
			continue
		}
		if k == NoNaturalKey {
			all = false
			continue
		}
		if h := k >> 28; h != lastHead {
			heads[h], lastHead = 0, h
		}
		maxB = max(maxB, k&(1<<28-1))
		if len(heads) > maxRadixHeads {
			all = false
		}
	}
	if !all || n < 2 {
		return order, keys, nil
	}
	ranked := make([]uint64, 0, len(heads))
	for h := range heads {
		ranked = append(ranked, h)
	}
	slices.Sort(ranked)
	for r, h := range ranked {
		heads[h] = uint64(r)
	}
	bI := bits.Len(uint(n - 1))
	bB := bits.Len64(maxB)
	width := bits.Len(uint(len(ranked)-1)) + bB + bI
	if width > 64 {
		return order, keys, nil
	}
	packed := keys // reused: keys are read once each, in order
	var lastRank uint64
	lastHead = ^uint64(0)
	for i, k := range keys {
		if h := k >> 28; h != lastHead {
			lastHead, lastRank = h, heads[h]
		}
		packed[i] = lastRank<<(bB+bI) | (k&(1<<28-1))<<bI | uint64(i)
	}
	sorted, _ := radix.Sort(packed, make([]uint64, n), width)
	for i, p := range sorted {
		order[i] = int(p & (1<<bI - 1))
		sorted[i] = p >> bI // the name's rank and number
	}
	return order, nil, sorted
}

// sortNatural sorts order by (name in natural order, index), with keys the
// names' NaturalKeys.
func sortNatural(order []int, keys []uint64, copies []history.Copy) {
	slices.SortFunc(order, func(a, b int) int {
		if ka, kb := keys[a], keys[b]; ka != NoNaturalKey && kb != NoNaturalKey {
			if ka != kb {
				return cmp.Compare(ka, kb)
			}
			return cmp.Compare(a, b)
		}
		ea, eb := copies[a].Event, copies[b].Event
		switch {
		case ea == eb:
			return cmp.Compare(a, b)
		case naturalLess(ea, eb):
			return -1
		}
		return 1
	})
}

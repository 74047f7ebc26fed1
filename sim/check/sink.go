package check

import (
	"fmt"
	"sort"
)

// checkSink: a batch delivered more than once must reach the table at most
// once, and the final table must hold each emitted event at least once and
// no more often than it was emitted.
func (c *checker) checkSink() {
	h := c.h
	type wk struct {
		epoch int
		id    int64
	}
	var order []wk
	kept := map[wk][]int{}
	deliveries := map[wk][]int{}
	for wi, w := range h.Writes {
		k := wk{c.writeEpoch[wi], w.BatchID}
		if _, ok := deliveries[k]; !ok {
			order = append(order, k)
		}
		deliveries[k] = append(deliveries[k], wi)
		if w.Kept > 0 {
			kept[k] = append(kept[k], wi)
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].epoch != order[j].epoch {
			return order[i].epoch < order[j].epoch
		}
		return order[i].id < order[j].id
	})

	var ex []Example
	overEvents := map[int32]bool{}
	if h.HasTable {
		// Per copy: its table rows and emissions; per event, its table
		// rows in table order.
		perCopy := make([]int32, c.nCopies)
		perEventB := newCSRBuilder[int](c.nEvents)
		for _, c32 := range h.Table {
			ci := int(c32)
			if ci < 0 || ci >= c.nCopies {
				continue
			}
			c.counts.TableRows++
			perCopy[ci]++
			perEventB.count(int(c.evOf[ci]))
		}
		perEventB.alloc()
		for _, c32 := range h.Table {
			ci := int(c32)
			if ci >= 0 && ci < c.nCopies {
				perEventB.put(int(c.evOf[ci]), ci)
			}
		}
		perEvent := perEventB.done()
		for e := range perEvent.len() {
			if len(perEvent.of(e)) > 0 {
				c.counts.TableEvents++
			}
		}
		emittedCopy := make([]int32, c.nCopies)
		for _, r := range c.emits.items {
			emittedCopy[r.copy]++
		}
		var keptBy *csr[int64] // copy -> batch ids of deliveries with rows kept; built when first needed
		keptByOf := func(ci int) []int64 {
			if keptBy == nil {
				b := newCSRBuilder[int64](c.nCopies)
				for pass := 0; pass < 2; pass++ {
					if pass == 1 {
						b.alloc()
					}
					for _, w := range h.Writes {
						if w.Kept <= 0 {
							continue
						}
						for _, c32 := range w.Rows {
							ci := int(c32)
							if ci >= 0 && ci < c.nCopies {
								if pass == 0 {
									b.count(ci)
								} else {
									b.put(ci, w.BatchID)
								}
							}
						}
					}
				}
				l := b.done()
				keptBy = &l
			}
			return keptBy.of(ci)
		}
		var lostEx []Example
		for e := range c.nEvents {
			rows := perEvent.of(e)
			m := len(c.emits.of(e))
			twice := -1
			for _, ci := range rows {
				if int(perCopy[ci]) > max(int(emittedCopy[ci]), 1) {
					twice = ci
					break
				}
			}
			if len(rows) > m || twice >= 0 {
				overEvents[int32(e)] = true
				var ids []int64
				for _, ci := range sortedUniqueInts(rows) {
					ids = append(ids, keptByOf(ci)...)
				}
				d := fmt.Sprintf("in the table %s but emitted %s", Times(len(rows)), Times(m))
				if twice >= 0 {
					d += fmt.Sprintf("; copy %d is in the table %s but emitted %s", twice, Times(int(perCopy[twice])), Times(int(emittedCopy[twice])))
				}
				if len(ids) > 0 {
					d += "; kept by deliveries of batch " + idCounts(ids)
				}
				ex = append(ex, Example{Event: c.event(e), Copies: sortedUniqueInts(rows), Batches: sortedUniqueIDs(ids), Detail: d})
			}
			if m > 0 && len(rows) == 0 {
				var copies []int
				var ids []int64
				var why []string
				for _, r := range c.emits.of(e) {
					copies = append(copies, int(r.copy))
					ids = append(ids, c.rowBatch(r))
					for _, wi := range deliveries[wk{c.epochOf[r.exec], c.rowBatch(r)}] {
						if len(why) == 5 {
							break // enough to explain; joinLimit shows 4
						}
						why = append(why, fmt.Sprintf("batch %d delivered %d rows, kept %d", c.rowBatch(r), len(h.Writes[wi].Rows), h.Writes[wi].Kept))
					}
				}
				d := fmt.Sprintf("emitted %s but absent from the final table", Times(len(c.emits.of(e))))
				if len(why) > 0 {
					d += " (" + joinLimit(why, 4) + ")"
				} else {
					d += " (no sink write recorded for its batch)"
				}
				lostEx = append(lostEx, Example{Event: c.event(e), Copies: sortedUniqueInts(copies), Batches: sortedUniqueIDs(ids), Detail: d})
			}
		}
		c.add(SinkLost, len(lostEx), fmt.Sprintf("%d emitted events are missing from the final table (the sink skipped or dropped their delivery)", len(lostEx)), lostEx)
		// What a reader of the table sees, whatever the cause: an event held
		// more than once (copies the operator let through, or replays).
		var dupEx []Example
		for e := range c.nEvents {
			if rows := perEvent.of(e); len(rows) > 1 {
				dupEx = append(dupEx, Example{Event: c.event(e), Copies: sortedUniqueInts(rows), Detail: fmt.Sprintf("in the final table %s (emitted %s)", Times(len(rows)), Times(len(c.emits.of(e))))})
			}
		}
		c.add(TableDuplicate, len(dupEx), fmt.Sprintf("%d events are held more than once in the final table", len(dupEx)), dupEx)
	} else {
		c.note("sink-lost and table duplicates: not checked, the history has no final table (sink kind %q); only repeated deliveries are", h.SinkKind)
	}

	rekept := 0
	for _, k := range order {
		ws := kept[k]
		if len(ws) < 2 {
			continue
		}
		covered := false
		for _, wi := range ws {
			for _, ci := range h.Writes[wi].Rows {
				if ci >= 0 && int(ci) < c.nCopies && overEvents[c.evOf[ci]] {
					covered = true
				}
			}
		}
		rekept++
		if covered {
			continue
		}
		var ks []string
		for _, wi := range deliveries[k] {
			ks = append(ks, fmt.Sprintf("%d of %d", h.Writes[wi].Kept, len(h.Writes[wi].Rows)))
		}
		last := h.Writes[ws[len(ws)-1]].Rows
		ex = append(ex, Example{Copies: sortedUniqueInts(limitCopies(last, 8)), Batches: []int64{k.id},
			Detail: fmt.Sprintf("batch %d (checkpoint %d) delivered %s and rows were kept %s (kept %s)", k.id, k.epoch, Times(len(deliveries[k])), Times(len(ws)), joinLimit(ks, 6))})
	}
	sortExamples(ex)
	msg := fmt.Sprintf("replayed output reached the sink twice: %d batches delivered more than once had rows kept more than once", rekept)
	if h.HasTable {
		msg += fmt.Sprintf("; %d events appear in the final table more often than they were emitted", len(overEvents))
	}
	c.add(SinkReplayDuplicate, len(ex), msg, ex)
}

// limitCopies is the first n of s, as ints (a new slice: the history's
// is not the example's).
func limitCopies(s []int32, n int) []int {
	out := make([]int, min(len(s), n))
	for i := range out {
		out[i] = int(s[i])
	}
	return out
}

func joinLimit(s []string, n int) string {
	out := ""
	for i, x := range s {
		if i == n {
			return out + fmt.Sprintf(", ... (%d more)", len(s)-n)
		}
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// idCounts lists batch ids in order with their multiplicity: "3 (x2), 5".
func idCounts(ids []int64) string {
	s := append([]int64(nil), ids...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var out []string
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] == s[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%d (x%d)", s[i], j-i))
		} else {
			out = append(out, fmt.Sprint(s[i]))
		}
		i = j
	}
	return joinLimit(out, 6)
}

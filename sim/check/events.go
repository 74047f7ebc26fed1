package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dedupsim/dedupsim/internal/intmath"
	"github.com/dedupsim/dedupsim/sim/history"
)

// checkEvents runs the row and event rules: conservation (lost, double-read,
// not-converged), the late filter, duplicate emissions and late drops.
func (c *checker) checkEvents() {
	c.countRows()
	c.checkConservation()
	c.checkSpuriousDuplicates()
	c.checkLateFilter()
	c.checkDuplicates()
	c.checkLateDropped()
	c.checkHealed()
}

func (c *checker) countRows() {
	ct := &c.counts
	for i := range c.h.Batches {
		if !c.auth[i] {
			continue
		}
		for _, r := range c.rows.of(i) {
			ct.Reads++
			switch r.outcome {
			case history.Emitted:
				ct.Emitted++
			case history.Duplicate:
				ct.DuplicatesDropped++
			case history.Late:
				ct.LateDropped++
			case history.Filtered:
				ct.Filtered++
			}
		}
	}
	for ci := range c.nCopies {
		if rs := c.reads.of(ci); len(rs) == 0 {
			ct.Unread++
		} else {
			ct.ExtraReads += len(rs) - 1
		}
	}
	ct.Conservation = ct.Unread == 0 && ct.ExtraReads == 0 && ct.Reads == ct.Emitted+ct.DuplicatesDropped+ct.LateDropped+ct.Filtered && ct.Reads == ct.Copies
	for e := range c.nEvents {
		m := len(c.emits.of(e))
		switch {
		case m == 1:
			ct.EventsEmittedOnce++
		case m > 1:
			ct.EventsEmittedTwice++
		default:
			ct.EventsNotEmitted++
			if c.anyLate(e) {
				ct.EventsLateDropped++
			}
		}
	}
}

func (c *checker) anyLate(e int) bool {
	for _, ci := range c.copiesOf.of(e) {
		for _, r := range c.reads.of(ci) {
			// A copy the future-events filter removed is dropped by design,
			// like a late one.
			if r.outcome == history.Late || r.outcome == history.Filtered {
				return true
			}
		}
	}
	return false
}

type partKey struct{ source, partition int32 }

// checkConservation: every copy read by exactly one authoritative batch of a
// checkpoint. A copy nobody read is lost when a later offset of its
// partition was read (skipped), and not consumed otherwise (not-converged).
func (c *checker) checkConservation() {
	h := c.h
	maxRead := map[partKey]int64{}
	maxReadBy := map[partKey]int{}
	for ci := range c.nCopies {
		if len(c.reads.of(ci)) == 0 {
			continue
		}
		cp := &h.Copies[ci]
		k := partKey{cp.Source, cp.Partition}
		if o, ok := maxRead[k]; !ok || cp.Offset > o {
			maxRead[k] = cp.Offset
			maxReadBy[k] = ci
		}
	}
	var lostEx, ncEx, drEx, rrEx []Example
	lostEvents := map[int32]bool{}
	for ci := range c.nCopies {
		rs := c.reads.of(ci)
		cp := &h.Copies[ci]
		if len(rs) == 0 {
			k := partKey{cp.Source, cp.Partition}
			if o, ok := maxRead[k]; ok && o > cp.Offset {
				later := maxReadBy[k]
				lostEx = append(lostEx, Example{Event: cp.Event, Copies: []int{ci, later},
					Batches: c.batchesReading(later),
					Detail: fmt.Sprintf("copy %d (source %d partition %d offset %d) was never read, but offset %d of that partition was (copy %d)",
						ci, cp.Source, cp.Partition, cp.Offset, o, later) + c.eventFate(int(c.evOf[ci]))})
				lostEvents[c.evOf[ci]] = true
			} else {
				ncEx = append(ncEx, Example{Event: cp.Event, Copies: []int{ci},
					Detail: fmt.Sprintf("copy %d (source %d partition %d offset %d, appended at %s%s) was never read by the end of the run (%s)",
						ci, cp.Source, cp.Partition, cp.Offset, c.at(cp.AppendedAtMs), c.phase(cp.AppendedAtMs), c.at(h.EndMs))})
			}
			continue
		}
		if len(rs) == 1 {
			continue // read once: neither twice in a checkpoint nor in two
		}
		byEpoch := map[int][]int64{}
		var epochs []int
		for _, r := range rs {
			e := c.epochOf[r.exec]
			if _, ok := byEpoch[e]; !ok {
				epochs = append(epochs, e)
			}
			byEpoch[e] = append(byEpoch[e], c.rowBatch(r))
		}
		sort.Ints(epochs)
		for _, e := range epochs {
			if ids := byEpoch[e]; len(ids) > 1 {
				drEx = append(drEx, Example{Event: cp.Event, Copies: []int{ci}, Batches: sortedUniqueIDs(ids),
					Detail: fmt.Sprintf("copy %d read %s in checkpoint %d (batches %s); fates %s", ci, Times(len(ids)), e, idList(ids), c.fates(rs))})
			}
		}
		if len(epochs) > 1 {
			var all []int64
			for _, e := range epochs {
				all = append(all, byEpoch[e]...)
			}
			rrEx = append(rrEx, Example{Event: cp.Event, Copies: []int{ci}, Batches: sortedUniqueIDs(all),
				Detail: fmt.Sprintf("copy %d read again after a fresh checkpoint: checkpoints %s; fates %s", ci, intList(epochs), c.fates(rs))})
		}
	}
	// Lost rows also come from checkSpuriousDuplicates; keep them together.
	c.lostEx = append(c.lostEx, lostEx...)
	for ev := range lostEvents {
		c.lostEvents[ev] = true
	}
	sortExamples(drEx)
	c.add(DoubleRead, len(drEx), fmt.Sprintf("%d copies were read more than once within one checkpoint (offset ranges of two authoritative batches overlap)", len(drEx)), drEx)
	sortExamples(rrEx)
	c.add(RereadFreshCheckpoint, len(rrEx), fmt.Sprintf("%d copies were read again by a later checkpoint (a fresh checkpoint restarted from older offsets)", len(rrEx)), rrEx)
	c.ncEx = append(c.ncEx, ncEx...)
	c.ncCopies = len(ncEx)
}

// checkSpuriousDuplicates: a row dropped as a duplicate needs an emitted row
// of the same key in the same dedup scope (checkpoint, or execution for
// batchDropDuplicates) at the same or an earlier batch id; otherwise the row
// was lost.
func (c *checker) checkSpuriousDuplicates() {
	h := c.h
	type dkey struct {
		epoch int
		exec  int32 // -1 for streaming: the scope is the checkpoint
		et    int64
	}
	key := func(r rd) dkey {
		sh := c.sh(c.epochOf[r.exec])
		k := dkey{epoch: c.epochOf[r.exec], exec: -1}
		if sh.batchAPI {
			k.exec = r.exec
		} else if sh.timeInKey {
			k.et = h.Copies[r.copy].EventTimeUs
		}
		return k
	}
	// minEmit is the first batch id an emitted row of r's key (the event
	// and dkey) ran in: a scan of the event's emitted rows, or for an
	// event emitted many times (a bounded key), a map built once.
	big := map[int32]map[dkey]int64{}
	minEmit := func(r rd) (int64, bool) {
		e := c.evOf[r.copy]
		ems := c.emits.of(int(e))
		k := key(r)
		if len(ems) > 16 {
			m, ok := big[e]
			if !ok {
				m = map[dkey]int64{}
				for _, x := range ems {
					kx := key(x)
					if b, ok := m[kx]; !ok || c.rowBatch(x) < b {
						m[kx] = c.rowBatch(x)
					}
				}
				big[e] = m
			}
			b, ok := m[k]
			return b, ok
		}
		var b int64
		found := false
		for _, x := range ems {
			if key(x) == k && (!found || c.rowBatch(x) < b) {
				b, found = c.rowBatch(x), true
			}
		}
		return b, found
	}
	var ex []Example
	for ci := range c.nCopies {
		for _, r := range c.reads.of(ci) {
			if r.outcome != history.Duplicate {
				continue
			}
			b, ok := minEmit(r)
			if ok && b <= c.rowBatch(r) {
				continue
			}
			cp := &h.Copies[ci]
			sh := c.sh(c.epochOf[r.exec])
			what := "its key"
			if sh.timeInKey && !sh.batchAPI {
				what = fmt.Sprintf("its key (%s, %s)", cp.Event, isoUs(cp.EventTimeUs))
			}
			scope := "in its checkpoint"
			if sh.batchAPI {
				scope = "in the same batch"
			}
			d := fmt.Sprintf("copy %d dropped as a duplicate in batch %d, but no copy of %s was emitted %s at or before that batch", ci, c.rowBatch(r), what, scope)
			if ok {
				d += fmt.Sprintf(" (first emitted in batch %d)", b)
			}
			ex = append(ex, Example{Event: cp.Event, Copies: []int{ci}, Batches: []int64{c.rowBatch(r)}, Detail: d + c.eventFate(int(c.evOf[ci]))})
			c.lostEvents[c.evOf[ci]] = true
		}
	}
	c.lostEx = append(c.lostEx, ex...)
	notEmitted := 0
	for e := range c.lostEvents {
		if len(c.emits.of(int(e))) == 0 {
			notEmitted++
		}
	}
	sortExamples(c.lostEx)
	c.add(Lost, len(c.lostEx), fmt.Sprintf("%d copies are not accounted for (input != emitted + duplicates dropped + late dropped): %d events affected, %d of them never emitted", len(c.lostEx), len(c.lostEvents), notEmitted), c.lostEx)
}

// checkLateFilter: a row is late iff eventTime_us <= lateWatermark_ms*1000
// (§1.5), for a streaming operator with a watermark; other queries have no
// late filter, so no row may be late.
func (c *checker) checkLateFilter() {
	h := c.h
	var ex []Example
	unknown := 0
	for ci := range c.nCopies {
		cp := &h.Copies[ci]
		for _, r := range c.reads.of(ci) {
			b := &h.Batches[r.exec]
			sh := c.sh(c.epochOf[r.exec])
			var d string
			if !sh.apiKnown {
				unknown++
				continue
			}
			if r.outcome == history.Filtered {
				continue // removed before the watermark node: no late predicate applies
			}
			if sh.hasWatermark && !sh.batchAPI {
				late := cp.EventTimeUs <= satMul(b.LateWatermarkMs, 1000)
				switch {
				case late && r.outcome != history.Late:
					d = fmt.Sprintf("copy %d (t=%s) is at or below batch %d's late watermark %s but was %s", ci, c.et(cp.EventTimeUs), b.BatchID, c.wm(b.LateWatermarkMs), r.outcome)
				case !late && r.outcome == history.Late:
					d = fmt.Sprintf("copy %d (t=%s) is above batch %d's late watermark %s but was dropped as late", ci, c.et(cp.EventTimeUs), b.BatchID, c.wm(b.LateWatermarkMs))
				}
			} else if r.outcome == history.Late {
				why := "the query has no watermark"
				if sh.batchAPI {
					why = "batchDropDuplicates has no late filter"
				}
				d = fmt.Sprintf("copy %d dropped as late in batch %d, but %s", ci, b.BatchID, why)
			}
			if d != "" {
				ex = append(ex, Example{Event: cp.Event, Copies: []int{ci}, Batches: []int64{b.BatchID}, Detail: d})
			}
		}
	}
	if unknown > 0 {
		c.note("late-filter-mismatch: %d rows not checked, unknown api", unknown)
	}
	sortExamples(ex)
	c.add(LateFilterMismatch, len(ex), fmt.Sprintf("%d rows' late/not-late fate disagrees with the late watermark their batch ran with (late iff eventTime <= lateWatermark)", len(ex)), ex)
}

// checkDuplicates splits events emitted more than once by the API's
// guarantee.
func (c *checker) checkDuplicates() {
	var in, out []Example
	for e := range c.nEvents {
		ems := c.emits.of(e)
		if len(ems) < 2 {
			continue
		}
		within, detail := c.classify(ems)
		var copies []int
		var ids []int64
		for _, r := range ems {
			copies = append(copies, int(r.copy))
			ids = append(ids, c.rowBatch(r))
		}
		x := Example{Event: c.event(e), Copies: sortedUniqueInts(copies), Batches: sortedUniqueIDs(ids),
			Detail: fmt.Sprintf("emitted %s: %s", Times(len(ems)), detail)}
		if within {
			in = append(in, x)
		} else {
			out = append(out, x)
		}
	}
	c.add(DuplicateEmitted, len(in), fmt.Sprintf("%d events were emitted more than once within %s", len(in), c.describe()), in)
	c.add(DuplicateEmittedOutsideGuarantee, len(out), fmt.Sprintf("%d events were emitted more than once outside %s: allowed, counted", len(out), c.describe()), out)
}

// allOriginals reports whether every emitted copy is an original send
// (copy number 0), not a retry or a duplicate append.
func (c *checker) allOriginals(ems []rd) bool {
	for _, r := range ems {
		if c.h.Copies[r.copy].CopyNo != 0 {
			return false
		}
	}
	return true
}

// classify decides whether an event's emissions break the API's guarantee,
// and explains with one witnessing pair.
func (c *checker) classify(ems []rd) (bool, string) {
	h := c.h
	ems = append([]rd(nil), ems...)
	sort.SliceStable(ems, func(i, j int) bool {
		a, b := ems[i], ems[j]
		if ea, eb := c.epochOf[a.exec], c.epochOf[b.exec]; ea != eb {
			return ea < eb
		}
		if ba, bb := c.rowBatch(a), c.rowBatch(b); ba != bb {
			return ba < bb
		}
		return a.copy < b.copy
	})
	desc := func(r rd) string {
		return fmt.Sprintf("copy %d (t=%s, batch %d)", r.copy, c.et(h.Copies[r.copy].EventTimeUs), c.rowBatch(r))
	}
	var outside string
	for lo := 0; lo < len(ems); {
		hi := lo
		for hi < len(ems) && c.epochOf[ems[hi].exec] == c.epochOf[ems[lo].exec] {
			hi++
		}
		g := ems[lo:hi]
		lo = hi
		if len(g) < 2 {
			continue
		}
		sh := c.sh(c.epochOf[g[0].exec])
		switch {
		case sh.batchAPI:
			byExec := map[int32]rd{}
			for _, r := range g {
				if p, ok := byExec[r.exec]; ok {
					return true, fmt.Sprintf("%s and %s were both emitted by one batch: batchDropDuplicates drops duplicates within a batch", desc(p), desc(r))
				}
				byExec[r.exec] = r
			}
			if outside == "" {
				outside = fmt.Sprintf("%s and %s were emitted by different batches (appended %s apart): batchDropDuplicates keeps no state across batches",
					desc(g[0]), desc(g[1]), Dur(satAdd(h.Copies[g[1].copy].AppendedAtMs, -h.Copies[g[0].copy].AppendedAtMs)))
			}
		case sh.timeInKey:
			byT := map[int64]rd{}
			for _, r := range g {
				t := h.Copies[r.copy].EventTimeUs
				if p, ok := byT[t]; ok {
					return true, fmt.Sprintf("%s and %s share the key (id, event time) and were both emitted", desc(p), desc(r))
				}
				byT[t] = r
			}
			if outside == "" {
				a, b := &h.Copies[g[0].copy], &h.Copies[g[1].copy]
				outside = fmt.Sprintf("%s and %s have different event times (%s apart, appended %s apart), so different keys (a re-stamped retry)",
					desc(g[0]), desc(g[1]), durUs(satAdd(b.EventTimeUs, -a.EventTimeUs)), Dur(satAdd(b.AppendedAtMs, -a.AppendedAtMs)))
			}
		case sh.withinWM && sh.hasWatermark:
			s := append([]rd(nil), g...)
			sort.SliceStable(s, func(i, j int) bool { return h.Copies[s[i].copy].EventTimeUs < h.Copies[s[j].copy].EventTimeUs })
			delayUs := satMul(sh.delayMs, 1000)
			for i := 1; i < len(s); i++ {
				d := h.Copies[s[i].copy].EventTimeUs - h.Copies[s[i-1].copy].EventTimeUs
				if d >= 0 && d < delayUs {
					return true, fmt.Sprintf("%s and %s are %s apart, less than the delay %s", desc(s[i-1]), desc(s[i]), durUs(d), Dur(sh.delayMs))
				}
			}
			if outside == "" {
				d := h.Copies[s[1].copy].EventTimeUs - h.Copies[s[0].copy].EventTimeUs
				outside = fmt.Sprintf("%s and %s are %s apart, not less than the delay %s", desc(s[0]), desc(s[1]), durUs(d), Dur(sh.delayMs))
			}
		default:
			return true, fmt.Sprintf("%s and %s were both emitted in one checkpoint (%s)", desc(g[0]), desc(g[1]), sh.guarantee())
		}
	}
	if outside == "" {
		outside = fmt.Sprintf("%s in checkpoint %d and %s in checkpoint %d: a fresh checkpoint starts with empty state",
			desc(ems[0]), c.epochOf[ems[0].exec], desc(ems[len(ems)-1]), c.epochOf[ems[len(ems)-1].exec])
	}
	return false, outside
}

// checkLateDropped counts real events hit by the late filter: never emitted
// with a late copy, or whose original copy was late.
func (c *checker) checkLateDropped() {
	h := c.h
	var ex []Example
	never, laterCopy, honest, healedLate := 0, 0, 0, 0
	for e := range c.nEvents {
		copies := c.copiesOf.of(e)
		if !c.anyLate(e) {
			continue // the common case, decided before reading any copy
		}
		orig := copies[0]
		for _, ci := range copies {
			if h.Copies[ci].CopyNo < h.Copies[orig].CopyNo {
				orig = ci
			}
		}
		var lateCopies []int
		var lateBatches []int64
		var firstLate *rd
		origLate := false
		for _, ci := range copies {
			for _, r := range c.reads.of(ci) {
				if r.outcome != history.Late {
					continue
				}
				lateCopies = append(lateCopies, ci)
				lateBatches = append(lateBatches, c.rowBatch(r))
				if ci == orig {
					origLate = true
				}
				if firstLate == nil {
					rr := r
					firstLate = &rr
				}
			}
		}
		if firstLate == nil {
			continue // filtered, not late
		}
		m := len(c.emits.of(e))
		if m > 0 && !origLate {
			continue
		}
		b := &h.Batches[firstLate.exec]
		fl := fmt.Sprintf("copy %d (t=%s) dropped as late in batch %d at %s (late watermark %s)",
			firstLate.copy, c.et(h.Copies[firstLate.copy].EventTimeUs), b.BatchID, c.at(b.AtMs), c.wm(b.LateWatermarkMs))
		var d string
		if m == 0 {
			never++
			isHonest := true
			for _, ci := range copies {
				if _, ahead := c.leadMs(ci); h.Copies[ci].Fault != history.NoFault || ahead {
					isHonest = false
				}
			}
			if isHonest {
				honest++
				if c.healedHonest(e) {
					healedLate++
				}
				d = "never emitted (honest: no fault and no future event time on any copy): " + fl
			} else {
				d = "never emitted: " + fl
			}
		} else {
			laterCopy++
			r := c.emits.of(e)[0]
			d = fmt.Sprintf("original %s; emitted through copy %d (t=%s) in batch %d",
				fl, r.copy, c.et(h.Copies[r.copy].EventTimeUs), c.rowBatch(r))
		}
		ex = append(ex, Example{Event: c.event(e), Copies: sortedUniqueInts(lateCopies), Batches: sortedUniqueIDs(lateBatches), Detail: d})
	}
	msg := fmt.Sprintf("%d events hit the late filter: %d never emitted (%d of them honest: no fault and no future event time on any copy; %d honest ones in the healed phase), %d emitted only through a later copy", len(ex), never, honest, healedLate, laterCopy)
	if fc := c.futureClock(); fc != "" && honest > 0 {
		msg += "; " + fc
	}
	c.add(LateDropped, len(ex), msg, ex)
}

// futureClock describes the evidence of a producer stamping events ahead of
// the processing clock, or "" when there is none: copies whose event time
// leads their append time by more than the delay (only those can move the
// watermark past honest, on-time events), fault names on copies, and
// coverage marks of clock faults ("clock", "future" or "skew" in the name).
func (c *checker) futureClock() string {
	h := c.h
	n, lead := 0, int64(0)
	for i := range h.Copies {
		if l, ok := c.leadMs(i); ok {
			n++
			lead = max(lead, l)
		}
	}
	names := map[string]int{}
	for _, cp := range h.Copies {
		if clocky(cp.Fault.String()) {
			names[cp.Fault.String()+" on copies"]++
		}
	}
	for k, v := range h.Coverage {
		if v > 0 && clocky(k) {
			names[k+" fired"] += v
		}
	}
	var parts []string
	if n > 0 {
		what := fmt.Sprintf("%d copies carry", n)
		if n == 1 {
			what = "1 copy carries"
		}
		parts = append(parts, fmt.Sprintf("%s an event time more than the delay ahead of its append time, up to %s ahead", what, Dur(lead)))
	}
	var keys []string
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s", k, Times(names[k])))
	}
	if len(parts) == 0 {
		return ""
	}
	return "a future-clock producer was active (" + strings.Join(parts, "; ") + "): honest events dropped as late are likely its victims, since it drags the watermark past on-time events"
}

func clocky(name string) bool {
	f := strings.ToLower(name)
	return strings.Contains(f, "clock") || strings.Contains(f, "future") || strings.Contains(f, "skew")
}

// leadMs is how far copy i's event time is ahead of its append time, when
// that is more than the watermark delay.
func (c *checker) leadMs(i int) (int64, bool) {
	cp := &c.h.Copies[i]
	etMs := intmath.FloorDiv(cp.EventTimeUs, 1000)
	if (etMs > 0 && cp.AppendedAtMs < 0) || (etMs < 0 && cp.AppendedAtMs > 0) {
		return 0, false // absurd clocks (fuzzed): the difference would overflow
	}
	l := etMs - cp.AppendedAtMs
	return l, l > max(c.final.delayMs, 0)
}

// checkHealed reports what the healed phase failed to converge: copies never
// consumed (found by checkConservation), and honest healed-phase events
// (every copy appended at or after HealAtMs, no fault and no future event
// time on any) not emitted exactly once although none was late. Events with
// a faulted copy are left out: a retry decided in the fault phase may land
// in the healed one, and its duplicate is judged by the API's guarantee.
func (c *checker) checkHealed() {
	h := c.h
	ex := c.ncEx
	bad := 0
	events := c.nEvents
	if h.HealAtMs <= 0 {
		c.note("not-converged: healAtMs is %d, so no healed phase is recorded; only unconsumed copies are checked", h.HealAtMs)
		events = 0
	}
	for e := range events {
		if !c.healedHonest(e) {
			continue
		}
		ems := c.emits.of(e)
		m := len(ems)
		if m == 1 || c.anyLate(e) {
			continue
		}
		if m > 1 && c.allOriginals(ems) {
			// A bounded key sent again as a new original (a device
			// registering again) further apart than the API remembers is
			// emitted again by design; it is counted as outside the
			// guarantee instead. Retries and duplicate appends still count.
			if within, _ := c.classify(ems); !within {
				continue
			}
		}
		unread := false
		for _, ci := range c.copiesOf.of(e) {
			if len(c.reads.of(ci)) == 0 {
				unread = true // reported as lost or not consumed already
			}
		}
		if m == 0 && unread {
			continue
		}
		bad++
		copies := append([]int(nil), c.copiesOf.of(e)...)
		var ids []int64
		for _, ci := range copies {
			for _, r := range c.reads.of(ci) {
				ids = append(ids, c.rowBatch(r))
			}
		}
		ex = append(ex, Example{Event: c.event(e), Copies: sortedUniqueInts(copies), Batches: sortedUniqueIDs(ids),
			Detail: fmt.Sprintf("an honest event of the healed phase (appended at or after %s, no fault) was emitted %s and never dropped as late", c.at(h.HealAtMs), Times(m))})
	}
	sortExamples(ex)
	c.add(NotConverged, len(ex), fmt.Sprintf("the healed phase (from %s to the end at %s) did not converge: %d copies never consumed, %d honest healed-phase events not emitted exactly once", c.at(h.HealAtMs), c.at(h.EndMs), c.ncCopies, bad), ex)
}

// healedHonest: every copy of ev was appended in the healed phase, with no
// fault and no event time ahead of its append time by more than the delay.
func (c *checker) healedHonest(e int) bool {
	h := c.h
	if h.HealAtMs <= 0 {
		return false
	}
	for _, ci := range c.copiesOf.of(e) {
		if _, ahead := c.leadMs(ci); h.Copies[ci].AppendedAtMs < h.HealAtMs || h.Copies[ci].Fault != history.NoFault || ahead {
			return false
		}
	}
	return true
}

// eventFate says whether the event still reached the output.
func (c *checker) eventFate(e int) string {
	if m := len(c.emits.of(e)); m > 0 {
		return fmt.Sprintf("; event %s was still emitted %s", c.event(e), Times(m))
	}
	return fmt.Sprintf("; event %s was never emitted", c.event(e))
}

func (c *checker) phase(atMs int64) string {
	if atMs >= c.h.HealAtMs {
		return ", healed phase"
	}
	return ", fault phase"
}

func (c *checker) batchesReading(ci int) []int64 {
	var ids []int64
	for _, r := range c.reads.of(ci) {
		ids = append(ids, c.rowBatch(r))
	}
	return sortedUniqueIDs(ids)
}

func (c *checker) fates(rs []rd) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprintf("%s in batch %d", r.outcome, c.rowBatch(r))
	}
	return strings.Join(s, ", ")
}

func idList(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ", ")
}

func intList(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

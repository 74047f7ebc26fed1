package capture

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
)

// A steps capture writes one exec steps line per micro-batch,
// {"rows": [...], "once": true}: one processing-time trigger that runs
// exactly one batch. With --trigger, a trigger that finds no new data
// after a batch is {"tick": true} (Spark runs the no-data batch that
// evicts state there, at most one; later empty triggers run nothing and
// are left out). After every batch a "# next" comment marks where the
// capture stands, for --resume.

// batch is the rows of one micro-batch, in partition then offset order.
type batch struct {
	rows [][]byte
	size int
}

func (b *batch) add(line []byte) { b.rows = append(b.rows, line); b.size += len(line) + 1 }

// writeBatch writes a batch line (preceded by a tick when tick) and its
// mark.
func (w *writer) writeBatch(b *batch, tick bool, m *stepsMark) error {
	if b.size > maxLine-64 {
		return fmt.Errorf("capture: batch %d holds %d bytes of rows, over the 256 MiB a steps line may hold: give a shorter --trigger or a smaller --max-offsets", w.res.Batches, b.size)
	}
	buf := w.buf[:0]
	if tick {
		buf = append(buf, `{"tick": true}`+"\n"...)
	}
	buf = append(buf, `{"rows": [`...)
	for i, r := range b.rows {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, r...)
	}
	buf = append(buf, `], "once": true}`+"\n"...)
	w.res.Batches++
	w.res.Records += int64(len(b.rows))
	m.Records, m.Batches = w.res.Records, w.res.Batches
	mj, _ := json.Marshal(m)
	buf = append(append(append(buf, markPrefix...), mj...), '\n')
	w.buf = buf
	if err := w.out.write(buf); err != nil {
		return err
	}
	if len(buf) > 1<<20 || w.res.Batches%64 == 0 {
		return w.out.sync()
	}
	return nil
}

// byOffsets cuts batches as maxOffsetsPerTrigger does for a backlog (every
// range available at the first trigger): each batch reads up to
// MaxOffsets offsets, split over the partitions in proportion to their lag
// (kafkasource.RateLimit, Spark's rateLimit).
func (w *writer) byOffsets(ctx context.Context, _ *stepsMark) error {
	cur, until := kafkasource.Offsets{}, kafkasource.Offsets{}
	for _, g := range w.ranges {
		cur[g.Partition], until[g.Partition] = g.From, g.To
	}
	src := &w.opt.Source
	var done int64
	for !maps.EqualFunc(cur, until, func(a, b int64) bool { return a >= b }) {
		end := kafkasource.RateLimit(w.opt.MaxOffsets, cur, until, cur)
		var rr []kafkasource.Range
		for _, p := range cur.Partitions() {
			rr = append(rr, kafkasource.Range{Partition: p, From: cur[p], To: end[p]})
			done += end[p] - cur[p]
		}
		per, err := kafkasource.ReadRanges(ctx, src.clientOpts(), src.Topic, rr, !src.ReadUncommitted)
		if err != nil {
			return fmt.Errorf("kafka: %w", err)
		}
		var b batch
		for _, recs := range per {
			for _, rec := range recs {
				line, err := w.encode(rec)
				if err != nil {
					return err
				}
				b.add(line)
			}
		}
		if err := w.writeBatch(&b, false, &stepsMark{Next: end.Clone()}); err != nil {
			return err
		}
		cur = end
		w.progress(done)
	}
	return nil
}

// item is a record waiting in its partition's queue for its batch.
type item struct {
	line   []byte
	offset int64
	runMax int64 // the largest timestamp of the partition up to it, ms
}

// windows cuts batches by arrival time as a processing-time trigger does:
// the trigger fires at every multiple of the interval (Spark's
// ProcessingTimeExecutor aligns to them) and the batch reads what arrived
// before it. A record's arrival is its timestamp; since a batch is an
// offset range per partition, a record belongs to the window of the
// largest timestamp of its partition up to it (a record stamped earlier
// than one before it arrived no sooner). It assumes each batch finishes
// within its interval.
type windows struct {
	iv      int64 // interval, ms
	queues  map[int32][]item
	runMax  map[int32]int64 // per partition, over every record queued
	popped  map[int32]int64 // runMax of the last record put in a batch
	lastEnd int64           // end of the last batch's window; 0: none yet
}

func newWindows(iv time.Duration, m *stepsMark) *windows {
	ws := &windows{iv: iv.Milliseconds(), queues: map[int32][]item{}, runMax: map[int32]int64{}, popped: map[int32]int64{}}
	if m != nil {
		maps.Copy(ws.runMax, m.MaxTs)
		maps.Copy(ws.popped, m.MaxTs)
		ws.lastEnd = m.WindowEnd
	}
	return ws
}

// add queues a record of partition p stamped tsMs.
func (ws *windows) add(p int32, offset, tsMs int64, line []byte) {
	rm, ok := ws.runMax[p]
	if !ok || tsMs > rm {
		rm = tsMs
	}
	ws.runMax[p] = rm
	ws.queues[p] = append(ws.queues[p], item{line: line, offset: offset, runMax: rm})
}

// end is the end of the earliest window with a queued record.
func (ws *windows) end() (int64, bool) {
	first, ok := int64(0), false
	for _, q := range ws.queues {
		if len(q) > 0 && (!ok || q[0].runMax < first) {
			first, ok = q[0].runMax, true
		}
	}
	return floorDiv(first, ws.iv)*ws.iv + ws.iv, ok
}

// ahead reports whether partition p has a record at or past window end e
// queued: everything of p before e is then known.
func (ws *windows) ahead(p int32, e int64) bool {
	q := ws.queues[p]
	return len(q) > 0 && q[len(q)-1].runMax >= e
}

// cut takes the batch of the window ending at e, partitions in order, and
// says whether a tick (an empty trigger after the last batch) comes first.
func (ws *windows) cut(e int64) (b batch, tick bool) {
	tick = ws.lastEnd != 0 && e-ws.iv > ws.lastEnd
	for _, p := range slices.Sorted(maps.Keys(ws.queues)) {
		q := ws.queues[p]
		i := 0
		for i < len(q) && q[i].runMax < e {
			b.add(q[i].line)
			ws.popped[p] = q[i].runMax
			i++
		}
		ws.queues[p] = slices.Delete(q, 0, i)
	}
	ws.lastEnd = e
	return b, tick
}

// mark is the state after the last cut, with next the next offset of each
// partition whose queue is empty.
func (ws *windows) mark(next map[int32]int64) *stepsMark {
	m := &stepsMark{Next: map[int32]int64{}, MaxTs: maps.Clone(ws.popped), WindowEnd: ws.lastEnd}
	for p, n := range next {
		m.Next[p] = n
		if q := ws.queues[p]; len(q) > 0 {
			m.Next[p] = q[0].offset
		}
	}
	return m
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// byTrigger reads every partition at once and cuts a window as soon as
// each partition still being read has a record past it; partitions ahead
// of the window are paused meanwhile.
func (w *writer) byTrigger(ctx context.Context, m *stepsMark) error {
	r, err := newReader(&w.opt.Source, w.ranges)
	if err != nil {
		return err
	}
	defer r.close()
	ws := newWindows(w.opt.Trigger, m)
	for {
		e, any := ws.end()
		complete := any
		for p := range r.open {
			if !any || !ws.ahead(p, e) {
				complete = false
				if any {
					r.resume(p)
				}
			} else {
				r.pause(p)
			}
		}
		if complete {
			b, tick := ws.cut(e)
			if err := w.writeBatch(&b, tick, ws.mark(r.next)); err != nil {
				return err
			}
			continue
		}
		if r.done() {
			return nil // every queue is empty: a window with records is complete once all are done
		}
		recs, err := r.poll(ctx)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			line, err := w.encode(rec)
			if err != nil {
				return err
			}
			ws.add(rec.Partition, rec.Offset, rec.Timestamp.UnixMilli(), line)
		}
		w.progress(r.readSoFar())
	}
}

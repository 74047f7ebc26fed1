package shrink

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dedupsim/dedupsim/engine/dedup"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/internal/duration"
	"github.com/dedupsim/dedupsim/sim/check"
)

// The witness's story: which copies of the event, which batches emitted or
// delivered them, and why the state (or the sink) let the second one in,
// each reason citing docs/spark-semantics.md.

// copyAt is one row of the witness as the story tells it.
type copyAt struct {
	line    int // line of steps.jsonl (1-based, header comments counted)
	eventUs int64
	hasTime bool
	batch   int64
	exec    int // index into execs
}

// witness is the event the story is about and the rows that tell it.
type witness struct {
	id     string
	rows   int
	class  string
	copies []copyAt // emitted copies (re-emitted), or the executions of the replayed batch
}

// findWitness picks the first duplicated event of class (by id) and the
// rows that put it twice in the table.
func findWitness(p *pair, r *execResult, class string, header int) *witness {
	var d *dupEvent
	for i := range r.dups {
		if r.dups[i].class == class {
			d = &r.dups[i]
			break
		}
	}
	if d == nil {
		return nil
	}
	w := &witness{id: d.id, rows: d.rows, class: class}
	lines := inputLines(p, r, header)
	for xi, x := range r.execs {
		for i, in := range x.input {
			if string(in.id) != d.id || in.outcome != dedup.Emitted {
				continue
			}
			w.copies = append(w.copies, copyAt{line: lines[xi][i], eventUs: in.eventUs, hasTime: in.hasTime, batch: x.batchID, exec: xi})
		}
	}
	if class == Reemitted {
		// The emissions of the first execution of each batch id.
		var out []copyAt
		first := map[int64]int{}
		for _, c := range w.copies {
			if x, ok := first[c.batch]; !ok || x == c.exec {
				first[c.batch] = c.exec
				out = append(out, c)
			}
		}
		w.copies = out
	}
	return w
}

// inputLines gives the line of steps.jsonl each input row of each
// execution came from (header comment lines counted): a first execution
// reads the next occurrence of its rows' bytes in the file, a replay the
// rows its batch read before.
func inputLines(p *pair, r *execResult, header int) [][]int {
	occ := map[string][]int{}
	for li, l := range p.lines {
		for _, rs := range l.rows {
			for _, row := range rs {
				occ[string(row)] = append(occ[string(row)], header+li+1)
			}
		}
	}
	used := map[string]int{}
	byBatch := map[int64][]int{}
	out := make([][]int, len(r.execs))
	for xi, x := range r.execs {
		if prev, ok := byBatch[x.batchID]; ok && len(prev) == len(x.input) {
			out[xi] = prev
			continue
		}
		for _, in := range x.input {
			k := string(in.data)
			line := 0
			if n := used[k]; n < len(occ[k]) {
				line = occ[k][n]
			}
			used[k]++
			out[xi] = append(out[xi], line)
		}
		byBatch[x.batchID] = out[xi]
	}
	return out
}

func usText(us int64) string { return duration.StampMicros(us) }

func durText(us int64) string { return duration.Words(math.Abs(float64(us)) / 1000) }

// describeQuery is the query in one line, in Spark's words.
func describeQuery(q *query.Query) string {
	keys := "every column"
	if len(q.Keys) > 0 {
		keys = "[" + strings.Join(q.Keys, ", ") + "]"
	}
	s := fmt.Sprintf("%s on %s", q.API, keys)
	if col := q.EventTimeColumn(); col != "" {
		s += fmt.Sprintf(", watermark on %s with a delay of %s", col, durText(q.DelayMs()*1000))
	} else {
		s += ", no watermark"
	}
	parts := "partitions"
	if q.ShufflePartitions == 1 {
		parts = "partition"
	}
	s += fmt.Sprintf(", %d state %s, %s sink", q.ShufflePartitions, parts, q.Sink.Kind)
	if q.Sink.GenerateAppID {
		s += " (txnAppId generated at every start)"
	}
	return s
}

// story tells the witness in a few lines of Markdown.
func (w *witness) story(q *query.Query, r *execResult) []string {
	var out []string
	out = append(out, fmt.Sprintf("Event %s is in the %s %s.", w.id, tableName(r), check.Times(w.rows)))
	switch w.class {
	case Reemitted:
		for i, c := range w.copies {
			line := fmt.Sprintf("- copy %d: steps.jsonl line %d", i+1, c.line)
			if c.hasTime {
				line += ", event time " + usText(c.eventUs)
				if i > 0 && w.copies[0].hasTime {
					if d := c.eventUs - w.copies[0].eventUs; d == 0 {
						line += " (the same as copy 1)"
					} else {
						line += fmt.Sprintf(" (%s after copy 1)", durText(d))
					}
				}
			}
			line += fmt.Sprintf(": emitted by batch %d", c.batch)
			out = append(out, line)
		}
		out = append(out, "", "Why the state missed copy 2: "+w.whyReemitted(q, r))
	case Replayed:
		var execs []string
		for _, c := range w.copies {
			x := r.execs[c.exec]
			e := fmt.Sprintf("batch %d", x.batchID)
			switch {
			case x.crashed != "":
				e += " (the driver then crashed at " + x.crashed + ")"
			case x.replay:
				e += " again (the replay after the restart)"
			}
			execs = append(execs, e)
		}
		if len(w.copies) > 0 {
			out = append(out, fmt.Sprintf("- its row: steps.jsonl line %d", w.copies[0].line))
		}
		out = append(out, "- delivered by "+strings.Join(execs, ", then "))
		out = append(out, "", "Why the sink kept it twice: "+w.whyReplayed(q))
	}
	return out
}

func tableName(r *execResult) string {
	if r.hasTable {
		return "table"
	}
	return "sink's deliveries (foreachBatch keeps no table)"
}

func (w *witness) whyReemitted(q *query.Query, r *execResult) string {
	if len(w.copies) < 2 {
		return "the state did not hold the first copy's key when the second was read."
	}
	a, b := w.copies[0], w.copies[1]
	col := q.EventTimeColumn()
	switch {
	case q.API == query.BatchDropDuplicates:
		return fmt.Sprintf("batchDropDuplicates deduplicates the DataFrame foreachBatch hands over, one micro-batch at a time: it keeps no state across batches (docs/spark-semantics.md §5.2), so batch %d and batch %d each kept their copy. A streaming dropDuplicatesWithinWatermark before the sink, or a MERGE sink, would hold the event once.", a.batch, b.batch)
	case q.API == query.DropDuplicates && col != "" && slices.Contains(q.Keys, col) && a.eventUs != b.eventUs:
		return fmt.Sprintf("the key holds the event time (%s) and the two copies carry different ones, %s apart (a retry re-stamped when it was sent again): they are two keys, and copies are duplicates only when their event times are equal (docs/spark-semantics.md §3.5). dropDuplicatesWithinWatermark on the id would have dropped copy 2 (§4).", col, durText(b.eventUs-a.eventUs))
	case q.API == query.DropDuplicatesWithinWatermark:
		expiry := a.eventUs + q.DelayMs()*1000
		evict := -1
		for i := a.exec; i < len(r.execs) && i < b.exec; i++ {
			if r.execs[i].evictWM*1000 >= expiry {
				evict = i
				break
			}
		}
		why := fmt.Sprintf("the state keeps copy 1's id until the watermark reaches its event time plus the delay of %s, %s (docs/spark-semantics.md §4.2, §4.3)", durText(q.DelayMs()*1000), usText(expiry))
		if evict >= 0 {
			x := r.execs[evict]
			why += fmt.Sprintf("; batch %d ran with watermark %s and removed it", x.batchID, check.SparkTime(x.evictWM))
		}
		xb := r.execs[b.exec]
		why += fmt.Sprintf(". Copy 2 came %s after copy 1 in event time, more than the delay, and above the watermark batch %d filtered with (%s), so it was not late (§4.4) and was emitted as a new key. The guarantee covers copies less than the delay apart (§4.5): a delay above the retries' largest gap would have dropped it.", durText(b.eventUs-a.eventUs), xb.batchID, check.SparkTime(xb.lateWM))
		return why
	case col == "" && q.API == query.DropDuplicates:
		return "without a watermark the state keeps every key forever (docs/spark-semantics.md §2.2): the state of this checkpoint did not hold the first copy when the second was read."
	}
	return fmt.Sprintf("the state did not hold copy 1's key when batch %d read copy 2.", b.batch)
}

func (w *witness) whyReplayed(q *query.Query) string {
	const replay = "after a crash between the sink write and the commit, the restarted query re-runs the batch with the same id and the same rows, and the sink receives them again (docs/spark-semantics.md §9.3)"
	switch {
	case q.Sink.Kind == sink.KindTable && q.Sink.GenerateAppID:
		return replay + "; the table sink's txnAppId is generated at every start, so the replay wrote under an id the table had never seen and its rows were appended a second time. A stable app_id makes the table skip the replay (§14.7)."
	case q.Sink.Kind == sink.KindAppend:
		return replay + "; an append sink keeps every delivery: it is not idempotent per batch id. A table sink with a stable txnAppId, or a MERGE, would skip the replay (§14.7)."
	case q.Sink.Kind == sink.KindForeachBatch:
		return replay + "; foreachBatch received the batch twice, and a foreachBatch writer must be idempotent per batch id."
	}
	return replay + "."
}

package shrink

import (
	"bytes"
	"encoding/json"
	"sort"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/dedup"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
)

// What an exec run of a pair did, as the shrinker judges it: the final
// table (or, for a sink that keeps none, every row delivered), each
// execution, and the events held more than once.

// Mechanisms: how an event came to be held twice.
const (
	// Reemitted: the dedup emitted two copies of the event, in batches
	// with different ids (the state did not hold the first when the
	// second was read).
	Reemitted = "re-emitted"
	// Replayed: one batch id was delivered to the sink twice (a replay
	// after a crash) and the sink kept both deliveries.
	Replayed = "replayed"
)

type execRec struct {
	batchID  int64
	replay   bool
	crashed  string
	input    []inRow
	output   [][]byte // ids of the rows the sink received
	lateWM   int64    // ms
	evictWM  int64    // ms
	nextWM   int64    // ms
	removed  int64    // numRowsRemoved, summed over operators
	stateAft int64    // numRowsTotal after the execution
}

type inRow struct {
	data    []byte
	id      []byte
	eventUs int64
	hasTime bool
	outcome dedup.Outcome
}

type dupEvent struct {
	id    string // the id column's JSON value
	rows  int    // rows of the table (deliveries) holding it
	class string // Reemitted or Replayed
}

type execResult struct {
	err      error // the pair is bad input or the run failed
	execs    []execRec
	hasTable bool
	table    [][]byte // ids of the table's rows (or of every delivery)
	dups     []dupEvent
}

// judge runs p through the engine in memory, as `dedupsim exec` does.
func judge(p *pair, idCol string) *execResult {
	res := &execResult{}
	q, err := query.Parse("query.yaml", p.query)
	if err != nil {
		res.err = err
		return res
	}
	st, err := steps.ParseTyped("steps.jsonl", p.steps(), q)
	if err != nil {
		res.err = err
		return res
	}
	tr, err := trace.Run(q, st, trace.Options{Checkpoint: fsys.NewMem(), OnBatch: func(r *engine.BatchRecord) {
		x := execRec{batchID: r.BatchID, replay: r.Replay, crashed: string(r.Crashed),
			lateWM: r.LateWatermarkMs, evictWM: r.WatermarkMs, nextWM: r.NextWatermarkMs}
		for i, in := range r.Input {
			row := inRow{data: bytes.Clone(in.Data), id: idOf(in.Data, idCol), eventUs: in.EventTime,
				hasTime: q.EventTimeColumn() != "" && !in.EventTimeNull}
			if i < len(r.Outcomes) {
				row.outcome = r.Outcomes[i]
			}
			x.input = append(x.input, row)
		}
		for _, o := range r.Output {
			x.output = append(x.output, idOf(o.Data, idCol))
		}
		for _, op := range r.Progress.StateOperators {
			x.removed += op.NumRowsRemoved
			x.stateAft += op.NumRowsTotal
		}
		res.execs = append(res.execs, x)
	}})
	if err != nil {
		res.err = err
		return res
	}
	res.hasTable = tr.HasTable
	if tr.HasTable {
		for _, r := range tr.Table {
			res.table = append(res.table, idOf(r, idCol))
		}
	} else {
		for _, x := range res.execs {
			res.table = append(res.table, x.output...)
		}
	}
	res.dups = res.duplicates()
	return res
}

// idOf is the row's id column as compact JSON (nil when absent).
func idOf(row []byte, idCol string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(row, &m) != nil {
		return nil
	}
	v, ok := m[idCol]
	if !ok {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return nil
	}
	return b.Bytes()
}

// duplicates lists the events the table holds more than once, by id, with
// how they got there: re-emitted when the dedup emitted two rows of the
// event (counting each batch id once, whatever its replays did), replayed
// when it emitted one and the sink kept a replay of its batch as well.
func (r *execResult) duplicates() []dupEvent {
	count := map[string]int{}
	for _, id := range r.table {
		if id != nil {
			count[string(id)]++
		}
	}
	// Emissions per id, each batch id counted by its first execution.
	emitted := map[string]int{}
	seen := map[int64]bool{}
	for _, x := range r.execs {
		if seen[x.batchID] {
			continue
		}
		seen[x.batchID] = true
		for _, o := range x.output {
			if count[string(o)] > 1 {
				emitted[string(o)]++
			}
		}
	}
	var out []dupEvent
	for id, n := range count {
		if n < 2 {
			continue
		}
		class := Replayed
		if emitted[id] > 1 {
			class = Reemitted
		}
		out = append(out, dupEvent{id: id, rows: n, class: class})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// has reports whether some duplicated event came about by class.
func (r *execResult) has(class string) bool {
	if r.err != nil {
		return false
	}
	for _, d := range r.dups {
		if d.class == class {
			return true
		}
	}
	return false
}

// mainClass is the mechanism most duplicated events share (ties: the
// name first in order), "" when there are none.
func (r *execResult) mainClass() string {
	n := map[string]int{}
	for _, d := range r.dups {
		n[d.class]++
	}
	best := ""
	for _, c := range []string{Reemitted, Replayed} {
		if n[c] > n[best] {
			best = c
		}
	}
	return best
}

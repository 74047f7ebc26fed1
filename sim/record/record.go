// Package record turns what the engine reports of a run into a history
// (sim/history): the header, one history.Batch per batch execution with
// its progress figures, the sink writes, and the copy each row is. The
// simulator, the in-process live runner and the reconstruction of an
// engine process's records all go through it, so a simulated and a live
// history of the same run are built by the same rules.
package record

import (
	"encoding/json"
	"math"
	"slices"

	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/internal/intmath"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/dedup"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim/history"
)

// CopyColumn is the hidden column that maps a row back to the copy it is:
// its value is the copy's index in History.Copies. The simulator writes it
// as the last field of every row and never uses it as a dedup key.
const CopyColumn = "_copy"

// Run is what a history's header says of a run before its first batch.
type Run struct {
	Seed      uint64
	Query     *query.Query // the query the run starts with
	QueryText string       // its YAML, as given
	Faults    faults.Settings
	HealAtMs  int64
	// ArrivalRatePerSec is the configured mean arrival rate of logical
	// events, summed over the sources.
	ArrivalRatePerSec float64
	// Coverage is the run's coverage map, kept (not copied): the runner
	// marks it as the run goes.
	Coverage map[string]int
}

// Header is the history of a run before it runs: the query, the phases,
// the faults and their knobs, and an empty table.
func Header(r Run) *history.History {
	h := &history.History{Version: history.Version, Seed: r.Seed, Faults: r.Faults.Names(), Coverage: r.Coverage,
		HealAtMs: r.HealAtMs, ArrivalRatePerSec: r.ArrivalRatePerSec, Table: []int32{}}
	if h.Faults == nil {
		h.Faults = []string{}
	}
	if knobs := r.Faults.Knobs(); len(knobs) > 0 {
		h.FaultKnobs = map[string]map[string]any{}
		for f, k := range knobs {
			h.FaultKnobs[f] = k
		}
	}
	DescribeQuery(h, r.Query, r.QueryText)
	return h
}

// DescribeQuery sets the query fields of h to the query now running (at
// the start, and again after a query-shape-change).
func DescribeQuery(h *history.History, q *query.Query, text string) {
	h.Query = text
	h.API = string(q.API)
	h.Keys = slices.Clone(q.Keys)
	h.DelayMs = -1
	h.EventTimeInKey = false
	if col := q.EventTimeColumn(); col != "" {
		h.DelayMs = q.DelayMs()
		h.EventTimeInKey = q.API == query.DropDuplicates && slices.Contains(q.Keys, col)
	}
	h.Partitions = q.ShufflePartitions
	h.SinkKind = string(q.Sink.Kind)
	d, _ := sink.Lookup(q.Sink.Kind)
	h.HasTable = d.HasTable
}

// Execution is what a history records of one batch execution, however it
// was observed: from the engine in this process (FromEngine), or from an
// engine process's records.
type Execution struct {
	BatchID int64
	Replay  bool
	Crashed string // the crash point the run died at after the sink write, if any
	// Input holds the copy index of each row read, in union order (-1 for
	// a row that is no copy: malformed-history for the checker);
	// Outcomes[i] is the fate of Input[i].
	Input    []int32
	Outcomes history.Outcomes
	// Watermarks in ms: late filter, eviction, and the value after.
	LateWatermarkMs, WatermarkMs, NextWatermarkMs int64
}

// FromEngine is the execution the engine reported; input holds the copy
// index of each of rec.Input's rows.
func FromEngine(rec *engine.BatchRecord, input []int32) Execution {
	return Execution{BatchID: rec.BatchID, Replay: rec.Replay, Crashed: string(rec.Crashed), Input: input,
		Outcomes: Outcomes(rec.Outcomes), LateWatermarkMs: rec.LateWatermarkMs, WatermarkMs: rec.WatermarkMs,
		NextWatermarkMs: rec.NextWatermarkMs}
}

// Outcomes is each row's fate as the history records it (history.Emitted,
// ...), matched by name: an outcome the history does not know stays 0,
// which the checker reports as a malformed history (TestOutcomesMapped
// holds every outcome of the engine to one of the history's).
func Outcomes(os []dedup.Outcome) history.Outcomes {
	out := make(history.Outcomes, len(os))
	for i, o := range os {
		out[i] = outcomeOf(o)
	}
	return out
}

func outcomeOf(o dedup.Outcome) history.Outcome {
	v, _ := history.OutcomeOf(o.String())
	return v
}

// Batch is the history's record of x, run at processing time atMs by the
// query q. MaxEventTimeMs is the largest event time among the input's
// copies (floor to ms, as the watermark node observes it, §6.2), set only
// when q has an event-time column and the input holds a copy.
func Batch(atMs int64, x Execution, copies []history.Copy, q *query.Query) history.Batch {
	b := history.Batch{BatchID: x.BatchID, AtMs: atMs, Replay: x.Replay, Crashed: x.Crashed,
		Input: x.Input, Outcomes: x.Outcomes,
		LateWatermarkMs: x.LateWatermarkMs, WatermarkMs: x.WatermarkMs, NextWatermarkMs: x.NextWatermarkMs}
	if b.Input == nil {
		b.Input = []int32{}
	}
	if b.Outcomes == nil {
		b.Outcomes = history.Outcomes{}
	}
	if q.EventTimeColumn() == "" {
		return b
	}
	var maxUs int64
	seen := false
	for _, i := range x.Input {
		if i >= 0 && int(i) < len(copies) && (!seen || copies[i].EventTimeUs > maxUs) {
			maxUs, seen = copies[i].EventTimeUs, true
		}
	}
	if seen {
		b.MaxEventTimeMs = intmath.FloorDiv(maxUs, 1000)
	}
	return b
}

// AddProgress sets b's state figures from the first stateful operator of
// p (nil: none known) and keeps raw, the progress as JSON, verbatim (nil
// leaves it out: a run that omits progress records).
func AddProgress(b *history.Batch, p *engine.Progress, raw json.RawMessage) {
	if p != nil {
		if ops := p.StateOperators; len(ops) > 0 {
			b.NumRowsTotal, b.NumRowsUpdated, b.NumRowsRemoved = ops[0].NumRowsTotal, ops[0].NumRowsUpdated, ops[0].NumRowsRemoved
		}
	}
	b.Progress = raw
}

// ProgressJSON is p as the history keeps it.
func ProgressJSON(p *engine.Progress) json.RawMessage {
	raw, err := json.Marshal(p)
	if err != nil {
		panic(err) // plain data: strings, integers and finite rates
	}
	return raw
}

// Write is the history's record of one delivery to the sink: rows holds
// the copy index of each row delivered, kept how many of them the sink
// added to its table.
func Write(batchID, atMs int64, rows []int32, kept int) history.SinkWrite {
	return history.SinkWrite{BatchID: batchID, AtMs: atMs, Rows: rows, Kept: kept}
}

// RowCopies is the copy index of each row (CopyIndex), as the history's
// 32-bit fields hold it (Copy32).
func RowCopies(rows []row.Row) []int32 {
	out := make([]int32, len(rows))
	for i := range rows {
		out[i] = Copy32(CopyIndex(rows[i].Data))
	}
	return out
}

// InputCopies is the copy index of each row as a batch's Input holds it
// (Copy32).
func InputCopies(rows []row.Row) []int32 {
	out := make([]int32, len(rows))
	for i := range rows {
		out[i] = Copy32(CopyIndex(rows[i].Data))
	}
	return out
}

// Copy32 is a copy index as the history's 32-bit fields hold it: -1 (no
// copy, which the checker reports) for one that does not fit, rather than
// another copy's index.
func Copy32(n int) int32 {
	if n < 0 || n > math.MaxInt32 {
		return -1
	}
	return int32(n)
}

// RawCopies is the copy index of each raw row (CopyIndex), as the
// history's 32-bit fields hold it (Copy32).
func RawCopies(rows []json.RawMessage) []int32 {
	out := make([]int32, len(rows))
	for i, r := range rows {
		out[i] = Copy32(CopyIndex(r))
	}
	return out
}

// CopyIndex is the value of a row's _copy column, or -1 when the row has
// none (malformed-history for the checker). The simulator's rows end with
// it (`...,"_copy":17}`), read without decoding the row; any other
// placement is decoded as JSON.
func CopyIndex(data []byte) int {
	if n, ok := trailingCopy(data); ok {
		return n
	}
	var v struct {
		Copy *int `json:"_copy"`
	}
	if err := json.Unmarshal(data, &v); err != nil || v.Copy == nil || *v.Copy < 0 {
		return -1
	}
	return *v.Copy
}

// copyTail is what precedes a trailing _copy value.
const copyTail = `"` + CopyColumn + `":`

// trailingCopy reads `,"_copy":N}` (or `{"_copy":N}`) at the end of data:
// N a JSON integer (no sign, no leading zero) of at most 18 digits.
func trailingCopy(data []byte) (int, bool) {
	end := len(data) - 1 // the closing brace
	if end < 1 || data[end] != '}' {
		return 0, false
	}
	i := end - 1
	for i >= 0 && data[i] >= '0' && data[i] <= '9' {
		i--
	}
	digits := data[i+1 : end]
	if len(digits) == 0 || len(digits) > 18 || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	// The key's opening quote must follow ',' or '{': after a backslash it
	// would be part of another key (`{"a\"_copy":5}`).
	k := i + 1 - len(copyTail)
	if k < 1 || string(data[k:i+1]) != copyTail || (data[k-1] != ',' && data[k-1] != '{') {
		return 0, false
	}
	n := 0
	for _, c := range digits {
		n = n*10 + int(c-'0')
	}
	return n, true
}

// Positions maps where a copy was read (source, partition, offset) to its
// index: on a broker that appended the same bytes twice (a lost produce
// ack), the offset tells the two appends apart where _copy cannot.
type Positions map[[3]int64]int

// NewPositions indexes copies by where they were appended.
func NewPositions(copies []history.Copy) Positions {
	p := make(Positions, len(copies))
	for i, c := range copies {
		p[[3]int64{int64(c.Source), int64(c.Partition), c.Offset}] = i
	}
	return p
}

// Index is the copy read at pos (when the source said where: ok), else the
// row's _copy value.
func (p Positions) Index(data []byte, pos [3]int64, ok bool) int {
	if ok {
		if i, found := p[pos]; found {
			return i
		}
	}
	return CopyIndex(data)
}

package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/sim/history"
)

// Exporting a history as a `dedupsim exec` trace (docs/exec-format.md), so
// that every simulated failure ends as a pair of files that replays with
//
//	dedupsim exec --query query.yaml --input steps.jsonl
//
// Every batch execution of the history becomes one processing-time trigger
// of exec, so exec runs the same batches with the same boundaries:
//
//   - a batch that read data, planned for the first time: a
//     {"sources": {NAME: [ROW, ...]}, "once": true} line with the rows of
//     its input in the engine's input order (source by source, each in the
//     order the batch read it), rendered byte for byte as the simulator
//     rendered them ({"id":..., "<event time>":..., "_copy": N});
//   - a no-data batch, or a replay of a batch planned before a crash:
//     {"tick": true};
//   - a crash at a named point of batch N: {"crash": P, "batch": N} just
//     before the line of the execution that dies; an execution that died
//     before the sink (after-offsets-write, after-state-commit) is not in
//     the history, so its line is built from the replay that follows it;
//   - the restart after a crash is implicit: exec restarts the driver from
//     the checkpoint as soon as a once/tick trigger crashes, and the next
//     line's trigger runs the re-planned batch, as the simulator's first
//     trigger after its downtime does; a restart with no crash before it
//     (a clean stop and start) is {"restart": true}.
//
// Exec's processing clock is the largest event time appended so far, not
// the simulator's clock: progress timestamps and rates, the offset log's
// batchTimestampMs and a merge sink's lookback ("now - lookback") differ.
// Batch ids, inputs, row outcomes, emitted rows, watermarks and state
// metrics do not.
//
// Limits (each marked in the file by a "#" comment line where it applies):
//
//   - crash-random (a filesystem operation fails mid-batch), and any crash
//     that lost unsynced writes or tore one, has no exec form. It becomes
//     the named point that leaves the checkpoint as the restart found it,
//     judged from what ran next: the batch re-run as a replay after its
//     sink write → after-sink-write; re-run as a replay without reaching
//     the sink → after-offsets-write (after-state-commit when the attempt
//     was itself a replay, which does not write its offsets again); the
//     next batch planned → after-commit; the batch re-planned from scratch
//     (offsets/N never became durable) → a clean {"restart": true}. Exact
//     whenever the crash left the checkpoint in one of those states, up to
//     two labels: an execution whose commits/N write failed is recorded as
//     crashed after-sink-write with the watermark computed for the commit
//     as its next watermark, while exec's after-sink-write reports the
//     current one (and labels it after-commit when the commit became
//     durable nonetheless). Not exact when a power loss erased a batch
//     that had reached the sink, or older batches: exec then runs other
//     batch boundaries from that point (every copy is still appended
//     exactly once).
//   - a query-shape-change restarts a different query on a fresh checkpoint,
//     which one exec run cannot do: the export stops there with a comment.
//     ExportOptions.Checkpoint exports a later checkpoint (the query after
//     the change, fed only the rows its batches read) as a trace of its own;
//     its sink table then starts empty, not with the earlier query's rows.
//   - a query with drop_future_events filters rows whose event time is
//     ahead of processing time; exec's clock is the largest event time
//     appended, so its filter never fires. The rows the simulator filtered
//     are left out of the trace (they reach neither the watermark nor the
//     dedup, so nothing else changes), with a comment; a batch whose every
//     row was filtered becomes a tick, which exec runs only when a no-data
//     batch is due.
//   - the history does not record the sources' timestamp_format, nor the
//     rows' payload columns (Config.Columns): rows are written with the
//     event time in seconds and the key columns of the history's queries
//     only, unless ExportOptions says otherwise (ExportOptionsFor(cfg)
//     reads both from the run's Config and renders every row byte for byte
//     as the simulator did). The engine reads both time forms as the same
//     microsecond and no query keys on a payload column, so outcomes agree
//     either way; only the bytes of the rows differ (a merge sink keyed on
//     a payload column needs ExportOptionsFor).

// ExportOptions tune ExportTraceWith. The zero value exports the first
// checkpoint with event times in seconds.
type ExportOptions struct {
	// TimestampFormats is the timestamp_format of each query source, in
	// query order: "seconds" (default, also for a missing entry) or
	// "rfc3339".
	TimestampFormats []string
	// Checkpoint selects the checkpoint to export: 0 is the one the run
	// started with, k the one opened by the k-th fresh-checkpoint restart
	// (query-shape-change).
	Checkpoint int
	// layout is the rows' columns (ExportOptionsFor); nil: derived from
	// the history's queries, without payload columns.
	layout *rowLayout
}

// ExportOptionsFor returns the options that render cfg's rows exactly.
func ExportOptionsFor(cfg Config) (ExportOptions, error) {
	p, err := cfg.prepare()
	if err != nil {
		return ExportOptions{}, err
	}
	o := ExportOptions{layout: p.layout}
	for _, s := range p.sourceCfgs {
		o.TimestampFormats = append(o.TimestampFormats, s.TimestampFormat)
	}
	return o, nil
}

// IDColumn is the rows' event-id column under these options (the query's
// first dedup key that is not its event-time column, "id" when there is
// none; Config.Columns): copies of one event share its value. "" for the
// zero options, whose layout comes from the history.
func (o ExportOptions) IDColumn() string {
	if o.layout == nil {
		return ""
	}
	return o.layout.idCol
}

// ExportCheckpoints is how many checkpoints h's run used, so how many
// traces export it: 1, plus one per fresh-checkpoint restart
// (query-shape-change). ExportOptions.Checkpoint is in [0, this).
func ExportCheckpoints(h *history.History) int {
	n := 1
	for _, r := range h.Restarts {
		if r.FreshCheckpoint {
			n++
		}
	}
	return n
}

// ExportTrace writes h as a `dedupsim exec` trace: the query YAML and the
// STEPS.jsonl that replay its first checkpoint (see ExportTraceWith).
func ExportTrace(h *history.History) (queryYAML []byte, stepsJSONL []byte, err error) {
	return ExportTraceWith(h, ExportOptions{})
}

// ExportTraceWith writes h as a `dedupsim exec` trace with options.
func ExportTraceWith(h *history.History, opt ExportOptions) (queryYAML []byte, stepsJSONL []byte, err error) {
	if h == nil {
		return nil, nil, errors.New("sim: export: no history")
	}
	x, err := newExporter(h, opt)
	if err != nil {
		return nil, nil, fmt.Errorf("sim: export: %w", err)
	}
	if err := x.run(); err != nil {
		return nil, nil, fmt.Errorf("sim: export: %w", err)
	}
	return x.queryYAML(), x.out.Bytes(), nil
}

// timeline event kinds, in their order within one trigger: a restart opens
// the trigger, the batch runs, a crash ends it.
const (
	evRestart = iota
	evBatch
	evCrash
)

type tlEvent struct {
	at   int64
	kind int
	idx  int // into h.Restarts, h.Batches or h.Crashes
}

type exporter struct {
	h      *history.History
	opt    ExportOptions
	q      *query.Query
	qText  string
	names  [][]byte // JSON-quoted source names
	encs   []*rowEncoder
	events []tlEvent // this checkpoint's, in time order
	// stopAt is the fresh-checkpoint restart that ends the export (-1: none).
	stopAt int
	// crashRec maps a crash to the execution it ended (-1: it died before
	// the sink); recCrash the other way.
	crashRec map[int]int
	recCrash map[int]int

	fed []bool // copies appended to exec's sources
	// planned: batch ids exec has planned (written offsets for): a later
	// attempt of one is a replay, which never passes after-offsets-write.
	planned map[int64]bool
	out     bytes.Buffer
	buf     []byte
	perSrc  [][]int
}

func newExporter(h *history.History, opt ExportOptions) (*exporter, error) {
	x := &exporter{h: h, opt: opt, stopAt: -1, crashRec: map[int]int{}, recCrash: map[int]int{},
		fed: make([]bool, len(h.Copies)), planned: map[int64]bool{}}
	first := h.Query
	if h.InitialQuery != "" {
		first = h.InitialQuery
	}
	// Checkpoint epochs: split at fresh-checkpoint restarts.
	var fresh []int
	for i, r := range h.Restarts {
		if r.FreshCheckpoint {
			fresh = append(fresh, i)
		}
	}
	if opt.Checkpoint < 0 || opt.Checkpoint > len(fresh) {
		return nil, fmt.Errorf("checkpoint %d: the run has %d", opt.Checkpoint, len(fresh)+1)
	}
	fromMs, toMs := int64(-1<<63), int64(1<<63-1)
	x.qText = first
	if opt.Checkpoint > 0 {
		r := h.Restarts[fresh[opt.Checkpoint-1]]
		fromMs = r.AtMs
		x.qText = r.Query
		if x.qText == "" {
			x.qText = h.Query
		}
	}
	if opt.Checkpoint < len(fresh) {
		x.stopAt = fresh[opt.Checkpoint]
		toMs = h.Restarts[x.stopAt].AtMs
	}
	q0, err := query.Parse("query", []byte(first))
	if err != nil {
		return nil, fmt.Errorf("the history's query: %w", err)
	}
	q, err := query.Parse("query", []byte(x.qText))
	if err != nil {
		return nil, fmt.Errorf("the history's query: %w", err)
	}
	x.q = q
	lay := opt.layout
	if lay == nil {
		if lay, err = historyLayout(h, q0); err != nil {
			return nil, err
		}
	}
	for i, s := range q.Sources {
		b, _ := json.Marshal(s.Name)
		x.names = append(x.names, b)
		format := "seconds"
		if i < len(opt.TimestampFormats) && opt.TimestampFormats[i] != "" {
			format = opt.TimestampFormats[i]
		}
		if format != "seconds" && format != "rfc3339" {
			return nil, fmt.Errorf("timestamp format %q of source %s: want seconds or rfc3339", format, s.Name)
		}
		x.encs = append(x.encs, newLayoutEncoder(lay, format == "rfc3339"))
	}
	x.perSrc = make([][]int, len(q.Sources))
	for i, c := range h.Copies {
		if c.Source < 0 || int(c.Source) >= len(q.Sources) {
			return nil, fmt.Errorf("copy %d: source %d, the query has %d", i, c.Source, len(q.Sources))
		}
	}

	in := func(at int64) bool { return at >= fromMs && at < toMs }
	for i, r := range h.Restarts {
		if in(r.AtMs) && !(opt.Checkpoint > 0 && i == fresh[opt.Checkpoint-1]) {
			x.events = append(x.events, tlEvent{r.AtMs, evRestart, i})
		}
	}
	batchAt := map[[2]int64]int{} // (atMs, batch id) -> last crashed execution
	for i, b := range h.Batches {
		if !in(b.AtMs) {
			continue
		}
		if len(b.Input) != len(b.Outcomes) {
			return nil, fmt.Errorf("batch %d at %d ms: %d input rows, %d outcomes", b.BatchID, b.AtMs, len(b.Input), len(b.Outcomes))
		}
		for _, c := range b.Input {
			if c < 0 || int(c) >= len(h.Copies) {
				return nil, fmt.Errorf("batch %d at %d ms: copy %d out of range", b.BatchID, b.AtMs, c)
			}
		}
		x.events = append(x.events, tlEvent{b.AtMs, evBatch, i})
		if b.Crashed != "" {
			batchAt[[2]int64{b.AtMs, b.BatchID}] = i
		}
	}
	for i, c := range h.Crashes {
		if !in(c.AtMs) {
			continue
		}
		x.events = append(x.events, tlEvent{c.AtMs, evCrash, i})
		x.crashRec[i] = -1
		if r, ok := batchAt[[2]int64{c.AtMs, c.BatchID}]; ok {
			x.crashRec[i] = r
			x.recCrash[r] = i
		}
	}
	sort.SliceStable(x.events, func(i, j int) bool {
		a, b := x.events[i], x.events[j]
		if a.at != b.at {
			return a.at < b.at
		}
		return a.kind < b.kind
	})
	return x, nil
}

// historyLayout is the rows' layout as far as the history tells it: the
// first query's event-time column and id column, and the key columns of
// every query the run ran (the first, each fresh restart's, the last).
func historyLayout(h *history.History, q0 *query.Query) (*rowLayout, error) {
	col := q0.EventTimeColumn()
	if col == "" {
		col = "ts"
	}
	qs := []*query.Query{q0}
	for _, text := range append(restartQueries(h), h.Query) {
		if text == "" {
			continue
		}
		q, err := query.Parse("query", []byte(text))
		if err != nil {
			return nil, fmt.Errorf("the history's query: %w", err)
		}
		qs = append(qs, q)
	}
	l := &rowLayout{eventCol: col, idCol: "id"}
	for _, k := range q0.Keys {
		if k != col {
			l.idCol = k
			break
		}
	}
	for _, q := range qs {
		for _, k := range q.Keys {
			if k != col && k != l.idCol && !slices.Contains(l.keyCols, k) {
				l.keyCols = append(l.keyCols, k)
			}
		}
	}
	for _, c := range append([]string{l.idCol, l.eventCol}, l.keyCols...) {
		if !validColumn(c) {
			return nil, fmt.Errorf("the history's query names column %q, which the simulator never writes", c)
		}
	}
	return l, nil
}

func restartQueries(h *history.History) []string {
	var out []string
	for _, r := range h.Restarts {
		out = append(out, r.Query)
	}
	return out
}

func (x *exporter) queryYAML() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Query of a dedupsim simulated run (seed %d), exported by sim.ExportTrace.\n", x.h.Seed)
	fmt.Fprintf(&b, "# Replay: dedupsim exec --query query.yaml --input steps.jsonl\n")
	b.WriteString(x.qText)
	if !strings.HasSuffix(x.qText, "\n") {
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func (x *exporter) comment(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	for _, line := range strings.Split(s, "\n") {
		x.out.WriteString("# ")
		x.out.WriteString(line)
		x.out.WriteByte('\n')
	}
}

func (x *exporter) run() error {
	h := x.h
	faultsOn := "none"
	if len(h.Faults) > 0 {
		faultsOn = strings.Join(h.Faults, ", ")
	}
	x.comment("dedupsim simulated run, seed %d, faults: %s (exported by sim.ExportTrace).", h.Seed, faultsOn)
	x.comment("Replay: dedupsim exec --query query.yaml --input steps.jsonl")
	x.comment("One line per batch execution: \"once\" appends the batch's rows and runs exactly one batch,")
	x.comment("\"tick\" runs a no-data batch or the re-run of a batch planned before a crash.")
	x.comment("Processing time in exec is the largest event time seen, not the simulator's clock:")
	x.comment("progress timestamps and a merge sink's lookback differ; batches, outcomes, watermarks and state do not.")
	if x.opt.Checkpoint > 0 {
		x.comment("Checkpoint %d of the run: the query after fresh-checkpoint restart %d; its table starts empty here.", x.opt.Checkpoint, x.opt.Checkpoint)
	}
	down := false // a crash not yet followed by its restart
	for i, ev := range x.events {
		switch ev.kind {
		case evRestart:
			r := h.Restarts[ev.idx]
			if r.FreshCheckpoint {
				return fmt.Errorf("internal: fresh restart %d inside a checkpoint", ev.idx)
			}
			if down {
				down = false // the restart after a crash: exec restarts the driver itself
				continue
			}
			x.comment("clean restart at %s.", fmtMs(r.AtMs))
			x.out.WriteString(`{"restart": true}` + "\n")
		case evBatch:
			if c, ok := x.recCrash[ev.idx]; ok {
				x.crashLine(c, i)
			}
			// Every execution is one trigger: a first plan appends its rows,
			// a replay (rows already appended) and a no-data batch tick.
			b := &h.Batches[ev.idx]
			x.planned[b.BatchID] = true
			x.rowsLine(b)
		case evCrash:
			down = true
			if x.crashRec[ev.idx] >= 0 {
				continue // written with the execution it ended
			}
			x.crashLine(ev.idx, i)
		}
	}
	if x.stopAt >= 0 {
		r := h.Restarts[x.stopAt]
		x.comment("query-shape-change: at %s the simulator stopped this query and started another on a fresh", fmtMs(r.AtMs))
		x.comment("checkpoint (its sink table persisting). One exec run cannot change query and checkpoint, so the")
		x.comment("trace ends here; ExportOptions{Checkpoint: %d} exports the next checkpoint. Its query:", x.opt.Checkpoint+1)
		x.comment("%s", strings.TrimRight(r.Query, "\n"))
	}
	return nil
}

// next returns the first batch execution after timeline position i, or -1.
func (x *exporter) next(i int) int {
	for _, ev := range x.events[i+1:] {
		if ev.kind == evBatch {
			return ev.idx
		}
	}
	return -1
}

// crashLine writes crash ci (at timeline position i): the crash step, a
// comment when it is an approximation, and, when the execution died before
// the sink (no record), the trigger that runs into it.
func (x *exporter) crashLine(ci, i int) {
	h := x.h
	c := h.Crashes[ci]
	rec := x.crashRec[ci]
	// The timeline position of the crash (after its record, if any).
	after := i
	for after < len(x.events) && !(x.events[after].kind == evCrash && x.events[after].idx == ci) {
		after++
	}
	nx := x.next(after)
	var nb *history.Batch
	if nx >= 0 {
		nb = &h.Batches[nx]
	}
	// The state the restart found, from what ran next.
	point := ""
	restart := false
	switch {
	case nb == nil || nb.BatchID == c.BatchID+1:
		point = "after-commit"
		if rec < 0 && c.Point != "random" && nb == nil {
			point = c.Point
		}
	case nb.BatchID == c.BatchID && nb.Replay:
		switch {
		case rec >= 0:
			point = "after-sink-write"
		case x.planned[c.BatchID]:
			// The attempt was itself a replay: the engine re-runs a planned
			// batch without writing its offsets again.
			point = "after-state-commit"
		case c.Point == "after-offsets-write" || c.Point == "after-state-commit":
			point = c.Point
		default:
			point = "after-offsets-write"
		}
	default:
		restart = true
	}
	var what []string
	if c.Point == "random" {
		what = append(what, "crash-random (a filesystem operation failed mid-batch)")
	} else {
		what = append(what, "a crash at "+c.Point)
	}
	if len(c.LostFiles) > 0 {
		what = append(what, "power loss: lost unsynced "+strings.Join(c.LostFiles, ", "))
	}
	if c.TornFile != "" {
		what = append(what, "torn write of "+c.TornFile)
	}
	desc := fmt.Sprintf("batch %d at %s: %s", c.BatchID, fmtMs(c.AtMs), strings.Join(what, "; "))
	exact := c.Point == point && len(c.LostFiles) == 0 && c.TornFile == ""
	switch {
	case restart && rec < 0:
		why := fmt.Sprintf("the simulator re-planned batch %d from scratch (offsets/%d never became durable),\nso the attempt left nothing the restart used", c.BatchID, c.BatchID)
		if nb.BatchID < c.BatchID {
			why = fmt.Sprintf("the power loss erased the checkpoint back to batch %d; exec's batch boundaries differ from here on", nb.BatchID)
		}
		x.comment("%s.\nNo exec form: %s. Approximated by a clean restart.", desc, why)
		x.out.WriteString(`{"restart": true}` + "\n")
		return
	case restart:
		x.comment("%s.\nNo exec form: the batch had reached the sink, then the crash erased its offsets and the simulator\nre-planned from batch %d. Approximated by after-sink-write: exec's batch boundaries differ from here on.", desc, nb.BatchID)
		point = "after-sink-write"
	case exact:
		x.comment("%s.", desc)
	default:
		x.comment("%s.\nNo exec form: approximated by the named point that leaves the checkpoint as the restart found it:\n%s (what ran next: %s).", desc, point, x.describeNext(nb))
	}
	fmt.Fprintf(&x.out, `{"crash": %q, "batch": %d}`+"\n", point, c.BatchID)
	if rec >= 0 {
		return // the record's own line follows
	}
	// The execution that died before the sink: its rows are those of the
	// replay that follows (same offsets; already appended when this was a
	// replay too), or none for a no-data batch.
	x.planned[c.BatchID] = true
	if nb != nil && nb.BatchID == c.BatchID && nb.Replay {
		x.rowsLine(nb)
		return
	}
	x.tick()
}

func (x *exporter) describeNext(nb *history.Batch) string {
	if nb == nil {
		return "no further batch"
	}
	s := fmt.Sprintf("batch %d", nb.BatchID)
	if nb.Replay {
		s += " re-run as a replay"
	} else {
		s += " planned"
	}
	return s
}

// fmtMs renders a simulated processing time.
func fmtMs(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

func (x *exporter) tick() { x.out.WriteString(`{"tick": true}` + "\n") }

// rowsLine appends the copies of execution b not yet appended and runs one
// trigger; a tick when there are none. Rows the simulator's
// drop_future_events filter removed are left out (see ExportTrace).
func (x *exporter) rowsLine(bt *history.Batch) {
	for s := range x.perSrc {
		x.perSrc[s] = x.perSrc[s][:0]
	}
	n := 0
	var filtered []string
	for j, c32 := range bt.Input {
		c := int(c32)
		if x.fed[c] {
			continue
		}
		x.fed[c] = true
		if bt.Outcomes[j] == history.Filtered {
			filtered = append(filtered, strconv.Itoa(c))
			continue
		}
		s := x.h.Copies[c].Source
		x.perSrc[s] = append(x.perSrc[s], c)
		n++
	}
	if len(filtered) > 0 {
		x.comment("batch %d: left out %d rows the simulator's drop_future_events filter removed (copies %s): exec's clock,\nthe largest event time seen, never runs behind a row, so exec's filter would let them through.", bt.BatchID, len(filtered), strings.Join(filtered, ", "))
		if n == 0 {
			x.comment("Every row of batch %d was filtered: exec cannot run a data batch without rows, so this tick runs\nonly a due no-data batch (batch ids may shift from here).", bt.BatchID)
		}
	}
	if n == 0 {
		x.tick()
		return
	}
	b := append(x.buf[:0], `{"sources": {`...)
	firstSrc := true
	for s, cs := range x.perSrc {
		if len(cs) == 0 {
			continue // a named source with no rows would still make an offset
		}
		if !firstSrc {
			b = append(b, ", "...)
		}
		firstSrc = false
		b = append(b, x.names[s]...)
		b = append(b, ": ["...)
		for k, c := range cs {
			if k > 0 {
				b = append(b, ',')
			}
			cp := &x.h.Copies[c]
			b = x.encs[s].appendRow(b, cp.Event, cp.EventTimeUs, c)
		}
		b = append(b, ']')
	}
	b = append(b, `}, "once": true}`...)
	b = append(b, '\n')
	x.out.Write(b)
	x.buf = b
}

// appendRow renders a row as encode stores it. The id (and the further
// key columns made from it) is quoted as JSON when it needs escaping (the
// workload's ids never do).
func (e *rowEncoder) appendRow(b []byte, id string, eventUs int64, copyIdx int) []byte {
	if needsEscape(id) {
		q, _ := json.Marshal(id)
		b = append(b, e.head[:len(e.head)-1]...)
		b = append(b, q...)
		b = append(b, e.mid[1:]...)
		b = e.appendTime(b, eventUs)
		for _, k := range e.keyCols {
			v, _ := json.Marshal(k + ":" + id)
			b = append(b, `,"`...)
			b = append(b, k...)
			b = append(b, `":`...)
			b = append(b, v...)
		}
		b = e.appendPayload(b, unsafeBytes(id))
	} else {
		b = append(b, e.head...)
		b = append(b, id...)
		b = append(b, e.mid...)
		b = e.appendTime(b, eventUs)
		b = e.appendExtra(b, unsafeBytes(id))
	}
	b = append(b, e.tail...)
	b = strconv.AppendInt(b, int64(copyIdx), 10)
	return append(b, '}')
}

func needsEscape(s string) bool {
	return slices.ContainsFunc([]byte(s), func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80 })
}

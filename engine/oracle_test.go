package engine_test

// Property test: the engine against a deliberately simple oracle.
//
// rapid draws a query (one of five dedup flavours, delay, partitions,
// no-data batches, one or two watermarked sources, policy) and a steps trace
// (rows, clean restarts, crashes at each of the four crash points). The
// trace is written as the `dedupsim exec` files (query YAML + steps JSONL),
// parsed by query.Parse and steps.Parse and run by trace.Run on an in-memory
// checkpoint. The same case is run through oracleRun, a model written
// straight from docs/spark-semantics.md with one global map: no
// partitions, no checkpoint files, no state store, no engine code. Every
// batch execution must agree: batch id, replay/crash flags, the emitted rows
// (as a sorted multiset of raw JSON: order across partitions is
// unspecified, §1.8), numInputRows, the operator metrics and eventTime.
//
// On a mismatch rapid shrinks the case and the failure message prints the
// minimal query and steps as ready-to-run files for `dedupsim exec`.
//
// RAPID_CHECKS=2000 go test ./engine -run TestOracle runs a longer search.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
	"github.com/dedupsim/dedupsim/internal/intmath"
	"pgregory.net/rapid"
)

func TestOracle(t *testing.T) {
	var cov oCoverage
	rapid.Check(t, func(t *rapid.T) {
		c := drawOracleCase(t)
		queryYAML, stepsJSONL := c.queryYAML(), c.stepsJSONL()
		want := oracleRun(c, &cov)
		got, err := engineRun(queryYAML, stepsJSONL)
		if err != nil {
			t.Fatalf("engine failed: %v\n%s", err, c.repro(queryYAML, stepsJSONL))
		}
		if i, ok := firstDiff(want, got); !ok {
			t.Fatalf("engine and oracle disagree at execution #%d\n  oracle: %s\n  engine: %s\n\n"+
				"oracle, every execution:\n%s\nengine, every execution:\n%s\n%s",
				i, at(want, i), at(got, i), indent(want), indent(got), c.repro(queryYAML, stepsJSONL))
		}
	})
	// Coverage probes: how often the interesting situations came up (-v).
	t.Logf("coverage over all checks (shrinking included): %+v", cov)
}

// oCoverage counts batch executions of each interesting kind, so a change
// to the generator that stops producing one of them shows in `go test -v`.
type oCoverage struct {
	Cases, Steps, Executions, Replays, CrashedAfterSink, CrashedAfterCommit, NoDataBatches int
	LateDrops, Evictions, Duplicates, TwoSources, NullTimes, WatermarkMoves                int
}

// ---------------------------------------------------------------------------
// The case

// oFlavour is the dedup under test.
type oFlavour int

const (
	flKeyTime  oFlavour = iota // dropDuplicates [id, ts] + watermark: §3.2 eviction by the key's time
	flLateOnly                 // dropDuplicates [id] + watermark: §3.3 late filter, no eviction
	flNoWM                     // dropDuplicates [id], no watermark: §2
	flWithin                   // dropDuplicatesWithinWatermark [id]: §4
	flBatch                    // batchDropDuplicates [id] (foreachBatch): §5
	numFlavours
)

type oSource struct {
	name      string
	delayMs   int64
	delayText string
}

type oCase struct {
	flavour    oFlavour
	hasWM      bool
	sources    []oSource // every source is watermarked when hasWM
	partitions int
	noData     bool
	policy     string
	steps      []oStep
}

type oStepKind int

const (
	stRows oStepKind = iota
	stRestart
	stCrash
)

type oStep struct {
	kind  oStepKind
	rows  [][]oRow // per source, in query order
	crash string
}

// oRow is one input row. n numbers the rows of a case so that copies of a
// key are told apart in the output (which copy was emitted matters).
type oRow struct {
	id     string
	null   bool  // event time is JSON null
	micros int64 // event time
	form   int   // how the event time is written: 0 plain, 1 padded decimal, 2 RFC 3339
	n      int
	text   string // the raw JSON row
}

var crashPoints = []string{"after-offsets-write", "after-state-commit", "after-sink-write", "after-commit"}

func drawOracleCase(t *rapid.T) *oCase {
	c := &oCase{flavour: oFlavour(rapid.IntRange(0, int(numFlavours)-1).Draw(t, "flavour"))}
	switch c.flavour {
	case flNoWM:
	case flBatch:
		c.hasWM = rapid.Bool().Draw(t, "batchWithWatermark")
	default:
		c.hasWM = true
	}
	nsrc := 1
	if c.hasWM {
		nsrc = rapid.IntRange(1, 2).Draw(t, "sources")
	}
	for i := range nsrc {
		s := oSource{name: query.DefaultSourceName}
		if nsrc > 1 {
			s.name = "s" + strconv.Itoa(i+1)
		}
		if c.hasWM {
			if rapid.Bool().Draw(t, "delayInSeconds") {
				secs := rapid.IntRange(0, 5).Draw(t, "delaySeconds")
				s.delayMs, s.delayText = int64(secs)*1000, fmt.Sprintf("%d seconds", secs)
			} else {
				ms := rapid.IntRange(0, 5000).Draw(t, "delayMs")
				s.delayMs, s.delayText = int64(ms), fmt.Sprintf("%dms", ms)
			}
		}
		c.sources = append(c.sources, s)
	}
	c.partitions = rapid.IntRange(1, 8).Draw(t, "partitions")
	c.noData = rapid.Bool().Draw(t, "noDataBatches")
	c.policy = rapid.SampledFrom([]string{"min", "max"}).Draw(t, "policy")
	nulls := rapid.IntRange(0, 4).Draw(t, "nulls") == 0

	row := rapid.Custom(func(t *rapid.T) oRow {
		r := oRow{id: rapid.SampledFrom([]string{"a", "b", "c", "d", "e"}).Draw(t, "id")}
		r.micros = int64(rapid.IntRange(0, 30).Draw(t, "seconds")) * 1_000_000
		switch rapid.IntRange(0, 9).Draw(t, "fraction") {
		case 6:
			r.micros += 500_000
		case 7: // hundredths: not exact in binary floating point
			r.micros += int64(rapid.IntRange(1, 99).Draw(t, "hundredths")) * 10_000
		case 8: // sub-millisecond: the watermark floors to ms
			r.micros += int64(rapid.IntRange(1, 999_999).Draw(t, "micros"))
		case 9:
			if nulls {
				r.null, r.micros = true, 0
			}
		}
		if !r.null {
			switch rapid.IntRange(0, 9).Draw(t, "form") {
			case 7, 8:
				r.form = 1
			case 9:
				r.form = 2
			}
		}
		return r
	})
	step := rapid.Custom(func(t *rapid.T) oStep {
		switch k := rapid.IntRange(0, 9).Draw(t, "step"); {
		case k == 8:
			return oStep{kind: stRestart}
		case k == 9:
			return oStep{kind: stCrash, crash: rapid.SampledFrom(crashPoints).Draw(t, "crash")}
		}
		s := oStep{kind: stRows, rows: make([][]oRow, nsrc)}
		for i := range nsrc {
			// With two sources, often only one of them gets data: the other's
			// watermark node then holds the min policy back (§6.3, §6.5).
			if nsrc > 1 && rapid.IntRange(0, 2).Draw(t, "idleSource") == 0 {
				s.rows[i] = []oRow{}
				continue
			}
			s.rows[i] = rapid.SliceOfN(row, 0, 6).Draw(t, "rows")
		}
		return s
	})
	// 1-15 steps. One SliceOfN(step, 1, 15) averages about 5 steps; two
	// halves average about 8 and each still shrinks by deleting steps.
	c.steps = append(rapid.SliceOfN(step, 1, 8).Draw(t, "steps"), rapid.SliceOfN(step, 0, 7).Draw(t, "moreSteps")...)
	n := 0
	for _, s := range c.steps {
		for _, rows := range s.rows {
			for j := range rows {
				rows[j].n = n
				rows[j].text = rows[j].json()
				n++
			}
		}
	}
	return c
}

func (r oRow) json() string {
	var ts string
	switch {
	case r.null:
		ts = "null"
	case r.form == 2:
		ts = strconv.Quote(time.UnixMicro(r.micros).UTC().Format(time.RFC3339Nano))
	default:
		ts = strconv.FormatInt(r.micros/1_000_000, 10)
		frac := r.micros % 1_000_000
		switch {
		case r.form == 1:
			ts += fmt.Sprintf(".%06d", frac) // e.g. 12.000000, 12.500000
		case frac != 0:
			ts += strings.TrimRight(fmt.Sprintf(".%06d", frac), "0")
		}
	}
	return fmt.Sprintf(`{"id":%q,"ts":%s,"n":%d}`, r.id, ts, r.n)
}

func (c *oCase) api() string {
	switch c.flavour {
	case flWithin:
		return "dropDuplicatesWithinWatermark"
	case flBatch:
		return "batchDropDuplicates"
	}
	return "dropDuplicates"
}

func (c *oCase) keys() string {
	if c.flavour == flKeyTime {
		return "[id, ts]"
	}
	return "[id]"
}

func (c *oCase) queryYAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dedup: {api: %s, keys: %s}\n", c.api(), c.keys())
	if len(c.sources) == 1 {
		if c.hasWM {
			fmt.Fprintf(&b, "watermark: {column: ts, delay: %q}\n", c.sources[0].delayText)
		}
	} else {
		b.WriteString("sources:\n")
		for _, s := range c.sources {
			fmt.Fprintf(&b, "  - name: %s\n    watermark: {column: ts, delay: %q}\n", s.name, s.delayText)
		}
	}
	fmt.Fprintf(&b, "shuffle_partitions: %d\nwatermark_policy: %s\nno_data_batches: %t\n", c.partitions, c.policy, c.noData)
	return b.String()
}

func (c *oCase) stepsJSONL() string {
	var b strings.Builder
	list := func(rows []oRow) string {
		texts := make([]string, len(rows))
		for i, r := range rows {
			texts[i] = r.text
		}
		return "[" + strings.Join(texts, ",") + "]"
	}
	for _, s := range c.steps {
		switch s.kind {
		case stRestart:
			b.WriteString(`{"restart": true}` + "\n")
		case stCrash:
			fmt.Fprintf(&b, `{"crash": %q}`+"\n", s.crash)
		case stRows:
			if len(c.sources) == 1 {
				fmt.Fprintf(&b, `{"rows": %s}`+"\n", list(s.rows[0]))
				continue
			}
			parts := make([]string, len(c.sources))
			for i, src := range c.sources {
				parts[i] = fmt.Sprintf("%q: %s", src.name, list(s.rows[i]))
			}
			fmt.Fprintf(&b, `{"sources": {%s}}`+"\n", strings.Join(parts, ", "))
		}
	}
	return b.String()
}

func (c *oCase) repro(queryYAML, stepsJSONL string) string {
	return "To replay: save the two files below and run\n" +
		"  dedupsim exec --query query.yaml --input steps.jsonl\n" +
		"--- query.yaml ---\n" + queryYAML +
		"--- steps.jsonl ---\n" + stepsJSONL + "---"
}

// ---------------------------------------------------------------------------
// Observations: what both sides are reduced to before comparing.

type oOp struct {
	name                                   string
	total, updated, removed, late, dups    int64
	shufflePartitions, stateStoreInstances int64
}

type oExec struct {
	batchID   int64
	replay    bool
	crashed   string
	rows      []string // raw JSON, sorted
	numInput  int64
	ops       []oOp
	eventTime map[string]string
}

func (e oExec) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch %d", e.batchID)
	if e.replay {
		b.WriteString(" (replay)")
	}
	if e.crashed != "" {
		fmt.Fprintf(&b, " (crashed %s)", e.crashed)
	}
	fmt.Fprintf(&b, ": in=%d out=[%s]", e.numInput, strings.Join(e.rows, " "))
	for _, op := range e.ops {
		fmt.Fprintf(&b, " %s{updated=%d total=%d removed=%d late=%d dups=%d partitions=%d stores=%d}",
			op.name, op.updated, op.total, op.removed, op.late, op.dups, op.shufflePartitions, op.stateStoreInstances)
	}
	if e.eventTime != nil {
		b.WriteString(" eventTime{")
		for i, k := range slices.Sorted(maps.Keys(e.eventTime)) {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s=%s", k, e.eventTime[k])
		}
		b.WriteString("}")
	}
	return b.String()
}

func engineRun(queryYAML, stepsJSONL string) ([]string, error) {
	q, err := query.Parse("query.yaml", []byte(queryYAML))
	if err != nil {
		return nil, err
	}
	st, err := steps.Parse("steps.jsonl", []byte(stepsJSONL), q)
	if err != nil {
		return nil, err
	}
	res, err := trace.Run(q, st, trace.Options{Checkpoint: fsys.NewMem()})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range res.Records {
		e := oExec{batchID: r.BatchID, replay: r.Replay, crashed: r.Crashed, numInput: r.Progress.NumInputRows, rows: []string{}}
		for _, raw := range r.Rows {
			e.rows = append(e.rows, string(raw))
		}
		slices.Sort(e.rows)
		for _, op := range r.Progress.StateOperators {
			e.ops = append(e.ops, oOp{name: op.OperatorName, total: op.NumRowsTotal, updated: op.NumRowsUpdated,
				removed: op.NumRowsRemoved, late: op.NumRowsDroppedByWatermark, dups: op.CustomMetrics["numDroppedDuplicateRows"],
				shufflePartitions: op.NumShufflePartitions, stateStoreInstances: op.NumStateStoreInstances})
		}
		if len(r.Progress.EventTime) > 0 {
			e.eventTime = r.Progress.EventTime
		}
		out = append(out, e.String())
	}
	return out, nil
}

func firstDiff(want, got []string) (int, bool) {
	for i := range max(len(want), len(got)) {
		if i >= len(want) || i >= len(got) || want[i] != got[i] {
			return i, false
		}
	}
	return 0, true
}

func at(list []string, i int) string {
	if i < len(list) {
		return list[i]
	}
	return "(no execution)"
}

func indent(list []string) string {
	var b strings.Builder
	for i, s := range list {
		fmt.Fprintf(&b, "  #%d %s\n", i, s)
	}
	if len(list) == 0 {
		b.WriteString("  (none)\n")
	}
	return b.String()
}

// ---------------------------------------------------------------------------
// The oracle. Written from spark-semantics.md, one global map, no files. The
// durable part of the world (what a checkpoint would keep) and the part a
// run keeps in memory are kept apart so that restarts and crashes are
// explicit.

// oEntry is one remembered key: the event time of the first accepted copy.
type oEntry struct {
	null   bool
	micros int64
}

// oPlanned is a batch as the offset log records it (§8.2): its id, the
// source ranges, the watermark it runs with, and (§1.6) the previous
// batch's watermark for the late filter.
type oPlanned struct {
	id         int64
	start, end []int
	wmMs       int64
	lateWmMs   int64
}

type oracle struct {
	c   *oCase
	cov *oCoverage
	out []string

	// Durable (the checkpoint).
	history  [][]oRow          // per source, everything appended (the "topic")
	state    map[string]oEntry // the dedup state after the last committed batch
	globalMs int64             // global watermark after the last committed batch (§6.3, §9.2)
	batchWm  map[int64]int64   // batchWatermarkMs per planned batch (offsets/N)
	next     int64             // id of the next batch to plan
	consumed []int             // per source, the end offsets of the last committed batch
	pending  *oPlanned         // planned (offsets/N written) but not committed: re-run first (§9.3)

	// In memory, per run.
	nodes     map[int]int64 // per watermark node (source) value (§6.3; forgotten on restart, §6.5)
	ranAny    bool          // a batch executed in this run (§7.4)
	lastEvict int64         // eviction watermark of the last executed batch (§1.7)

	// The driver: a crash step arms the next batch that reaches the point.
	armed string
}

func oracleRun(c *oCase, cov *oCoverage) []string {
	o := &oracle{c: c, cov: cov, state: map[string]oEntry{}, batchWm: map[int64]int64{},
		history: make([][]oRow, len(c.sources)), consumed: make([]int, len(c.sources))}
	o.startRun()
	cov.Cases++
	cov.Steps += len(c.steps)
	for _, s := range c.steps {
		switch s.kind {
		case stRows:
			for i := range c.sources {
				o.history[i] = append(o.history[i], s.rows[i]...)
			}
			o.trigger()
		case stRestart:
			o.startRun()
		case stCrash:
			o.armed = s.crash
		}
	}
	return o.out
}

func (o *oracle) stateful() bool { return o.c.flavour != flBatch }

// startRun is a (re)start on the checkpoint: the durable part stays, the
// in-memory part is new.
func (o *oracle) startRun() {
	o.nodes = map[int]int64{}
	o.ranAny = false
	o.lastEvict = 0
}

// crashHere reports whether the armed crash fires at point p, and disarms it.
func (o *oracle) crashHere(p string) bool {
	if o.armed == p {
		o.armed = ""
		return true
	}
	return false
}

// trigger is AddData + processAllAvailable (§7.1), with a dead driver
// restarted from the checkpoint and the trigger going on.
func (o *oracle) trigger() {
	for {
		if p := o.pending; p != nil {
			// §9.3: the planned batch runs again, same id, offsets and watermarks;
			// offsets/N is not rewritten, so after-offsets-write is not passed.
			o.pending = nil
			o.execute(*p, true)
			continue
		}
		hasData := false
		for i := range o.c.sources {
			if len(o.history[i]) > o.consumed[i] {
				hasData = true
			}
		}
		// §7.1-§7.4 and §1.7: a no-data batch runs when enabled, a batch already
		// ran in this run, the query has a stateful dedup, and the watermark moved
		// past the eviction watermark the operator last ran with.
		noData := o.c.noData && o.ranAny && o.stateful() && o.globalMs > o.lastEvict
		if !hasData && !noData {
			return
		}
		p := oPlanned{id: o.next, start: slices.Clone(o.consumed), end: slices.Clone(o.consumed), wmMs: o.globalMs}
		if hasData {
			for i := range o.c.sources {
				p.end[i] = len(o.history[i])
			}
		}
		if p.id > 0 {
			p.lateWmMs = o.batchWm[p.id-1]
		}
		o.batchWm[p.id] = p.wmMs // offsets/N
		if o.crashHere("after-offsets-write") {
			o.pending = &p
			o.startRun()
			continue
		}
		o.execute(p, false)
	}
}

// execute runs one planned batch; on a crash it restarts the run (the
// caller's loop continues the trigger).
func (o *oracle) execute(p oPlanned, replay bool) {
	c := o.c
	var input []oRow
	type nodeStats struct {
		count int
		maxMs int64
		minMs int64
		avg   float64
	}
	perNode := make([]nodeStats, len(c.sources))
	for i := range c.sources {
		for _, r := range o.history[i][p.start[i]:p.end[i]] {
			input = append(input, r) // union order: sources in query order
			if !c.hasWM {
				continue
			}
			ms := int64(0) // §6.2: a null event time reads as 0
			if !r.null {
				ms = intmath.FloorDiv(r.micros, 1000)
			}
			if perNode[i].count == 0 || ms > perNode[i].maxMs {
				perNode[i].maxMs = ms
			}
			if perNode[i].count == 0 || ms < perNode[i].minMs {
				perNode[i].minMs = ms
			}
			perNode[i].count++
			// Spark's EventTimeStats: a running mean per watermark node.
			perNode[i].avg += (float64(ms) - perNode[i].avg) / float64(perNode[i].count)
		}
	}

	e := oExec{batchID: p.id, replay: replay, numInput: int64(len(input)), rows: []string{}}
	newState := maps.Clone(o.state)
	if c.flavour == flBatch {
		// §5.2: GROUP BY key per micro-batch, first row wins, no state, no late filter.
		seen := map[string]bool{}
		for _, r := range input {
			if !seen[r.id] {
				seen[r.id] = true
				e.rows = append(e.rows, r.text)
			}
		}
	} else {
		op := oOp{name: "dedupe", shufflePartitions: int64(c.partitions), stateStoreInstances: int64(c.partitions)}
		if c.flavour == flWithin {
			op.name = "dedupeWithinWatermark"
		}
		for _, r := range input {
			// §1.5: inclusive, against the previous batch's watermark; a null
			// event time is never late; no watermark, no filter.
			if c.hasWM && !r.null && r.micros <= p.lateWmMs*1000 {
				op.late++
				continue
			}
			key := r.id
			if c.flavour == flKeyTime {
				key += "|" + fmt.Sprint(r.null, r.micros)
			}
			if _, ok := newState[key]; ok {
				op.dups++ // §1.4: state or an earlier copy in the same batch
				continue
			}
			newState[key] = oEntry{null: r.null, micros: r.micros}
			op.updated++
			e.rows = append(e.rows, r.text)
		}
		// §1.4 step 3, §3.2, §4.3: eviction after all input, with this batch's watermark.
		evictMicros := p.wmMs * 1000
		for k, v := range newState {
			var evict bool
			switch c.flavour {
			case flKeyTime:
				evict = !v.null && v.micros <= evictMicros
			case flWithin:
				// §4.2: expiresAt = first copy's time + the delay of the event-time
				// column, which a union takes from its first input. A null time reads
				// as 0 (Spark's getLong on a null field).
				t := v.micros
				if v.null {
					t = 0
				}
				evict = t+c.sources[0].delayMs*1000 <= evictMicros
			}
			if evict {
				delete(newState, k)
				op.removed++
			}
		}
		op.total = int64(len(newState))
		e.ops = []oOp{op}
	}
	slices.Sort(e.rows)
	if c.hasWM {
		// §11.3: the watermark this batch ran with; min/max/avg only with rows.
		e.eventTime = map[string]string{"watermark": fmtMs(p.wmMs)}
		// §11.3 as Spark does it: the first watermark node (source order)
		// that saw rows this batch, not a merge over nodes.
		for _, nd := range perNode {
			if nd.count > 0 {
				e.eventTime["min"] = fmtMs(nd.minMs)
				e.eventTime["max"] = fmtMs(nd.maxMs)
				e.eventTime["avg"] = fmtMs(int64(nd.avg))
				break
			}
		}
	}

	o.probe(e, p, input)
	if o.crashHere("after-state-commit") {
		o.pending = &p
		o.startRun()
		return
	}
	// The sink has the batch.
	if o.crashHere("after-sink-write") {
		e.crashed = "after-sink-write"
		o.out = append(o.out, e.String())
		o.pending = &p
		o.startRun()
		return
	}
	// commits/N: the state version, the consumed offsets and the new watermark
	// become durable (§6.3, §6.4).
	o.state = newState
	o.consumed = p.end
	o.next = p.id + 1
	if c.hasWM {
		var vals []int64
		for i, s := range c.sources {
			if perNode[i].count > 0 {
				cand := perNode[i].maxMs - s.delayMs
				if old, ok := o.nodes[i]; !ok || cand > old {
					o.nodes[i] = cand
				}
			} else if _, ok := o.nodes[i]; !ok {
				o.nodes[i] = 0
			}
			vals = append(vals, o.nodes[i])
		}
		chosen := slices.Min(vals)
		if c.policy == "max" {
			chosen = slices.Max(vals)
		}
		if chosen > o.globalMs {
			o.globalMs = chosen
			o.cov.WatermarkMoves++
		}
	}
	o.ranAny = true
	o.lastEvict = p.wmMs
	if o.crashHere("after-commit") {
		e.crashed = "after-commit"
		o.out = append(o.out, e.String())
		o.startRun()
		return
	}
	o.out = append(o.out, e.String())
}

// probe counts what one execution exercised.
func (o *oracle) probe(e oExec, p oPlanned, input []oRow) {
	cov := o.cov
	cov.Executions++
	if e.replay {
		cov.Replays++
	}
	switch o.armed {
	case "after-sink-write":
		cov.CrashedAfterSink++
	case "after-commit":
		cov.CrashedAfterCommit++
	}
	if len(input) == 0 {
		cov.NoDataBatches++
	}
	for _, op := range e.ops {
		cov.LateDrops += int(op.late)
		cov.Evictions += int(op.removed)
		cov.Duplicates += int(op.dups)
	}
	if len(o.c.sources) > 1 {
		cov.TwoSources++
	}
	for _, r := range input {
		if r.null {
			cov.NullTimes++
		}
	}
}

func fmtMs(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

package expect

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Execution is what one batch execution gave, as exec reports it.
type Execution struct {
	BatchID int64
	// Rows are what the sink received.
	Rows []json.RawMessage
	// The state operators' figures, summed over operators.
	NumDroppedDuplicateRows, NumRowsDroppedByWatermark, NumRowsTotal int64
}

// maxDiffs is how many differences a check reports.
const maxDiffs = 50

// Observer follows a run's executions: it checks each against the
// expectations (nil: none) and, with a recorder, writes each batch id's
// first execution as an expectation line.
type Observer struct {
	keys  []string
	exp   *Expectations
	rec   *bufio.Writer
	diffs []string
	// lines[i] is the expectations file's line diffs[i] is about.
	lines []int
	more  int
	props *props
	// matched counts the executions of each expected batch.
	matched map[int64]int
	// run totals
	executions, out, dups, late, state int64
	emitted                            []string
	lastRec                            int64
	hadRec                             bool
}

// NewObserver checks against exp (nil: nothing to check) and records to
// rec (nil: no recording). keys are the query's dedup keys (none: every
// column).
func NewObserver(keys []string, exp *Expectations, rec io.Writer) *Observer {
	o := &Observer{keys: keys, exp: exp, matched: map[int64]int{}}
	if exp != nil && len(exp.Properties) > 0 {
		o.props = newProps(exp.Properties)
	}
	if rec != nil {
		o.rec = bufio.NewWriter(rec)
		fmt.Fprintln(o.rec, "# dedupsim exec --record: what each batch and the whole run gave (docs/expectations.md)")
	}
	return o
}

func (o *Observer) diff(line int, format string, args ...any) {
	if len(o.diffs) == maxDiffs {
		o.more++
		return
	}
	o.diffs = append(o.diffs, fmt.Sprintf(format, args...))
	o.lines = append(o.lines, line)
}

// NeedsInput says whether ObserveInput must be called: a no-loss property
// needs the rows each execution read.
func (o *Observer) NeedsInput() bool { return o.props.needsInput() }

// ObserveInput takes the rows one execution read (call it after Observe
// for the same execution); dropped[i] marks a row dropped as late or
// filtered before the dedup. Memory: every key read is held until Finish.
func (o *Observer) ObserveInput(rows []json.RawMessage, dropped []bool) error {
	if !o.NeedsInput() {
		return nil
	}
	keys := make([]jsontext.Value, len(rows))
	for i, r := range rows {
		k, err := KeyOf(r, o.keys)
		if err != nil {
			return fmt.Errorf("input row %d: %w", i, err)
		}
		keys[i] = k
	}
	o.props.input(keys, dropped)
	return nil
}

// Observe takes one execution.
func (o *Observer) Observe(x Execution) error {
	keys := make([]jsontext.Value, len(x.Rows))
	for i, r := range x.Rows {
		k, err := KeyOf(r, o.keys)
		if err != nil {
			return fmt.Errorf("batch %d row %d: %w", x.BatchID, i, err)
		}
		keys[i] = k
	}
	o.executions++
	o.out += int64(len(x.Rows))
	o.dups += x.NumDroppedDuplicateRows
	o.late += x.NumRowsDroppedByWatermark
	o.state = x.NumRowsTotal
	if o.exp != nil && o.exp.Run != nil && o.exp.Run.Emitted != nil {
		for _, k := range keys {
			o.emitted = append(o.emitted, string(k))
		}
	}
	if o.exp != nil {
		o.check(x, keys)
	}
	if o.props != nil {
		o.props.observe(x, keys)
	}
	if o.rec != nil && (!o.hadRec || x.BatchID != o.lastRec) {
		o.hadRec, o.lastRec = true, x.BatchID
		return o.record(x, keys)
	}
	return nil
}

func (o *Observer) check(x Execution, keys []jsontext.Value) {
	i, ok := slices.BinarySearchFunc(o.exp.Batches, x.BatchID, func(b Batch, id int64) int { return cmpInt(b.BatchID, id) })
	if !ok {
		return
	}
	b := o.exp.Batches[i]
	o.matched[b.BatchID]++
	where := fmt.Sprintf("batch %d (%s:%d)", b.BatchID, o.exp.File, b.Line)
	if o.matched[b.BatchID] > 1 {
		where = fmt.Sprintf("batch %d, execution %d (%s:%d)", b.BatchID, o.matched[b.BatchID], o.exp.File, b.Line)
	}
	o.counts(b.Line, where, b.Counts, int64(len(x.Rows)), x.NumDroppedDuplicateRows, x.NumRowsDroppedByWatermark, x.NumRowsTotal)
	if b.Emitted != nil {
		o.keysDiff(b.Line, where+": emitted keys", sortedKeys(b.Emitted), sortedKeys(keys))
	}
}

func (o *Observer) counts(line int, where string, c Counts, out, dups, late, state int64) {
	for _, f := range []struct {
		name string
		want *int64
		got  int64
	}{{"numOutputRows", c.NumOutputRows, out}, {"numDroppedDuplicateRows", c.NumDroppedDuplicateRows, dups},
		{"numRowsDroppedByWatermark", c.NumRowsDroppedByWatermark, late}, {"numRowsTotal", c.NumRowsTotal, state}} {
		if f.want != nil && *f.want != f.got {
			o.diff(line, "%s: %s %d, want %d", where, f.name, f.got, *f.want)
		}
	}
}

// keysDiff reports the multiset difference of want and got (both sorted).
func (o *Observer) keysDiff(line int, what string, want, got []string) {
	var missing, extra []string
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || (i < len(want) && want[i] < got[j]):
			missing = append(missing, want[i])
			i++
		case i == len(want) || got[j] < want[i]:
			extra = append(extra, got[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(missing) > 0 {
		o.diff(line, "%s: missing %s", what, list(missing))
	}
	if len(extra) > 0 {
		o.diff(line, "%s: unexpected %s", what, list(extra))
	}
}

func list(s []string) string {
	if len(s) > 10 {
		return strings.Join(s[:10], ", ") + fmt.Sprintf(" and %d more", len(s)-10)
	}
	return strings.Join(s, ", ")
}

func (o *Observer) record(x Execution, keys []jsontext.Value) error {
	ks := sortedKeys(keys)
	fmt.Fprintf(o.rec, `{"batch": %d, "emitted": [%s], "numOutputRows": %d, "numDroppedDuplicateRows": %d, "numRowsDroppedByWatermark": %d, "numRowsTotal": %d}`+"\n",
		x.BatchID, strings.Join(ks, ","), len(x.Rows), x.NumDroppedDuplicateRows, x.NumRowsDroppedByWatermark, x.NumRowsTotal)
	return nil
}

// Finish ends the run with its final table (hasTable false: the sink
// keeps none), writes the run and table lines of a recording, and returns
// the differences from the expectations, one per line (none: met).
func (o *Observer) Finish(table []json.RawMessage, hasTable bool) ([]string, error) {
	if o.exp != nil {
		for _, b := range o.exp.Batches {
			if o.matched[b.BatchID] == 0 {
				o.diff(b.Line, "batch %d (%s:%d): never ran", b.BatchID, o.exp.File, b.Line)
			}
		}
		if r := o.exp.Run; r != nil {
			where := fmt.Sprintf("run (%s:%d)", o.exp.File, r.Line)
			if r.Executions != nil && *r.Executions != o.executions {
				o.diff(r.Line, "%s: executions %d, want %d", where, o.executions, *r.Executions)
			}
			o.counts(r.Line, where, r.Counts, o.out, o.dups, o.late, o.state)
			if r.Emitted != nil {
				slices.Sort(o.emitted)
				o.keysDiff(r.Line, where+": emitted keys", sortedKeys(r.Emitted), o.emitted)
			}
		}
		if o.exp.HasTable {
			where := fmt.Sprintf("table (%s:%d)", o.exp.File, o.exp.TableLine)
			if !hasTable {
				o.diff(o.exp.TableLine, "%s: the query's sink keeps no table", where)
			} else {
				got := make([]jsontext.Value, len(table))
				for i, r := range table {
					got[i] = jsontext.Value(r)
				}
				o.keysDiff(o.exp.TableLine, where+": rows", sortedKeys(o.exp.Table), sortedKeys(compactAll(got)))
			}
		}
		if o.props != nil {
			o.props.finish(o.exp.File, o.keys, table, hasTable, o.diff)
		}
	}
	if o.more > 0 {
		o.diffs = append(o.diffs, fmt.Sprintf("and %d more differences", o.more))
		o.lines = append(o.lines, 0)
	}
	if o.rec != nil {
		fmt.Fprintf(o.rec, `{"run": {"executions": %d, "numOutputRows": %d, "numDroppedDuplicateRows": %d, "numRowsDroppedByWatermark": %d, "numRowsTotal": %d}}`+"\n",
			o.executions, o.out, o.dups, o.late, o.state)
		if hasTable {
			rows := make([]string, len(table))
			for i, r := range table {
				rows[i] = string(r)
			}
			fmt.Fprintf(o.rec, `{"table": [%s]}`+"\n", strings.Join(rows, ","))
		}
		if err := o.rec.Flush(); err != nil {
			return nil, err
		}
	}
	return o.diffs, nil
}

// KeyOf is the dedup key of a row, as an expectations file writes it: the
// value of the one key column, an array of the key columns' values in the
// query's order, or (no keys: every column) the row itself.
func KeyOf(row json.RawMessage, keys []string) (jsontext.Value, error) {
	if len(keys) == 0 {
		return compactAll([]jsontext.Value{jsontext.Value(row)})[0], nil
	}
	var m map[string]jsontext.Value
	if err := jsonv2.Unmarshal(row, &m); err != nil {
		return nil, err
	}
	vals := make([]jsontext.Value, len(keys))
	for i, k := range keys {
		v, ok := m[k]
		if !ok {
			v = jsontext.Value("null")
		}
		vals[i] = v
	}
	compactAll(vals)
	if len(vals) == 1 {
		return vals[0], nil
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(v)
	}
	b.WriteByte(']')
	return jsontext.Value(b.String()), nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Case is one line of the expectations file as a test: what it states and
// the differences found against it (none: it holds).
type Case struct {
	Line  int
	Name  string
	Diffs []string
}

// Cases lists every line of the expectations as a test case, in file
// order, with its differences (call after Finish): what exec --report
// writes as junit.xml and summary.md. Differences past the cap that belong
// to no line are a case of line 0.
func (o *Observer) Cases() []Case {
	if o.exp == nil {
		return nil
	}
	var cs []Case
	for _, b := range o.exp.Batches {
		cs = append(cs, Case{Line: b.Line, Name: fmt.Sprintf("batch %d", b.BatchID)})
	}
	if o.exp.Run != nil {
		cs = append(cs, Case{Line: o.exp.Run.Line, Name: "run"})
	}
	if o.exp.HasTable {
		cs = append(cs, Case{Line: o.exp.TableLine, Name: "table"})
	}
	for _, p := range o.exp.Properties {
		cs = append(cs, Case{Line: p.Line, Name: p.String()})
	}
	slices.SortFunc(cs, func(a, b Case) int { return cmpInt(int64(a.Line), int64(b.Line)) })
	at := map[int]int{}
	for i, c := range cs {
		at[c.Line] = i
	}
	for i, d := range o.diffs {
		j, ok := at[o.lines[i]]
		if !ok {
			cs = append(cs, Case{Line: o.lines[i], Name: "more"})
			j = len(cs) - 1
			at[o.lines[i]] = j
		}
		cs[j].Diffs = append(cs[j].Diffs, d)
	}
	return cs
}

package execpipe

import (
	"errors"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/schema"
	"github.com/dedupsim/dedupsim/engine/steps"
)

// exec checks the whole steps file before its run (passSteps), so that a
// bad line anywhere leaves the checkpoint and --out untouched. Where
// nothing the run writes outlives it unless the run is kept (a temporary
// checkpoint in memory, --out renamed into place at the end, no --check,
// --record or --report), that pass is not needed first: the run reads
// every row anyway, and refuses what the pass would refuse. So the run
// starts at once, on the declared schema or on the one inferred from the
// file's first rows, inferring the schema of every row as it reads them
// (steps.Reader.InferAlong), and is kept only when it ends without an
// error and, for an inferred schema, the schema of every row resolves the
// columns the run reads as the first rows' did (sameRun). Otherwise its
// output is dropped and exec answers as with the pass
// first: the pass's error, or the run on the file's schema. The answer is
// the same either way (an error of the run is found again, or the pass's
// comes first, as it always did); a file whose first rows give its schema
// and that has no bad line skips the pass's decoding of every line.

// canSpeculate reports whether exec's run may go without the pass before
// it (runSpeculative): every output of the run is dropped unseen unless
// it is kept.
func canSpeculate(o Options, q *query.Query) bool {
	if o.CheckpointDir != "" || q.ShufflePartitions > maxMemoryScratchPartitions ||
		o.CheckPath != "" || o.RecordPath != "" || o.ReportDir != "" ||
		o.OutPath == "" || !regularFile(o.InputPath) {
		return false
	}
	// --out must be a file renamed into place at the end (absent or
	// regular), not a device written as the run goes.
	st, err := os.Lstat(o.OutPath)
	return errors.Is(err, os.ErrNotExist) || err == nil && st.Mode().IsRegular()
}

// The schema of a speculative run is inferred from the file's first lines
// (sniff): up to sniffLines lines, stopping once sniffWindow bytes were
// read, and never a line that takes the total past sniffBytes (a file of
// one huge line would be read whole, as the pass reads it). A file whose
// later rows widen a column the run reads drops the run: the run then
// stops at the step where that shows (drift), and exec answers as with
// the pass first, having spent the part of the run before it.
const (
	sniffWindow = 1 << 20
	sniffBytes  = 8 << 20
)

// sniffLines is a variable so that tests can make the run, not the sniff,
// read a small file's later lines.
var sniffLines = 64

// speculation is what became of a speculative run.
type speculation int

const (
	// runKept: the run is exec's answer.
	runKept speculation = iota
	// schemaDiffered: the file's schema is not its first rows'; the run
	// was dropped and run again, after the pass, on the file's.
	schemaDiffered
	// runFailed: the run failed before its output was kept; exec
	// answered as with the pass first.
	runFailed
	// noSniff: no schema could be inferred from the first lines; the pass
	// ran first.
	noSniff
)

// runSpeculative is exec's run without the pass before it (see above):
// q is the query parsed from data, the bytes of the query file. The run
// reads a copy parsed from the same bytes (qs), so that q is the pass's if
// the run is not kept.
func runSpeculative(o Options, q *query.Query, data []byte) (speculation, error) {
	qs, err := query.Parse(o.QueryPath, data)
	if err == nil {
		err = applySparkVersion(qs, o.SparkVersion)
	}
	if err != nil || !sniff(o.InputPath, qs) {
		// The first lines tell nothing: the pass first.
		return noSniff, runChecked(o, q)
	}
	var d *drift
	if qs.SchemaInferred {
		d = newDrift(qs)
	}
	var (
		warnMu sync.Mutex
		warns  []string
	)
	warn := func(s string) {
		warnMu.Lock()
		warns = append(warns, s)
		warnMu.Unlock()
	}
	// keep is asked once every row was read, before --out is committed:
	// the inferrer then holds the schema of every row.
	kept, asked := false, false
	keep := func() bool {
		asked = true
		kept = d == nil || d.along.Schema().Equal(d.sniffed) || sameRun(o, data, qs, d.along)
		return kept
	}
	err = runOn(o, qs, d, warn, keep)
	if kept {
		// The run is exec's answer, a failure to commit --out included.
		for _, w := range warns {
			printWarning(w)
		}
		return runKept, err
	}
	// Not kept: err is the run's failure, or errDropped (execSteps asks
	// keep whenever a run ends without one).
	// The dropped run's checkpoint spilled its large files to unlinked
	// temporary files, closed when the collector finds them unreferenced:
	// collect now rather than hold their disk space through the next run.
	runtime.GC()
	if asked || d != nil && d.grew.Load() {
		return schemaDiffered, runChecked(o, q)
	}
	return runFailed, runChecked(o, q)
}

// sameRun reports whether the run on qs, resolved against the sniffed
// schema, is the run on the query resolved against the schema of every
// row (inf's; data: the query file's bytes): a file whose later rows add
// or widen only columns the run never decodes. The schema decides only
// what the run decodes (docs/exec-format.md): the state key and event-time
// columns, which the engine compares and whose types the checkpoint's key
// schema holds, and a merge sink's match columns; with the same names
// resolved to the same types for each, the run reads the same. A query
// whose keys or match columns are every column needs the same schema.
func sameRun(o Options, data []byte, qs *query.Query, inf *row.Inferrer) bool {
	qf, err := query.Parse(o.QueryPath, data)
	if err == nil {
		err = applySparkVersion(qf, o.SparkVersion)
	}
	if err != nil || steps.SetInferred(o.InputPath, inf, qf) != nil || qf.Schema == nil {
		return false
	}
	ks, kf := qs.StateKeys(), qf.StateKeys()
	ets, etf := qs.EventTimeColumn(), qf.EventTimeColumn()
	ss, sf := qs.SinkSettings(), qf.SinkSettings()
	if !slices.Equal(ks, kf) || ets != etf || !slices.Equal(ss.MatchKeys, sf.MatchKeys) ||
		!sameTypes(ks, ets, qs.Schema, qf.Schema) || !sameTypes(ss.MatchKeys, ets, qs.Schema, qf.Schema) {
		return false
	}
	// Every column read: by an all-columns key, by a merge sink's default
	// match (sink.MergeKey).
	every := len(qs.Keys) == 0 || len(ss.MatchKeys) == 0
	return !every || qs.Schema.Equal(qf.Schema)
}

// sameTypes reports whether the columns (and the event-time column) have
// the same types under schemas a and b, as the typed decoders read them.
func sameTypes(cols []string, eventTime string, a, b *schema.Schema) bool {
	da, err := row.NewTypedDecoder(cols, eventTime, a)
	if err != nil {
		return false
	}
	db, err := row.NewTypedDecoder(cols, eventTime, b)
	return err == nil && da.SameTypes(db)
}

// drift follows the schema of the rows a speculative run has read (its
// inferrer, along) against the sniffed one, on the read-ahead's goroutine,
// and stops the run once it cannot be kept: a column the run decodes
// (reads; nil: every column) widened past its sniffed type, or, when it
// decodes every column, a column the sniffed schema lacks. Only a sniffed
// atomic type other than a string counts: a string column may have been
// sniffed from nulls alone and still end a string. The sniffed lines are
// rows of the file too, so the file's schema covers both; a type past the
// sniffed one stays past it. Any other change is judged at the end
// (sameRun).
type drift struct {
	along   *row.Inferrer
	sniffed *schema.Schema
	reads   map[string]bool
	changes uint64
	// grew is set, for the run's goroutine, when the run was stopped.
	grew atomic.Bool
}

// newDrift follows a run on qs, whose schema was sniffed.
func newDrift(qs *query.Query) *drift {
	d := &drift{along: row.NewInferrer(), sniffed: qs.Schema}
	ss := qs.SinkSettings()
	if len(qs.Keys) > 0 && len(ss.MatchKeys) > 0 {
		d.reads = map[string]bool{qs.EventTimeColumn(): true}
		for _, c := range append(qs.StateKeys(), ss.MatchKeys...) {
			d.reads[c] = true
		}
	}
	return d
}

// gone reports, after a step was read, whether the run is to stop; only
// the read-ahead's goroutine calls it. Cheap: the schema is rebuilt only
// when the inferrer changed it (its first rows, then each widening).
func (d *drift) gone() bool {
	c := d.along.Changes()
	if c == d.changes {
		return false
	}
	d.changes = c
	now := d.along.Schema()
	if now == nil {
		return false
	}
	for _, f := range now.Fields {
		if d.reads != nil && !d.reads[f.Name] {
			continue
		}
		i := d.sniffed.Index(f.Name)
		if i < 0 {
			d.grew.Store(true)
			return true
		}
		switch t := d.sniffed.Fields[i].Type; t.Kind {
		case schema.String, schema.Struct, schema.Array, schema.Map:
		default:
			// The rows read so far may hold a narrower type than the
			// sniffed lines (bigint where those had a double): only one
			// the sniffed type does not cover is a widening.
			if !schema.Merge(t, f.Type).Equal(t) {
				d.grew.Store(true)
				return true
			}
		}
	}
	return false
}

// sniff infers qs's schema from the first lines of the steps file at path
// (the bounds above; qs declares one: nothing to do). It reports false
// when it cannot tell: an error, or no rows within those lines.
func sniff(path string, qs *query.Query) bool {
	if qs.Schema != nil {
		return true
	}
	f, r, err := openStepsReader(path, qs)
	if err != nil {
		return false
	}
	defer f.Close()
	lp, inf := r.LineParser(), row.NewInferrer()
	read := 0
	for n := 0; n < sniffLines && read < sniffWindow; n++ {
		l, err := r.NextLine()
		if err == io.EOF {
			break
		}
		if err != nil || read+len(l.Text) > sniffBytes {
			break
		}
		read += len(l.Text)
		if lp.Infer(l, inf) != nil {
			return false
		}
	}
	if s := inf.Schema(); s == nil || len(s.Fields) == 0 {
		return false
	}
	return steps.SetInferred(path, inf, qs) == nil
}

// errDropped ends a speculative run that is not kept (execSteps' keep).
var errDropped = errors.New("exec: the run on the schema of the first rows was dropped")

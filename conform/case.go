// Package conform checks dedupsim's engine against real Apache Spark: the
// same exec traces (docs/exec-format.md) run through the engine in process
// and through pyspark with conform/sparkrunner/runner.py, compared batch for
// batch. It holds the trace generator, the golden-file extraction, the
// comparison with its list of expected differences, the shrinker and the
// result table; `make test-spark` and `dedupsim conform` are built on it.
// See docs/conformance.md.
package conform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/sparkver"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
)

// Case is one query + steps pair run on both engines.
type Case struct {
	// Name says where the case comes from: "random seed=S #N" or
	// "golden FILE:LINE".
	Name string
	// Query and Steps are the exec files (QUERY.yaml, STEPS.jsonl).
	Query, Steps []byte
	// Checkpoint, when set, names a checkpoint kept across the cases that
	// share it, in order (a golden file's ckpt=NAME): a later case resumes
	// from it, its steps file repeating the source's whole history.
	Checkpoint string
	// followUp is a generated case's second run on its checkpoint (a typed
	// case resumed with its key's type changed); Generate lists it after
	// the n cases.
	followUp *Case
	// prevKeys are the dedup keys, as written, of the case before this one
	// on the same checkpoint (nil for the first): set by Run.
	prevKeys []string

	// engineVersion is the Spark line the engine follows for a case whose
	// query names none: the runner's pyspark (set by Run), so that what
	// differs by line (the state key order of 4.3, the pinned confs) is
	// compared with that line. Zero: the engine's default.
	engineVersion sparkver.Version

	// skip says why the case is not run on Spark (a golden case the runner
	// cannot reproduce); "" runs it.
	skip string

	// Engine and Spark are the outcomes, filled by the runs.
	Engine, Spark *Outcome
}

// Outcome is what one engine did with a case.
type Outcome struct {
	Execs []Exec
	// Err is the error that ended the run (a refused query or a failed
	// run), with Spark's error class when the message carries one.
	Err, ErrClass string
	// BadInput: dedupsim refused the query or steps file (exit status 2 in
	// exec).
	BadInput bool
	// Unsupported says why the runner did not run the case on Spark.
	Unsupported string
	// RunnerFault marks an error of the runner itself, not of Spark.
	RunnerFault bool
	// Version is the Spark version that produced a Spark outcome (as the
	// runner reported it; "" for the engine's), for the expected
	// differences that belong to some Spark lines only.
	Version string
	// Seen lists what the engine's run exercised ("late rows", "evictions",
	// "rows at the watermark", "replays"), for the table.
	Seen []string
	// Raw is the output in the exec format (OUT.jsonl), for repros.
	Raw []byte
	// Table is the sink's final table (table, merge and append sinks), row
	// texts sorted: a multiset; HasTable says there is one. Txn lists the
	// table sink's committed (appId, version) pairs in commit order, what
	// Delta's log holds as txn actions.
	Table    []string
	HasTable bool
	Txn      []sink.Txn
	HasTxn   bool
}

// Exec is one batch execution, reduced to what the comparison reads.
type Exec struct {
	BatchID  int64
	Replay   bool
	Crashed  string
	Rows     []string // raw JSON, sorted: order across partitions is unspecified (§1.8)
	Progress *Prog    // nil for an execution that failed (Spark reports none)
}

// Prog is the compared part of a StreamingQueryProgress.
type Prog struct {
	NumInputRows int64
	EventTime    map[string]string
	Ops          []Op
}

// Op is the compared part of one StateOperatorProgress.
type Op struct {
	Name                                string
	Total, Updated, Removed, Late, Dups int64
	ShufflePartitions, StoreInstances   int64
	// Line are the customMetrics a Spark line adds (engine/sparkver
	// Metrics, spark-semantics §17.7), the ones present of LineMetrics
	// and SnapshotLastUploaded.*.
	Line map[string]int64
}

// LineMetrics are the customMetrics by line Compare compares by value
// (present on one side only is a difference too). The RocksDB provider's
// own (rocksdb*) and the cache and size figures, which differ by design,
// are not compared.
var LineMetrics = []string{"numRowsReadDuringEviction", "numRowsIncrementallyRemoved", "forceSnapshotCount", "numSnapshotsAutoRepaired"}

// SnapshotLastUploaded is the prefix of the providers' instance metric
// (4.1+), compared by name only: Spark's value is the version its
// background maintenance last uploaded, which depends on timing.
const SnapshotLastUploaded = "SnapshotLastUploaded."

func lineMetrics(custom map[string]int64) map[string]int64 {
	var out map[string]int64
	for k, v := range custom {
		if slices.Contains(LineMetrics, k) || strings.HasPrefix(k, SnapshotLastUploaded) {
			if out == nil {
				out = map[string]int64{}
			}
			out[k] = v
		}
	}
	return out
}

func (e *Exec) sortRows() {
	if e.Rows == nil {
		e.Rows = []string{}
	}
	slices.Sort(e.Rows)
}

// String prints an execution on one line, as the golden files do.
func (e Exec) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch %d", e.BatchID)
	if e.Replay {
		b.WriteString(" (replay)")
	}
	if e.Crashed != "" {
		fmt.Fprintf(&b, " (crashed %s)", e.Crashed)
	}
	if e.Progress != nil {
		fmt.Fprintf(&b, ": in=%d", e.Progress.NumInputRows)
	} else {
		b.WriteString(": (no progress)")
	}
	fmt.Fprintf(&b, " out=[%s]", strings.Join(e.Rows, " "))
	if p := e.Progress; p != nil {
		for _, op := range p.Ops {
			fmt.Fprintf(&b, " %s{updated=%d total=%d removed=%d late=%d dups=%d partitions=%d stores=%d}",
				op.Name, op.Updated, op.Total, op.Removed, op.Late, op.Dups, op.ShufflePartitions, op.StoreInstances)
		}
		if len(p.EventTime) > 0 {
			keys := make([]string, 0, len(p.EventTime))
			for k := range p.EventTime {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			b.WriteString(" eventTime{")
			for i, k := range keys {
				if i > 0 {
					b.WriteByte(' ')
				}
				fmt.Fprintf(&b, "%s=%s", k, p.EventTime[k])
			}
			b.WriteByte('}')
		}
	}
	return b.String()
}

// Describe prints an outcome, one execution a line.
func (o *Outcome) Describe() string {
	if o == nil {
		return "  (not run)\n"
	}
	var b strings.Builder
	if o.Unsupported != "" {
		fmt.Fprintf(&b, "  unsupported: %s\n", o.Unsupported)
	}
	for i, e := range o.Execs {
		fmt.Fprintf(&b, "  #%d %s\n", i, e)
	}
	if o.Err != "" {
		fmt.Fprintf(&b, "  error: %s\n", o.Err)
	}
	if len(o.Execs) == 0 && o.Err == "" && o.Unsupported == "" {
		b.WriteString("  (no executions)\n")
	}
	return b.String()
}

// parsed is a case read by dedupsim's parsers.
type parsed struct {
	q  *query.Query
	st []steps.Step
}

func (c *Case) parse() (*parsed, error) {
	q, err := query.Parse("query.yaml", c.Query)
	if err != nil {
		if analysisClass(err) != "" && q != nil {
			// Spark's analysis refuses the query too: the parsed query and
			// steps go to Spark all the same, and the error classes are
			// compared.
			if st, serr := steps.ParseTyped("steps.jsonl", c.Steps, q); serr == nil {
				return &parsed{q: q, st: st}, err
			}
		}
		return nil, err
	}
	if q.SparkVersion.IsZero() && !c.engineVersion.IsZero() {
		if err := q.SetSparkVersion(c.engineVersion); err != nil {
			return nil, err
		}
	}
	st, err := steps.ParseTyped("steps.jsonl", c.Steps, q)
	if err != nil {
		return nil, err
	}
	return &parsed{q: q, st: st}, nil
}

// analysisClass is the Spark error class of a query refusal that Spark's
// analysis makes too (query.Error.Analysis), "" for any other error.
func analysisClass(err error) string {
	var qe *query.Error
	if errors.As(err, &qe) {
		return qe.Analysis
	}
	return ""
}

// sparkFiles is the case in the runner's form.
func (c *Case) sparkFiles() (qj, sj []byte, err error) {
	p, err := c.parse()
	if p == nil {
		return nil, nil, err
	}
	qj, err = SparkQuery(p.q, c.Query)
	if err != nil {
		return nil, nil, err
	}
	return qj, SparkSteps(p.q, p.st), nil
}

// RunEngine runs the case through dedupsim's engine in process, as
// `dedupsim exec` does, on an in-memory checkpoint (kept in ckpts under
// c.Checkpoint when set). The records of a run that fails are kept up to
// the failure.
func RunEngine(c *Case, ckpts map[string]*fsys.Mem) *Outcome {
	out := &Outcome{}
	p, err := c.parse()
	if err != nil {
		out.Err = err.Error()
		if cls := analysisClass(err); cls != "" && p != nil {
			out.ErrClass = cls // refused as Spark's analysis refuses it: compared
		} else {
			out.BadInput = true
		}
		return out
	}
	var fs *fsys.Mem
	if c.Checkpoint != "" {
		if fs = ckpts[c.Checkpoint]; fs == nil {
			fs = fsys.NewMem()
			ckpts[c.Checkpoint] = fs
		}
	} else {
		fs = fsys.NewMem()
	}
	seen := map[string]bool{}
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false)
	res, err := trace.Run(p.q, p.st, trace.Options{Checkpoint: fs, OnBatch: func(r *engine.BatchRecord) {
		e := Exec{BatchID: r.BatchID, Replay: r.Replay, Crashed: string(r.Crashed), Progress: engineProg(r.Progress)}
		rec := trace.Record{BatchID: r.BatchID, Replay: r.Replay, Crashed: string(r.Crashed), Rows: []json.RawMessage{}, Progress: r.Progress}
		for _, o := range r.Output {
			e.Rows = append(e.Rows, string(o.Data))
			rec.Rows = append(rec.Rows, o.Data)
		}
		_ = enc.Encode(&rec)
		e.sortRows()
		out.Execs = append(out.Execs, e)
		probe(p, r, seen)
	}})
	if err != nil {
		out.Err = err.Error()
		out.ErrClass = errorClass(out.Err)
		fmt.Fprintf(&raw, "# error: %s\n", out.Err)
	} else if res.HasTable {
		out.HasTable, out.Table = true, []string{}
		for _, r := range res.Table {
			out.Table = append(out.Table, string(r))
		}
		slices.Sort(out.Table)
		out.Txn, out.HasTxn = res.Txn, res.HasTxn
		_ = trace.NewEncoder(&raw).WriteTable(res) // rows the engine wrote: valid JSON
	}
	out.Raw = raw.Bytes()
	for _, k := range []string{"rows at the watermark", "late rows", "evictions", "replays"} {
		if seen[k] {
			out.Seen = append(out.Seen, k)
		}
	}
	return out
}

// probe notes what one batch execution exercised.
func probe(p *parsed, r *engine.BatchRecord, seen map[string]bool) {
	if r.Replay {
		seen["replays"] = true
	}
	for _, op := range r.Progress.StateOperators {
		if op.NumRowsRemoved > 0 {
			seen["evictions"] = true
		}
		if op.NumRowsDroppedByWatermark > 0 {
			seen["late rows"] = true
		}
	}
	if p.q.EventTimeColumn() == "" || !p.q.Stateful() {
		return
	}
	for _, in := range r.Input {
		if !in.EventTimeNull && in.EventTime == r.LateWatermarkMs*1000 {
			seen["rows at the watermark"] = true
		}
	}
}

func engineProg(p engine.Progress) *Prog {
	// Through JSON, so both engines' progress is read by the same code.
	b, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	var pj progressJSON
	if json.Unmarshal(b, &pj) != nil {
		return nil
	}
	return pj.toProg()
}

// errorClass is the [ERROR_CLASS] a Spark-style message starts with or
// carries, "" for none.
func errorClass(msg string) string {
	i := strings.IndexByte(msg, '[')
	for i >= 0 {
		j := strings.IndexByte(msg[i:], ']')
		if j < 0 {
			return ""
		}
		cls := msg[i+1 : i+j]
		if cls != "" && strings.Trim(cls, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") == "" && strings.ContainsAny(cls[:1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			return cls
		}
		k := strings.IndexByte(msg[i+1:], '[')
		if k < 0 {
			return ""
		}
		i += 1 + k
	}
	return ""
}

package conform

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/internal/atomicfile"
	"github.com/dedupsim/dedupsim/internal/intmath"
	"go.yaml.in/yaml/v3"
)

// The runner's input is the exec query and steps as dedupsim's own parser
// read them (docs/conformance.md, "The runner's input"): the exec files are
// parsed in one place, and the runner only drives Spark.

// sparkQuery is the runner's form of a QUERY.yaml.
type sparkQuery struct {
	API               string        `json:"api"`
	Keys              []string      `json:"keys"`
	Sources           []sparkSource `json:"sources"`
	ShufflePartitions int           `json:"shufflePartitions"`
	WatermarkPolicy   string        `json:"watermarkPolicy"`
	NoDataBatches     bool          `json:"noDataBatches"`
	Sink              string        `json:"sink"`
	StateStore        string        `json:"stateStore"`
	// Schema is the query's `schema:` (a Spark DDL string or a list), passed
	// through as written; absent: the runner infers the schema with Spark's
	// JSON inference over every row of the trace.
	Schema           any    `json:"schema,omitempty"`
	Name             string `json:"name,omitempty"`
	DropFutureEvents bool   `json:"dropFutureEvents,omitempty"`
	// CaseSensitive is spark.sql.caseSensitive for the trace.
	CaseSensitive bool `json:"caseSensitive,omitempty"`
	// The table sinks' settings (docs/conformance.md, "Delta Lake"):
	// sink.keys as written, the merge's lookback, the table sink's
	// txnAppId or a new one at every start.
	SinkKeys      []string `json:"sinkKeys,omitempty"`
	LookbackMs    *int64   `json:"lookbackMs,omitempty"`
	AppID         string   `json:"appId,omitempty"`
	GenerateAppID bool     `json:"generateAppId,omitempty"`
}

type sparkSource struct {
	Name      string          `json:"name"`
	Watermark *sparkWatermark `json:"watermark,omitempty"`
}

type sparkWatermark struct {
	Column  string `json:"column"`
	DelayMs int64  `json:"delayMs"`
}

// sparkStep is one line of the runner's steps: rows as the raw (compacted)
// JSON text of each row, per source name.
type sparkStep struct {
	Rows    map[string][]string `json:"rows,omitempty"`
	Once    bool                `json:"once,omitempty"`
	Tick    bool                `json:"tick,omitempty"`
	Restart bool                `json:"restart,omitempty"`
	Crash   string              `json:"crash,omitempty"`
	Batch   *int64              `json:"batch,omitempty"`
	// NowMs is exec's clock after the line (the largest event time
	// appended so far, in ms): "now" of a merge sink's lookback, given
	// only for such a query.
	NowMs *int64 `json:"nowMs,omitempty"`
}

// SparkQuery returns the runner's form of a parsed query. raw is the
// QUERY.yaml text, read again only for a `schema:` field, which is passed
// through to the runner as written.
func SparkQuery(q *query.Query, raw []byte) ([]byte, error) {
	sq := sparkQuery{
		API: string(q.API), Keys: q.Keys, ShufflePartitions: q.ShufflePartitions,
		WatermarkPolicy: q.WatermarkPolicy, NoDataBatches: q.NoDataBatches, Sink: string(q.Sink.Kind),
		StateStore: q.StateStore, Name: q.Name, DropFutureEvents: q.DropFutureEvents,
	}
	// Spark gets the names as the query wrote them, and resolves them
	// itself.
	if q.KeyNames != nil {
		sq.Keys = q.KeyNames
	}
	if sq.Keys == nil {
		sq.Keys = []string{}
	}
	sq.CaseSensitive = q.CaseSensitive
	sq.SinkKeys = q.Sink.KeyNames
	if sq.SinkKeys == nil {
		sq.SinkKeys = q.Sink.Keys
	}
	if q.Sink.HasLookback {
		lb := q.Sink.LookbackMs
		sq.LookbackMs = &lb
	}
	sq.AppID, sq.GenerateAppID = q.Sink.AppID, q.Sink.GenerateAppID
	for _, s := range q.Sources {
		src := sparkSource{Name: s.Name}
		if s.Watermark != nil {
			col := s.Watermark.Column
			if s.Watermark.Written != "" {
				col = s.Watermark.Written
			}
			src.Watermark = &sparkWatermark{Column: col, DelayMs: s.Watermark.DelayMs}
		}
		sq.Sources = append(sq.Sources, src)
	}
	schema, err := rawSchema(raw)
	if err != nil {
		return nil, err
	}
	sq.Schema = schema
	return json.Marshal(sq)
}

// rawSchema reads the top-level `schema:` of a QUERY.yaml, if any: a DDL
// string, or a list of "name TYPE" strings or {name: TYPE} / {name: N,
// type: T} maps.
func rawSchema(raw []byte) (any, error) {
	var top map[string]yaml.Node
	if err := yaml.Unmarshal(raw, &top); err != nil {
		return nil, err
	}
	n, ok := top["schema"]
	if !ok {
		return nil, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	switch v.(type) {
	case string, []any:
		return v, nil
	}
	return nil, fmt.Errorf("schema: want a DDL string or a list, got %T", v)
}

// SparkSteps returns the runner's form of parsed steps.
func SparkSteps(q *query.Query, st []steps.Step) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	clock := int64(0)
	for _, s := range st {
		var out sparkStep
		switch s.Kind {
		case steps.RowsStep:
			if q.Sink.HasLookback && q.EventTimeColumn() != "" {
				// exec's clock (engine/trace): the largest event time
				// appended so far, floored to the millisecond.
				for _, rows := range s.Rows {
					for _, r := range rows {
						if !r.EventTimeNull {
							clock = max(clock, intmath.FloorDiv(r.EventTime, 1000))
						}
					}
				}
				now := clock
				out.NowMs = &now
			}
			out.Rows = map[string][]string{}
			for _, name := range q.SourceNames() {
				rows, ok := s.Rows[name]
				if !ok {
					continue
				}
				texts := make([]string, len(rows))
				for i, r := range rows {
					texts[i] = string(r.Data)
				}
				out.Rows[name] = texts
			}
			out.Once = s.Once
		case steps.TickStep:
			out.Tick = true
		case steps.RestartStep:
			out.Restart = true
		case steps.CrashStep:
			out.Crash = string(s.Crash)
			if s.CrashBatch >= 0 {
				id := s.CrashBatch
				out.Batch = &id
			}
		}
		_ = enc.Encode(out) // maps of strings and bools: cannot fail
	}
	return b.Bytes()
}

// Spark runs cases through real Spark with conform/sparkrunner/runner.py.
type Spark struct {
	// Python is the interpreter of a venv with pyspark (scripts/spark-env.sh).
	Python string
	// Runner is runner.py's path.
	Runner string
	// Workers is how many traces the runner runs at once (its --workers).
	Workers int
	// Log receives the runner's standard error (Spark's own messages); nil
	// discards it.
	Log io.Writer
	// DeltaJars are Delta Lake's jars, comma-separated (EnsureDelta): the
	// runner then writes the table, merge and append sinks to real Delta
	// tables. NoDelta, when set, is why there are none: the cases with
	// such a sink are skipped with it.
	DeltaJars, NoDelta string
	// Progress, when set, is called after each finished trace.
	Progress func(done int)
	// onStatus sees every status line (the benchmark reads the seconds).
	onStatus func(runnerStatus)
	// Profile sums the runner's per-trace profiles.
	Profile Profile

	mu      sync.Mutex
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	waiters map[string]chan runnerStatus
	done    int
	exited  chan struct{}
	exitErr error
	version string
}

// runnerStatus is one line of the runner's standard output.
type runnerStatus struct {
	Out          string         `json:"out"`
	Status       string         `json:"status"`
	Seconds      float64        `json:"seconds"`
	Error        string         `json:"error"`
	SparkVersion string         `json:"sparkVersion"`
	JVMCPU       float64        `json:"jvmCpuSeconds"`
	Profile      *runnerProfile `json:"profile"`
}

// runnerProfile is where one trace's time went in the runner (wall
// seconds per phase, and Spark's own durationMs summed over its batches).
type runnerProfile struct {
	Setup     float64          `json:"setup"`
	StartStop float64          `json:"startStop"`
	Batches   float64          `json:"batches"`
	Reported  int              `json:"batchesReported"`
	SparkMs   map[string]int64 `json:"sparkDurationMs"`
}

// Profile sums the runner's profiles: where the Spark side's time went.
type Profile struct {
	Traces                    int
	Setup, StartStop, Batches float64 // wall seconds, summed over traces run side by side
	BatchesReported           int
	Planning, AddBatch, Logs  float64 // Spark's queryPlanning, addBatch, walCommit+commitOffsets (s)
	JVMCPU                    float64 // CPU seconds of the JVM over the whole run
}

func (p *Profile) add(st runnerStatus) {
	if st.Status == "done" {
		p.JVMCPU = st.JVMCPU
		return
	}
	pr := st.Profile
	if pr == nil {
		return
	}
	p.Traces++
	p.Setup += pr.Setup
	p.StartStop += pr.StartStop
	p.Batches += pr.Batches
	p.BatchesReported += pr.Reported
	p.Planning += float64(pr.SparkMs["queryPlanning"]) / 1000
	p.AddBatch += float64(pr.SparkMs["addBatch"]) / 1000
	p.Logs += float64(pr.SparkMs["walCommit"]+pr.SparkMs["commitOffsets"]) / 1000
}

// String is the profile on one line.
func (p Profile) String() string {
	return fmt.Sprintf("%d traces, %d batches reported; wall seconds summed over the traces: setup %.0f, query start/stop %.0f, "+
		"batches %.0f (Spark: planning %.0f, addBatch %.0f, offset and commit logs %.0f); JVM CPU %.0f s",
		p.Traces, p.BatchesReported, p.Setup, p.StartStop, p.Batches, p.Planning, p.AddBatch, p.Logs, p.JVMCPU)
}

// request is one line of the runner's input; a group runs in order on one
// worker (the cases that share a checkpoint).
type request struct {
	Query      string    `json:"query,omitempty"`
	Steps      string    `json:"steps,omitempty"`
	Out        string    `json:"out,omitempty"`
	Checkpoint string    `json:"checkpoint,omitempty"`
	Group      []request `json:"group,omitempty"`
}

// Start launches the runner process; it serves requests until Close.
func (s *Spark) Start(ctx context.Context) error {
	workers := s.Workers
	if workers < 1 {
		workers = 2
	}
	args := []string{s.Runner, "--workers", fmt.Sprint(workers)}
	if s.DeltaJars != "" {
		args = append(args, "--delta-jars", s.DeltaJars)
	}
	cmd := exec.CommandContext(ctx, s.Python, args...)
	ownGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if s.Log != nil {
		cmd.Stderr = s.Log
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the Spark runner (%s %s): %w", s.Python, s.Runner, err)
	}
	s.cmd, s.stdin, s.waiters, s.exited = cmd, stdin, map[string]chan runnerStatus{}, make(chan struct{})
	started := make(chan runnerStatus, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		first := true
		for sc.Scan() {
			var st runnerStatus
			if json.Unmarshal(sc.Bytes(), &st) != nil {
				continue
			}
			if first && st.Status == "started" {
				first = false
				started <- st
				continue
			}
			if s.onStatus != nil {
				s.onStatus(st)
			}
			s.mu.Lock()
			s.Profile.add(st)
			s.mu.Unlock()
			if st.Status == "done" {
				continue
			}
			s.mu.Lock()
			ch := s.waiters[st.Out]
			delete(s.waiters, st.Out)
			s.done++
			done := s.done
			s.mu.Unlock()
			if s.Progress != nil {
				s.Progress(done)
			}
			if ch != nil {
				ch <- st
			}
		}
		s.exitErr = cmd.Wait()
		close(s.exited)
	}()
	select {
	case st := <-started:
		s.version = st.SparkVersion
		return nil
	case <-s.exited:
		return fmt.Errorf("the Spark runner exited before it started: %v", s.exitErr)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Version is the Spark version the runner reported.
func (s *Spark) Version() string { return s.version }

// Close ends the runner's input and waits for it to exit.
func (s *Spark) Close() error {
	if s.cmd == nil {
		return nil
	}
	s.stdin.Close()
	<-s.exited
	s.cmd = nil
	return s.exitErr
}

// Run runs the cases on Spark, writing their files under dir, and sets each
// case's Spark outcome. Cases that share a checkpoint run in their order.
func (s *Spark) Run(ctx context.Context, dir string, cases []*Case) error {
	type pending struct {
		c   *Case
		out string
		ch  chan runnerStatus
	}
	var all []pending
	groups := map[string]int{}
	var reqs []request
	for i, c := range cases {
		if c.Engine != nil && c.Engine.BadInput {
			c.Spark = &Outcome{Unsupported: "the engine refuses this query or steps file as bad input: nothing to compare"}
			continue
		}
		if c.skip != "" {
			c.Spark = &Outcome{Unsupported: c.skip}
			continue
		}
		if s.NoDelta != "" && c.needsDelta() {
			c.Spark = &Outcome{Unsupported: s.NoDelta}
			continue
		}
		cdir := filepath.Join(dir, fmt.Sprintf("%04d", i))
		if err := os.MkdirAll(cdir, 0o755); err != nil {
			return err
		}
		qj, sj, err := c.sparkFiles()
		if err != nil {
			c.Spark = &Outcome{Unsupported: "cannot be given to the runner: " + err.Error()}
			continue
		}
		r := request{Query: filepath.Join(cdir, "spark-query.json"), Steps: filepath.Join(cdir, "spark-steps.jsonl"), Out: filepath.Join(cdir, "spark-out.jsonl")}
		if err := atomicfile.WriteFile(r.Query, qj); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(r.Steps, sj); err != nil {
			return err
		}
		os.Remove(r.Out)
		p := pending{c: c, out: r.Out, ch: make(chan runnerStatus, 1)}
		s.mu.Lock()
		s.waiters[r.Out] = p.ch
		s.mu.Unlock()
		all = append(all, p)
		if c.Checkpoint != "" {
			r.Checkpoint = filepath.Join(dir, "checkpoints", sanitize(c.Checkpoint))
			if g, ok := groups[c.Checkpoint]; ok {
				reqs[g].Group = append(reqs[g].Group, r)
				continue
			}
			groups[c.Checkpoint] = len(reqs)
			os.RemoveAll(r.Checkpoint)
			reqs = append(reqs, request{Group: []request{r}})
			continue
		}
		reqs = append(reqs, r)
	}
	if err := s.send(reqs); err != nil {
		return err
	}
	for _, p := range all {
		select {
		case st := <-p.ch:
			out, err := readSparkOut(p.out)
			if err != nil {
				out = &Outcome{Err: fmt.Sprintf("runner: %v (status %s %s)", err, st.Status, st.Error), RunnerFault: true}
			}
			if st.Status == "error" && st.Error != "" && out.Err == "" {
				out.Err, out.RunnerFault = st.Error, true
			}
			out.Version = s.version
			p.c.Spark = out
		case <-s.exited:
			return fmt.Errorf("the Spark runner exited early: %v", s.exitErr)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// send writes requests to the runner's standard input, one a line.
func (s *Spark) send(reqs []request) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range reqs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	if _, err := s.stdin.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("send requests to the Spark runner: %w", err)
	}
	return nil
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// sparkRecord is one line of the runner's output: a batch execution in the
// exec output format, or the trace's unsupported/error line.
type sparkRecord struct {
	BatchID     *int64            `json:"batchId"`
	Replay      bool              `json:"replay"`
	Crashed     string            `json:"crashed"`
	Rows        []json.RawMessage `json:"rows"`
	Progress    *progressJSON     `json:"progress"`
	Unsupported *string           `json:"unsupported"`
	Error       *string           `json:"error"`
	ErrorClass  string            `json:"errorClass"`
	// The final {"table": [...], "txn": [...]} line of a table sink.
	Table *[]json.RawMessage `json:"table"`
	Txn   *[]sink.Txn        `json:"txn"`
}

// progressJSON is the part of StreamingQueryProgress the comparison reads.
type progressJSON struct {
	BatchID        int64             `json:"batchId"`
	NumInputRows   int64             `json:"numInputRows"`
	EventTime      map[string]string `json:"eventTime"`
	StateOperators []struct {
		OperatorName              string           `json:"operatorName"`
		NumRowsTotal              int64            `json:"numRowsTotal"`
		NumRowsUpdated            int64            `json:"numRowsUpdated"`
		NumRowsRemoved            int64            `json:"numRowsRemoved"`
		NumRowsDroppedByWatermark int64            `json:"numRowsDroppedByWatermark"`
		NumShufflePartitions      int64            `json:"numShufflePartitions"`
		NumStateStoreInstances    int64            `json:"numStateStoreInstances"`
		CustomMetrics             map[string]int64 `json:"customMetrics"`
	} `json:"stateOperators"`
}

func (p *progressJSON) toProg() *Prog {
	if p == nil {
		return nil
	}
	out := &Prog{NumInputRows: p.NumInputRows, EventTime: p.EventTime}
	for _, op := range p.StateOperators {
		out.Ops = append(out.Ops, Op{Name: op.OperatorName, Total: op.NumRowsTotal, Updated: op.NumRowsUpdated,
			Removed: op.NumRowsRemoved, Late: op.NumRowsDroppedByWatermark, Dups: op.CustomMetrics["numDroppedDuplicateRows"],
			ShufflePartitions: op.NumShufflePartitions, StoreInstances: op.NumStateStoreInstances,
			Line: lineMetrics(op.CustomMetrics)})
	}
	return out
}

// ReadOutcome reads an exec output file (OUT.jsonl) written by the Spark
// runner or by `dedupsim exec`.
func ReadOutcome(path string) (*Outcome, error) { return readSparkOut(path) }

func readSparkOut(path string) (*Outcome, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Raw: data}
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r sparkRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, i+1, err)
		}
		switch {
		case r.Unsupported != nil:
			out.Unsupported = *r.Unsupported
		case r.Error != nil:
			out.Err, out.ErrClass = *r.Error, r.ErrorClass
			if strings.HasPrefix(out.Err, "bad input:") {
				out.RunnerFault = true
			}
		case r.BatchID != nil:
			e := Exec{BatchID: *r.BatchID, Replay: r.Replay, Crashed: r.Crashed, Progress: r.Progress.toProg()}
			for _, row := range r.Rows {
				e.Rows = append(e.Rows, string(row))
			}
			e.sortRows()
			out.Execs = append(out.Execs, e)
		case r.Table != nil:
			out.HasTable = true
			out.Table = []string{}
			for _, row := range *r.Table {
				out.Table = append(out.Table, string(row))
			}
			slices.Sort(out.Table)
			if r.Txn != nil {
				out.Txn, out.HasTxn = *r.Txn, true
			}
		default:
			return nil, fmt.Errorf("%s:%d: not a batch, unsupported or error record", path, i+1)
		}
	}
	return out, nil
}

// Package history is the record of one simulated (or live) run: every copy
// a producer appended, every batch execution with the fate of each row it
// read, every crash and restart, every sink write. It is plain data, saved
// as JSON, so that a run can be re-checked later when the checker improves
// (Jepsen's record-then-check).
package history

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dedupsim/dedupsim/faults"
)

// Version of the file format.
const Version = 1

// History is one run.
type History struct {
	Version int    `json:"version"`
	Seed    uint64 `json:"seed"`
	// Query is the query YAML the run used (the final one when the shape
	// changed mid-run; see Phases).
	Query string `json:"query"`
	// API, key columns, delay and sink kind, for the checker.
	API        string   `json:"api"`
	Keys       []string `json:"keys"`
	DelayMs    int64    `json:"delayMs"` // -1: no watermark
	Partitions int      `json:"partitions"`
	SinkKind   string   `json:"sinkKind"`
	// EventTimeInKey: dropDuplicates whose key holds the event time.
	EventTimeInKey bool `json:"eventTimeInKey"`
	// Phases: the fault phase ends at HealAtMs; the run ends at EndMs.
	HealAtMs int64 `json:"healAtMs"`
	EndMs    int64 `json:"endMs"`
	// ArrivalRatePerSec is the configured mean arrival rate of logical
	// events over all sources (for the state bound).
	ArrivalRatePerSec float64 `json:"arrivalRatePerSec"`

	Copies   []Copy         `json:"copies"`
	Batches  []Batch        `json:"batches"`
	Crashes  []Crash        `json:"crashes"`
	Restarts []Restart      `json:"restarts"`
	Writes   []SinkWrite    `json:"sinkWrites"`
	Table    []int32        `json:"table"` // final sink table content as copy indices (table/merge/append sinks)
	HasTable bool           `json:"hasTable"`
	Faults   []string       `json:"faultsEnabled"`
	Coverage map[string]int `json:"coverage"` // fault name -> times it fired
	// FaultKnobs are the knob values of the enabled faults, as a fault plan
	// writes them (drawn ones included in swarm mode), so that a run can be
	// replayed as an explicit plan.
	FaultKnobs map[string]map[string]any `json:"faultKnobs,omitempty"`
	// InitialQuery is the query YAML the run started with, set only when a
	// query-shape-change replaced it (Query is then the final one).
	InitialQuery string `json:"initialQuery,omitempty"`
	// Live describes a run against Kafka; absent for a simulated run.
	Live *Live `json:"live,omitempty"`
}

// Live is what a run against Kafka did beyond the history proper: where
// it ran and how often the engine process and the broker were killed.
type Live struct {
	// Cluster is kfake, local, external or testcontainers; Engine is
	// process (a child process killed with SIGKILL) or inproc.
	Cluster string `json:"cluster"`
	Engine  string `json:"engine"`
	// TriggerMs is the real time one trigger interval took (the timeline's
	// scale); 0 for inproc, which steps simulated time.
	TriggerMs float64 `json:"triggerMs,omitempty"`
	// EngineProcesses started; kills at armed crash points and at random
	// moments; exits with an error (restarted like a crash).
	EngineProcesses int `json:"engineProcesses"`
	KilledAtPoints  int `json:"killedAtCrashPoints"`
	KilledAtRandom  int `json:"killedAtRandom"`
	FailedExits     int `json:"failedExits"`
	BrokerRestarts  int `json:"brokerRestarts"`
	// DroppedAcks are duplicate appends made by a produce ack lost after
	// the broker wrote the batch (kfake drops it; against a real broker,
	// live/faultproxy).
	DroppedAcks int `json:"droppedAcks"`
	// InferredWrites are sink writes of killed executions found committed
	// by their replay (see live.RunProcess).
	InferredWrites int `json:"inferredWrites"`
	// Dir keeps the engine's checkpoint, table, records and logs.
	Dir string `json:"dir,omitempty"`
}

// Copy is one record a producer appended to the log.
//
// A run holds one per copy (20 M for the simulator's default max_copies),
// so its fields are laid out for size, 56 bytes: the 64-bit fields first,
// 32-bit counters (a history numbers copies in 32 bits, see Validate), the
// fault a byte. The JSON keeps the field order of the tags below
// (MarshalJSON writes them in that order).
type Copy struct {
	Offset int64 `json:"offset"`
	// EventTimeUs is the event-time column in microseconds.
	EventTimeUs int64 `json:"eventTimeUs"`
	// AppendedAtMs is the processing time the log received it.
	AppendedAtMs int64 `json:"appendedAtMs"`
	// Event is the logical event id: copies of one event share it, and it
	// is the value of the dedup key column "id".
	Event string `json:"event"`
	// CopyNo is 0 for the original send, 1.. for retries and duplicate
	// appends.
	CopyNo    int32 `json:"copy"`
	Source    int32 `json:"source"`
	Partition int32 `json:"partition"`
	// Fault names the fault that produced this copy (NoFault, "" in JSON,
	// for an original).
	Fault Fault `json:"fault,omitzero"`
}

// Outcome of a row in a batch execution: a byte, as a run holds one per
// row read (a string was 16 bytes a row); in JSON its name. The zero value
// is no outcome (refused by Validate), so that a row whose fate was never
// set is not taken for one.
type Outcome uint8

const (
	Emitted Outcome = iota + 1
	Duplicate
	Late
	// Filtered: dropped before the watermark by the query's
	// drop_future_events filter (event time too far ahead of processing
	// time); not counted as late.
	Filtered
)

// outcomeNames are the outcomes' names, by value.
var outcomeNames = [...]string{Emitted: "emitted", Duplicate: "duplicate", Late: "late", Filtered: "filtered"}

// Valid: o is one of the outcomes.
func (o Outcome) Valid() bool { return o >= Emitted && int(o) < len(outcomeNames) }

// String is the outcome's name as history.json spells it.
func (o Outcome) String() string {
	if o.Valid() {
		return outcomeNames[o]
	}
	return "outcome#" + strconv.Itoa(int(o))
}

// OutcomeOf is the outcome named name.
func OutcomeOf(name string) (Outcome, bool) {
	for o := Emitted; int(o) < len(outcomeNames); o++ {
		if outcomeNames[o] == name {
			return o, true
		}
	}
	return 0, false
}

// MarshalJSON writes the outcome's name.
func (o Outcome) MarshalJSON() ([]byte, error) {
	if !o.Valid() {
		return nil, fmt.Errorf("outcome %d is none of %s", o, strings.Join(OutcomeNames, ", "))
	}
	return []byte(`"` + outcomeNames[o] + `"`), nil // plain ASCII names
}

// UnmarshalJSON reads an outcome's name, refusing any other (for
// encoding/json; Read decodes with UnmarshalJSONFrom).
func (o *Outcome) UnmarshalJSON(b []byte) error {
	v, err := outcomeFrom(b)
	*o = v
	return err
}

// UnmarshalJSONFrom reads an outcome's name from the decoder's buffer,
// without a reflective decode per row.
func (o *Outcome) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	raw, err := d.ReadValue()
	if err != nil {
		return err
	}
	v, err := outcomeFrom(raw)
	*o = v
	return err
}

// quotedOutcomes are the outcomes' names as JSON strings, by value.
var quotedOutcomes = quoted(outcomeNames[:])

func outcomeFrom(raw []byte) (Outcome, error) {
	for o := Emitted; int(o) < len(quotedOutcomes); o++ {
		if string(raw) == quotedOutcomes[o] {
			return o, nil
		}
	}
	name, err := nameOf(raw, "an outcome", `"emitted"`)
	if err != nil {
		return 0, err
	}
	if v, ok := OutcomeOf(name); ok { // written with escapes
		return v, nil
	}
	return 0, fmt.Errorf("%s", notOneOf(name, OutcomeNames))
}

// quoted is names as JSON strings.
func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		b, _ := jsontext.AppendQuote(nil, n)
		out[i] = string(b)
	}
	return out
}

// nameOf is the string raw holds, or an error saying that what, a name
// such as example, is a string.
func nameOf(raw []byte, what, example string) (string, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("%s is a name in quotes such as %s, not %s", what, example, raw)
	}
	name, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(name) {
		return "", fmt.Errorf("not valid UTF-8")
	}
	return string(name), nil
}

// Outcomes are a batch execution's outcomes, one per row read. In JSON
// an array of names, written without reflection per row.
type Outcomes []Outcome

// MarshalJSON writes the names as encoding/json writes a []string of them
// (null for nil).
func (os Outcomes) MarshalJSON() ([]byte, error) {
	if os == nil {
		return []byte("null"), nil
	}
	b := make([]byte, 0, 2+len(os)*11)
	b = append(b, '[')
	for i, o := range os {
		if !o.Valid() {
			return nil, fmt.Errorf("outcomes[%d]: outcome %d is none of %s", i, o, strings.Join(OutcomeNames, ", "))
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, outcomeNames[o]...)
		b = append(b, '"')
	}
	return append(b, ']'), nil
}

// Batch is one execution of one batch.
type Batch struct {
	BatchID int64  `json:"batchId"`
	AtMs    int64  `json:"atMs"` // processing time
	Replay  bool   `json:"replay,omitempty"`
	Crashed string `json:"crashed,omitempty"` // crash point at or after the sink write
	// Input lists the copies read (indices into Copies) in union order;
	// Outcomes[i] is the fate of Input[i].
	Input    []int32  `json:"input"`
	Outcomes Outcomes `json:"outcomes"`
	// Watermarks in ms: late filter, eviction, and the value after.
	LateWatermarkMs int64 `json:"lateWatermarkMs"`
	WatermarkMs     int64 `json:"watermarkMs"`
	NextWatermarkMs int64 `json:"nextWatermarkMs"`
	// MaxEventTimeMs over the input (0 when empty).
	MaxEventTimeMs int64 `json:"maxEventTimeMs"`
	// State figures from the progress record (zero for batch dedup).
	NumRowsTotal   int64 `json:"numRowsTotal"`
	NumRowsUpdated int64 `json:"numRowsUpdated"`
	NumRowsRemoved int64 `json:"numRowsRemoved"`
	// Progress is the Spark-shaped progress record, kept verbatim.
	Progress json.RawMessage `json:"progress,omitempty"`
}

// Crash is a driver death.
type Crash struct {
	AtMs    int64  `json:"atMs"`
	Point   string `json:"point"` // a crash point, or "random" (a filesystem operation failed mid-batch)
	BatchID int64  `json:"batchId"`
	// LostFiles are checkpoint files whose unsynced content the crash lost.
	LostFiles []string `json:"lostFiles,omitempty"`
	// TornFile is the checkpoint file a power loss left with a prefix of its
	// last unsynced write (torn-write).
	TornFile string `json:"tornFile,omitempty"`
}

// Restart is a driver start after a crash, a clean stop or a shape change.
type Restart struct {
	AtMs int64 `json:"atMs"`
	// FreshCheckpoint: the query started on an empty checkpoint (shape change).
	FreshCheckpoint bool   `json:"freshCheckpoint,omitempty"`
	Query           string `json:"query,omitempty"` // the new query YAML when it changed
}

// SinkWrite is one delivery to the sink and what the sink kept of it.
type SinkWrite struct {
	BatchID int64   `json:"batchId"`
	AtMs    int64   `json:"atMs"`
	Rows    []int32 `json:"rows"` // copies delivered
	// Kept is how many of Rows the sink added to its table (table: 0 when
	// the (app id, version) was already committed; merge: the unmatched rows).
	Kept int `json:"kept"`
}

// Fault is the fault that produced a copy, a byte: NoFault, or a fault of
// the catalogue (faults.Names) by position. In JSON it is the fault's name
// ("" for NoFault, omitted).
type Fault uint8

// NoFault marks an original send.
const NoFault Fault = 0

// faultNames are the names by Fault value: "" then the catalogue's.
var faultNames = append([]string{""}, faults.Names()...)

func init() {
	if len(faultNames) > 256 {
		panic(fmt.Sprintf("history: %d faults do not fit a byte", len(faultNames)-1))
	}
}

// FaultOf is the Fault named name ("" is NoFault); false for a name that
// is no fault of the catalogue.
func FaultOf(name string) (Fault, bool) {
	for i, n := range faultNames {
		if n == name {
			return Fault(i), true
		}
	}
	return NoFault, false
}

// MustFault is FaultOf for a name known to be in the catalogue.
func MustFault(name string) Fault {
	f, ok := FaultOf(name)
	if !ok {
		panic("history: no fault " + strconv.Quote(name))
	}
	return f
}

// String is the fault's name, "" for NoFault.
func (f Fault) String() string {
	if int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "fault#" + strconv.Itoa(int(f))
}

// MarshalJSON writes the fault's name.
func (f Fault) MarshalJSON() ([]byte, error) {
	if int(f) >= len(faultNames) {
		return nil, fmt.Errorf("fault %d is not in the catalogue of %d", f, len(faultNames)-1)
	}
	return json.Marshal(faultNames[f])
}

// UnmarshalJSON reads a fault's name, refusing one that is not in the
// catalogue (for encoding/json; Read decodes with UnmarshalJSONFrom).
func (f *Fault) UnmarshalJSON(b []byte) error {
	v, err := faultFrom(b)
	*f = v
	return err
}

// UnmarshalJSONFrom reads a fault's name from the decoder's buffer.
func (f *Fault) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	raw, err := d.ReadValue()
	if err != nil {
		return err
	}
	v, err := faultFrom(raw)
	*f = v
	return err
}

// quotedFaults are the faults' names as JSON strings, by value.
var quotedFaults = quoted(faultNames)

func faultFrom(raw []byte) (Fault, error) {
	for i, q := range quotedFaults {
		if string(raw) == q {
			return Fault(i), nil
		}
	}
	name, err := nameOf(raw, "a fault", `"producer-retry"`)
	if err != nil {
		return NoFault, err
	}
	if v, ok := FaultOf(name); ok { // written with escapes
		return v, nil
	}
	return NoFault, fmt.Errorf("%s", notOneOf(name, faultNames[1:]))
}

// MarshalJSON writes a copy as encoding/json writes its fields in the
// order of Copy's JSON tags before the layout changed: event, copy,
// source, partition, offset, eventTimeUs, appendedAtMs, fault (omitted for
// NoFault). The history file keeps its bytes (TestWriteKeepsOldBytes).
func (c Copy) MarshalJSON() ([]byte, error) { return c.appendJSON(make([]byte, 0, 128)) }

// appendJSON appends the copy's JSON to b (Write streams the copies
// through one buffer with it: no allocation per copy).
func (c *Copy) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"event":`...)
	if plain(c.Event) {
		b = append(b, '"')
		b = append(b, c.Event...)
		b = append(b, '"')
	} else {
		ev, err := json.Marshal(c.Event) // encoding/json's escapes: HTML characters, invalid UTF-8
		if err != nil {
			return nil, err
		}
		b = append(b, ev...)
	}
	b = append(b, `,"copy":`...)
	b = strconv.AppendInt(b, int64(c.CopyNo), 10)
	b = append(b, `,"source":`...)
	b = strconv.AppendInt(b, int64(c.Source), 10)
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(c.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, c.Offset, 10)
	b = append(b, `,"eventTimeUs":`...)
	b = strconv.AppendInt(b, c.EventTimeUs, 10)
	b = append(b, `,"appendedAtMs":`...)
	b = strconv.AppendInt(b, c.AppendedAtMs, 10)
	if c.Fault != NoFault {
		if int(c.Fault) >= len(quotedFaults) {
			return nil, fmt.Errorf("fault %d is not in the catalogue of %d", c.Fault, len(faultNames)-1)
		}
		b = append(b, `,"fault":`...)
		b = append(b, quotedFaults[c.Fault]...)
	}
	return append(b, '}'), nil
}

// plain: s is printable ASCII that encoding/json writes as it is (no
// quote, backslash or HTML character to escape).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// Package expect states what a `dedupsim exec` run must produce and
// compares a run with it: per batch, the keys the sink received and
// Spark's counts (numOutputRows, numDroppedDuplicateRows,
// numRowsDroppedByWatermark, numRowsTotal); for the whole run, their sums
// (numRowsTotal: the state at the end) and the final table. With it a
// captured incident (capture --as-steps) is a regression test in one file
// pair: exec --record writes today's outcome, exec --check holds later
// runs to it (docs/expectations.md).
package expect

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/dedupsim/dedupsim/internal/lines"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Counts are Spark's figures for a batch or a run; nil is not checked.
type Counts struct {
	NumOutputRows             *int64 `json:"numOutputRows,omitempty"`
	NumDroppedDuplicateRows   *int64 `json:"numDroppedDuplicateRows,omitempty"`
	NumRowsDroppedByWatermark *int64 `json:"numRowsDroppedByWatermark,omitempty"`
	NumRowsTotal              *int64 `json:"numRowsTotal,omitempty"`
}

// Batch is what every execution of one batch id (replays included) must
// give.
type Batch struct {
	Line    int `json:"-"`
	BatchID int64
	// Emitted are the dedup keys of the rows the sink received, in any
	// order; nil is not checked.
	Emitted []jsontext.Value
	Counts
}

// Run is what the whole run must give: the counts summed over every
// execution (numRowsTotal: after the last), the number of executions, and
// the keys of every row the sink received.
type Run struct {
	Line       int `json:"-"`
	Executions *int64
	Emitted    []jsontext.Value
	Counts
}

// Expectations is one expectations file.
type Expectations struct {
	File    string
	Batches []Batch // batch ids strictly increasing
	Run     *Run
	// Table is the final table's rows, in any order; HasTable says it is
	// checked.
	Table     []jsontext.Value
	TableLine int
	HasTable  bool
	// Properties hold whatever the exact figures are (property.go).
	Properties []Property
}

// MaxLineBytes caps a line of an expectations file.
const MaxLineBytes = 256 << 20

// Error is a bad expectations file: file:line: what.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// line is one line of the file: exactly one of batch, run, table, or a
// property (unique, no-loss, max-state-keys, late-rows).
type line struct {
	Batch   *int64           `json:"batch,omitempty"`
	Emitted []jsontext.Value `json:"emitted,omitempty"`
	Counts
	Run   *runLine         `json:"run,omitempty"`
	Table []jsontext.Value `json:"table,omitempty"`
	propertyLine
}

type runLine struct {
	Executions *int64           `json:"executions,omitempty"`
	Emitted    []jsontext.Value `json:"emitted,omitempty"`
	Counts
}

// ParseFile reads an expectations file.
func ParseFile(path string) (*Expectations, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(path, f)
}

// Parse reads an expectations file: JSON Lines, blank lines and # comments
// skipped, every field known, none repeated, UTF-8.
func Parse(name string, r io.Reader) (*Expectations, error) {
	e := &Expectations{File: name}
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		text, err := readLine(br)
		if err == io.EOF {
			return e, nil
		}
		if err != nil {
			return nil, &Error{name, n, err.Error()}
		}
		text = bytes.TrimSpace(text)
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		if err := e.add(n, text); err != nil {
			return nil, &Error{name, n, err.Error()}
		}
	}
}

func (e *Expectations) add(n int, text []byte) error {
	var l line
	var raw map[string]jsontext.Value
	if err := jsonv2.Unmarshal(text, &raw, jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false)); err != nil {
		return fmt.Errorf("want a JSON object: %v", err)
	}
	if err := jsonv2.Unmarshal(text, &l, jsonv2.RejectUnknownMembers(true), jsontext.AllowDuplicateNames(false)); err != nil {
		return fmt.Errorf("%v (a line is {\"batch\": N, ...}, {\"run\": {...}}, {\"table\": [ROW, ...]}, {\"unique\": [COLUMN, ...]}, {\"no-loss\": true}, {\"max-state-keys\": N} or {\"late-rows\": \"<= N\"})", err)
	}
	_, hasTable := raw["table"]
	_, hasUnique := raw["unique"]
	kinds := 0
	for _, k := range []bool{l.Batch != nil, l.Run != nil, hasTable, hasUnique, l.NoLoss != nil, l.MaxStateKeys != nil, l.LateRows != nil} {
		if k {
			kinds++
		}
	}
	if kinds != 1 {
		return errors.New(`want exactly one of "batch", "run", "table" or a property ("unique", "no-loss", "max-state-keys", "late-rows") on a line`)
	}
	if (l.Batch == nil) && (l.Emitted != nil || l.Counts != (Counts{})) {
		return errors.New(`"emitted" and the counts belong to a batch line, or inside "run"`)
	}
	if hasUnique || l.NoLoss != nil || l.MaxStateKeys != nil || l.LateRows != nil {
		p, err := l.propertyLine.property(n, hasUnique)
		if err != nil {
			return err
		}
		e.Properties = append(e.Properties, p)
		return nil
	}
	switch {
	case l.Batch != nil:
		if *l.Batch < 0 {
			return fmt.Errorf("batch %d: a batch id is >= 0", *l.Batch)
		}
		if k := len(e.Batches); k > 0 && e.Batches[k-1].BatchID >= *l.Batch {
			return fmt.Errorf("batch %d after batch %d (line %d): batch lines go in increasing batch id", *l.Batch, e.Batches[k-1].BatchID, e.Batches[k-1].Line)
		}
		if err := l.Counts.check(); err != nil {
			return err
		}
		e.Batches = append(e.Batches, Batch{Line: n, BatchID: *l.Batch, Emitted: compactAll(l.Emitted), Counts: l.Counts})
	case l.Run != nil:
		if e.Run != nil {
			return fmt.Errorf("a second run line (the first: line %d)", e.Run.Line)
		}
		if err := l.Run.Counts.check(); err != nil {
			return err
		}
		if l.Run.Executions != nil && *l.Run.Executions < 0 {
			return fmt.Errorf("run.executions %d: want a count >= 0", *l.Run.Executions)
		}
		e.Run = &Run{Line: n, Executions: l.Run.Executions, Emitted: compactAll(l.Run.Emitted), Counts: l.Run.Counts}
	default:
		if e.HasTable {
			return fmt.Errorf("a second table line (the first: line %d)", e.TableLine)
		}
		for i, r := range l.Table {
			if r.Kind() != '{' {
				return fmt.Errorf("table[%d]: want a row object, got %s", i, r.Kind())
			}
		}
		e.Table, e.TableLine, e.HasTable = compactAll(l.Table), n, true
		if e.Table == nil {
			e.Table = []jsontext.Value{}
		}
	}
	return nil
}

func (c Counts) check() error {
	for _, f := range []struct {
		name string
		v    *int64
	}{{"numOutputRows", c.NumOutputRows}, {"numDroppedDuplicateRows", c.NumDroppedDuplicateRows},
		{"numRowsDroppedByWatermark", c.NumRowsDroppedByWatermark}, {"numRowsTotal", c.NumRowsTotal}} {
		if f.v != nil && *f.v < 0 {
			return fmt.Errorf("%s %d: want a count >= 0", f.name, *f.v)
		}
	}
	return nil
}

// compactAll puts values in one canonical form (compact, members in
// their order), so that equal values compare equal as bytes.
func compactAll(vs []jsontext.Value) []jsontext.Value {
	for i := range vs {
		var b bytes.Buffer
		if json.Compact(&b, vs[i]) == nil {
			vs[i] = b.Bytes()
		}
	}
	return vs
}

func readLine(br *bufio.Reader) ([]byte, error) {
	return lines.Read(br, MaxLineBytes, " (256 MiB)")
}

// sortedKeys sorts a copy of keys as bytes, for a multiset comparison.
func sortedKeys(keys []jsontext.Value) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = string(k)
	}
	slices.Sort(out)
	return out
}

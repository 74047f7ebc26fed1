package expect

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Properties: what must hold of a run whatever its exact figures, beside
// the snapshots of batch, run and table lines (docs/expectations.md):
//
//	{"unique": ["id"]}          no two rows of the final table (a sink without a table: of
//	                            everything delivered, replays included) share these columns
//	{"no-loss": true}           every dedup key read, other than rows dropped as late, is in the
//	                            final table (or was delivered)
//	{"max-state-keys": 5000}    numRowsTotal never above N after any execution
//	{"late-rows": "<= 0"}       rows dropped as late (numRowsDroppedByWatermark, each batch id
//	                            counted once): <= N, < N, == N, >= N or > N

// Property kinds.
const (
	Unique       = "unique"
	NoLoss       = "no-loss"
	MaxStateKeys = "max-state-keys"
	LateRows     = "late-rows"
)

// Property is one property line.
type Property struct {
	Line int
	Kind string
	// Columns are unique's columns.
	Columns []string
	// Op and N are max-state-keys' bound (Op "<=") and late-rows'
	// comparison.
	Op string
	N  int64
}

// String is the property as a person reads it.
func (p Property) String() string {
	switch p.Kind {
	case Unique:
		return "unique [" + strings.Join(p.Columns, ", ") + "]"
	case NoLoss:
		return NoLoss
	case MaxStateKeys:
		return fmt.Sprintf("%s %d", MaxStateKeys, p.N)
	}
	return fmt.Sprintf("%s %s %d", p.Kind, p.Op, p.N)
}

type propertyLine struct {
	Unique       []string `json:"unique,omitempty"`
	NoLoss       *bool    `json:"no-loss,omitempty"`
	MaxStateKeys *int64   `json:"max-state-keys,omitempty"`
	LateRows     *string  `json:"late-rows,omitempty"`
}

// ops are late-rows' comparisons, longest first.
var ops = []string{"<=", ">=", "==", "<", ">"}

func (l propertyLine) property(n int, unique bool) (Property, error) {
	p := Property{Line: n}
	switch {
	case unique:
		p.Kind = Unique
		if len(l.Unique) == 0 {
			return p, errors.New(`"unique": want the columns no two rows of the table may share, such as ["id"]`)
		}
		seen := map[string]bool{}
		for _, c := range l.Unique {
			if c == "" || seen[c] {
				return p, fmt.Errorf(`"unique": column %q empty or given twice`, c)
			}
			seen[c] = true
		}
		p.Columns = l.Unique
	case l.NoLoss != nil:
		p.Kind = NoLoss
		if !*l.NoLoss {
			return p, errors.New(`"no-loss": false checks nothing: write {"no-loss": true} or leave the line out`)
		}
	case l.MaxStateKeys != nil:
		p.Kind, p.Op, p.N = MaxStateKeys, "<=", *l.MaxStateKeys
		if p.N < 0 {
			return p, fmt.Errorf(`"max-state-keys" %d: want a count >= 0`, p.N)
		}
	default:
		p.Kind = LateRows
		s := strings.TrimSpace(*l.LateRows)
		for _, op := range ops {
			if rest, ok := strings.CutPrefix(s, op); ok {
				v, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
				if err != nil || v < 0 {
					break
				}
				p.Op, p.N = op, v
				return p, nil
			}
		}
		return p, fmt.Errorf(`"late-rows" %q: want a comparison with a count: "<= N", "< N", "== N", ">= N" or "> N" (N >= 0)`, *l.LateRows)
	}
	return p, nil
}

// props are the Observer's running figures for the properties.
type props struct {
	list []Property
	// The largest numRowsTotal and the batch that reached it.
	peak      int64
	peakBatch int64
	// Late rows, each batch id's first execution counted.
	late      int64
	lateBatch int64
	lateAny   bool
	// Deliveries per unique property (a sink without a table), counted by
	// value; keys read that must arrive (no-loss).
	delivered []map[string]int
	read      map[string]bool
	sent      map[string]bool
}

func newProps(list []Property) *props {
	p := &props{list: list, peakBatch: -1, delivered: make([]map[string]int, len(list))}
	for i, x := range list {
		switch x.Kind {
		case Unique:
			p.delivered[i] = map[string]int{}
		case NoLoss:
			p.read, p.sent = map[string]bool{}, map[string]bool{}
		}
	}
	return p
}

// needsInput: a no-loss property needs the rows each batch read.
func (p *props) needsInput() bool { return p != nil && p.read != nil }

func (p *props) observe(x Execution, keys []jsontext.Value) {
	if x.NumRowsTotal > p.peak || p.peakBatch < 0 {
		p.peak, p.peakBatch = max(p.peak, x.NumRowsTotal), x.BatchID
	}
	if !p.lateAny || x.BatchID != p.lateBatch {
		p.late += x.NumRowsDroppedByWatermark
		p.lateAny, p.lateBatch = true, x.BatchID
	}
	for i, pr := range p.list {
		if pr.Kind != Unique {
			continue
		}
		for _, r := range x.Rows {
			if v, err := KeyOf(r, pr.Columns); err == nil {
				p.delivered[i][string(v)]++
			}
		}
	}
	if p.sent != nil {
		for _, k := range keys {
			p.sent[string(k)] = true
		}
	}
}

// input takes the rows one execution read: dropped[i] is true for a row
// dropped as late or filtered before the dedup.
func (p *props) input(keys []jsontext.Value, dropped []bool) {
	for i, k := range keys {
		if !dropped[i] {
			p.read[string(k)] = true
		}
	}
}

// finish judges each property; diff reports a difference at a line.
func (p *props) finish(file string, dedupKeys []string, table []json.RawMessage, hasTable bool, diff func(line int, format string, a ...any)) {
	for i, pr := range p.list {
		where := fmt.Sprintf("%s (%s:%d)", pr, file, pr.Line)
		switch pr.Kind {
		case Unique:
			counts := p.delivered[i]
			what := "the sink's deliveries"
			if hasTable {
				what = "the table"
				counts = map[string]int{}
				for _, r := range table {
					if v, err := KeyOf(r, pr.Columns); err == nil {
						counts[string(v)]++
					}
				}
				if missing := absentColumns(table, pr.Columns); len(missing) > 0 {
					diff(pr.Line, "%s: column %s is in no row of the table (its columns: %s)", where, strings.Join(missing, ", "), strings.Join(columnsOf(table), ", "))
					continue
				}
			}
			var twice []string
			for v, n := range counts {
				if n > 1 {
					twice = append(twice, fmt.Sprintf("%s (%d rows)", v, n))
				}
			}
			slices.Sort(twice)
			if len(twice) > 0 {
				diff(pr.Line, "%s: %d value(s) more than once in %s: %s", where, len(twice), what, list(twice))
			}
		case NoLoss:
			var lost []string
			have := p.sent
			if hasTable {
				have = map[string]bool{}
				for _, r := range table {
					if k, err := KeyOf(r, dedupKeys); err == nil {
						have[string(k)] = true
					}
				}
			}
			for k := range p.read {
				if !have[k] {
					lost = append(lost, k)
				}
			}
			slices.Sort(lost)
			if len(lost) > 0 {
				diff(pr.Line, "%s: %d key(s) read (not as late) never reached the %s: %s", where, len(lost), map[bool]string{true: "table", false: "sink"}[hasTable], list(lost))
			}
		case MaxStateKeys:
			if p.peak > pr.N {
				diff(pr.Line, "%s: numRowsTotal reached %d (after batch %d)", where, p.peak, p.peakBatch)
			}
		case LateRows:
			if !holds(pr.Op, p.late, pr.N) {
				diff(pr.Line, "%s: %d row(s) dropped as late (numRowsDroppedByWatermark)", where, p.late)
			}
		}
	}
}

func holds(op string, got, n int64) bool {
	switch op {
	case "<=":
		return got <= n
	case "<":
		return got < n
	case "==":
		return got == n
	case ">=":
		return got >= n
	}
	return got > n
}

// absentColumns are the columns no row of a non-empty table has.
func absentColumns(table []json.RawMessage, cols []string) []string {
	if len(table) == 0 {
		return nil
	}
	have := map[string]bool{}
	for _, c := range columnsOf(table) {
		have[c] = true
	}
	var out []string
	for _, c := range cols {
		if !have[c] {
			out = append(out, c)
		}
	}
	return out
}

// columnsOf lists the columns of the table's rows, sorted.
func columnsOf(table []json.RawMessage) []string {
	seen := map[string]bool{}
	for _, r := range table {
		var m map[string]jsontext.Value
		if jsonv2.Unmarshal(r, &m) == nil {
			for k := range m {
				seen[k] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

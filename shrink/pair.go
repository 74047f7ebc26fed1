package shrink

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dedupsim/dedupsim/engine/query"
)

// An exec pair in memory (docs/exec-format.md): the query YAML and the
// steps, one stepLine per line of steps.jsonl. The shrinker edits the
// lines and renders them again; comments are not kept.

type lineKind uint8

const (
	rowsLine lineKind = iota
	tickLine
	crashLine
	restartLine
)

type stepLine struct {
	kind lineKind
	// rows holds, per query source (query order), the rows appended; nil
	// for a source the line does not name.
	rows [][]json.RawMessage
	once bool
	// crash is the crash point, batch the batch id it waits for (-1: the
	// next batch).
	crash string
	batch int64
}

type pair struct {
	query   []byte
	sources []string
	lines   []stepLine
}

func (p *pair) clone() *pair {
	c := &pair{query: p.query, sources: p.sources, lines: make([]stepLine, len(p.lines))}
	for i, l := range p.lines {
		c.lines[i] = l
		if l.rows != nil {
			c.lines[i].rows = make([][]json.RawMessage, len(l.rows))
			for s, rs := range l.rows {
				if rs != nil {
					c.lines[i].rows[s] = append([]json.RawMessage{}, rs...)
				}
			}
		}
	}
	return c
}

// rows counts the rows of every line.
func (p *pair) rows() int {
	n := 0
	for _, l := range p.lines {
		for _, rs := range l.rows {
			n += len(rs)
		}
	}
	return n
}

// parsePair reads an exported pair (sim.ExportTraceWith's output, or any
// steps file of the exec format that uses only its step kinds).
func parsePair(queryYAML, stepsJSONL []byte) (*pair, error) {
	q, err := query.Parse("query.yaml", queryYAML)
	if err != nil {
		return nil, err
	}
	p := &pair{query: stripComments(queryYAML), sources: q.SourceNames()}
	for n, text := range strings.Split(string(stepsJSONL), "\n") {
		t := strings.TrimSpace(text)
		if t == "" || t[0] == '#' {
			continue
		}
		l, err := p.parseLine([]byte(t))
		if err != nil {
			return nil, fmt.Errorf("steps.jsonl:%d: %w", n+1, err)
		}
		p.lines = append(p.lines, l)
	}
	return p, nil
}

type rawLine struct {
	Rows    []json.RawMessage            `json:"rows"`
	Sources map[string][]json.RawMessage `json:"sources"`
	Once    bool                         `json:"once"`
	Tick    bool                         `json:"tick"`
	Restart bool                         `json:"restart"`
	Crash   string                       `json:"crash"`
	Batch   *int64                       `json:"batch"`
}

func (p *pair) parseLine(b []byte) (stepLine, error) {
	var r rawLine
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return stepLine{}, err
	}
	l := stepLine{batch: -1, once: r.Once}
	switch {
	case r.Rows != nil:
		if len(p.sources) != 1 {
			return l, fmt.Errorf(`"rows" with %d sources`, len(p.sources))
		}
		l.kind, l.rows = rowsLine, [][]json.RawMessage{r.Rows}
	case r.Sources != nil:
		l.kind, l.rows = rowsLine, make([][]json.RawMessage, len(p.sources))
		for name, rs := range r.Sources {
			i := indexOf(p.sources, name)
			if i < 0 {
				return l, fmt.Errorf("source %q is not one of the query's", name)
			}
			l.rows[i] = append([]json.RawMessage{}, rs...)
			if l.rows[i] == nil {
				l.rows[i] = []json.RawMessage{}
			}
		}
	case r.Tick:
		l.kind = tickLine
	case r.Restart:
		l.kind = restartLine
	case r.Crash != "":
		l.kind, l.crash = crashLine, r.Crash
		if r.Batch != nil {
			l.batch = *r.Batch
		}
	default:
		return l, fmt.Errorf("not a step line: %s", b)
	}
	return l, nil
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

// steps renders the lines as a steps file (no comments).
func (p *pair) steps() []byte {
	var b bytes.Buffer
	for _, l := range p.lines {
		b.Write(p.render(l))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func (p *pair) render(l stepLine) []byte {
	var b bytes.Buffer
	switch l.kind {
	case tickLine:
		b.WriteString(`{"tick": true}`)
	case restartLine:
		b.WriteString(`{"restart": true}`)
	case crashLine:
		q, _ := json.Marshal(l.crash)
		fmt.Fprintf(&b, `{"crash": %s`, q)
		if l.batch >= 0 {
			fmt.Fprintf(&b, `, "batch": %d`, l.batch)
		}
		b.WriteByte('}')
	case rowsLine:
		if len(p.sources) == 1 {
			b.WriteString(`{"rows": `)
			writeRows(&b, l.rows[0])
		} else {
			b.WriteString(`{"sources": {`)
			first := true
			for s, rs := range l.rows {
				if rs == nil {
					continue
				}
				if !first {
					b.WriteString(", ")
				}
				first = false
				q, _ := json.Marshal(p.sources[s])
				b.Write(q)
				b.WriteString(": ")
				writeRows(&b, rs)
			}
			b.WriteByte('}')
		}
		if l.once {
			b.WriteString(`, "once": true`)
		}
		b.WriteByte('}')
	}
	return b.Bytes()
}

func writeRows(b *bytes.Buffer, rs []json.RawMessage) {
	b.WriteByte('[')
	for i, r := range rs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.Write(r)
	}
	b.WriteByte(']')
}

// stripComments drops the # comment lines of a YAML file.
func stripComments(b []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		out = append(out, l)
	}
	return []byte(strings.TrimLeft(strings.Join(out, "\n"), "\n"))
}

package shrink

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/dedupsim/dedupsim/sim/record"
)

// shrinkPair makes p smaller while fails still holds for it (p fails on
// entry): the shortest failing prefix of its lines (a binary search: a
// table keeps what it received, so a longer prefix fails too), then
// delta debugging over the lines, simplifications of the whole pair
// (crashes armed for the next batch instead of a batch id, lines that
// run every due batch instead of one, one state partition), delta
// debugging over the rows, over the lines again, and last the hidden
// _copy column taken out of the rows.
func shrinkPair(p *pair, fails func(*pair) bool, b *budget) *pair {
	cur := p
	// The shortest failing prefix.
	lo, hi := 0, len(cur.lines)
	for hi-lo > 1 && b.take() {
		mid := (lo + hi) / 2
		c := cur.clone()
		c.lines = c.lines[:mid]
		if fails(c) {
			hi = mid
		} else {
			lo = mid
		}
	}
	cur = cur.clone()
	cur.lines = cur.lines[:hi]
	cur = dropLines(cur, fails, b)
	changed := false
	for _, simplify := range []func(*pair) *pair{unpinCrashes, runAllDue, onePartition} {
		c := simplify(cur)
		if c == nil || !b.take() {
			continue
		}
		if fails(c) {
			cur, changed = c, true
		}
	}
	if changed {
		cur = dropLines(cur, fails, b)
	}
	cur = dropRows(cur, fails, b)
	cur = dropLines(cur, fails, b)
	if c := stripCopies(cur); c != nil && b.take() && fails(c) {
		cur = c
	}
	return cur
}

// dropLines is ddmin over p's lines.
func dropLines(p *pair, fails func(*pair) bool, b *budget) *pair {
	keep := ddmin(len(p.lines), func(keep []bool) bool { return fails(withLines(p, keep)) }, b)
	return withLines(p, keep)
}

func withLines(p *pair, keep []bool) *pair {
	c := p.clone()
	c.lines = c.lines[:0]
	for i, l := range p.lines {
		if keep[i] {
			c.lines = append(c.lines, l)
		}
	}
	return c
}

// rowRef names one row: line, source, index.
type rowRef struct{ line, src, i int }

// dropRows is ddmin over every row of p (a line keeps its place when its
// rows are all gone: dropLines may remove it after).
func dropRows(p *pair, fails func(*pair) bool, b *budget) *pair {
	var refs []rowRef
	for li, l := range p.lines {
		for s, rs := range l.rows {
			for i := range rs {
				refs = append(refs, rowRef{li, s, i})
			}
		}
	}
	keep := ddmin(len(refs), func(keep []bool) bool { return fails(withRows(p, refs, keep)) }, b)
	return withRows(p, refs, keep)
}

func withRows(p *pair, refs []rowRef, keep []bool) *pair {
	c := p.clone()
	for li := range c.lines {
		for s := range c.lines[li].rows {
			if c.lines[li].rows[s] != nil {
				c.lines[li].rows[s] = c.lines[li].rows[s][:0]
			}
		}
	}
	for k, r := range refs {
		if keep[k] {
			c.lines[r.line].rows[r.src] = append(c.lines[r.line].rows[r.src], p.lines[r.line].rows[r.src][r.i])
		}
	}
	return c
}

// unpinCrashes arms every crash for the next batch that reaches its point
// instead of a batch id (the ids shift as lines go); nil when none is
// pinned.
func unpinCrashes(p *pair) *pair {
	c, any := p.clone(), false
	for i := range c.lines {
		if c.lines[i].kind == crashLine && c.lines[i].batch >= 0 {
			c.lines[i].batch, any = -1, true
		}
	}
	if !any {
		return nil
	}
	return c
}

// runAllDue lets every rows line run its data batch and every due no-data
// batch (Spark's processAllAvailable) instead of exactly one batch; nil
// when no line has once.
func runAllDue(p *pair) *pair {
	c, any := p.clone(), false
	for i := range c.lines {
		if c.lines[i].once {
			c.lines[i].once, any = false, true
		}
	}
	if !any {
		return nil
	}
	return c
}

// onePartition sets shuffle_partitions to 1; nil when it is 1 already or
// the query does not parse as YAML.
func onePartition(p *pair) *pair {
	q, ok := setTopInt(p.query, "shuffle_partitions", 1)
	if !ok {
		return nil
	}
	c := p.clone()
	c.query = q
	return c
}

// setTopInt sets a top-level key of a YAML mapping to v (adding it when
// absent); false when it already holds v or the text is no mapping.
func setTopInt(text []byte, key string, v int) ([]byte, bool) {
	var doc yaml.Node
	if yaml.Unmarshal(text, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, false
	}
	m := doc.Content[0]
	val := strconv.Itoa(v)
	found := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			if m.Content[i+1].Value == val {
				return nil, false
			}
			m.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: val}
			found = true
		}
	}
	if !found {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: val})
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if enc.Encode(&doc) != nil || enc.Close() != nil {
		return nil, false
	}
	return b.Bytes(), true
}

// stripCopies removes the simulator's hidden _copy column from every row
// (the user's columns stay, in their order); nil when no row has it.
func stripCopies(p *pair) *pair {
	c, any := p.clone(), false
	for li := range c.lines {
		for s := range c.lines[li].rows {
			for i, r := range c.lines[li].rows[s] {
				if out, ok := withoutCopy(r); ok {
					c.lines[li].rows[s][i], any = out, true
				}
			}
		}
	}
	if !any {
		return nil
	}
	return c
}

// withoutCopy drops a trailing `,"_copy":N` member, as the simulator
// writes it.
func withoutCopy(r json.RawMessage) (json.RawMessage, bool) {
	n := record.CopyIndex(r)
	if n < 0 {
		return nil, false
	}
	tail := fmt.Sprintf(`,"%s":%d}`, record.CopyColumn, n)
	if !bytes.HasSuffix(r, []byte(tail)) {
		return nil, false
	}
	out := append(append(json.RawMessage{}, r[:len(r)-len(tail)]...), '}')
	return out, true
}

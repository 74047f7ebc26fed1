package conform

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Wide keys in generated cases: one case in five among those with explicit
// keys and untyped rows dedups on 5 or 6 key columns, id (and ts where
// the event time is a key) plus 3-5 of l (a long), d (a double that is
// 0.0, -0.0 or 1.5), b (a boolean), s (a string) and m (a long), in a
// random call order. With more than four keys Spark's Set of key
// attributes is a hash set, whose order is not the call order: the order
// the state key is stored in (docs/conformance.md,
// key-order-call-order-in-4.3). A third of the single-source wide cases
// are resumed once on their checkpoint with the key list in the reverse
// call order (a second case, "(key order changed)"). The draws come from a
// random stream of their own, so that every other draw of a case, and
// every case that is not wide, stays what it was.

// wideColumns are the columns a wide case adds to each row, in row order.
var wideColumns = []string{"l", "d", "b", "s", "m"}

// wideStream is the random stream of case (seed, index)'s wide draws; its
// first draw says whether the case is wide, when it can be.
func wideStream(seed uint64, index int) (*rand.Rand, bool) {
	r := rand.New(rand.NewPCG(seed^0xbb67ae8584caa73b, uint64(index)))
	return r, r.IntN(5) == 0
}

// widen makes case c (drawn as g) a wide case, one time in five among the
// cases with explicit keys that are neither typed nor resumed.
func widen(seed uint64, index int, g *genCase, c *Case) {
	if g.allKeys || c.Checkpoint != "" || c.followUp != nil {
		return
	}
	if _, typed := typedStream(seed, index); typed {
		return
	}
	r, wide := wideStream(seed, index)
	if !wide {
		return
	}
	keys := []string{g.names[0]}
	if g.flavour == FlavourKeyTime {
		keys = append(keys, g.names[1])
	}
	extra := append([]string(nil), wideColumns...)
	r.Shuffle(len(extra), func(i, j int) { extra[i], extra[j] = extra[j], extra[i] })
	keys = append(keys, extra[:5+r.IntN(2)-len(keys)]...)
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	g.keys = keys
	c.Query = []byte(g.queryYAML())
	c.Steps = []byte(addWideColumns(string(c.Steps), g.nullKeys, r))
	if len(g.sources) > 1 || r.IntN(3) != 0 {
		return
	}
	// The resumed run: the same keys in the reverse call order, over c's
	// steps plus one or two lines of rows.
	c.Checkpoint = c.Name
	base := string(c.Steps)
	var b strings.Builder
	for range 1 + r.IntN(2) {
		var rows []string
		for range 1 + r.IntN(4) {
			row := fmt.Sprintf(`{"id":%s,"ts":%d,"n":%d}`, g.idText(1+r.IntN(5)), 25+r.IntN(20), g.n)
			g.n++
			rows = append(rows, row)
		}
		b.WriteString(`{"rows": [` + strings.Join(rows, ",") + "]}\n")
	}
	g.keys = make([]string, len(keys))
	for i, k := range keys {
		g.keys[len(keys)-1-i] = k
	}
	c.followUp = &Case{Name: c.Name + " (key order changed)", Query: []byte(g.queryYAML()),
		Steps: []byte(base + addWideColumns(b.String(), g.nullKeys, r)), Checkpoint: c.Name}
}

// idText writes the id of ordinal k (1-5) as the case's rows do.
func (g *genCase) idText(k int) string {
	switch g.ids {
	case "int":
		return fmt.Sprint(k)
	case "mixed":
		return fmt.Sprint(k)
	}
	return fmt.Sprintf("%q", string(rune('a'+k-1)))
}

// addWideColumns adds the wide columns to every row of steps (each row
// starts {"id": and holds no nested object). A row's values follow from
// its id three times in four (so copies of an id stay copies), else each
// is drawn again one time in two.
func addWideColumns(steps string, nullKeys bool, r *rand.Rand) string {
	parts := strings.Split(steps, `{"id":`)
	for i := 1; i < len(parts); i++ {
		end := strings.IndexByte(parts[i], '}')
		if end < 0 {
			continue
		}
		id, _, _ := strings.Cut(parts[i], ",")
		k := idOrdinal(id)
		vary := r.IntN(4) == 0
		var b strings.Builder
		for _, col := range wideColumns {
			v := k
			if vary && r.IntN(2) == 0 {
				v = r.IntN(6)
			}
			fmt.Fprintf(&b, `,%q:%s`, col, wideValue(col, v, nullKeys && vary && r.IntN(4) == 0))
		}
		parts[i] = parts[i][:end] + b.String() + parts[i][end:]
	}
	return strings.Join(parts, `{"id":`)
}

// wideValue is column col's value for ordinal v.
func wideValue(col string, v int, null bool) string {
	if null {
		return "null"
	}
	switch col {
	case "l":
		return fmt.Sprint(v % 2)
	case "d":
		return []string{"0.0", "-0.0", "1.5"}[v%3]
	case "b":
		return fmt.Sprint(v%2 == 0)
	case "s":
		return fmt.Sprintf("%q", []string{"p", "q"}[v%2])
	}
	return fmt.Sprint(v % 3)
}

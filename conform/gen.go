package conform

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Generate returns n random cases drawn from seed. Case i depends only on
// (seed, i), so a case can be drawn again alone with GenerateCase.
func Generate(seed uint64, n int) []*Case {
	out := make([]*Case, n)
	for i := range n {
		out[i] = GenerateCase(seed, i)
	}
	// A case's second run on its checkpoint (a wide case's changed key
	// list) comes after all n, so that case i stays at index i.
	for i := range n {
		if f := out[i].followUp; f != nil {
			out = append(out, f)
		}
	}
	return out
}

// The flavours of dedup the generator draws (and the table's columns).
const (
	FlavourNoWatermark = "dropDuplicates"            // §2: no watermark
	FlavourKeyTime     = "dropDuplicates+wm(key)"    // §3.2: the event-time column is a key
	FlavourLateOnly    = "dropDuplicates+wm(nonkey)" // §3.3: late filter, no eviction
	FlavourWithin      = "dropDuplicatesWithinWatermark"
	FlavourBatch       = "batchDropDuplicates"
)

// Flavours lists the flavours in table order.
var Flavours = []string{FlavourNoWatermark, FlavourKeyTime, FlavourLateOnly, FlavourWithin, FlavourBatch}

var genCrashPoints = []string{"after-offsets-write", "after-state-commit", "after-sink-write", "after-commit"}

// genCase is a drawn case before it is written out.
type genCase struct {
	r        *rand.Rand
	flavour  string
	hasWM    bool
	allKeys  bool // dedup.keys omitted: every column is a key
	sources  []string
	delays   []string
	parts    int
	noData   bool
	policy   string
	ids      string // "str", "int", "mixed" (strings and numbers with equal text)
	nullKeys bool
	nullTS   bool
	rfc      bool // event times also as RFC 3339 strings
	absent   bool // a non-key field present in some rows only
	// names are the query's spellings of the columns id and ts: as the
	// rows have them, or (one case in eight) in other cases, which Spark
	// resolves ignoring case (spark-semantics.md §15.4).
	names [2]string
	// sink is the query's sink section ("" for foreachBatch): one case in
	// eight writes a table, merge or append sink, run on Delta Lake.
	sink    string
	keys    []string // a wide case's key list (genwide.go), else nil
	n       int      // row counter: tells copies apart
	history []string
}

// GenerateCase draws case i of seed: a query of one of the five flavours
// (keys with and without the event-time column, all-column keys), 1-8
// partitions, no-data batches on or off, one or two watermarked sources
// under min or max, delays from 0, and 1-15 steps of rows (equal and
// out-of-order event times, times at the watermark, fractional seconds,
// null keys and event times, numeric keys), restarts and crashes at the
// four points. A few cases carry the typed situations of the expected
// differences (mixed JSON types in a key column, a field absent from some
// rows). Two sources never send copies of one key in one step (Spark's
// order across shuffle inputs is not deterministic).
func GenerateCase(seed uint64, index int) *Case { return generateCase(seed, index, true) }

// generateCase is GenerateCase, with wide keys drawn only when wide is set
// (false draws the cases as they were before wide keys, for the test).
func generateCase(seed uint64, index int, wide bool) *Case {
	r := rand.New(rand.NewPCG(seed, uint64(index)))
	g := &genCase{r: r}
	g.flavour = Flavours[r.IntN(len(Flavours))]
	switch g.flavour {
	case FlavourNoWatermark:
		g.allKeys = r.IntN(4) == 0
	case FlavourBatch:
		g.hasWM = r.IntN(2) == 0
		g.allKeys = r.IntN(5) == 0
	case FlavourKeyTime:
		g.hasWM = true
		g.allKeys = r.IntN(4) == 0
	default:
		g.hasWM = true
	}
	nsrc := 1
	if g.hasWM && r.IntN(3) == 0 {
		nsrc = 2
	}
	for i := range nsrc {
		name := "default"
		if nsrc > 1 {
			name = "s" + strconv.Itoa(i+1)
		}
		g.sources = append(g.sources, name)
		if r.IntN(2) == 0 {
			g.delays = append(g.delays, fmt.Sprintf("%d seconds", r.IntN(6)))
		} else {
			g.delays = append(g.delays, fmt.Sprintf("%dms", r.IntN(5001)))
		}
	}
	if r.IntN(6) == 0 {
		g.delays[0] = "0 seconds"
	}
	g.parts = 1 + r.IntN(8)
	g.noData = r.IntN(3) != 0
	g.policy = []string{"min", "max"}[r.IntN(2)]
	switch k := r.IntN(100); {
	case k < 65:
		g.ids = "str"
	case k < 95:
		g.ids = "int"
	default:
		g.ids = "mixed" // expected difference mixed-json-types
	}
	g.nullKeys = r.IntN(5) == 0
	g.nullTS = g.hasWM && r.IntN(4) == 0
	// Without a watermark the event-time column is an ordinary column; as
	// a key column it must keep one JSON type (numbers), or it would be the
	// mixed-types difference.
	g.rfc = g.hasWM || !g.allKeys
	g.absent = r.IntN(25) == 0

	// Drawn from a stream of its own, so that every other draw of a case
	// stays what it was before names were varied.
	g.names = [2]string{"id", "ts"}
	if nr := rand.New(rand.NewPCG(seed^0x9e3779b97f4a7c15, uint64(index))); nr.IntN(8) == 0 {
		spell := [][2]string{{"ID", "TS"}, {"Id", "Ts"}, {"iD", "tS"}, {"ID", "ts"}, {"id", "TS"}}
		g.names = spell[nr.IntN(len(spell))]
	}
	g.sink = genSink(seed, index, g.hasWM, g.names[0])
	c := &Case{Name: fmt.Sprintf("random seed=%d #%d", seed, index)}
	c.Query = []byte(g.queryYAML())
	var b strings.Builder
	nsteps := 1 + r.IntN(15)
	for range nsteps {
		switch k := r.IntN(10); {
		case k == 8:
			b.WriteString(`{"restart": true}` + "\n")
		case k == 9:
			fmt.Fprintf(&b, `{"crash": %q}`+"\n", genCrashPoints[r.IntN(len(genCrashPoints))])
		default:
			b.WriteString(g.rowsLine())
		}
	}
	c.Steps = []byte(b.String())
	retype(seed, index, g, c)
	if wide {
		widen(seed, index, g, c)
	}
	return c
}

func (g *genCase) queryYAML() string {
	var b strings.Builder
	api := "dropDuplicates"
	switch g.flavour {
	case FlavourWithin:
		api = "dropDuplicatesWithinWatermark"
	case FlavourBatch:
		api = "batchDropDuplicates"
	}
	switch {
	case g.keys != nil:
		fmt.Fprintf(&b, "dedup: {api: %s, keys: [%s]}\n", api, strings.Join(g.keys, ", "))
	case g.allKeys:
		fmt.Fprintf(&b, "dedup: {api: %s}\n", api)
	case g.flavour == FlavourKeyTime:
		fmt.Fprintf(&b, "dedup: {api: %s, keys: [%s, %s]}\n", api, g.names[0], g.names[1])
	default:
		fmt.Fprintf(&b, "dedup: {api: %s, keys: [%s]}\n", api, g.names[0])
	}
	if g.hasWM {
		if len(g.sources) == 1 {
			fmt.Fprintf(&b, "watermark: {column: %s, delay: %q}\n", g.names[1], g.delays[0])
		} else {
			b.WriteString("sources:\n")
			for i, s := range g.sources {
				fmt.Fprintf(&b, "  - name: %s\n    watermark: {column: %s, delay: %q}\n", s, g.names[1], g.delays[i])
			}
		}
	}
	fmt.Fprintf(&b, "shuffle_partitions: %d\nwatermark_policy: %s\nno_data_batches: %t\n", g.parts, g.policy, g.noData)
	if g.sink != "" {
		fmt.Fprintf(&b, "sink: %s\n", g.sink)
	}
	return b.String()
}

// genSink draws case index's sink from a random stream of its own (so that
// the other draws of a case stay what they were before sinks were drawn):
// foreachBatch seven times in eight, else a table sink (its app id the query
// id, a fixed one, or one generated at every start), a merge sink (on the
// dedup keys or on the id column alone, with a lookback of 0-20 seconds in
// one watermarked case of two) or a plain append.
func genSink(seed uint64, index int, hasWM bool, id string) string {
	r := rand.New(rand.NewPCG(seed^0xd1b54a32d192ed03, uint64(index)))
	if r.IntN(8) != 0 {
		return ""
	}
	switch r.IntN(3) {
	case 0:
		switch r.IntN(3) {
		case 0:
			return "{kind: table}"
		case 1:
			return "{kind: table, app_id: dedup-app}"
		}
		return "{kind: table, generate_app_id: true}"
	case 1:
		s := "{kind: merge"
		if r.IntN(3) == 0 {
			s += ", keys: [" + id + "]"
		}
		if hasWM && r.IntN(2) == 0 {
			s += fmt.Sprintf(", lookback: \"%d seconds\"", r.IntN(21))
		}
		return s + "}"
	}
	return "{kind: append}"
}

func (g *genCase) rowsLine() string {
	r := g.r
	if len(g.sources) == 1 {
		return `{"rows": [` + strings.Join(g.rows(nil), ",") + "]}\n"
	}
	var parts []string
	var used []string
	for _, s := range g.sources {
		switch r.IntN(4) {
		case 0: // idle: named with no rows (an empty file: a new offset)
			parts = append(parts, fmt.Sprintf("%q: []", s))
			continue
		case 1:
			if len(parts) > 0 || s != g.sources[len(g.sources)-1] {
				continue // not named at all
			}
		}
		rows := g.rows(used)
		for _, row := range rows {
			used = append(used, idOf(row))
		}
		parts = append(parts, fmt.Sprintf("%q: [%s]", s, strings.Join(rows, ",")))
	}
	return `{"sources": {` + strings.Join(parts, ", ") + "}}\n"
}

// idOf returns the id text of a generated row (its first field).
func idOf(row string) string {
	_, rest, _ := strings.Cut(row, `"id":`)
	id, _, _ := strings.Cut(rest, ",")
	return strings.TrimSuffix(id, "}")
}

// rows draws 0-6 rows whose ids are not in avoid.
func (g *genCase) rows(avoid []string) []string {
	r := g.r
	n := r.IntN(7)
	var out []string
	for len(out) < n {
		var row string
		if g.allKeys && len(g.history) > 0 && r.IntN(2) == 0 {
			row = g.history[r.IntN(len(g.history))] // an exact copy
		} else {
			row = g.row()
		}
		if slices.Contains(avoid, idOf(row)) {
			if r.IntN(8) == 0 {
				break
			}
			continue
		}
		g.history = append(g.history, row)
		out = append(out, row)
	}
	return out
}

func (g *genCase) row() string {
	r := g.r
	var id string
	k := r.IntN(5)
	switch {
	case g.nullKeys && r.IntN(8) == 0:
		id = "null"
	case g.ids == "int" || g.ids == "mixed" && r.IntN(2) == 0:
		id = strconv.Itoa(k + 1)
	case g.ids == "mixed":
		id = strconv.Quote(strconv.Itoa(k + 1))
	default:
		id = strconv.Quote(string(rune('a' + k)))
	}
	ts := g.eventTime()
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%s,"ts":%s`, id, ts)
	if !g.allKeys {
		fmt.Fprintf(&b, `,"n":%d`, g.n)
		g.n++
	}
	if g.absent && r.IntN(2) == 0 {
		fmt.Fprintf(&b, `,"x":%d`, r.IntN(3))
	}
	b.WriteByte('}')
	return b.String()
}

// eventTime draws an event time: whole seconds 0-30 (so ties and times at
// the watermark are common), sometimes with a fraction (halves, hundredths
// that binary floating point cannot hold, microseconds below the
// watermark's millisecond), sometimes null, written as a plain number, a
// padded decimal or an RFC 3339 string.
func (g *genCase) eventTime() string {
	r := g.r
	micros := int64(r.IntN(31)) * 1_000_000
	switch r.IntN(10) {
	case 6:
		micros += 500_000
	case 7:
		micros += int64(1+r.IntN(99)) * 10_000
	case 8:
		micros += int64(1 + r.IntN(999_999))
	case 9:
		if g.nullTS {
			return "null"
		}
	}
	form := r.IntN(10)
	switch {
	case form == 9 && g.rfc:
		return strconv.Quote(time.UnixMicro(micros).UTC().Format(time.RFC3339Nano))
	case form >= 7:
		return fmt.Sprintf("%d.%06d", micros/1_000_000, micros%1_000_000)
	}
	s := strconv.FormatInt(micros/1_000_000, 10)
	if frac := micros % 1_000_000; frac != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%06d", frac), "0")
	}
	return s
}

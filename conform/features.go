package conform

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/schema"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/steps"
)

// Describe returns a case's flavour (one of Flavours) and the features it
// exercises, the rows and columns of the result table. Features come from
// the files and from what the engine's run saw (c.Engine.Seen).
func Describe(c *Case) (flavour string, features []string) {
	features = []string{"all cases"}
	if strings.HasPrefix(c.Name, "golden") {
		features = append(features, "golden")
	} else {
		features = append(features, "random")
	}
	if c.Checkpoint != "" {
		features = append(features, "resumed checkpoint")
	}
	if hasAbsentField(c) {
		features = append(features, "absent field")
	}
	if hasCoincidingMixedKey(c) {
		features = append(features, "mixed JSON types")
	}
	p, err := c.parse()
	if err != nil {
		// Refused by dedupsim: the flavour from the API name, if it reads.
		switch {
		case bytes.Contains(c.Query, []byte("batchDropDuplicates")):
			return FlavourBatch, features
		case bytes.Contains(c.Query, []byte("WithinWatermark")):
			return FlavourWithin, features
		}
		return FlavourNoWatermark, features
	}
	q := p.q
	et := q.EventTimeColumn()
	switch {
	case q.API == query.BatchDropDuplicates:
		flavour = FlavourBatch
	case q.API == query.DropDuplicatesWithinWatermark:
		flavour = FlavourWithin
	case et == "":
		flavour = FlavourNoWatermark
	case len(q.Keys) == 0 || slices.Contains(q.Keys, et):
		flavour = FlavourKeyTime
	default:
		flavour = FlavourLateOnly
	}
	add := func(f string, ok bool) {
		if ok && !slices.Contains(features, f) {
			features = append(features, f)
		}
	}
	add("declared schema", q.Schema != nil && !q.SchemaInferred)
	add("key type changed on restart", strings.HasSuffix(c.Name, "(key type changed)"))
	if q.Schema != nil {
		for _, k := range q.StateKeys() {
			if i := q.Schema.Index(k); i >= 0 && k != et {
				t := q.Schema.Fields[i].Type
				add("nested keys", t.Nested())
				add("typed numbers", t.Kind == schema.Double || t.Kind == schema.Decimal || t.Kind == schema.Long && !q.SchemaInferred)
			}
		}
	}
	add("1 partition", q.ShufflePartitions == 1)
	add("2-8 partitions", q.ShufflePartitions > 1)
	add("all-column keys", len(q.Keys) == 0)
	add("5+ key columns", len(q.Keys) >= 5)
	add("case-varied names", caseVaried(q))
	add("no-data batches off", !q.NoDataBatches)
	add("two sources (min)", len(q.Sources) > 1 && q.WatermarkPolicy == query.PolicyMin)
	add("two sources (max)", len(q.Sources) > 1 && q.WatermarkPolicy == query.PolicyMax)
	add("table sink", q.Sink.Kind == sink.KindTable)
	add("merge sink", q.Sink.Kind == sink.KindMerge)
	add("append sink", q.Sink.Kind == sink.KindAppend)
	add("merge lookback", q.Sink.HasLookback)
	add("generated app id", q.Sink.GenerateAppID)
	for _, s := range q.Sources {
		add("delay 0", s.Watermark != nil && s.Watermark.DelayMs == 0)
	}
	for _, st := range p.st {
		switch st.Kind {
		case steps.RestartStep:
			add("restart", true)
		case steps.CrashStep:
			add("crash "+string(st.Crash), true)
		case steps.RowsStep:
			n := 0
			for _, rows := range st.Rows {
				n += len(rows)
			}
			add("empty batches", n == 0)
		}
	}
	for _, r := range stepRows(c.Steps) {
		for _, k := range q.Keys {
			if k == et {
				continue
			}
			v := fieldText(r, k)
			add("null keys", v == "null")
			add("numeric keys", v != "" && (v[0] == '-' || v[0] >= '0' && v[0] <= '9'))
		}
		if et == "" {
			continue
		}
		v := fieldText(r, et)
		add("null event times", v == "null")
		add("RFC 3339 times", strings.HasPrefix(v, `"`))
		add("fractional seconds", strings.Contains(v, "."))
	}
	if c.Engine != nil {
		for _, s := range c.Engine.Seen {
			add(s, true)
		}
	}
	return flavour, features
}

// fieldText is the raw JSON text of a row's field, "" when absent.
func fieldText(row []byte, name string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(row, &obj) != nil {
		return ""
	}
	return string(obj[name])
}

// caseVaried reports whether the query writes a column name in another
// case than the rows (the generator's names are lower case).
func caseVaried(q *query.Query) bool {
	names := q.KeyNames
	if names == nil {
		names = q.Keys
	}
	for _, s := range q.Sources {
		if w := s.Watermark; w != nil {
			names = append(append([]string(nil), names...), w.Column, w.Written)
		}
	}
	for _, n := range names {
		if n != strings.ToLower(n) {
			return true
		}
	}
	return false
}

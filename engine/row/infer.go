package row

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/dedupsim/dedupsim/engine/schema"
)

// Inferrer infers a stream's schema from its JSON rows as Spark's JSON
// source does (JsonInferSchema, samplingRatio 1: every row is read):
//
//   - a value's type: null is null, true/false boolean, a string string
//     (no timestamp inference: Spark's inferTimestamp is off by default),
//     an integer literal bigint, or decimal(p,0) beyond bigint (p its
//     digits, at most 38, else double), a literal with a fraction or an
//     exponent double, an object struct, an array array;
//   - a column's type merges the types of its values over every row
//     (schema.Merge): bigint and double make double, any other mix makes
//     string; a field absent from a row does not take part, so a field
//     present in some rows only is a column of the schema (null in the
//     other rows); a column seen only as null is string;
//   - columns are sorted by name (Java's String order, UTF-16 code units).
//
// Two names that differ only in case are refused, as are repeated names in
// one row.
type Inferrer struct {
	types map[string]schema.Type
	lower map[string]string
	rows  int64
	// changes counts the columns added and the types widened (Changes).
	changes uint64
	// last is the row read last, column by column, with lastDec the
	// decoder of its walk: a row with the same columns in the same order
	// (the usual case) is read without a map lookup per column.
	last    []lastCol
	lastDec *Decoder
	misses  int64 // rows whose columns were not last's
}

// NewInferrer makes an empty Inferrer.
func NewInferrer() *Inferrer {
	return &Inferrer{types: map[string]schema.Type{}, lower: map[string]string{}}
}

// Add merges one row (a JSON object) into the schema. It allocates only
// for a column it has not seen before.
func (in *Inferrer) Add(data []byte) error {
	var it objectIter
	if err := it.begin(data); err != nil {
		return err
	}
	return in.add(&it, data, nil, nil)
}

// AddPrefix is Add of the row object at the start of data, as
// Decoder.DecodePrefix reads it; it returns the object's length.
func (in *Inferrer) AddPrefix(data []byte, depth int) (int, error) {
	var it objectIter
	if err := it.beginPrefix(data, depth); err != nil {
		return 0, err
	}
	if err := in.add(&it, data, nil, nil); err != nil {
		return 0, err
	}
	return it.s.pos, nil
}

// AddPrefixFind is AddPrefix that also notes in f where the row has d's
// columns, for d.DecodeFound (or that of a decoder with the same columns):
// one walk of the row both infers and finds what decoding needs. d must
// have key columns (not every column). A column given twice is the
// inferrer's error, before the decoder would see it.
func (in *Inferrer) AddPrefixFind(data []byte, depth int, d *Decoder, f *Found) (int, error) {
	if d.all {
		return 0, fmt.Errorf("row: AddPrefixFind needs a decoder of key columns")
	}
	var it objectIter
	if err := it.beginPrefix(data, depth); err != nil {
		return 0, err
	}
	f.reset(d)
	if err := in.add(&it, data, d, f); err != nil {
		return 0, err
	}
	return it.s.pos, nil
}

// Changes counts the changes to the schema so far: each column added and
// each widening of a column's type. A caller holding a decoder made from
// Schema remakes it only when Changes has moved.
func (in *Inferrer) Changes() uint64 { return in.changes }

// add merges the row it walks; with d set it also notes in f where d's
// columns are.
func (in *Inferrer) add(it *objectIter, data []byte, d *Decoder, f *Found) (err error) {
	defer func() {
		if err != nil {
			// A refused row may have widened in.types past in.last's
			// copies: the next row must not take in.last's narrower types.
			in.last = in.last[:0]
		}
	}()
	var seenBuf [16][]byte
	seen := seenBuf[:0]
	// hit: the row's columns so far are those of the row before (in.last),
	// in its order: their types (and decoder slots) are in.last's, and no
	// name can repeat (in.last's are distinct).
	hit, k := true, 0
	if d != in.lastDec {
		hit = false // the slots in in.last are another decoder's
	}
	for {
		m, ok, err := it.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		name := plainName(m.name, m.nameEsc)
		raw := data[m.start:m.end]
		if hit && k < len(in.last) && in.last[k].name == string(name) {
			c := &in.last[k]
			k++
			if d != nil && c.slot >= 0 {
				f.slots[c.slot] = slot{start: m.start, end: m.end, kind: m.kind, esc: m.valEsc}
			}
			merged, changed, err := mergeValue(c.t, raw, m.kind)
			if err != nil {
				return fmt.Errorf("column %q: %w", name, err)
			}
			if changed {
				c.t = merged
				in.types[c.name] = merged
				in.changes++
			}
			continue
		}
		if hit {
			hit = false
			for _, c := range in.last[:k] {
				seen = append(seen, []byte(c.name)) // only when the row's columns change
			}
		}
		for _, s := range seen {
			if bytes.Equal(s, name) {
				return fmt.Errorf("column %q appears twice in the row", name)
			}
		}
		seen = append(seen, name)
		if d != nil {
			if i := d.lookup(name); i >= 0 {
				f.slots[i] = slot{start: m.start, end: m.end, kind: m.kind, esc: m.valEsc}
			}
		}
		prev, ok := in.types[string(name)]
		if !ok {
			prev = schema.Type{Kind: schema.Null}
		}
		t, changed, err := mergeValue(prev, raw, m.kind)
		if err != nil {
			return fmt.Errorf("column %q: %w", name, err)
		}
		if !ok {
			name := string(name)
			low := strings.ToLower(name)
			if other, clash := in.lower[low]; clash {
				return fmt.Errorf("columns %q and %q differ only in case: Spark resolves names case-insensitively and could not tell them apart", other, name)
			}
			if len(in.types) == schema.MaxFields {
				return fmt.Errorf("more than %d distinct columns over the rows", schema.MaxFields)
			}
			in.lower[low] = name
			in.types[name] = t
			in.changes++
			continue
		}
		if changed {
			in.types[string(name)] = t
			in.changes++
		}
	}
	switch {
	case !hit:
		in.remember(seen, d)
	case k < len(in.last):
		in.last = in.last[:k] // fewer columns: still the row's, in its order
	}
	in.rows++
	return nil
}

// lastCol is one column of the row an Inferrer read last: its name, its
// type now, and its slot in the decoder of that row's walk (-1: none).
type lastCol struct {
	name string
	t    schema.Type
	slot int
}

// remember makes the row whose column names are names (in order, every
// one in in.types) the one the next row is compared with; d is the walk's
// decoder. It allocates, so it gives up on rows whose columns keep
// changing.
func (in *Inferrer) remember(names [][]byte, d *Decoder) {
	in.misses++
	if in.misses > 64 && in.misses > in.rows/2 {
		in.last, in.lastDec = in.last[:0], d
		return
	}
	in.last, in.lastDec = in.last[:0], d
	for _, n := range names {
		c := lastCol{name: string(n), t: in.types[string(n)], slot: -1}
		if d != nil {
			c.slot = d.lookup(n)
		}
		in.last = append(in.last, c)
	}
}

// Merge adds what o inferred to in, as if in had read o's rows after its
// own: the types merge as they do row by row, so one Inferrer per part of
// a file, merged, infers the file's schema. It reports false, leaving in
// unusable, when two names of in and o differ only in case or there are
// too many columns: reading the rows in one Inferrer then finds the error
// Add reports, which depends on the order of the rows.
func (in *Inferrer) Merge(o *Inferrer) bool {
	in.last = in.last[:0] // its types may widen here
	for name, t := range o.types {
		prev, ok := in.types[name]
		if ok {
			m := schema.Merge(prev, t)
			if schema.CheckNames(m) != nil {
				return false
			}
			in.types[name] = m
			continue
		}
		low := strings.ToLower(name)
		if _, clash := in.lower[low]; clash || len(in.types) == schema.MaxFields {
			return false
		}
		in.lower[low] = name
		in.types[name] = t
	}
	in.changes++
	in.rows += o.rows
	return true
}

// Rows is how many rows were added.
func (in *Inferrer) Rows() int64 { return in.rows }

// Schema is the inferred schema; nil when no row was added.
func (in *Inferrer) Schema() *schema.Schema {
	if in.rows == 0 {
		return nil
	}
	s := &schema.Schema{}
	for n, t := range in.types {
		// A column seen only as empty objects (or arrays of them) is no
		// column (canonicalizeType drops empty structs).
		if ct, ok := schema.Canonical(t); ok {
			s.Fields = append(s.Fields, schema.Field{Name: n, Type: ct})
		}
	}
	slices.SortFunc(s.Fields, func(a, b schema.Field) int { return schema.CompareJava(a.Name, b.Name) })
	return s
}

// isIntegerLiteral reports whether a valid JSON number has neither a
// fraction nor an exponent (Jackson's VALUE_NUMBER_INT).
func isIntegerLiteral(raw []byte) bool {
	for _, c := range raw {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// parseInt64 reads an integer literal; ok is false when it does not fit.
func parseInt64(raw []byte) (int64, bool) {
	neg := raw[0] == '-'
	digits := raw
	if neg {
		digits = raw[1:]
	}
	var u uint64
	for _, c := range digits {
		d := uint64(c - '0')
		if u > (1<<63)/10 || u*10 > 1<<63-d {
			return 0, false
		}
		u = u*10 + d
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u-1) - 1, true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

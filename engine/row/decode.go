package row

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/dedupsim/dedupsim/engine/schema"
)

// Decoder extracts what the dedup operator needs from a raw JSON row: the
// canonical key and the event time. It holds only its configuration, so one
// Decoder may be shared by goroutines.
type Decoder struct {
	// all is set when the key is every column of the row.
	all bool
	// names are the columns Decode looks for: the key columns (distinct, in
	// order), then the event-time column if it is not a key.
	names []string
	// keySlot maps each key column, in key order, to its index in names.
	keySlot []int
	// eventCol is the event-time column, "" for none.
	eventCol string
	// eventSlot is eventCol's index in names, -1 for none (or, in all mode,
	// unused).
	eventSlot int
	// index replaces the linear search over names when there are many.
	index map[string]int
	// types are the columns' types, by names' index, for a decoder that
	// reads rows under a schema (NewTypedDecoder); nil for untyped rows.
	types []schema.Type
	// readers read the nested columns (struct, array, map), by names'
	// index; nil for the others.
	readers []*reader
	// normFloats makes -0.0 the key of 0.0 in DOUBLE columns
	// (NormalizedFloats).
	normFloats bool
}

// linearMax is how many names are searched linearly; beyond it a map is
// faster. Typical keys have one to three columns.
const linearMax = 8

// NewDecoder makes a decoder for the given key columns (empty: every column
// of the row, in name order) and event-time column ("" for none).
func NewDecoder(keys []string, eventTimeColumn string) *Decoder {
	d := &Decoder{all: len(keys) == 0, eventCol: eventTimeColumn, eventSlot: -1}
	if d.all {
		return d
	}
	for _, k := range keys {
		i := slices.Index(d.names, k)
		if i < 0 {
			i = len(d.names)
			d.names = append(d.names, k)
		}
		d.keySlot = append(d.keySlot, i)
	}
	if eventTimeColumn != "" {
		d.eventSlot = slices.Index(d.names, eventTimeColumn)
		if d.eventSlot < 0 {
			d.eventSlot = len(d.names)
			d.names = append(d.names, eventTimeColumn)
		}
	}
	if len(d.names) > linearMax {
		d.index = make(map[string]int, len(d.names))
		for i, n := range d.names {
			d.index[n] = i
		}
	}
	return d
}

// slot is where a wanted column's value was found.
type slot struct {
	start, end int
	kind       valueKind // kindNone: not found
	esc        bool
}

func (d *Decoder) lookup(name []byte) int {
	if d.index != nil {
		if i, ok := d.index[string(name)]; ok {
			return i
		}
		return -1
	}
	for i, n := range d.names {
		if n == string(name) {
			return i
		}
	}
	return -1
}

// Decode fills r from one JSON row: r.Data = data (kept, not copied: the
// caller must not reuse the buffer), r.Key, r.EventTime and
// r.EventTimeNull. r.Key is freshly allocated, so Rows never share key
// storage.
//
// The row must be one JSON object (surrounding space allowed). A key or
// event-time column that is missing, a key or event-time column given twice,
// or an event time that is not a number, an RFC 3339 string or null is an
// error naming the column. With an all-columns key every field is a key
// column, so any repeated field name is an error.
func (d *Decoder) Decode(data []byte, r *Row) error {
	if err := d.decode(data, r); err != nil {
		return err
	}
	r.Decoded = true
	return nil
}

// DecodePrefix is Decode of the row object at the start of data (no space
// before it), nested depth levels deep in the text it is part of (for
// the nesting limit, as encoding/json counts it from the top). It returns
// the object's length n; r.Data is data[:n]. What follows the object is
// not looked at.
func (d *Decoder) DecodePrefix(data []byte, depth int, r *Row) (int, error) {
	return d.DecodePrefixKey(data, depth, r, nil)
}

// DecodePrefixKey is DecodePrefix with r.Key appended to key (nil: a
// fresh slice): a reader gives the spare capacity of one buffer for the
// keys of many rows, which then share its storage (never overlapping).
func (d *Decoder) DecodePrefixKey(data []byte, depth int, r *Row, key []byte) (int, error) {
	var it objectIter
	if err := it.beginPrefix(data, depth); err != nil {
		return 0, err
	}
	if err := d.decodeWithKey(&it, data, r, key); err != nil {
		return 0, err
	}
	r.Data = data[:it.s.pos]
	r.Decoded = true
	return it.s.pos, nil
}

func (d *Decoder) decode(data []byte, r *Row) error {
	var it objectIter
	if err := it.begin(data); err != nil {
		*r = Row{Data: data, Source: r.Source, Partition: r.Partition, Offset: r.Offset, Positioned: r.Positioned}
		return err
	}
	return d.decodeWith(&it, data, r)
}

// decodeWith is decode over an object iterator that has begun.
func (d *Decoder) decodeWith(it *objectIter, data []byte, r *Row) error {
	return d.decodeWithKey(it, data, r, nil)
}

// decodeWithKey is decodeWith with r.Key appended to key (nil: fresh).
func (d *Decoder) decodeWithKey(it *objectIter, data []byte, r *Row, key []byte) error {
	*r = Row{Data: data, Source: r.Source, Partition: r.Partition, Offset: r.Offset, Positioned: r.Positioned} // where it was read stays
	if d.all {
		return d.decodeAll(it, data, r, key)
	}
	var buf [linearMax]slot
	var slots []slot
	if len(d.names) <= len(buf) {
		slots = buf[:len(d.names)]
	} else {
		slots = make([]slot, len(d.names))
	}
	for {
		m, ok, err := it.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		i := d.lookup(plainName(m.name, m.nameEsc))
		if i < 0 {
			continue
		}
		if slots[i].kind != kindNone {
			return fmt.Errorf("column %q appears twice in the row", d.names[i])
		}
		slots[i] = slot{start: m.start, end: m.end, kind: m.kind, esc: m.valEsc}
	}

	return d.decodeSlots(data, r, slots, key)
}

// decodeSlots is decode's second half, over where the walk found the
// columns: r.Key is appended to key (nil: a fresh slice).
func (d *Decoder) decodeSlots(data []byte, r *Row, slots []slot, key []byte) error {
	if d.types != nil {
		return d.decodeTyped(data, r, slots, key)
	}
	size := 0
	for _, i := range d.keySlot {
		s := slots[i]
		if s.kind == kindNone {
			return fmt.Errorf("missing key column %q", d.names[i])
		}
		size += s.end - s.start + 10
	}
	if d.eventSlot >= 0 {
		s := slots[d.eventSlot]
		if s.kind == kindNone {
			return fmt.Errorf("missing event-time column %q", d.eventCol)
		}
		var err error
		r.EventTime, r.EventTimeNull, err = eventTime(data[s.start:s.end], s.kind, s.esc)
		if err != nil {
			return fmt.Errorf("event-time column %q: %w", d.eventCol, err)
		}
	}
	if key == nil {
		key = make([]byte, 0, size)
	}
	for _, i := range d.keySlot {
		if i == d.eventSlot {
			key = AppendKeyEventTime(key, r.EventTime, r.EventTimeNull)
			continue
		}
		s := slots[i]
		key = appendValue(key, data[s.start:s.end], s.kind, s.esc)
	}
	r.Key = key
	return nil
}

// decodeTyped is decodeSlots under a schema: an absent column is null,
// and each value is read under its column's type (appendTyped).
func (d *Decoder) decodeTyped(data []byte, r *Row, slots []slot, key []byte) error {
	size := 0
	for _, i := range d.keySlot {
		size += slots[i].end - slots[i].start + 10
	}
	if d.eventSlot >= 0 {
		s := slots[d.eventSlot]
		if s.kind == kindNone {
			r.EventTimeNull = true
		} else {
			var err error
			r.EventTime, r.EventTimeNull, err = typedEventTime(data[s.start:s.end], s.kind, s.esc, d.types[d.eventSlot])
			if err != nil {
				return fmt.Errorf("event-time column %q: %w", d.eventCol, err)
			}
		}
	}
	if key == nil {
		key = make([]byte, 0, size)
	}
	for _, i := range d.keySlot {
		if i == d.eventSlot {
			key = AppendKeyEventTime(key, r.EventTime, r.EventTimeNull)
			continue
		}
		s := slots[i]
		if s.kind == kindNone {
			key = append(key, tagNull)
			continue
		}
		var err error
		var ok bool
		mark := len(key)
		if key, ok, err = appendTyped(key, data[s.start:s.end], s.kind, s.esc, d.types[i], d.readers[i], d.normFloats); err != nil {
			return fmt.Errorf("column %q: %w", d.names[i], err)
		}
		if !ok {
			// PERMISSIVE: a value that does not fit its column is null.
			key = append(key[:mark], tagNull)
		}
	}
	r.Key = key
	return nil
}

// Found is where one walk of a row found the columns of a Decoder
// (Inferrer.AddPrefixFind), so that the row is decoded (DecodeFound)
// without a second walk: exec's schema inference and its check of every
// row are then one scan of each row.
type Found struct {
	buf   [linearMax]slot
	more  []slot // for a decoder of more than linearMax columns
	slots []slot
}

// reset readies f for a walk over d's columns.
func (f *Found) reset(d *Decoder) {
	n := len(d.names)
	if n <= len(f.buf) {
		f.slots = f.buf[:n]
	} else {
		if cap(f.more) < n {
			f.more = make([]slot, n)
		}
		f.slots = f.more[:n]
	}
	clear(f.slots)
}

// EveryColumn reports whether d's key is every column (a query's
// keys: []), which DecodeFound and Inferrer.AddPrefixFind do not support.
func (d *Decoder) EveryColumn() bool { return d.all }

// SameTypes reports whether d and o read their columns under the same
// types (both untyped, or the same type for every column).
func (d *Decoder) SameTypes(o *Decoder) bool {
	return (d.types == nil) == (o.types == nil) && slices.EqualFunc(d.types, o.types, schema.Type.Equal)
}

// DecodeFound is Decode of the row data, whose columns a walk found in f
// (with d, or a decoder of the same key and event-time columns under other
// types: NewDecoder and NewTypedDecoder of the same columns), without
// walking it again. The key is built in r.Key's storage (from its start,
// up to its capacity, then in a new slice): a check reuses one scratch
// row's key from row to row; a Reader's run points r.Key at the unused
// tail of its shared key chunk first (steps' scanAlong), as it does for
// DecodePrefixKey. Never pass a row whose Key is another row's: it would
// be written over. A decoder of every column (no keys) is not supported.
func (d *Decoder) DecodeFound(data []byte, f *Found, r *Row) error {
	if d.all || len(f.slots) != len(d.names) {
		return fmt.Errorf("row: DecodeFound needs the slots of a walk over the decoder's columns")
	}
	key := r.Key[:0]
	*r = Row{Data: data, Source: r.Source, Partition: r.Partition, Offset: r.Offset, Positioned: r.Positioned}
	if key == nil {
		key = []byte{}
	}
	if err := d.decodeSlots(data, r, f.slots, key); err != nil {
		return err
	}
	r.Decoded = true
	return nil
}

// field is one column of a row, for the all-columns key.
type field struct {
	name []byte // decoded
	slot
}

// decodeAll is Decode when the key is every column, taken in name order
// (the order of the schema Spark infers from JSON, which sorts fields).
func (d *Decoder) decodeAll(it *objectIter, data []byte, r *Row, key []byte) error {
	var buf [16]field
	fields := buf[:0]
	size := 0
	for {
		m, ok, err := it.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		fields = append(fields, field{
			name: plainName(m.name, m.nameEsc),
			slot: slot{start: m.start, end: m.end, kind: m.kind, esc: m.valEsc},
		})
		size += m.end - m.start + 10
	}
	sortFields(fields)
	haveEvent := false
	for i := range fields {
		if i > 0 && bytes.Equal(fields[i-1].name, fields[i].name) {
			return fmt.Errorf("column %q appears twice in the row", fields[i].name)
		}
		if d.eventCol != "" && string(fields[i].name) == d.eventCol {
			s := fields[i].slot
			var err error
			r.EventTime, r.EventTimeNull, err = eventTime(data[s.start:s.end], s.kind, s.esc)
			if err != nil {
				return fmt.Errorf("event-time column %q: %w", d.eventCol, err)
			}
			haveEvent = true
		}
	}
	if d.eventCol != "" && !haveEvent {
		return fmt.Errorf("missing event-time column %q", d.eventCol)
	}
	if key == nil {
		key = make([]byte, 0, size)
	}
	for i := range fields {
		f := &fields[i]
		if d.eventCol != "" && string(f.name) == d.eventCol {
			key = AppendKeyEventTime(key, r.EventTime, r.EventTimeNull)
			continue
		}
		key = appendValue(key, data[f.start:f.end], f.kind, f.esc)
	}
	r.Key = key
	return nil
}

// sortFields sorts by name. Rows usually have few columns, and an
// insertion sort keeps the stack buffer from escaping to the heap; wide rows
// take the O(n log n) path.
func sortFields(fs []field) {
	if len(fs) > 16 {
		slices.SortFunc(fs, func(a, b field) int { return bytes.Compare(a.name, b.name) })
		return
	}
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && bytes.Compare(fs[j-1].name, fs[j].name) > 0; j-- {
			fs[j-1], fs[j] = fs[j], fs[j-1]
		}
	}
}

// FieldNames lists the row's field names (decoded) in the order they
// appear. It fails on anything but one JSON object and on a repeated name.
// The steps parser uses it to hold every row of an all-columns query to one
// schema.
func FieldNames(data []byte) ([]string, error) {
	var it objectIter
	if err := it.begin(data); err != nil {
		return nil, err
	}
	var names []string
	seen := make(map[string]struct{})
	for {
		m, ok, err := it.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return names, nil
		}
		name := string(plainName(m.name, m.nameEsc))
		if _, dup := seen[name]; dup {
			return nil, fmt.Errorf("column %q appears twice in the row", name)
		}
		seen[name] = struct{}{}
		names = append(names, name)
	}
}

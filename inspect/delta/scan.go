package delta

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
)

// Field is one column of the table's schema (schemaString).
type Field struct {
	Name     string          `json:"name"`
	Type     json.RawMessage `json:"type"`
	Nullable bool            `json:"nullable"`
	Metadata map[string]any  `json:"metadata"`
}

// TypeName is the field's type as Spark names it ("string", "long",
// "decimal(10,2)"), or "struct", "array", "map" for a nested type.
func (f Field) TypeName() string {
	var s string
	if json.Unmarshal(f.Type, &s) == nil {
		return s
	}
	var o struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(f.Type, &o)
	return o.Type
}

// Schema parses a metaData schemaString: a struct type.
func Schema(m *Metadata) ([]Field, error) {
	var s struct {
		Type   string  `json:"type"`
		Fields []Field `json:"fields"`
	}
	if err := json.Unmarshal([]byte(m.SchemaString), &s); err != nil {
		return nil, fmt.Errorf("metaData.schemaString: %v", err)
	}
	if s.Type != "struct" {
		return nil, fmt.Errorf("metaData.schemaString: type %q, want struct", s.Type)
	}
	return s.Fields, nil
}

// readerFeatures are the reader table features dedupsim reads (or refuses
// only where used: deletion vectors, a V2 checkpoint).
var readerFeatures = []string{"columnMapping", "deletionVectors", "timestampNtz", "typeWidening", "typeWidening-preview",
	"vacuumProtocolCheck", "v2Checkpoint", "variantType", "variantType-preview"}

// keyColumn is a key column as the scan reads it.
type keyColumn struct {
	Name      string // logical, as the schema has it
	Physical  string // the Parquet column (column mapping) or partitionValues key
	Type      string
	Partition bool
}

// keyColumns resolves the key names against the schema: exactly, else
// ignoring case as Spark's default resolution does.
func keyColumns(log *Log, keys []string) ([]keyColumn, error) {
	fields, err := Schema(log.Metadata)
	if err != nil {
		return nil, err
	}
	mode := log.Metadata.Configuration["delta.columnMapping.mode"]
	switch mode {
	case "", "none", "name", "id":
	default:
		return nil, fmt.Errorf("column mapping mode %q is not one dedupsim reads (none, name, id)", mode)
	}
	var out []keyColumn
	for _, k := range keys {
		i := slices.IndexFunc(fields, func(f Field) bool { return f.Name == k })
		if i < 0 {
			var hits []int
			for j, f := range fields {
				if strings.EqualFold(f.Name, k) {
					hits = append(hits, j)
				}
			}
			if len(hits) != 1 {
				names := make([]string, len(fields))
				for j, f := range fields {
					names[j] = f.Name
				}
				return nil, fmt.Errorf("--keys: column %q is not in the table (%s)", k, strings.Join(names, ", "))
			}
			i = hits[0]
		}
		f := fields[i]
		c := keyColumn{Name: f.Name, Physical: f.Name, Type: f.TypeName()}
		switch c.Type {
		case "struct", "array", "map", "variant":
			return nil, fmt.Errorf("--keys: column %q is a %s: dedupsim reads keys of plain types", f.Name, c.Type)
		}
		if mode == "name" || mode == "id" {
			p, ok := f.Metadata["delta.columnMapping.physicalName"].(string)
			if !ok || p == "" {
				return nil, fmt.Errorf("column %q has no delta.columnMapping.physicalName under column mapping mode %s", f.Name, mode)
			}
			c.Physical = p
		}
		c.Partition = slices.Contains(log.Metadata.PartitionColumns, f.Name)
		out = append(out, c)
	}
	return out, nil
}

// A key is the concatenation of one item per key column:
//
//	'n'                    null
//	'b' 1 byte             boolean
//	'i' 8 bytes            any integer (int32, int64, a date, a timestamp,
//	                       an INT96 timestamp as microseconds, a decimal's
//	                       unscaled int), big-endian
//	'd' 8 bytes            float or double, -0.0 as 0.0 and one NaN (as
//	                       Spark's grouping normalises them)
//	's' uvarint len bytes  byte array (string, binary)
//	'x' uvarint len bytes  fixed-length byte array
//	'p' uvarint len bytes  a partition value, as the log writes it
//
// Equal values of one column give equal items; the items of one column
// always have one form, whatever file they come from.

func appendItem(dst []byte, tag byte, b []byte) []byte {
	dst = append(dst, tag)
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func appendValue(dst []byte, v parquet.Value) ([]byte, error) {
	if v.IsNull() {
		return append(dst, 'n'), nil
	}
	switch v.Kind() {
	case parquet.Boolean:
		if v.Boolean() {
			return append(dst, 'b', 1), nil
		}
		return append(dst, 'b', 0), nil
	case parquet.Int32:
		return binary.BigEndian.AppendUint64(append(dst, 'i'), uint64(int64(v.Int32()))), nil
	case parquet.Int64:
		return binary.BigEndian.AppendUint64(append(dst, 'i'), uint64(v.Int64())), nil
	case parquet.Int96:
		return binary.BigEndian.AppendUint64(append(dst, 'i'), uint64(int96Micros(v.Bytes()))), nil
	case parquet.Float:
		return appendDouble(dst, float64(v.Float())), nil
	case parquet.Double:
		return appendDouble(dst, v.Double()), nil
	case parquet.ByteArray:
		return appendItem(dst, 's', v.ByteArray()), nil
	case parquet.FixedLenByteArray:
		return appendItem(dst, 'x', v.ByteArray()), nil
	}
	return nil, fmt.Errorf("a Parquet value of kind %v", v.Kind())
}

func appendDouble(dst []byte, f float64) []byte {
	switch {
	case f == 0:
		f = 0
	case math.IsNaN(f):
		f = math.NaN()
	}
	return binary.BigEndian.AppendUint64(append(dst, 'd'), math.Float64bits(f))
}

// int96Micros reads Spark's INT96 timestamp: nanoseconds of the day
// (little-endian int64), then the Julian day (little-endian int32).
func int96Micros(b []byte) int64 {
	if len(b) != 12 {
		return 0
	}
	nanos := int64(binary.LittleEndian.Uint64(b[:8]))
	day := int64(int32(binary.LittleEndian.Uint32(b[8:])))
	const julianEpoch = 2440588 // 1970-01-01
	return (day-julianEpoch)*86_400_000_000 + nanos/1000
}

// render writes a key as a JSON array of its values, each shown as its
// column's type says (a timestamp in RFC 3339, a date as YYYY-MM-DD, a
// decimal scaled).
func render(key []byte, cols []keyColumn) string {
	vals := make([]string, 0, len(cols))
	for i := 0; i < len(key) && len(vals) < len(cols); {
		typ := cols[len(vals)].Type
		tag := key[i]
		i++
		switch tag {
		case 'n':
			vals = append(vals, "null")
		case 'b':
			vals = append(vals, strconv.FormatBool(key[i] == 1))
			i++
		case 'i':
			vals = append(vals, renderInt(int64(binary.BigEndian.Uint64(key[i:i+8])), typ))
			i += 8
		case 'd':
			f := math.Float64frombits(binary.BigEndian.Uint64(key[i : i+8]))
			s := strconv.FormatFloat(f, 'g', -1, 64)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				s = strconv.Quote(s)
			}
			vals = append(vals, s)
			i += 8
		default: // s, x, p
			n, w := binary.Uvarint(key[i:])
			b := key[i+w : i+w+int(n)]
			i += w + int(n)
			switch {
			case tag == 'p' || typ == "string":
				q, _ := json.Marshal(string(b))
				vals = append(vals, string(q))
			case strings.HasPrefix(typ, "decimal"):
				vals = append(vals, scaled(new(big.Int).SetBytes(b), b, typ))
			default:
				vals = append(vals, strconv.Quote(base64.StdEncoding.EncodeToString(b)))
			}
		}
	}
	return "[" + strings.Join(vals, ",") + "]"
}

func renderInt(n int64, typ string) string {
	switch {
	case typ == "timestamp" || typ == "timestamp_ntz":
		return strconv.Quote(time.UnixMicro(n).UTC().Format("2006-01-02T15:04:05.999999Z"))
	case typ == "date":
		return strconv.Quote(time.Unix(n*86400, 0).UTC().Format("2006-01-02"))
	case strings.HasPrefix(typ, "decimal"):
		return scaled(big.NewInt(n), nil, typ)
	}
	return strconv.FormatInt(n, 10)
}

// scaled writes an unscaled decimal (a big-endian two's complement byte
// array, or an int) under decimal(p,s).
func scaled(v *big.Int, twos []byte, typ string) string {
	if len(twos) > 0 && twos[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(twos))))
	}
	var p, s int
	if _, err := fmt.Sscanf(typ, "decimal(%d,%d)", &p, &s); err != nil || s <= 0 {
		return v.String()
	}
	neg := v.Sign() < 0
	digits := new(big.Int).Abs(v).String()
	for len(digits) <= s {
		digits = "0" + digits
	}
	out := digits[:len(digits)-s] + "." + digits[len(digits)-s:]
	if neg {
		out = "-" + out
	}
	return strconv.Quote(out)
}

// scanFile calls each with the key of every row of one data file, in file
// order. It holds one row group's key items at a time.
func (t *table) scanFile(f *AddFile, cols []keyColumn, each func(key []byte)) (rows int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = t.errf(f.Path, "damaged Parquet file: %v", p)
		}
	}()
	file, err := t.root.Open(f.Path)
	if err != nil {
		return 0, t.errf(f.Path, "a live data file of the table: %v", err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return 0, t.errf(f.Path, "%v", err)
	}
	pf, err := parquet.OpenFile(file, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return 0, t.errf(f.Path, "not a Parquet file: %v", err)
	}
	leaf := make([]int, len(cols)) // -1: partition column or absent from the file (null)
	fixed := make([][]byte, len(cols))
	for i, c := range cols {
		leaf[i] = -1
		if c.Partition {
			v, ok := f.PartitionValues[c.Physical]
			if !ok || v == nil {
				fixed[i] = []byte{'n'}
			} else {
				fixed[i] = appendItem(nil, 'p', []byte(*v))
			}
			continue
		}
		lc, ok := pf.Schema().Lookup(c.Physical)
		if !ok {
			fixed[i] = []byte{'n'} // a column added after this file was written
			continue
		}
		if lc.MaxRepetitionLevel > 0 {
			return 0, t.errf(f.Path, "key column %q is repeated in the Parquet file", c.Name)
		}
		leaf[i] = lc.ColumnIndex
	}
	items := make([][][]byte, len(cols))
	var key []byte
	for _, rg := range pf.RowGroups() {
		n := rg.NumRows()
		for i := range cols {
			if leaf[i] < 0 {
				continue
			}
			if items[i], err = columnItems(rg.ColumnChunks()[leaf[i]], n, items[i][:0]); err != nil {
				return rows, t.errf(f.Path, "column %q: %v", cols[i].Name, err)
			}
		}
		for r := range n {
			key = key[:0]
			for i := range cols {
				if leaf[i] < 0 {
					key = append(key, fixed[i]...)
				} else {
					key = append(key, items[i][r]...)
				}
			}
			each(key)
		}
		rows += n
	}
	return rows, nil
}

// columnItems reads a column chunk's values, one item each.
func columnItems(cc parquet.ColumnChunk, n int64, out [][]byte) ([][]byte, error) {
	pages := cc.Pages()
	defer pages.Close()
	vals := make([]parquet.Value, 1024)
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		vr := p.Values()
		for {
			k, err := vr.ReadValues(vals)
			for _, v := range vals[:k] {
				item, ierr := appendValue(nil, v)
				if ierr != nil {
					parquet.Release(p)
					return nil, ierr
				}
				out = append(out, item)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				parquet.Release(p)
				return nil, err
			}
		}
		parquet.Release(p)
	}
	if int64(len(out)) != n {
		return nil, fmt.Errorf("%d values for %d rows", len(out), n)
	}
	return out, nil
}

package sizing

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dedupsim/dedupsim/engine/query"
)

// Bytes per key from Spark's own layout (docs/sizing.md, "Bytes per key
// from the layout"): the state key and value are UnsafeRows, and each
// store keeps them its own way.
//
// An UnsafeRow of n fields is a null bitset of ceil(n / 64) 8-byte words,
// one 8-byte slot per field (a fixed-width value lives in its slot, a
// variable-width one keeps its offset and length there), then the
// variable-length values, each rounded up to a multiple of 8 bytes.
//
// The state schema of the dedup operators (the fixtures' _metadata/schema):
// the key is the dedup columns (with dropDuplicates(id, ts) the event time
// is a timestamp column of the key); the value is one field, __dummy__ of
// type void for dropDuplicates (16 bytes) and expiresAtMicros, a long, for
// dropDuplicatesWithinWatermark (16 bytes).

// Spark's JVM sizes, as SizeEstimator counts them on a 64-bit JVM with
// compressed oops (heaps below 32 GiB): a 12-byte object header, 4-byte
// references, objects aligned to 8 bytes, arrays with a 16-byte header.
const (
	// unsafeRowObject is an UnsafeRow: header, baseObject, baseOffset,
	// numFields, sizeInBytes, bitSetWidthInBytes = 36, aligned: 40.
	unsafeRowObject = 40
	// byteArrayHeader is a byte[]'s header and length.
	byteArrayHeader = 16
	// mapNode is a ConcurrentHashMap.Node: header, hash, key, val, next
	// = 28, aligned: 32.
	mapNode = 32
	// tableSlot is the node table's share per entry: 4-byte references in
	// a power-of-two table kept at most 75% full, 1.33 to 2.67 slots per
	// entry, 2 on average.
	tableSlot = 8
	// DefaultVersionsInMemory is spark.sql.streaming.maxBatchesToRetainInMemory.
	DefaultVersionsInMemory = 2
	// The RocksDB disk model (docs/sizing.md, "RocksDB on disk"), fitted
	// to rocksdbSstFileSize / numRowsTotal of real Spark 4.1.1 over random
	// keys (sizing/testdata/spark-calibration.json): what a key costs in the
	// SST files is its values' own bytes, which lz4 cannot shrink when the
	// ids are random, times RocksLiteralFactor (lz4's literal-run tokens,
	// the index block), plus RocksEntryBytes per entry (RocksDB's 8-byte
	// internal key suffix, the shared-prefix and length varints and the
	// bloom filter's 10 bits, less what prefix sharing and lz4 take off the
	// UnsafeRow's constant bitset, slots, version byte and value row), plus
	// RocksEventTimeBytes when the event time is a column of the key
	// (dropDuplicates(id, ts)). The UnsafeRow's padding and constant words
	// cost almost nothing on disk.
	RocksLiteralFactor  = 1.08
	RocksEntryBytes     = 7.8
	RocksEventTimeBytes = 1.1
)

// RocksDB's native memory per state store instance when memory is not
// bounded: the confs and their defaults.
const (
	RocksBlockCacheMB    = 8  // spark.sql.streaming.stateStore.rocksdb.blockCacheSizeMB
	RocksWriteBufferMB   = 64 // writeBufferSizeMB -1: RocksDB's write_buffer_size
	RocksMaxWriteBuffers = 2  // maxWriteBufferNumber -1: RocksDB's max_write_buffer_number
	RocksMaxMemoryMB     = 500
)

// Column is one column of the state key: a Spark type and, for a
// variable-width one, the mean width of its values in bytes.
type Column struct {
	Name  string
	Type  string // lower case: string, binary, long, timestamp, ...
	Width float64
}

// fixedTypes live in their 8-byte slot.
var fixedTypes = map[string]bool{
	"boolean": true, "tinyint": true, "byte": true, "smallint": true, "short": true, "int": true,
	"integer": true, "bigint": true, "long": true, "float": true, "real": true, "double": true,
	"date": true, "timestamp": true, "timestamp_ntz": true, "void": true, "null": true,
}

// round8 is a length rounded up to a multiple of 8.
func round8(n float64) float64 { return math.Ceil(n/8) * 8 }

// RowBytes is the UnsafeRow size of a row of cols, each variable-width
// value Width bytes long.
func RowBytes(cols []Column) float64 {
	n := float64(len(cols))
	b := math.Ceil(n/64)*8 + 8*n
	for _, c := range cols {
		if !fixedTypes[c.Type] {
			b += round8(c.Width)
		}
	}
	return b
}

// ParseSchema reads --schema: comma-separated "name TYPE" pairs in Spark's
// DDL, a variable-width type with the mean width of its values in bytes:
// "id STRING(12), ts TIMESTAMP", "payload BINARY(40)", "amount
// DECIMAL(38,2)" (a decimal of more than 18 digits keeps 16 bytes out of
// its slot).
func ParseSchema(ddl string) ([]Column, error) {
	var cols []Column
	for _, part := range splitTop(ddl) {
		f := strings.Fields(strings.TrimSpace(part))
		if len(f) > 2 && strings.Contains(f[1], "(") {
			f = []string{f[0], strings.Join(f[1:], "")} // DECIMAL(38, 2)
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("--schema %q: want name TYPE, e.g. \"id STRING(12), ts TIMESTAMP\"", strings.TrimSpace(part))
		}
		name, typ := f[0], strings.ToLower(f[1])
		for _, c := range cols {
			if c.Name == name {
				return nil, fmt.Errorf("--schema names %q twice", name)
			}
		}
		base, arg, hasArg := strings.Cut(typ, "(")
		col := Column{Name: name, Type: base}
		switch {
		case fixedTypes[base] && !hasArg:
		case base == "string" || base == "varchar" || base == "char" || base == "binary":
			if !hasArg || !strings.HasSuffix(arg, ")") {
				return nil, fmt.Errorf("--schema %s %s: give the mean width of its values in bytes, e.g. %s %s(12)", name, f[1], name, strings.ToUpper(base))
			}
			w, err := strconv.ParseFloat(strings.TrimSuffix(arg, ")"), 64)
			if err != nil || !(w >= 0 && w <= MaxBytesPerKey) {
				return nil, fmt.Errorf("--schema %s %s: the width must be a number of bytes in [0, 1,000,000]", name, f[1])
			}
			col.Type, col.Width = "string", w
			if base == "binary" {
				col.Type = "binary"
			}
		case base == "decimal" || base == "numeric":
			p := 10 // Spark's DECIMAL default precision
			if hasArg {
				ps, _, _ := strings.Cut(strings.TrimSuffix(arg, ")"), ",")
				v, err := strconv.Atoi(strings.TrimSpace(ps))
				if err != nil || v < 1 || v > 38 {
					return nil, fmt.Errorf("--schema %s %s: the precision must be in [1, 38]", name, f[1])
				}
				p = v
			}
			col.Type = "long" // a decimal of 18 digits or fewer is a long in its slot
			if p > 18 {
				col.Type, col.Width = "decimal", 16
			}
		default:
			return nil, fmt.Errorf("--schema %s %s: unknown or nested type; want one of string(N), binary(N), boolean, tinyint, smallint, int, bigint, float, double, date, timestamp, timestamp_ntz, decimal(P,S)", name, f[1])
		}
		cols = append(cols, col)
	}
	if len(cols) == 0 {
		return nil, errors.New("--schema names no column")
	}
	return cols, nil
}

// splitTop splits at commas outside parentheses.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if strings.TrimSpace(s[start:]) != "" || len(out) > 0 {
		out = append(out, s[start:])
	}
	return out
}

// SampleLineError is a bad line of --sample.
type SampleLineError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *SampleLineError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Field, e.Msg)
}

// MaxSampleLine caps one line of --sample, as analyze caps an event.
const MaxSampleLine = 16 << 20

// Sample is the key shape read from rows.
type Sample struct {
	Rows int64
	// KeyRowBytes is the mean UnsafeRow size of the key over the rows.
	KeyRowBytes float64
	Columns     []Column // with mean widths
}

// ReadSample reads --sample: JSON Lines, one row per line as exec reads
// them (blank lines and # comments skipped), and measures the key's
// UnsafeRow over the rows: each row's own size (its strings' UTF-8 bytes
// rounded up to 8), then the mean. A JSON string is a string column, a
// whole number a bigint (Spark's JSON inference), a fraction a double, true
// or false a boolean, null a null value (its slot only); timeCol, when a
// key column, is a timestamp whatever its JSON form. Every row must have
// every key column, of one JSON kind throughout; nested values are refused
// (give --schema). Memory: one line at a time.
func ReadSample(r io.Reader, file string, keys []string, timeCol string) (Sample, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	cols := make([]Column, len(keys))
	widths := make([]float64, len(keys))
	for i, k := range keys {
		cols[i].Name = k
	}
	var s Sample
	var total float64
	line := 0
	for {
		b, err := br.ReadSlice('\n')
		var long []byte
		for err == bufio.ErrBufferFull {
			long = append(long, b...)
			if len(long) > MaxSampleLine {
				return s, &SampleLineError{File: file, Line: line + 1, Msg: fmt.Sprintf("line longer than %d MiB", MaxSampleLine>>20)}
			}
			b, err = br.ReadSlice('\n')
		}
		if long != nil {
			b = append(long, b...)
		}
		if len(b) > 0 {
			line++
			if err := s.row(b, file, line, keys, timeCol, cols, widths, &total); err != nil {
				return s, err
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, fmt.Errorf("%s: %w", file, err)
		}
	}
	if s.Rows == 0 {
		return s, fmt.Errorf("%s: no rows: --sample needs at least one JSON object with the key columns", file)
	}
	for i := range cols {
		cols[i].Width = widths[i] / float64(s.Rows)
	}
	s.Columns, s.KeyRowBytes = cols, total/float64(s.Rows)
	return s, nil
}

func (s *Sample) row(b []byte, file string, line int, keys []string, timeCol string, cols []Column, widths []float64, total *float64) error {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || t[0] == '#' {
		return nil
	}
	bad := func(field, format string, args ...any) error {
		return &SampleLineError{File: file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(t, &obj); err != nil {
		return bad("", "not a JSON object: %v", err)
	}
	n := float64(len(keys))
	size := math.Ceil(n/64)*8 + 8*n
	for i, k := range keys {
		raw, ok := obj[k]
		if !ok {
			return bad(k, "missing (a key column)")
		}
		kind, width, err := jsonKind(raw)
		if err != nil {
			return bad(k, "%v", err)
		}
		if k == timeCol {
			if kind == "string" || kind == "bigint" || kind == "double" || kind == "null" {
				kind, width = "timestamp", 0
			} else {
				return bad(k, "the event time must be a number or an RFC 3339 string, got %s", kind)
			}
		}
		switch {
		case kind == "null":
		case cols[i].Type == "":
			cols[i].Type = kind
		case cols[i].Type != kind:
			return bad(k, "a %s here, a %s in the rows before: a column has one type", kind, cols[i].Type)
		}
		widths[i] += width
		size += round8(width)
	}
	s.Rows++
	*total += size
	return nil
}

// jsonKind is the Spark type JSON inference gives a value, and the bytes
// it keeps out of its slot.
func jsonKind(raw json.RawMessage) (string, float64, error) {
	switch raw[0] {
	case '"':
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", 0, err
		}
		if !utf8.ValidString(v) {
			return "", 0, errors.New("not valid UTF-8")
		}
		return "string", float64(len(v)), nil
	case 't', 'f':
		return "boolean", 0, nil
	case 'n':
		return "null", 0, nil
	case '{', '[':
		return "", 0, errors.New("a nested value: describe the key with --schema instead")
	}
	if bytes.ContainsAny(raw, ".eE") {
		return "double", 0, nil
	}
	return "bigint", 0, nil
}

// ValueRowBytes is the UnsafeRow of the dedup operator's value: one 8-byte
// field (void for dropDuplicates, the long expiresAtMicros for
// dropDuplicatesWithinWatermark) after a one-word bitset.
const ValueRowBytes = 16

// Layout is the bytes per key a store spends on one key of keyRow bytes.
type Layout struct {
	Store       string  `json:"store"` // hdfs or rocksdb
	KeyRowBytes float64 `json:"keyRowBytes"`
	ValueRow    float64 `json:"valueRowBytes"`
	// HDFS-backed store: RowsBytes is the key and value objects (shared
	// by the versions in memory), EntryBytes the map entry each version
	// keeps; MemoryUsedPerKey is what memoryUsedBytes / numRowsTotal shows
	// after a commit (the versions kept), HeapPerKey the heap at the peak
	// of a batch (those versions and the map being updated).
	RowsBytes        float64 `json:"rowsBytes,omitempty"`
	EntryBytes       float64 `json:"entryBytes,omitempty"`
	Versions         int     `json:"versionsInMemory,omitempty"`
	Churn            float64 `json:"churnPerBatch,omitempty"`
	MemoryUsedPerKey float64 `json:"memoryUsedPerKey,omitempty"`
	HeapPerKey       float64 `json:"heapPerKey,omitempty"`
	// RocksDB: KeyValueBytes is the key values' own bytes (a string's
	// UTF-8 width, a fixed-width type's width; the event time apart:
	// EventTimeInKey), DiskPerKey the SST bytes per key on local disk
	// after lz4 (SetKeyColumns); its memory is per instance, not per key.
	KeyValueBytes  float64 `json:"keyValueBytes,omitempty"`
	EventTimeInKey bool    `json:"eventTimeInKey,omitempty"`
	DiskPerKey     float64 `json:"diskPerKey,omitempty"`
}

// valueWidth is the bytes of a value of a fixed-width type.
var valueWidth = map[string]float64{
	"boolean": 1, "tinyint": 1, "byte": 1, "smallint": 2, "short": 2, "int": 4, "integer": 4, "date": 4,
	"float": 4, "real": 4, "bigint": 8, "long": 8, "double": 8, "timestamp": 8, "timestamp_ntz": 8,
}

// SetKeyColumns records the key's values (cols, as KeyColumns gives them,
// with their mean widths; timeCol the event time column) and, on RocksDB,
// sets DiskPerKey from them: RocksLiteralFactor x KeyValueBytes +
// RocksEntryBytes (+ RocksEventTimeBytes with the event time in the key).
// For random ids (UUIDs, hashes, random longs) the figure is what Spark
// writes; ids that share long prefixes or count up compress further, so it
// is then an upper bound.
func (l *Layout) SetKeyColumns(cols []Column, timeCol string) {
	l.KeyValueBytes, l.EventTimeInKey = 0, false
	for _, c := range cols {
		switch {
		case c.Name == timeCol && (c.Type == "timestamp" || c.Type == "timestamp_ntz"):
			l.EventTimeInKey = true
		case c.Type == "string" || c.Type == "binary" || c.Type == "decimal":
			l.KeyValueBytes += c.Width
		default:
			l.KeyValueBytes += valueWidth[c.Type] // void, null and a column always null: 0
		}
	}
	if l.Store != "rocksdb" {
		return
	}
	l.DiskPerKey = RocksLiteralFactor*l.KeyValueBytes + RocksEntryBytes
	if l.EventTimeInKey {
		l.DiskPerKey += RocksEventTimeBytes
	}
}

// StoreLayout is the layout of one key of keyRow bytes on store (hdfs or
// rocksdb; on RocksDB SetKeyColumns then gives the disk bytes). churn is the share of the keys replaced between two batches
// (trigger / retention, at most 1): the versions in memory share the rows
// of the keys they have in common, and each holds its own map entries.
func StoreLayout(store string, keyRow, churn float64, versions int) Layout {
	l := Layout{Store: store, KeyRowBytes: keyRow, ValueRow: ValueRowBytes}
	if store == "rocksdb" {
		return l // DiskPerKey: SetKeyColumns
	}
	churn = math.Max(0, math.Min(churn, 1))
	l.Versions, l.Churn = versions, churn
	l.RowsBytes = 2*unsafeRowObject + 2*byteArrayHeader + keyRow + ValueRowBytes
	l.EntryBytes = mapNode + tableSlot
	v := float64(versions)
	l.MemoryUsedPerKey = l.RowsBytes*(1+churn*(v-1)) + v*l.EntryBytes
	l.HeapPerKey = l.RowsBytes*(1+churn*v) + (v+1)*l.EntryBytes
	return l
}

// KeyColumns is the state key of api over the dedup columns keys: with
// dropDuplicates and the event time in its keys, timeCol is a timestamp
// column of the key (added when keys do not name it).
func KeyColumns(api query.API, keys []Column, timeCol string, eventTimeInKey bool) []Column {
	if api != query.DropDuplicates || !eventTimeInKey {
		return keys
	}
	for _, c := range keys {
		if c.Name == timeCol {
			return keys
		}
	}
	return append(append([]Column{}, keys...), Column{Name: timeCol, Type: "timestamp"})
}

// ParseSparkStore reads size's --store: hdfs (Spark's
// HDFSBackedStateStoreProvider) or rocksdb (RocksDBStateStoreProvider), or
// memory and pebble, dedupsim's analogues that --measure runs on. It
// returns the Spark store and dedupsim's.
func ParseSparkStore(s string) (spark, sim string, err error) {
	switch s {
	case "hdfs", "memory":
		return "hdfs", "memory", nil
	case "rocksdb", "pebble":
		return "rocksdb", "pebble", nil
	}
	hint := ""
	if m := Suggest(s, []string{"hdfs", "rocksdb", "memory", "pebble"}); m != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", m)
	}
	return "", "", fmt.Errorf("--store %q: unknown store%s; want hdfs or rocksdb (or memory and pebble, dedupsim's analogues of them)", s, hint)
}

// LayoutFor is the layout on the Spark store (hdfs or rocksdb) of the
// key: its columns from schema (ParseSchema's) or, when schema is nil, the
// key columns keys read from the JSON Lines rows of the file sample; a batch
// every trigger evicts trigger / retention of the keys, and the
// HDFS-backed store keeps versions of them.
func LayoutFor(p Params, spark string, schema []Column, keys []string, sample, timeCol string, trigger time.Duration, versions int) (*Layout, error) {
	var keyRow float64
	var keyCols []Column
	if schema != nil {
		keyCols = KeyColumns(p.API, schema, timeCol, p.EventTimeInKey)
		keyRow = RowBytes(keyCols)
	} else {
		var cols []Column
		for _, k := range keys {
			cols = append(cols, Column{Name: k})
		}
		var names []string
		for _, c := range KeyColumns(p.API, cols, timeCol, p.EventTimeInKey) {
			names = append(names, c.Name)
		}
		in, err := os.Open(sample)
		if err != nil {
			return nil, fmt.Errorf("--sample: %w", err)
		}
		defer in.Close()
		s, err := ReadSample(in, sample, names, timeCol)
		if err != nil {
			return nil, fmt.Errorf("--sample %w", err)
		}
		keyRow, keyCols = s.KeyRowBytes, s.Columns
	}
	churn := 0.0
	if ret, unbounded := Retention(p.API, p.Delay, p.EventTimeInKey); !unbounded && ret > 0 {
		churn = math.Min(1, trigger.Seconds()/ret)
	}
	l := StoreLayout(spark, keyRow, churn, versions)
	l.SetKeyColumns(keyCols, timeCol)
	return &l, nil
}

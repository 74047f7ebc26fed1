package delta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/engine/row"
)

// TableKeys is the multiset of a Delta table's keys: what `exec --check`
// holds a run's final table to when the expectation is a real table
// (docs/expectations.md). Memory: one entry per distinct key.
type TableKeys struct {
	Columns []string // the key columns, as the table names them
	cols    []keyColumn
	// Counts maps a key, a JSON array of its values as render writes it,
	// to the rows that hold it.
	Counts map[string]int64
	Rows   int64
}

// ReadKeys reads the keys of the table in dir over the given columns
// (empty: every column of the table).
func ReadKeys(dir string, keys []string) (*TableKeys, error) {
	t, log, err := open(dir)
	if err != nil {
		return nil, err
	}
	defer t.root.Close()
	if err := t.checkReadable(log); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		fields, err := Schema(log.Metadata)
		if err != nil {
			return nil, t.errf("_delta_log", "%v", err)
		}
		for _, f := range fields {
			keys = append(keys, f.Name)
		}
	}
	cols, err := keyColumns(log, keys)
	if err != nil {
		return nil, &KeyError{err}
	}
	k := &TableKeys{cols: cols, Counts: map[string]int64{}}
	for _, c := range cols {
		k.Columns = append(k.Columns, c.Name)
	}
	for _, f := range log.Files {
		n, err := t.scanFile(f, cols, func(key []byte) { k.Counts[render(key, cols)]++ })
		if err != nil {
			return nil, err
		}
		k.Rows += n
	}
	return k, nil
}

// RowKey writes a JSON row's key (an exec table row) as the table's keys
// are written: each column's value read as the column's type, the way
// Spark's JSON reader reads it in PERMISSIVE mode (a value that does not
// fit is null); a TIMESTAMP column takes exec's event-time forms (a number
// of seconds, an RFC 3339 string). Columns are found by name, exactly,
// else ignoring case.
func (k *TableKeys) RowKey(data []byte) (string, error) {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return "", fmt.Errorf("a table row that is not a JSON object: %v", err)
	}
	vals := make([]string, len(k.cols))
	for i, c := range k.cols {
		v, ok := obj[c.Name]
		if !ok {
			for name, x := range obj {
				if strings.EqualFold(name, c.Name) {
					v, ok = x, true
					break
				}
			}
		}
		s, err := typedValue(v, c.Type)
		if err != nil {
			return "", fmt.Errorf("column %s: %v", c.Name, err)
		}
		vals[i] = s
	}
	return "[" + strings.Join(vals, ",") + "]", nil
}

// typedValue renders a JSON value under a Delta type as render writes a
// value of that type.
func typedValue(v json.RawMessage, typ string) (string, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return "null", nil
	}
	var s string
	isStr := v[0] == '"' && json.Unmarshal(v, &s) == nil
	isNum := v[0] == '-' || v[0] >= '0' && v[0] <= '9'
	quote := func(x string) string { b, _ := json.Marshal(x); return string(b) }
	switch {
	case typ == "string":
		if isStr {
			return quote(s), nil
		}
		var b bytes.Buffer
		if json.Compact(&b, v) != nil {
			return "null", nil
		}
		return quote(b.String()), nil
	case typ == "long" || typ == "integer" || typ == "short" || typ == "byte":
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && isNum {
			return strconv.FormatInt(n, 10), nil
		}
		return "null", nil
	case typ == "double" || typ == "float":
		if f, err := strconv.ParseFloat(string(v), 64); err == nil && isNum {
			if typ == "float" {
				f = float64(float32(f))
			}
			return strconv.FormatFloat(f, 'g', -1, 64), nil
		}
		return "null", nil
	case typ == "boolean":
		if string(v) == "true" || string(v) == "false" {
			return string(v), nil
		}
		return "null", nil
	case typ == "timestamp" || typ == "timestamp_ntz":
		micros, null, err := row.ParseEventTime(v)
		if err != nil || null {
			return "null", nil
		}
		return renderInt(micros, typ), nil
	case typ == "date":
		if isStr {
			return quote(s), nil
		}
		return "null", nil
	case strings.HasPrefix(typ, "decimal"):
		var p, sc int
		if _, err := fmt.Sscanf(typ, "decimal(%d,%d)", &p, &sc); err != nil || !isNum {
			return "null", nil
		}
		r, ok := new(big.Rat).SetString(string(v))
		if !ok {
			return "null", nil
		}
		if sc <= 0 {
			return r.FloatString(0), nil
		}
		return quote(r.FloatString(sc)), nil
	}
	return "", fmt.Errorf("a key column of type %s is not compared", typ)
}

package delta

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// truth is what Spark read from a fixture table (scripts/delta/fixtures.py).
type truth struct {
	Rows          int64    `json:"rows"`
	Keys          []string `json:"keys"`
	DuplicateKeys int64    `json:"duplicateKeys"`
	ExtraRows     int64    `json:"extraRows"`
	Duplicates    []struct {
		Key   []any `json:"key"`
		Count int64 `json:"count"`
	} `json:"duplicates"`
	Operations map[string]string `json:"operations"`
	Writes     []Txn             `json:"writes"`
}

// TestFixtures: on every real Delta table written by Spark and Delta Lake
// (testdata/*/table), inspect reports the rows, the keys held more than
// once (count, extra rows, the keys themselves), the operation of every
// version and the txn versions exactly as Spark read them and as the
// writer wrote them (a write Delta skipped, same app id and a version
// already committed, leaves no txn action).
func TestFixtures(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/*/truth.json")
	if len(dirs) < 7 {
		t.Fatalf("%d fixture tables, want the 7 of scripts/delta/fixtures.py", len(dirs))
	}
	for _, tp := range dirs {
		dir := filepath.Dir(tp)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			var tr truth
			data, err := os.ReadFile(tp)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &tr); err != nil {
				t.Fatal(err)
			}
			r, err := Inspect(filepath.Join(dir, "table"), Options{Keys: tr.Keys, Sample: 100})
			if name == "deletion-vectors" {
				var de *Error
				if !errors.As(err, &de) || !strings.Contains(err.Error(), "deletion vectors") {
					t.Fatalf("a table with deletion vectors: %v, want them refused by name", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Rows != tr.Rows || r.DuplicateKeys != tr.DuplicateKeys || r.ExtraRows != tr.ExtraRows {
				t.Errorf("rows %d, duplicate keys %d, extra rows %d; Spark: %d, %d, %d", r.Rows, r.DuplicateKeys, r.ExtraRows, tr.Rows, tr.DuplicateKeys, tr.ExtraRows)
			}
			var got, want []string
			for _, d := range r.Duplicates {
				got = append(got, normKey(d.Key)+" x"+strconv.FormatInt(d.Count, 10))
			}
			for _, d := range tr.Duplicates {
				b, _ := json.Marshal(d.Key)
				want = append(want, normKey(b)+" x"+strconv.FormatInt(d.Count, 10))
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("duplicates %v, Spark %v", got, want)
			}
			ops := map[string]string{}
			for _, o := range r.Operations {
				ops[strconv.FormatInt(o.Version, 10)] = o.Operation
			}
			if !mapsEqual(ops, tr.Operations) {
				t.Errorf("operations %v, Spark's history %v", ops, tr.Operations)
			}
			// The txn actions: the writer's writes less those Delta skipped.
			var wantTxn, gotTxn []Txn
			last := map[string]int64{}
			for _, w := range tr.Writes {
				if v, ok := last[w.AppID]; ok && w.Version <= v {
					continue
				}
				last[w.AppID] = w.Version
				wantTxn = append(wantTxn, w)
			}
			l, err := ReadLog(filepath.Join(dir, "table"))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range l.Commits {
				gotTxn = append(gotTxn, c.Txns...)
			}
			if !slices.Equal(gotTxn, wantTxn) {
				t.Errorf("txn actions %v, the writer's %v", gotTxn, wantTxn)
			}
		})
	}
}

// normKey writes a key's JSON array with timestamps as Python's isoformat
// writes a naive UTC datetime (no Z, no trailing zero fraction).
func normKey(b []byte) string {
	var vals []any
	_ = json.Unmarshal(b, &vals)
	for i, v := range vals {
		if s, ok := v.(string); ok && len(s) >= 19 && s[4] == '-' && s[10] == 'T' {
			s = strings.TrimSuffix(s, "Z")
			vals[i] = strings.Replace(s, " ", "T", 1)
		}
	}
	out, _ := json.Marshal(vals)
	return string(out)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

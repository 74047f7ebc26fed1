package source

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/dedupsim/dedupsim/engine/row"
)

// FuzzParseOffset: a memory source offset read from a checkpoint is a row
// count written canonically; anything else is refused.
func FuzzParseOffset(f *testing.F) {
	for _, s := range []string{"0", "12", "-1", "01", "+3", "1.5", "1e3", "99999999999999999999", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseOffset(json.RawMessage(s))
		if err != nil {
			return
		}
		if n < 0 || strconv.Itoa(n) != s {
			t.Fatalf("accepted %q as %d", s, n)
		}
	})
}

// TestMemoryTrim: trimmed rows are gone, offsets keep counting from the
// start, and a range reaching before the trim is an error, not other rows.
func TestMemoryTrim(t *testing.T) {
	m := NewMemory("s")
	for i := range 10 {
		m.Append(row.Row{Data: json.RawMessage(strconv.Itoa(i))})
	}
	if err := m.Trim(json.RawMessage("4")); err != nil {
		t.Fatal(err)
	}
	if m.Len() != 10 {
		t.Fatalf("Len after trim %d", m.Len())
	}
	rows, err := m.Rows(json.RawMessage("4"), json.RawMessage("6"))
	if err != nil || len(rows) != 2 || string(rows[0].Data) != "4" {
		t.Fatalf("rows (4, 6]: %v %v", rows, err)
	}
	if _, err := m.Rows(json.RawMessage("3"), json.RawMessage("6")); err == nil {
		t.Fatal("a range before the trim was served")
	}
	if _, err := m.Rows(json.RawMessage("6"), json.RawMessage("11")); err == nil {
		t.Fatal("a range beyond the source was served")
	}
	if err := m.Trim(json.RawMessage("100")); err != nil || m.Len() != 10 {
		t.Fatalf("trim beyond the end: %v, Len %d", err, m.Len())
	}
	m.Append(row.Row{Data: json.RawMessage("10")})
	if rows, err := m.Rows(json.RawMessage("10"), json.RawMessage("11")); err != nil || string(rows[0].Data) != "10" {
		t.Fatalf("after a full trim: %v %v", rows, err)
	}
}

// TestMemoryTake: an empty source keeps the slice it is given, and neither
// Trim nor a later Append writes into it; offsets go on as with Append.
func TestMemoryTake(t *testing.T) {
	m := NewMemory("s")
	given := []row.Row{{Data: json.RawMessage("0")}, {Data: json.RawMessage("1")}, {Data: json.RawMessage("2")}}
	m.Take(given)
	m.Take([]row.Row{{Data: json.RawMessage("3")}}) // not empty: copied after
	if err := m.Trim(json.RawMessage("1")); err != nil {
		t.Fatal(err)
	}
	m.Append(row.Row{Data: json.RawMessage("4")})
	rows, err := m.Rows(json.RawMessage("1"), json.RawMessage("5"))
	if err != nil || len(rows) != 4 || string(rows[0].Data) != "1" || string(rows[3].Data) != "4" {
		t.Fatalf("rows (1, 5]: %v %v", rows, err)
	}
	if err := m.Trim(json.RawMessage("5")); err != nil {
		t.Fatal(err)
	}
	for i, r := range given {
		if string(r.Data) != strconv.Itoa(i) {
			t.Fatalf("the given slice was changed: %v", given)
		}
	}
	// Trimmed while it holds the given slice: the rest is copied out.
	m2 := NewMemory("s")
	m2.Take(given)
	if err := m2.Trim(json.RawMessage("2")); err != nil {
		t.Fatal(err)
	}
	if rows, err := m2.Rows(json.RawMessage("2"), json.RawMessage("3")); err != nil || string(rows[0].Data) != "2" {
		t.Fatalf("after a trim of a taken slice: %v %v", rows, err)
	}
	if string(given[0].Data) != "0" || string(given[1].Data) != "1" {
		t.Fatalf("Trim cleared the given slice: %v", given)
	}
	m.Take(given[:1]) // empty again: kept, at offset 5
	if rows, err := m.Rows(json.RawMessage("5"), json.RawMessage("6")); err != nil || string(rows[0].Data) != "0" {
		t.Fatalf("after a full trim: %v %v", rows, err)
	}
}

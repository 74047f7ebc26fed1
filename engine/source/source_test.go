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

package schema

import (
	"strings"
	"testing"
)

// The expectations are java.lang.String.equalsIgnoreCase's answers (JDK
// 17); the EqualFold column shows where Go's folding differs.
func TestEqualsIgnoreCase(t *testing.T) {
	for _, c := range []struct {
		a, b       string
		java, fold bool
	}{
		{"id", "ID", true, true},
		{"id", "Id", true, true},
		{"event_ts", "EVENT_TS", true, true},
		{"id", "idx", false, false},
		{"", "", true, true},
		{"a", "", false, false},
		{"i", "İ", true, false},     // U+0130: toLowerCase is i
		{"I", "İ", true, false},     // its upper cases differ, lower cases meet
		{"i", "ı", true, false},     // U+0131: toUpperCase is I
		{"I", "ı", true, false},     // equal upper cases
		{"İ", "ı", true, false},     // upper İ and I, lower i and i
		{"k", "\u212a", true, true}, // Kelvin sign: lower case k
		{"K", "\u212a", true, true},
		{"ß", "SS", false, false}, // one character against two
		{"straße", "STRASSE", false, false},
		{"é", "É", true, true},
		{"σ", "ς", true, true}, // both upper to Σ
		{"𐐨", "𐐀", true, true}, // Deseret, outside the BMP
		{"a𐐨", "a\u0428", false, false},
	} {
		if got := EqualsIgnoreCase(c.a, c.b); got != c.java {
			t.Errorf("EqualsIgnoreCase(%q, %q) = %v, want %v (Java)", c.a, c.b, got, c.java)
		}
		if got := EqualsIgnoreCase(c.b, c.a); got != c.java {
			t.Errorf("EqualsIgnoreCase(%q, %q) = %v, want %v (Java, swapped)", c.b, c.a, got, c.java)
		}
		if got := strings.EqualFold(c.a, c.b); got != c.fold {
			t.Errorf("strings.EqualFold(%q, %q) = %v: the table's note is wrong", c.a, c.b, got)
		}
	}
}

func TestResolve(t *testing.T) {
	s, err := ParseDDL("id STRING, `İd` STRING, event_ts TIMESTAMP")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cs   bool
		want int
	}{
		{"id", false, 0},
		{"ID", false, 0},
		{"ID", true, -1},
		{"İd", false, 1}, // exact match first
		{"İD", false, 0}, // i, İ and I are equal for Java: the first column
		{"EVENT_TS", false, 2},
		{"ıd", false, 0},
		{"nope", false, -1},
	} {
		if got := s.Resolve(c.name, c.cs); got != c.want {
			t.Errorf("Resolve(%q, caseSensitive=%v) = %d, want %d", c.name, c.cs, got, c.want)
		}
	}
}

func TestCompareJava(t *testing.T) {
	// U+FF5E sorts before U+1F600 by bytes, after it by UTF-16 code units.
	if CompareJava("\uff5e", "\U0001F600") <= 0 || strings.Compare("\uff5e", "\U0001F600") >= 0 {
		t.Error("Java order is by UTF-16 code units")
	}
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "a", -1}, {"a", "b", -1}, {"B", "a", -1}, {"ab", "a", 1},
		{"\U0001F600", "\U0001F601", -1}, {"\U0001F600x", "\U0001F600", 1}, {"é", "e", 1},
	} {
		if got := CompareJava(c.a, c.b); got != c.want {
			t.Errorf("CompareJava(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

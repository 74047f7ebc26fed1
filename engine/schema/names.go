package schema

import (
	"cmp"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// EqualsIgnoreCase is java.lang.String.equalsIgnoreCase, the comparison
// of Spark's case-insensitive resolver (caseInsensitiveResolution, used
// while spark.sql.caseSensitive is false, the default): the two names
// have the same length in UTF-16 code units and, character by character,
// are equal, or equal after Character.toUpperCase, or equal after
// Character.toLowerCase of those upper cases (String.regionMatches with
// ignoreCase; JDK 16+ compares a surrogate pair as its code point).
//
// This is not strings.EqualFold, which compares Unicode simple case
// folds: for Java "i" equals "İ" (U+0130, whose lower case is i) and "ı"
// (U+0131, whose upper case is I), for EqualFold neither; both say the
// Kelvin sign K (U+212A) equals k.
func EqualsIgnoreCase(a, b string) bool {
	if a == b {
		return true
	}
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		a, b = a[na:], b[nb:]
		if ra == rb {
			continue
		}
		// A character outside the BMP is two UTF-16 units, inside one:
		// Java's lengths differ, and so do the strings.
		if (ra >= 0x10000) != (rb >= 0x10000) {
			return false
		}
		ua, ub := unicode.ToUpper(ra), unicode.ToUpper(rb)
		if ua == ub {
			continue
		}
		if unicode.ToLower(ua) == unicode.ToLower(ub) {
			continue
		}
		return false
	}
	return a == "" && b == ""
}

// SameName is Spark's resolver: exact with caseSensitive, else
// EqualsIgnoreCase.
func SameName(a, b string, caseSensitive bool) bool {
	if caseSensitive {
		return a == b
	}
	return EqualsIgnoreCase(a, b)
}

// Resolve is the column that name resolves to, as Spark's analyzer
// resolves a column name against a relation's output: the first column
// whose name is name (caseSensitive) or equals it ignoring case (Java's
// rule, EqualsIgnoreCase); -1 when none does. A schema never has two
// names that differ only in case (Add refuses them), so at most one
// column matches.
func (s *Schema) Resolve(name string, caseSensitive bool) int {
	if i := s.Index(name); i >= 0 {
		return i
	}
	if caseSensitive {
		return -1
	}
	for i := range s.Fields {
		if EqualsIgnoreCase(s.Fields[i].Name, name) {
			return i
		}
	}
	return -1
}

// LowerRoot is java.lang.String.toLowerCase(Locale.ROOT), which Spark's
// analyzer keys its column lookup by (AttributeSeq) and its duplicate
// column check compares (SchemaUtils): each character's simple lower case,
// except the two full mappings of SpecialCasing that apply in every
// language: U+0130 (İ) becomes "i\u0307", and a capital sigma that ends a
// word becomes the final sigma ς.
func LowerRoot(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch {
		case r == 0x130:
			b.WriteString("i\u0307")
		case r == 0x3a3 && finalSigma(s, i):
			b.WriteRune(0x3c2)
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma is SpecialCasing's Final_Sigma condition for the sigma at
// byte i of s: a cased letter before it (case-ignorable characters
// skipped) and none after it.
func finalSigma(s string, i int) bool {
	before := false
	for j := i; j > 0; {
		r, n := utf8.DecodeLastRuneInString(s[:j])
		j -= n
		if isCaseIgnorable(r) {
			continue
		}
		before = isCased(r)
		break
	}
	if !before {
		return false
	}
	for j := i + 2; j < len(s); { // Σ is two bytes
		r, n := utf8.DecodeRuneInString(s[j:])
		j += n
		if isCaseIgnorable(r) {
			continue
		}
		return !isCased(r)
	}
	return true
}

func isCased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r)
}

func isCaseIgnorable(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk) || r == '\'' || r == '.' || r == ':' || r == 0xb7 || r == 0x2019
}

// CompareJava orders strings as java.lang.String.compareTo does, by UTF-16
// code units (which differs from byte order only between characters
// beyond U+FFFF and those from U+E000 to U+FFFF): the order of the
// columns and struct fields Spark's JSON inference sorts.
func CompareJava(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		a, b = a[na:], b[nb:]
		if ra == rb {
			continue
		}
		if c := cmp.Compare(utf16Unit(ra, 0), utf16Unit(rb, 0)); c != 0 {
			return c
		}
		// Two characters beyond U+FFFF with one high surrogate.
		return cmp.Compare(utf16Unit(ra, 1), utf16Unit(rb, 1))
	}
	return cmp.Compare(len(a), len(b))
}

// utf16Unit is the i-th UTF-16 code unit of r (i is 1 only for a
// character beyond U+FFFF, two units).
func utf16Unit(r rune, i int) rune {
	if r < 0x10000 {
		return r
	}
	hi, lo := utf16.EncodeRune(r)
	if i == 0 {
		return hi
	}
	return lo
}

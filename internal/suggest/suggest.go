// Package suggest finds the known names close to a misspelt one, for the
// "did you mean" of the CLI's error messages (verbs, flags, scenario names).
package suggest

import (
	"sort"
	"strings"

	edlib "github.com/hbollon/go-edlib"
)

// Closest returns the known names close enough to word to be a typo of it,
// nearest first (ties in the order of known): within one edit per three
// letters (at least one, at most three; a swap of two neighbours is one
// edit, so "sede" finds "seed"), or names that word is a prefix
// of (at least three letters), the way "--first" finds "--first-seed".
// Case and '-' versus '_' are ignored. It returns nil for an exact match.
func Closest(word string, known []string) []string {
	w := norm(word)
	if w == "" {
		return nil
	}
	type cand struct {
		name string
		d, i int
	}
	var cs []cand
	for i, k := range known {
		nk := norm(k)
		if nk == w {
			return nil
		}
		d := edlib.OSADamerauLevenshteinDistance(w, nk)
		limit := min(max(len(nk)/3, 1), 3)
		switch {
		case d <= limit:
		case len(w) >= 3 && strings.HasPrefix(nk, w):
			d = limit + 1 // a prefix ranks after every near miss
		default:
			continue
		}
		cs = append(cs, cand{k, d, i})
	}
	sort.SliceStable(cs, func(a, b int) bool { return cs[a].d < cs[b].d })
	var out []string
	for _, c := range cs {
		out = append(out, c.name)
	}
	return out
}

// Phrase renders the suggestions as " (did you mean x?)" or
// " (did you mean x or y?)", at most three, quoted by quote; "" for none.
func Phrase(names []string, quote func(string) string) string {
	if len(names) == 0 {
		return ""
	}
	if len(names) > 3 {
		names = names[:3]
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return " (did you mean " + OrList(q) + "?)"
}

// OrList writes choices as messages give them: "a, b or c", "a or b",
// "a"; "" for none. It is the project's one such join.
func OrList[T ~string](choices []T) string {
	s := make([]string, len(choices))
	for i, c := range choices {
		s[i] = string(c)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// Best returns the one known name to suggest for word, or "": a name that
// differs from it only in case or '-' versus '_' first (so that a value
// given in the wrong case is corrected), else the nearest of Closest.
func Best(word string, known []string) string {
	for _, k := range known {
		if norm(k) == norm(word) {
			return k
		}
	}
	if c := Closest(word, known); len(c) > 0 {
		return c[0]
	}
	return ""
}

// norm folds case and '_' into '-', as Closest compares names.
func norm(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "-") }

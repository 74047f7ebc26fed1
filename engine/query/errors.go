package query

import (
	"strconv"
	"strings"
)

// Error is a problem with the query file: what `dedupsim exec` reports with
// exit status 2. It prints as "file:line: path: message".
type Error struct {
	File string
	// Line is 1-based; 0 when the problem has no line (an empty file).
	Line int
	// Path is the field, e.g. "dedup.api" or "sources[1].watermark.delay";
	// empty for the document as a whole.
	Path string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// suggest returns the known word closest to word when it is close enough to
// be a typo, else "". Comparison ignores case and treats '-' as '_' so that
// "Shuffle-Partitions" still finds "shuffle_partitions".
func suggest(word string, known []string) string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	w := norm(word)
	best, bestDist := "", -1
	for _, k := range known {
		d := editDistance(w, norm(k))
		// Allow roughly one edit per three letters, at least one and at most
		// three: "nme" finds "name", "api" does not find "app_id".
		limit := min(max(len(k)/3, 1), 3)
		if d <= limit && (bestDist < 0 || d < bestDist) {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance over bytes:
// Levenshtein plus transposition of neighbours, so "dealy" is one edit from
// "delay".
func editDistance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j]; three rows suffice.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// orList renders ["a","b","c"] as "a, b or c".
func orList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

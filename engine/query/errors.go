package query

import (
	"strconv"
	"strings"

	suggestpkg "github.com/dedupsim/dedupsim/internal/suggest"
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
	// Analysis is the error class of a refusal that Spark's analysis makes
	// of the same query when it starts (EVENT_TIME_IS_NOT_ON_TIMESTAMP_TYPE,
	// UNSUPPORTED_FEATURE.SET_OPERATION_ON_MAP_TYPE, ...): the conformance
	// suite runs such queries on Spark and compares the classes. Empty for
	// dedupsim's own refusals of bad input.
	Analysis string
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
// be a typo, else "": the project's one rule (internal/suggest.Best: case and
// '-' versus '_' ignored, about one edit per three letters, a swap of
// neighbours one edit), so "Shuffle-Partitions" finds "shuffle_partitions"
// and "dealy" finds "delay".
func suggest(word string, known []string) string { return suggestpkg.Best(word, known) }

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

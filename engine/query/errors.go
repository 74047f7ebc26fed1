package query

import (
	suggestpkg "github.com/dedupsim/dedupsim/internal/suggest"
	"github.com/dedupsim/dedupsim/internal/yamlstrict"
)

// Error is a problem with the query file: what `dedupsim exec` reports with
// exit status 2. It prints as "file:line: path: message", the way every
// strict YAML front end prints its problems (internal/yamlstrict.Format).
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

func (e *Error) Error() string { return yamlstrict.Format(e.File, e.Line, e.Path, e.Msg) }

// suggest returns the known word closest to word when it is close enough to
// be a typo, else "": the project's one rule (internal/suggest.Best: case and
// '-' versus '_' ignored, about one edit per three letters, a swap of
// neighbours one edit), so "Shuffle-Partitions" finds "shuffle_partitions"
// and "dealy" finds "delay".
func suggest(word string, known []string) string { return suggestpkg.Best(word, known) }

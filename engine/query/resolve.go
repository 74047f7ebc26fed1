package query

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dedupsim/dedupsim/engine/schema"
	"github.com/dedupsim/dedupsim/engine/sink"
)

// Column resolution as Spark's analyzer does it (spark-semantics.md
// §15.4). Under spark.sql.caseSensitive=false (Spark's default; the
// query's case_sensitive: true makes it exact) a name written in the query
// resolves to a column of the stream's schema whose name equals it as
// java.lang.String.equalsIgnoreCase says (schema.EqualsIgnoreCase), and
// from then on the query uses the column's own name: the state key schema
// Spark stores holds the resolved names.
//
//   - dedup keys: Dataset.groupColsFromDropDuplicates keeps every column
//     the resolver matches (`allColumns.filter(col => resolver(col.name,
//     colName))`), over the names made distinct by `toSet.toSeq` (the key
//     order, StateKeyOrder, is that of the names as written). No
//     ambiguity error: keys [k, K] on a column k are the key (k, k); a
//     name no column matches is refused with Spark's message
//     (QueryCompilationErrors.cannotResolveColumnNameAmongAttributesError,
//     a legacy error without a class in its text).
//   - the watermark column (and the merge sink's match columns, which
//     stand for user code resolved the same way): an UnresolvedAttribute,
//     resolved by the analyzer (AttributeSeq.resolve): the candidates are
//     the columns whose names lower-case (Locale.ROOT) to the name's lower
//     case, kept when the resolver matches; none is UNRESOLVED_COLUMN, two
//     or more AMBIGUOUS_REFERENCE. withWatermark on a declared column
//     that is not a TIMESTAMP fails analysis (CheckAnalysis:
//     EVENT_TIME_IS_NOT_ON_TIMESTAMP_TYPE); an inferred column (a number
//     or a string) keeps exec's meaning of an event time.

// ResolveError is a name of the query that the schema does not resolve.
type ResolveError struct {
	// Field says which of the query's names: "key", "event-time" or
	// "sink".
	Field string
	Name  string
	Msg   string
	// Unresolved: no column matches Name (else the match is ambiguous or
	// of the wrong type).
	Unresolved bool
	// Class is the error class Spark's analysis raises for the same query
	// (and Error.Analysis carries it on): set for the refusals that depend
	// on a column's type, which Spark raises when the query starts.
	Class string
}

func (e *ResolveError) Error() string { return e.Msg }

// ResolveColumns resolves the query's column names against s (the stream's
// schema, declared or inferred): dedup keys, the watermark column and the
// sink's match columns become the names of the columns they resolve to,
// Spark's rules above. The names as written stay in KeyNames and
// Watermark.Written (the runner hands those to Spark). Calling it again,
// with the same or another schema, resolves the written names afresh.
func (q *Query) ResolveColumns(s *schema.Schema) error {
	if s == nil {
		return nil
	}
	if err := checkMapKeys(s); err != nil {
		return err
	}
	cs := q.CaseSensitive
	if q.KeyNames == nil && len(q.Keys) > 0 {
		q.KeyNames = slices.Clone(q.Keys)
	}
	if q.Sink.KeyNames == nil && len(q.Sink.Keys) > 0 {
		q.Sink.KeyNames = slices.Clone(q.Sink.Keys)
	}
	var keys []string
	byName := make(map[string][]string, len(q.KeyNames))
	for _, n := range q.KeyNames {
		var cols []string
		for _, f := range s.Fields {
			if schema.SameName(f.Name, n, cs) {
				cols = append(cols, f.Name)
			}
		}
		if len(cols) == 0 {
			return &ResolveError{Field: "key", Name: n, Unresolved: true, Msg: fmt.Sprintf("Cannot resolve column name %q among (%s)%s", n, strings.Join(s.Names(), ", "), caseHint(n, s, cs))}
		}
		byName[n] = cols
		keys = append(keys, cols...)
	}
	if len(q.KeyNames) > 0 {
		q.Keys = keys
		q.keyCols = byName
	}
	for i := range q.Sources {
		w := q.Sources[i].Watermark
		if w == nil {
			continue
		}
		if w.Written == "" {
			w.Written = w.Column
		}
		col, err := resolveAttribute(s, w.Written, cs, "event-time")
		if err != nil {
			return err
		}
		w.Column = col
		if !q.SchemaInferred {
			if t := s.Fields[s.Index(col)].Type; t.Kind != schema.Timestamp {
				return &ResolveError{Field: "event-time", Name: w.Written, Class: "EVENT_TIME_IS_NOT_ON_TIMESTAMP_TYPE", Msg: fmt.Sprintf("[EVENT_TIME_IS_NOT_ON_TIMESTAMP_TYPE] The event time %s has the invalid type \"%s\", but expected \"TIMESTAMP\". (withWatermark needs a TIMESTAMP column: declare it TIMESTAMP, or leave the schema out and exec reads numbers as seconds and strings as RFC 3339)", sqlID(w.Written), t.DDL())}
			}
		}
	}
	if err := q.checkKeyTypes(s); err != nil {
		return err
	}
	if len(q.Sink.KeyNames) > 0 {
		q.Sink.Keys = q.Sink.Keys[:0]
		for _, n := range q.Sink.KeyNames {
			col, err := resolveAttribute(s, n, cs, "sink")
			if err != nil {
				return err
			}
			q.Sink.Keys = append(q.Sink.Keys, col)
		}
	}
	return q.checkMergeKeyTypes(s)
}

// checkMergeKeyTypes refuses a merge sink whose match columns (sink.keys,
// else the dedup keys) are or hold a map: the sink is the user's
// MERGE INTO t USING s ON t.k = s.k, and Spark's analysis of `=` refuses a
// map operand (DATATYPE_MISMATCH.INVALID_ORDERING_TYPE, seen on Spark 4.1.1
// with Delta 4.4.0 at the first MERGE). dropDuplicatesWithinWatermark may
// key on a map; its merge sink cannot. A plain error (no Class): Spark
// raises it inside the batch, not when the query starts, so conform does
// not compare it as an analysis refusal.
func (q *Query) checkMergeKeyTypes(s *schema.Schema) error {
	if q.Sink.Kind != sink.KindMerge {
		return nil
	}
	keys, field := q.Sink.Keys, "sink"
	if len(keys) == 0 {
		keys, field = q.Keys, "key"
	}
	if k, t, ok := firstMap(s, keys); ok {
		return &ResolveError{Field: field, Name: k, Msg: fmt.Sprintf(
			"[DATATYPE_MISMATCH.INVALID_ORDERING_TYPE] the merge sink matches on %s of type \"%s\", and Spark's MERGE ... ON t.%s = s.%s cannot compare it: the `=` does not support ordering on a map type. Match on other columns (sink.keys) or use the table or append sink",
			sqlID(k), t.DDL(), sqlID(k), sqlID(k))}
	}
	return nil
}

// resolveAttribute is the analyzer's resolution of one column name.
func resolveAttribute(s *schema.Schema, name string, cs bool, field string) (string, error) {
	low := schema.LowerRoot(name)
	var cands []string
	for _, f := range s.Fields {
		if schema.LowerRoot(f.Name) == low && schema.SameName(f.Name, name, cs) {
			cands = append(cands, f.Name)
		}
	}
	switch len(cands) {
	case 1:
		return cands[0], nil
	case 0:
		what := "event-time column"
		if field == "sink" {
			what = "sink match column"
		}
		return "", &ResolveError{Field: field, Name: name, Unresolved: true, Msg: fmt.Sprintf("[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name %s cannot be resolved: the %s is not a column of the schema (%s)%s", sqlID(name), what, strings.Join(s.Names(), ", "), caseHint(name, s, cs))}
	}
	ids := make([]string, len(cands))
	for i, c := range cands {
		ids[i] = sqlID(c)
	}
	return "", &ResolveError{Field: field, Name: name, Msg: fmt.Sprintf("[AMBIGUOUS_REFERENCE] Reference %s is ambiguous, could be: [%s].", sqlID(name), strings.Join(ids, ", "))}
}

// caseHint says why a name did not resolve when the case is the reason
// (case_sensitive: true), or suggests a near name.
func caseHint(name string, s *schema.Schema, cs bool) string {
	if cs {
		for _, f := range s.Fields {
			if schema.EqualsIgnoreCase(f.Name, name) {
				return fmt.Sprintf(" (case_sensitive is true: %q is not %q)", name, f.Name)
			}
		}
	}
	if h := suggest(name, s.Names()); h != "" {
		return fmt.Sprintf(" (did you mean %q?)", h)
	}
	return ""
}

// sqlID is Spark's toSQLId of a one-part name: in backquotes, a backquote
// doubled.
func sqlID(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// checkMapKeys refuses a map anywhere in the schema whose key type is not
// STRING: Spark's JSON reader takes only string keys (from_json's check,
// DATATYPE_MISMATCH.INVALID_JSON_MAP_KEY_TYPE; a file source refuses the
// schema as INVALID_JSON_SCHEMA_MAP_TYPE).
func checkMapKeys(s *schema.Schema) error {
	for _, f := range s.Fields {
		if k, ok := nonStringMapKey(f.Type); ok {
			return &ResolveError{Field: "schema", Name: f.Name, Class: "DATATYPE_MISMATCH.INVALID_JSON_MAP_KEY_TYPE", Msg: fmt.Sprintf(
				"[DATATYPE_MISMATCH.INVALID_JSON_MAP_KEY_TYPE] Cannot resolve \"from_json(value)\" due to data type mismatch: Input schema \"%s\" can only contain STRING as a key type for a MAP (column %s has a map keyed by %s; a file source refuses the schema as INVALID_JSON_SCHEMA_MAP_TYPE).",
				schema.StructOf(s.Fields...).DDL(), sqlID(f.Name), k.DDL())}
		}
	}
	return nil
}

// checkKeyTypes refuses a dedup key column that is or holds a map, for
// dropDuplicates and batch dropDuplicates: CheckAnalysis refuses a
// Deduplicate whose keys hold a map (mapColumnInSetOperation,
// UNSUPPORTED_FEATURE.SET_OPERATION_ON_MAP_TYPE), naming the first such
// key in the key order. dropDuplicatesWithinWatermark is another plan
// node (DeduplicateWithinWatermark), which the check does not cover: it
// keys on the map's bytes, its entries in the order the JSON gave them.
func (q *Query) checkKeyTypes(s *schema.Schema) error {
	if q.API == DropDuplicatesWithinWatermark {
		return nil
	}
	if k, t, ok := firstMap(s, q.StateKeys()); ok {
		return &ResolveError{Field: "key", Name: k, Class: "UNSUPPORTED_FEATURE.SET_OPERATION_ON_MAP_TYPE", Msg: fmt.Sprintf(
			"[UNSUPPORTED_FEATURE.SET_OPERATION_ON_MAP_TYPE] The feature is not supported: Cannot have MAP type columns in DataFrame which calls set operations (INTERSECT, EXCEPT, etc.), but the type of column %s is \"%s\". SQLSTATE: 0A000 (Spark cannot deduplicate on a map; dropDuplicatesWithinWatermark can, comparing the entries in their order)",
			sqlID(k), t.DDL())}
	}
	return nil
}

// firstMap finds the first of cols (in their order) that is or holds a
// map in s.
func firstMap(s *schema.Schema, cols []string) (string, schema.Type, bool) {
	for _, k := range cols {
		if i := s.Index(k); i >= 0 && s.Fields[i].Type.HasMap() {
			return k, s.Fields[i].Type, true
		}
	}
	return "", schema.Type{}, false
}

// nonStringMapKey finds a map in t whose key type is not STRING.
func nonStringMapKey(t schema.Type) (schema.Type, bool) {
	switch t.Kind {
	case schema.Map:
		if t.Key.Kind != schema.String {
			return *t.Key, true
		}
		return nonStringMapKey(*t.Elem)
	case schema.Array:
		return nonStringMapKey(*t.Elem)
	case schema.Struct:
		for _, f := range t.Fields {
			if k, ok := nonStringMapKey(f.Type); ok {
				return k, true
			}
		}
	}
	return schema.Type{}, false
}

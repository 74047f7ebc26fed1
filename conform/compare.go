package conform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/sink"
)

// Verdict is the result of comparing one case.
type Verdict int

// The verdicts.
const (
	// Agree: every batch execution matched.
	Agree Verdict = iota
	// Disagree: a difference no expected difference explains.
	Disagree
	// Expected: a difference explained by an entry of ExpectedDifferences.
	Expected
	// Skipped: the case was not run on Spark (the runner cannot express it,
	// or dedupsim refuses it as bad input).
	Skipped
)

func (v Verdict) String() string {
	return [...]string{"agree", "disagree", "expected", "skipped"}[v]
}

// Diff is the first difference between the two outcomes.
type Diff struct {
	// Exec is the index of the first execution that differs (-1: the
	// outcome as a whole, e.g. only one side failed).
	Exec int
	// Field names what differs ("rows", "batchId", "stateOperators[0].numRowsTotal", "error").
	Field string
	// Engine and Spark are the two values.
	Engine, Spark string
}

func (d *Diff) String() string {
	if d.Exec < 0 {
		return fmt.Sprintf("%s: dedupsim %s, Spark %s", d.Field, d.Engine, d.Spark)
	}
	return fmt.Sprintf("execution #%d %s: dedupsim %s, Spark %s", d.Exec, d.Field, d.Engine, d.Spark)
}

// Compare returns the first difference between dedupsim's and Spark's
// outcome of one case, nil when they agree. Per execution it compares the
// batch id, the replay and crash flags, the rows as a multiset, and, where
// Spark reported progress (it reports none for a failed execution),
// numInputRows, eventTime (min, max, avg, watermark) and per state operator
// operatorName, numRowsTotal, numRowsUpdated, numRowsRemoved,
// numRowsDroppedByWatermark, numShufflePartitions, numStateStoreInstances,
// customMetrics.numDroppedDuplicateRows and the customMetrics a Spark line
// adds (LineMetrics by value, SnapshotLastUploaded.* by name).
func Compare(eng, spark *Outcome) *Diff {
	n := max(len(eng.Execs), len(spark.Execs))
	for i := range n {
		if i >= len(eng.Execs) || i >= len(spark.Execs) {
			d := &Diff{Exec: i, Field: "execution", Engine: "none", Spark: "none"}
			if i < len(eng.Execs) {
				d.Engine = eng.Execs[i].String()
			} else {
				d.Spark = spark.Execs[i].String()
			}
			return d
		}
		if d := compareExec(&eng.Execs[i], &spark.Execs[i]); d != nil {
			d.Exec = i
			return d
		}
	}
	switch {
	case eng.Err == "" && spark.Err == "":
		return compareTable(eng, spark)
	case eng.Err == "" || spark.Err == "":
		return &Diff{Exec: -1, Field: "error", Engine: orNone(eng.Err), Spark: orNone(spark.Err)}
	case eng.ErrClass != "" && eng.ErrClass != spark.ErrClass:
		// Both failed; where dedupsim names Spark's error class, it must be
		// the class Spark raised.
		return &Diff{Exec: -1, Field: "error class", Engine: eng.ErrClass + " (" + eng.Err + ")", Spark: orNone(spark.ErrClass) + " (" + spark.Err + ")"}
	}
	return nil
}

// compareTable compares the final tables of a table, merge or append sink
// as multisets (Spark's read of the Delta table against exec's table), and
// the table sink's txn versions: the (appId, version) of every commit in
// order, each app id named by its order of first appearance (exec's default
// app id, the query id, and a generated one are ids of their own run).
func compareTable(eng, spark *Outcome) *Diff {
	if eng.HasTable != spark.HasTable {
		return &Diff{Exec: -1, Field: "table", Engine: fmt.Sprintf("has a table: %v", eng.HasTable), Spark: fmt.Sprintf("has a table: %v", spark.HasTable)}
	}
	if !slices.Equal(eng.Table, spark.Table) {
		return &Diff{Exec: -1, Field: "table", Engine: "[" + strings.Join(eng.Table, " ") + "]", Spark: "[" + strings.Join(spark.Table, " ") + "]"}
	}
	if eng.HasTxn && spark.HasTxn {
		e, s := txnRoles(eng.Txn), txnRoles(spark.Txn)
		if !slices.Equal(e, s) {
			return &Diff{Exec: -1, Field: "txn", Engine: "[" + strings.Join(e, " ") + "]", Spark: "[" + strings.Join(s, " ") + "]"}
		}
	}
	return nil
}

// txnRoles writes each commit's txn as app#N:VERSION, N numbering the app
// ids in order of first appearance.
func txnRoles(txn []sink.Txn) []string {
	ids := map[string]int{}
	out := make([]string, len(txn))
	for i, t := range txn {
		n, ok := ids[t.AppID]
		if !ok {
			n = len(ids) + 1
			ids[t.AppID] = n
		}
		out[i] = fmt.Sprintf("app#%d:%d", n, t.Version)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func compareExec(e, s *Exec) *Diff {
	diff := func(field string, a, b any) *Diff {
		return &Diff{Field: field, Engine: fmt.Sprint(a), Spark: fmt.Sprint(b)}
	}
	if e.BatchID != s.BatchID {
		return diff("batchId", e.BatchID, s.BatchID)
	}
	if e.Replay != s.Replay {
		return diff("replay", e.Replay, s.Replay)
	}
	if e.Crashed != s.Crashed {
		return diff("crashed", orNone(e.Crashed), orNone(s.Crashed))
	}
	if !slices.Equal(e.Rows, s.Rows) {
		return diff("rows", "["+strings.Join(e.Rows, " ")+"]", "["+strings.Join(s.Rows, " ")+"]")
	}
	if e.Progress == nil || s.Progress == nil {
		return nil
	}
	ep, sp := e.Progress, s.Progress
	if ep.NumInputRows != sp.NumInputRows {
		return diff("numInputRows", ep.NumInputRows, sp.NumInputRows)
	}
	for _, k := range []string{"watermark", "min", "max", "avg"} {
		if ep.EventTime[k] != sp.EventTime[k] {
			return diff("eventTime."+k, orNone(ep.EventTime[k]), orNone(sp.EventTime[k]))
		}
	}
	if len(ep.Ops) != len(sp.Ops) {
		return diff("stateOperators", fmt.Sprintf("%d operators", len(ep.Ops)), fmt.Sprintf("%d operators", len(sp.Ops)))
	}
	for i := range ep.Ops {
		a, b := ep.Ops[i], sp.Ops[i]
		f := func(name string) string { return fmt.Sprintf("stateOperators[%d].%s", i, name) }
		switch {
		case a.Name != b.Name:
			return diff(f("operatorName"), a.Name, b.Name)
		case a.Total != b.Total:
			return diff(f("numRowsTotal"), a.Total, b.Total)
		case a.Updated != b.Updated:
			return diff(f("numRowsUpdated"), a.Updated, b.Updated)
		case a.Late != b.Late:
			return diff(f("numRowsDroppedByWatermark"), a.Late, b.Late)
		case a.Removed != b.Removed:
			return diff(f("numRowsRemoved"), a.Removed, b.Removed)
		case a.Dups != b.Dups:
			return diff(f("customMetrics.numDroppedDuplicateRows"), a.Dups, b.Dups)
		case a.ShufflePartitions != b.ShufflePartitions:
			return diff(f("numShufflePartitions"), a.ShufflePartitions, b.ShufflePartitions)
		case a.StoreInstances != b.StoreInstances:
			return diff(f("numStateStoreInstances"), a.StoreInstances, b.StoreInstances)
		}
		if d := compareLine(a.Line, b.Line, f); d != nil {
			return d
		}
	}
	return nil
}

// compareLine compares the customMetrics by line: the same names, and the
// same values but for SnapshotLastUploaded.*.
func compareLine(a, b map[string]int64, f func(string) string) *Diff {
	names := make([]string, 0, len(a)+len(b))
	for k := range a {
		names = append(names, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		va, oka := a[k]
		vb, okb := b[k]
		switch {
		case oka != okb:
			show := func(v int64, ok bool) string {
				if !ok {
					return "absent"
				}
				return strconv.FormatInt(v, 10)
			}
			return &Diff{Field: f("customMetrics." + k), Engine: show(va, oka), Spark: show(vb, okb)}
		case va != vb && !strings.HasPrefix(k, SnapshotLastUploaded):
			return &Diff{Field: f("customMetrics." + k), Engine: strconv.FormatInt(va, 10), Spark: strconv.FormatInt(vb, 10)}
		}
	}
	return nil
}

// ExpectedDifference is a documented place where dedupsim differs from
// Spark (docs/spark-semantics.md §14, docs/conformance.md). Applies must
// fire only on the exact situation it covers, so that every other
// difference fails the suite.
type ExpectedDifference struct {
	ID     string
	Reason string
	// Applies reports whether the difference explains this case's outcomes.
	Applies func(c *Case, d *Diff) bool
}

// ExpectedDifferences lists every known, accepted difference between
// dedupsim and Spark, with its reason. Nothing else is excused. (The three
// type differences once listed in docs/conformance.md, typed key schema,
// absent field and mixed JSON types, are gone since exec reads rows under
// a schema, spark-semantics.md §15: such cases must now agree.)
var ExpectedDifferences = []ExpectedDifference{
	{
		ID: "checkpoint-check-at-start",
		Reason: "dedupsim checks a resumed checkpoint (key schema, operator metadata) when the query starts; Spark " +
			"checks it when it plans the run's first batch, so a restart that gets no new input and runs no batch " +
			"is not refused by Spark (it would be at the next batch)",
		Applies: func(c *Case, d *Diff) bool {
			return c.Checkpoint != "" && d.Field == "error" && c.Spark.Err == "" && len(c.Spark.Execs) == 0 &&
				len(c.Engine.Execs) == 0 && (c.Engine.ErrClass == "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE" ||
				c.Engine.ErrClass == "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA")
		},
	},
	{
		ID: "key-schema-refusal-named-in-4.0",
		Reason: "Spark 3.5 refuses a restart whose key schema is not compatible inside the tasks that open the state " +
			"store, with plain exceptions that have no error class: StateSchemaNotCompatible (\"Provided schema doesn't " +
			"match to the schema for existing state!\") from the task of partition 0, the only one that runs " +
			"StateSchemaCompatibilityChecker.check, or InvalidUnsafeRowException (\"state format invalidation\") from " +
			"another partition's task whose stored rows fail the format check first; which task fails first is a race. " +
			"Spark 4.0 checks once on the driver when it plans the batch and names it STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE, " +
			"the class dedupsim raises. The same restarts are refused, by the same rule (spark-semantics.md §10.1)",
		Applies: func(c *Case, d *Diff) bool {
			return d.Field == "error class" && c.Engine.ErrClass == "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE" &&
				c.Checkpoint != "" && (c.Spark.ErrClass == "StateSchemaNotCompatible" || c.Spark.ErrClass == "InvalidUnsafeRowException")
		},
	},
	{
		ID: "batch-copy-with-null-keys",
		Reason: "batchDropDuplicates in Spark is an aggregate keeping first() of every other column " +
			"(ReplaceDeduplicateWithAggregate); with string columns it is a SortAggregate whose in-memory radix sort " +
			"is not stable once a null key arrives (UnsafeInMemorySorter.insertRecord moves a non-null row to the end " +
			"to make room at the front), so Spark may keep a later copy of a key; dedupsim keeps the first in " +
			"arrival order. The keys emitted and every metric agree (spark-semantics.md §14.9)",
		Applies: func(c *Case, d *Diff) bool {
			return d.Field == "rows" && c.Engine.Err == "" && c.Spark.Err == "" && sameUpToCopyChoice(c)
		},
	},
	{
		ID: "negative-zero-key-one-from-4.2",
		Reason: "Spark 4.2 and 4.3 streaming dedup treat -0.0 and 0.0 (and every NaN) in a key as one value: a projection " +
			"normalising float and double keys is planned before the streaming dedup node (SPARK-56280, apache/spark " +
			"pull 55088), where Spark 3.5-4.1, and dedupsim, compare the key's " +
			"UnsafeRow bytes, in which they differ (spark-semantics.md §15.5): a zero key whose opposite-sign zero was " +
			"already seen for that key is a duplicate in 4.2 and 4.3 and a new key before (measured on 4.2.1 and 4.3.0)",
		Applies: func(c *Case, d *Diff) bool {
			return sparkAtLeast(c.Spark, 4, 2) && c.Engine.Err == "" && c.Spark.Err == "" && hasOppositeZeroKey(c)
		},
	},
	{
		ID: "key-order-call-order-in-4.3",
		Reason: "Spark 4.3 stores a dropDuplicates key in the order the keys were given " +
			"(spark.sql.dropDuplicates.deterministicKeyOrder.enabled, default true from 4.3, pinned in offsets/N); " +
			"Spark 3.5-4.2, and dedupsim without a Spark version, in the order of a Scala Set of the key attributes, " +
			"which for more than four keys is a hash set whose order the call order does not change. A restart with " +
			"the same 5+ keys in another order is accepted by Set order and refused by call order " +
			"(STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE, keys compared by position and type)",
		Applies: func(c *Case, d *Diff) bool {
			// conform runs the engine as the runner's line (Run), so both
			// store the same key order and this no longer fires; it stays
			// for an engine run without that line (a case built by hand).
			if !sparkAtLeast(c.Spark, 4, 3) || engineAsSpark(c) || !keysReordered(c) {
				return false
			}
			// Refused by one side, or run by both with the key bound by
			// position in 4.3 (other rows are copies).
			const cls = "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"
			return c.Engine.Err == "" && c.Spark.ErrClass == cls || c.Spark.Err == "" && c.Engine.ErrClass == cls ||
				c.Engine.Err == "" && c.Spark.Err == ""
		},
	},
}

// keysReordered: c resumes a checkpoint whose previous case dedups on the
// same 5 or more key names in another order.
func keysReordered(c *Case) bool {
	p, err := c.parse()
	if c.Checkpoint == "" || p == nil || err != nil || len(p.q.Keys) < 5 || len(c.prevKeys) != len(p.q.Keys) ||
		slices.Equal(c.prevKeys, p.q.Keys) {
		return false
	}
	return slices.Equal(slices.Sorted(slices.Values(c.prevKeys)), slices.Sorted(slices.Values(p.q.Keys)))
}

// setPrevKeys gives every case that resumes a checkpoint the keys of the
// case before it on that checkpoint, in the order the cases run.
func setPrevKeys(cases []*Case) {
	last := map[string][]string{}
	for _, c := range cases {
		if c.Checkpoint == "" {
			continue
		}
		c.prevKeys = last[c.Checkpoint]
		if p, _ := c.parse(); p != nil {
			last[c.Checkpoint] = p.q.Keys
		} else {
			last[c.Checkpoint] = nil
		}
	}
}

// engineAsSpark reports whether the engine ran the case as the Spark line
// the runner reported.
func engineAsSpark(c *Case) bool {
	return c.Spark != nil && !c.engineVersion.IsZero() &&
		(c.Spark.Version == c.engineVersion.Line || strings.HasPrefix(c.Spark.Version, c.engineVersion.Line+"."))
}

// sparkAtLeast reports whether the Spark outcome o comes from Spark
// major.minor or later (false when the version is unknown).
func sparkAtLeast(o *Outcome, major, minor int) bool {
	if o == nil {
		return false
	}
	var ma, mi int
	if _, err := fmt.Sscanf(o.Version, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// hasOppositeZeroKey: a streaming dedup case where some row's key, read
// under the case's schema, differs from a key seen in an earlier row (in
// this or an earlier batch, of any source) only once floats are normalised:
// a zero key whose opposite-sign zero was already seen for that key.
func hasOppositeZeroKey(c *Case) bool {
	p, err := c.parse()
	if p == nil || err != nil || p.q.API == query.BatchDropDuplicates || p.q.Schema == nil {
		return false
	}
	dec, err := row.NewTypedDecoder(p.q.StateKeys(), p.q.EventTimeColumn(), p.q.Schema)
	if err != nil {
		return false
	}
	norm := dec.NormalizedFloats()
	seen := map[string]string{} // normalised key -> the first raw key
	for _, data := range stepRows(c.Steps) {
		var raw, nk row.Row
		if dec.Decode(data, &raw) != nil || norm.Decode(data, &nk) != nil {
			continue
		}
		if first, ok := seen[string(nk.Key)]; !ok {
			seen[string(nk.Key)] = string(raw.Key)
		} else if first != string(raw.Key) {
			return true
		}
	}
	return false
}

// explain returns the expected difference that covers d, or nil.
func explain(c *Case, d *Diff) *ExpectedDifference {
	for i := range ExpectedDifferences {
		if ExpectedDifferences[i].Applies(c, d) {
			return &ExpectedDifferences[i]
		}
	}
	return nil
}

// hasAbsentField: some row of the steps lacks a field another row has.
func hasAbsentField(c *Case) bool {
	var all map[string]bool
	var sets []map[string]bool
	for _, r := range stepRows(c.Steps) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(r, &obj) != nil {
			continue
		}
		set := map[string]bool{}
		for k := range obj {
			set[k] = true
		}
		if all == nil {
			all = map[string]bool{}
		}
		maps.Copy(all, set)
		sets = append(sets, set)
	}
	for _, s := range sets {
		if len(s) != len(all) {
			return true
		}
	}
	return false
}

// hasCoincidingMixedKey: a dedup key column (every column for an
// all-columns key) holds a JSON string in one row and a number or boolean
// with the same text in another, which Spark's string column reads as one
// value.
func hasCoincidingMixedKey(c *Case) bool {
	p, err := c.parse()
	if err != nil {
		return false
	}
	keys := p.q.Keys
	strs := map[string]map[string]bool{}
	others := map[string]map[string]bool{}
	for _, r := range stepRows(c.Steps) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(r, &obj) != nil {
			continue
		}
		cols := keys
		if len(cols) == 0 {
			cols = slices.Collect(maps.Keys(obj))
		}
		for _, k := range cols {
			if k == p.q.EventTimeColumn() {
				continue // read as a timestamp, not as a column of one JSON type
			}
			v, ok := obj[k]
			if !ok || len(v) == 0 || string(v) == "null" {
				continue
			}
			if v[0] == '"' {
				var s string
				if json.Unmarshal(v, &s) == nil {
					add(strs, k, s)
				}
			} else {
				add(others, k, string(v))
			}
		}
	}
	for k, ss := range strs {
		for s := range ss {
			if others[k][s] {
				return true
			}
		}
	}
	return false
}

func add(m map[string]map[string]bool, k, v string) {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	m[k][v] = true
}

// stepRows returns every row object of a steps file, without validation.
func stepRows(stepsFile []byte) []json.RawMessage {
	var out []json.RawMessage
	for _, line := range strings.Split(string(stepsFile), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		var st struct {
			Rows    []json.RawMessage            `json:"rows"`
			Sources map[string][]json.RawMessage `json:"sources"`
		}
		if json.Unmarshal([]byte(line), &st) != nil {
			continue
		}
		out = append(out, st.Rows...)
		for _, name := range slices.Sorted(maps.Keys(st.Sources)) {
			out = append(out, st.Sources[name]...)
		}
	}
	return out
}

// sameUpToCopyChoice: a batchDropDuplicates case with explicit keys whose
// steps hold a null key, where the two outcomes agree once every emitted row
// is reduced to its key values, and every row Spark emitted is a row of the
// steps (one of the copies, not a made-up row).
func sameUpToCopyChoice(c *Case) bool {
	p, err := c.parse()
	if err != nil || p.q.API != query.BatchDropDuplicates || len(p.q.Keys) == 0 {
		return false
	}
	keyOf, hasNull := rawKeys(p.q.Keys)
	if p.q.Schema != nil {
		if keyOf, hasNull = typedKeys(p.q); keyOf == nil {
			return false
		}
	}
	input := map[string]bool{}
	nullKey := false
	for _, r := range stepRows(c.Steps) {
		input[string(r)] = true
		nullKey = nullKey || hasNull(r)
	}
	if !nullKey {
		return false
	}
	project := func(o *Outcome) (*Outcome, bool) {
		out := *o
		out.Execs = make([]Exec, len(o.Execs))
		for i, e := range o.Execs {
			e.Rows = slices.Clone(e.Rows)
			for j, row := range e.Rows {
				k, ok := keyOf(json.RawMessage(row))
				if !ok {
					return nil, false
				}
				e.Rows[j] = k
			}
			e.sortRows()
			out.Execs[i] = e
		}
		// A table sink's table holds the copies the batches emitted.
		out.Table = slices.Clone(o.Table)
		for j, row := range out.Table {
			k, ok := keyOf(json.RawMessage(row))
			if !ok {
				return nil, false
			}
			out.Table[j] = k
		}
		slices.Sort(out.Table)
		return &out, true
	}
	for _, e := range c.Spark.Execs {
		for _, row := range e.Rows {
			if !input[row] {
				return false
			}
		}
	}
	pe, ok1 := project(c.Engine)
	ps, ok2 := project(c.Spark)
	return ok1 && ok2 && Compare(pe, ps) == nil
}

// rawKeys compares untyped rows' keys: keyOf is keyValues, hasNull
// hasNullField.
func rawKeys(keys []string) (keyOf func(json.RawMessage) (string, bool), hasNull func(json.RawMessage) bool) {
	return func(r json.RawMessage) (string, bool) { return keyValues(r, keys) },
		func(r json.RawMessage) bool { return hasNullField(r, keys) }
}

// typedKeys compares rows as the query's schema reads its keys, with
// floats normalised as batch dedup's aggregate normalises them (a value
// that does not fit its column is a null key, 1 and 1.0 one double): keyOf
// is the key's encoding, hasNull whether some key column reads as null.
// nil when the schema cannot read the keys.
func typedKeys(q *query.Query) (keyOf func(json.RawMessage) (string, bool), hasNull func(json.RawMessage) bool) {
	keys := q.StateKeys()
	dec, err := row.NewTypedDecoder(keys, q.EventTimeColumn(), q.Schema)
	if err != nil {
		return nil, nil
	}
	dec = dec.NormalizedFloats()
	cols := make([]*row.Decoder, len(keys))
	nulls := make([][]byte, len(keys))
	for i, k := range keys {
		if cols[i], err = row.NewTypedDecoder([]string{k}, "", q.Schema); err != nil {
			return nil, nil
		}
		var r row.Row
		if cols[i].Decode([]byte("{}"), &r) != nil {
			return nil, nil
		}
		nulls[i] = r.Key
	}
	keyOf = func(data json.RawMessage) (string, bool) {
		var r row.Row
		if dec.Decode(data, &r) != nil {
			return "", false
		}
		return string(r.Key), true
	}
	hasNull = func(data json.RawMessage) bool {
		for i, d := range cols {
			var r row.Row
			if d.Decode(data, &r) == nil && bytes.Equal(r.Key, nulls[i]) {
				return true
			}
		}
		return false
	}
	return keyOf, hasNull
}

// keyValues returns a row's key values as one JSON array text (an absent
// field as null).
func keyValues(row json.RawMessage, keys []string) (string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(row, &obj) != nil {
		return "", false
	}
	vals := make([]json.RawMessage, len(keys))
	for i, k := range keys {
		if v, ok := obj[k]; ok {
			vals[i] = v
		} else {
			vals[i] = json.RawMessage("null")
		}
	}
	b, err := json.Marshal(vals)
	return string(b), err == nil
}

// hasNullField: some key column of the row is null or absent.
func hasNullField(row json.RawMessage, keys []string) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(row, &obj) != nil {
		return false
	}
	for _, k := range keys {
		if v, ok := obj[k]; !ok || string(v) == "null" {
			return true
		}
	}
	return false
}

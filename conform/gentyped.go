package conform

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Typed and nested keys in generated cases (spark-semantics.md §15): one
// case in four reads its id column as a struct, an array, a map or a
// number under edge spellings, inferred from the rows or declared in the
// query's schema, and some of the declared ones are resumed once with the
// id column's type changed (a second case on the same checkpoint). The
// draws come from a random stream of their own, so that every other draw
// of a case stays what it was.

// typedVariant is one way of typing the id column: the value an id of
// ordinal k (1-10; 0 is null) is written as, in one of its spellings.
type typedVariant struct {
	name string
	// ddl is the id column's declared type; "" infers it from the rows.
	ddl string
	// collapse: two ids can read as one key (a value that does not fit
	// its type is null, -0.0 and 0.0 are one in batch dedup), so two
	// sources could send copies of one key in one batch, whose order
	// Spark does not fix: single-source cases only.
	collapse bool
	// within: a map key, which only dropDuplicatesWithinWatermark takes
	// (the others refuse it, UNSUPPORTED_FEATURE.SET_OPERATION_ON_MAP_TYPE).
	within bool
	value  func(r *rand.Rand, k int) string
	// retyped is the id type of the resumed run ("" for none), and
	// renamed the field its rows then use in place of "a" (a compatible
	// change: Spark binds struct fields by position).
	retyped, renamed string
	// later is the value of the resumed run's rows (nil: value).
	later func(r *rand.Rand, k int) string
}

// one picks one of the spellings.
func one(r *rand.Rand, spellings ...string) string { return spellings[r.IntN(len(spellings))] }

// obj writes an object of the given "name":value members in a random
// order.
func obj(r *rand.Rand, members ...string) string {
	r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	return "{" + strings.Join(members, ",") + "}"
}

// num spells the integer k as a bigint or as an equal double literal.
func num(r *rand.Rand, k int, double bool) string {
	if !double {
		return strconv.Itoa(k)
	}
	return one(r, strconv.Itoa(k), strconv.Itoa(k)+".0", strconv.Itoa(k)+"e0", strconv.Itoa(k*10)+"e-1")
}

// structValue is the struct of id k: a number a, a string b (absent, or an
// explicit null, for some ids) and, for some ids, a nested c.
func structValue(r *rand.Rand, k int, double bool, field string) string {
	m := []string{fmt.Sprintf("%q:%s", field, num(r, k, double))}
	switch k % 3 {
	case 0:
		m = append(m, fmt.Sprintf(`"b":"v%d"`, k))
	case 1:
		if r.IntN(2) == 0 {
			m = append(m, `"b":null`)
		}
	default:
		m = append(m, fmt.Sprintf(`"b":"w%d"`, k))
	}
	if k%4 == 3 {
		m = append(m, fmt.Sprintf(`"c":{"d":[%d,%d]}`, k, k+1))
	}
	return obj(r, m...)
}

var typedVariants = []typedVariant{
	{name: "struct, inferred", value: func(r *rand.Rand, k int) string { return structValue(r, k, r.IntN(4) == 0, "a") },
		later: func(r *rand.Rand, k int) string { return fmt.Sprintf(`{"a":"s%d"}`, k) }},
	{name: "struct, declared", ddl: "STRUCT<a: DOUBLE, b: STRING, c: STRUCT<d: ARRAY<BIGINT>>>",
		value:   func(r *rand.Rand, k int) string { return structValue(r, k, true, "a") },
		retyped: "STRUCT<a: STRING, b: STRING, c: STRUCT<d: ARRAY<BIGINT>>>"},
	{name: "struct, declared", ddl: "STRUCT<a: DOUBLE, b: STRING, c: STRUCT<d: ARRAY<BIGINT>>>",
		value:   func(r *rand.Rand, k int) string { return structValue(r, k, true, "a") },
		retyped: "STRUCT<z: DOUBLE, b: STRING, c: STRUCT<d: ARRAY<BIGINT>>>", renamed: "z"},
	{name: "array, inferred", value: func(r *rand.Rand, k int) string {
		switch k % 5 {
		case 4:
			return "[]"
		case 0:
			return fmt.Sprintf("[null,%d]", k)
		}
		return fmt.Sprintf("[%s,%d]", num(r, k, r.IntN(4) == 0), k*10)
	}, later: func(r *rand.Rand, k int) string { return fmt.Sprintf(`["s%d"]`, k) }},
	{name: "array, declared", ddl: "ARRAY<STRUCT<a: BIGINT, b: DOUBLE>>", value: func(r *rand.Rand, k int) string {
		half := one(r, fmt.Sprintf("%d.5", k), fmt.Sprintf("%d.50", k), fmt.Sprintf("%d5e-1", k))
		if k%4 == 0 {
			return fmt.Sprintf(`[%s,{"b":1}]`, obj(r, fmt.Sprintf(`"a":%d`, k)))
		}
		return "[" + obj(r, fmt.Sprintf(`"a":%d`, k), `"b":`+half) + "]"
	}, retyped: "ARRAY<STRUCT<a: BIGINT, b: DOUBLE, c: STRING>>"},
	{name: "double, declared", ddl: "DOUBLE", collapse: true, value: func(r *rand.Rand, k int) string {
		switch k {
		case 1:
			return one(r, "0", "-0", "0.0", "0e0")
		case 2:
			return one(r, "-0.0", "-0e0")
		case 3:
			return `"NaN"`
		case 4:
			return one(r, "1e400", `"Infinity"`, `"+INF"`)
		case 5:
			return one(r, "123456789012345678901234567890", "1.2345678901234568e29")
		}
		return one(r, num(r, k, true), strconv.Quote(strconv.Itoa(k)))
	}, retyped: "STRING"},
	{name: "decimal, declared", ddl: "DECIMAL(10,2)", collapse: true, value: func(r *rand.Rand, k int) string {
		switch k {
		case 3:
			return one(r, `"1,234"`, "1234", "1234.004", "1.234e3")
		case 5:
			return "123456789.1"
		}
		return one(r, strconv.Itoa(k), fmt.Sprintf("%d.001", k), fmt.Sprintf(`"%d.00"`, k), fmt.Sprintf("%d00e-2", k))
	}, retyped: "DECIMAL(12,2)"},
	{name: "bigint, declared", ddl: "BIGINT", collapse: true, value: func(r *rand.Rand, k int) string {
		switch k {
		case 3:
			return one(r, "-0", "0")
		case 4:
			return "9223372036854775807"
		case 5:
			return one(r, "1e2", "5.0", `""`, "9223372036854775808")
		}
		return strconv.Itoa(k)
	}, retyped: "INT"},
	{name: "\"\" and numbers, inferred", collapse: true, value: func(r *rand.Rand, k int) string {
		if k == 2 {
			return `""`
		}
		return strconv.Itoa(k)
	}},
	{name: "map, declared", ddl: "MAP<STRING, BIGINT>", collapse: true, within: true, value: func(r *rand.Rand, k int) string {
		switch k {
		case 2:
			return one(r, `{"a":2,"b":1}`, `{"b":1,"a":2}`)
		case 3:
			return one(r, `{"a":3,"a":4}`, `{"a":3}`)
		case 4:
			return `{"a":"x"}`
		}
		return fmt.Sprintf(`{"a":%d}`, k)
	}},
}

// idOrdinal maps a generated id's text to 1-10 (0 for null): 1-5 and
// "a"-"e" to 1-5, the quoted digits of the mixed cases to 6-10.
func idOrdinal(id string) int {
	switch {
	case id == "null":
		return 0
	case len(id) == 1:
		return int(id[0] - '0')
	case len(id) == 3 && id[1] >= 'a':
		return int(id[1]-'a') + 1
	case len(id) == 3:
		return int(id[1]-'0') + 5
	}
	return 0
}

// typedStream is the random stream of case (seed, index)'s typed draws;
// its first draw says whether the case is typed (one time in four).
func typedStream(seed uint64, index int) (*rand.Rand, bool) {
	r := rand.New(rand.NewPCG(seed^0x6a09e667f3bcc909, uint64(index)))
	return r, r.IntN(4) == 0
}

// retype makes case c (drawn as g) a typed case, one time in four.
func retype(seed uint64, index int, g *genCase, c *Case) {
	if c.Checkpoint != "" || c.followUp != nil {
		return // resumed for another reason (a case of its own kind)
	}
	r, typed := typedStream(seed, index)
	if !typed {
		return
	}
	var pick []typedVariant
	for _, v := range typedVariants {
		if v.collapse && len(g.sources) > 1 {
			continue
		}
		if v.within && g.flavour != FlavourWithin && r.IntN(5) != 0 {
			continue // mostly where Spark takes a map key
		}
		pick = append(pick, v)
	}
	v := pick[r.IntN(len(pick))]
	c.Steps = []byte(rewriteIDs(string(c.Steps), func(k int) string { return v.value(r, k) }))
	base := string(c.Query)
	if v.ddl != "" {
		c.Query = []byte(base + fmt.Sprintf("schema: %q\n", typedSchema(g, v.ddl)))
	}
	if len(g.sources) > 1 || g.allKeys || r.IntN(2) != 0 {
		return
	}
	switch {
	case v.retyped != "":
		later := v.value
		if v.renamed != "" {
			later = func(r *rand.Rand, k int) string { return structValue(r, k, true, v.renamed) }
		}
		follow(g, c, r, []byte(base+fmt.Sprintf("schema: %q\n", typedSchema(g, v.retyped))), later)
	case v.later != nil:
		follow(g, c, r, c.Query, v.later)
	}
}

// GenerateTyped returns the first n typed cases of seed (those whose id
// column retype typed, in index order), each followed by its resumed run
// when it has one: `dedupsim conform --typed`, SPARK_TYPED=1.
func GenerateTyped(seed uint64, n int) []*Case {
	var out, follows []*Case
	for i := 0; len(out) < n; i++ {
		if _, typed := typedStream(seed, i); !typed {
			continue
		}
		c := GenerateCase(seed, i)
		if c.followUp != nil && !strings.HasSuffix(c.followUp.Name, "(key type changed)") {
			continue // resumed for another reason: not retyped
		}
		out = append(out, c)
		if c.followUp != nil {
			follows = append(follows, c.followUp)
		}
	}
	return append(out, follows...)
}

// typedSchema is the case's schema with the id column of type t: the
// event-time column a TIMESTAMP when it is watermarked (a string
// otherwise), n and x bigints.
func typedSchema(g *genCase, t string) string {
	ts := "STRING"
	if g.hasWM {
		ts = "TIMESTAMP"
	}
	return fmt.Sprintf("id %s, ts %s, n BIGINT, x BIGINT", t, ts)
}

// follow gives c a second run on its checkpoint: query q (the id column's
// type changed, or rows that change the inferred type) over c's steps
// plus one to three lines of rows written by value.
func follow(g *genCase, c *Case, r *rand.Rand, q []byte, value func(r *rand.Rand, k int) string) {
	c.Checkpoint = c.Name
	var b strings.Builder
	b.Write(c.Steps)
	for range 1 + r.IntN(3) {
		var rows []string
		for range 1 + r.IntN(4) {
			row := fmt.Sprintf(`{"id":%s,"ts":%d`, value(r, 1+r.IntN(10)), 25+r.IntN(20))
			if !g.allKeys {
				row += fmt.Sprintf(`,"n":%d`, g.n)
				g.n++
			}
			rows = append(rows, row+"}")
		}
		b.WriteString(`{"rows": [` + strings.Join(rows, ",") + "]}\n")
	}
	c.followUp = &Case{Name: c.Name + " (key type changed)", Query: q, Steps: []byte(b.String()), Checkpoint: c.Name}
}

// rewriteIDs replaces the value of every row's id field (each row starts
// {"id":) in steps by value(its ordinal), "null" staying null.
func rewriteIDs(steps string, value func(k int) string) string {
	parts := strings.Split(steps, `{"id":`)
	for i := 1; i < len(parts); i++ {
		id, rest, ok := strings.Cut(parts[i], `,"ts":`)
		if !ok {
			continue
		}
		if k := idOrdinal(id); k > 0 {
			id = value(k)
		}
		parts[i] = id + `,"ts":` + rest
	}
	return strings.Join(parts, `{"id":`)
}

package schema

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dedupsim/dedupsim/internal/suggest"
)

// Caps on a schema, so that a hostile file is refused at once.
const (
	// MaxFields bounds the number of columns.
	MaxFields = 1024
	// MaxNameBytes bounds a column name.
	MaxNameBytes = 1024
)

// typeNames maps Spark's DDL type keywords (case-insensitive) to the kinds
// dedupsim models.
var typeNames = map[string]Kind{
	"STRING":        String,
	"BIGINT":        Long,
	"LONG":          Long,
	"INT":           Integer,
	"INTEGER":       Integer,
	"DOUBLE":        Double,
	"BOOLEAN":       Boolean,
	"TIMESTAMP":     Timestamp,
	"TIMESTAMP_LTZ": Timestamp,
}

// notModelled are Spark types the DDL parser knows but dedupsim does not
// read rows under: refused with a clear message instead of read wrongly.
var notModelled = []string{"VARCHAR", "CHAR", "SMALLINT", "SHORT", "TINYINT", "BYTE", "FLOAT", "REAL",
	"DATE", "TIMESTAMP_NTZ", "BINARY", "INTERVAL", "VARIANT", "VOID", "TIME"}

// Modelled lists the DDL types a declared schema may use, for messages.
const Modelled = "STRING, BIGINT, INT, DOUBLE, BOOLEAN, TIMESTAMP, DECIMAL(p,s), STRUCT<...>, ARRAY<...>, MAP<STRING, ...>"

// ParseDDL reads a schema in Spark's DDL form, as StructType.fromDDL and
// DataStreamReader.schema(String) take it:
//
//	event_id STRING, event_ts TIMESTAMP, `amount $` DOUBLE NOT NULL COMMENT 'x'
//
// Names are identifiers (letters, digits, _) or backquoted (a backquote
// doubled inside); type keywords are case-insensitive; NOT NULL and COMMENT
// are accepted and, as Spark's file sources do, have no effect (every
// column is read as nullable). Two columns whose names differ only in case
// are refused: Spark resolves names case-insensitively and could not tell
// them apart.
func ParseDDL(text string) (*Schema, error) {
	p := &ddl{s: text}
	sc := &Schema{}
	p.space()
	if p.eof() {
		return nil, p.errf("empty schema: want columns such as \"id STRING, ts TIMESTAMP\"")
	}
	for {
		f, err := p.column()
		if err != nil {
			return nil, err
		}
		if err := add(sc, f, func(msg string) error { return p.errf("%s", msg) }); err != nil {
			return nil, err
		}
		p.space()
		if p.eof() {
			return sc, nil
		}
		if p.s[p.pos] != ',' {
			return nil, p.errf("want ',' or the end of the schema, got %s", p.describe())
		}
		p.pos++
		p.space()
	}
}

// add appends f to sc, refusing a name used twice (in any case).
func add(sc *Schema, f Field, fail func(string) error) error {
	if len(sc.Fields) == MaxFields {
		return fail(fmt.Sprintf("more than %d columns", MaxFields))
	}
	for _, g := range sc.Fields {
		// Spark's duplicate check (SchemaUtils.checkColumnNameDuplication)
		// compares the names lower-cased (Locale.ROOT).
		if LowerRoot(g.Name) == LowerRoot(f.Name) {
			if g.Name == f.Name {
				return fail(fmt.Sprintf("column %q given twice", f.Name))
			}
			return fail(fmt.Sprintf("columns %q and %q differ only in case: Spark resolves names case-insensitively", g.Name, f.Name))
		}
	}
	sc.Fields = append(sc.Fields, f)
	return nil
}

// ParseColumn reads one "name TYPE" item, as a schema list holds them.
func ParseColumn(text string) (Field, error) {
	p := &ddl{s: text}
	p.space()
	f, err := p.column()
	if err != nil {
		return f, err
	}
	p.space()
	if !p.eof() {
		return f, p.errf("want the end of the column, got %s", p.describe())
	}
	return f, nil
}

// ParseType reads a type keyword alone, as the {name: TYPE} list form
// holds it.
func ParseType(text string) (Type, error) {
	p := &ddl{s: text}
	p.space()
	t, err := p.typ()
	if err != nil {
		return t, err
	}
	p.space()
	if !p.eof() {
		return t, p.errf("want the end of the type, got %s", p.describe())
	}
	return t, nil
}

// CheckName validates a column name given in a list item.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty column name")
	case len(name) > MaxNameBytes:
		return fmt.Errorf("column name of %d bytes: at most %d", len(name), MaxNameBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("column name is not valid UTF-8")
	}
	return nil
}

// Add appends a column built from a list item, with ParseDDL's checks.
func (s *Schema) Add(f Field) error {
	if err := CheckName(f.Name); err != nil {
		return err
	}
	return add(s, f, func(msg string) error { return fmt.Errorf("%s", msg) })
}

type ddl struct {
	s   string
	pos int
}

func (p *ddl) eof() bool { return p.pos >= len(p.s) }

func (p *ddl) errf(format string, args ...any) error {
	return &Error{Item: -1, Offset: p.pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *ddl) describe() string {
	if p.eof() {
		return "the end"
	}
	r, _ := utf8.DecodeRuneInString(p.s[p.pos:])
	return fmt.Sprintf("%q", r)
}

func (p *ddl) space() {
	for !p.eof() {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func isIdent(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// word reads an identifier or keyword; "" when none starts here.
func (p *ddl) word() string {
	start := p.pos
	for !p.eof() && isIdent(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *ddl) name() (string, error) {
	if p.eof() {
		return "", p.errf("want a column name, got the end")
	}
	if p.s[p.pos] != '`' {
		start := p.pos
		w := p.word()
		if w == "" {
			return "", p.errf("want a column name, got %s (quote unusual names with backticks: `my col`)", p.describe())
		}
		if len(w) > MaxNameBytes {
			p.pos = start
			return "", p.errf("column name of %d bytes: at most %d", len(w), MaxNameBytes)
		}
		return w, nil
	}
	start := p.pos
	p.pos++
	var b strings.Builder
	for {
		i := strings.IndexByte(p.s[p.pos:], '`')
		if i < 0 {
			p.pos = start
			return "", p.errf("unterminated backquoted name")
		}
		b.WriteString(p.s[p.pos : p.pos+i])
		p.pos += i + 1
		if !p.eof() && p.s[p.pos] == '`' {
			b.WriteByte('`')
			p.pos++
			continue
		}
		break
	}
	n := b.String()
	p.pos, start = start, p.pos
	if err := CheckName(n); err != nil {
		return "", p.errf("%v", err)
	}
	p.pos = start
	return n, nil
}

func (p *ddl) column() (Field, error) {
	name, err := p.name()
	if err != nil {
		return Field{}, err
	}
	p.space()
	if !p.eof() && p.s[p.pos] == ':' {
		return Field{}, p.errf("want a type after the name, got ':' (DDL writes \"%s STRING\", without a colon)", name)
	}
	t, err := p.typ()
	if err != nil {
		return Field{}, err
	}
	if err := p.constraints(); err != nil {
		return Field{}, err
	}
	return Field{Name: name, Type: t}, nil
}

// constraints reads an optional NOT NULL and COMMENT '...' after a type;
// both are accepted and ignored (file sources read every column and field
// as nullable).
func (p *ddl) constraints() error {
	p.space()
	save := p.pos
	if w := p.word(); strings.EqualFold(w, "NOT") {
		p.space()
		if w2 := p.word(); !strings.EqualFold(w2, "NULL") {
			return p.errf("want NULL after NOT")
		}
		p.space()
		save = p.pos
		if w := p.word(); !strings.EqualFold(w, "COMMENT") {
			p.pos = save
			return nil
		}
		return p.comment()
	} else if strings.EqualFold(w, "COMMENT") {
		return p.comment()
	}
	p.pos = save
	return nil
}

func (p *ddl) comment() error {
	p.space()
	if p.eof() || (p.s[p.pos] != '\'' && p.s[p.pos] != '"') {
		return p.errf("want a quoted comment after COMMENT")
	}
	q := p.s[p.pos]
	start := p.pos
	p.pos++
	for !p.eof() {
		c := p.s[p.pos]
		switch {
		case c == '\\' && p.pos+1 < len(p.s):
			p.pos += 2
		case c == q:
			p.pos++
			return nil
		default:
			p.pos++
		}
	}
	p.pos = start
	return p.errf("unterminated comment")
}

func (p *ddl) typ() (Type, error) { return p.typeAt(1) }

// typeAt reads a type nested depth levels deep (1: a column's type).
func (p *ddl) typeAt(depth int) (Type, error) {
	start := p.pos
	w := p.word()
	if w == "" {
		return Type{}, p.errf("want a type (%s), got %s", Modelled, p.describe())
	}
	up := strings.ToUpper(w)
	if k, ok := typeNames[up]; ok {
		return Type{Kind: k}, nil
	}
	switch up {
	case "DECIMAL", "DEC", "NUMERIC":
		return p.decimal()
	case "STRUCT", "ARRAY", "MAP":
		if depth > MaxNesting {
			p.pos = start
			return Type{}, p.errf("type nested more than %d levels deep", MaxNesting)
		}
		p.space()
		if p.eof() || p.s[p.pos] != '<' {
			return Type{}, p.errf("want '<' after %s, got %s", up, p.describe())
		}
		p.pos++
		p.space()
		var t Type
		var err error
		switch up {
		case "STRUCT":
			t, err = p.structFields(depth)
		case "ARRAY":
			var e Type
			if e, err = p.typeAt(depth + 1); err == nil {
				t = ArrayOf(e)
			}
		default:
			t, err = p.mapTypes(depth)
		}
		if err != nil {
			return Type{}, err
		}
		p.space()
		if p.eof() || p.s[p.pos] != '>' {
			return Type{}, p.errf("want '>' to close %s<...>, got %s", up, p.describe())
		}
		p.pos++
		return t, nil
	}
	p.pos = start
	for _, n := range notModelled {
		if up == n {
			return Type{}, p.errf("type %s is not modelled by dedupsim (modelled: %s)", up, Modelled)
		}
	}
	if s := suggestType(up); s != "" {
		return Type{}, p.errf("unknown type %q (did you mean %s?)", w, s)
	}
	return Type{}, p.errf("unknown type %q (want %s)", w, Modelled)
}

// decimal reads what follows DECIMAL: nothing (decimal(10,0), Spark's
// default), (p) or (p, s), with 1 <= p <= 38 and 0 <= s <= p.
func (p *ddl) decimal() (Type, error) {
	save := p.pos
	p.space()
	if p.eof() || p.s[p.pos] != '(' {
		p.pos = save
		return DecimalOf(10, 0), nil
	}
	p.pos++
	p.space()
	prec, err := p.number("a precision")
	if err != nil {
		return Type{}, err
	}
	scale := 0
	p.space()
	if !p.eof() && p.s[p.pos] == ',' {
		p.pos++
		p.space()
		if scale, err = p.number("a scale"); err != nil {
			return Type{}, err
		}
		p.space()
	}
	if p.eof() || p.s[p.pos] != ')' {
		return Type{}, p.errf("want ')' to close DECIMAL(, got %s", p.describe())
	}
	p.pos++
	switch {
	case prec < 1 || prec > MaxDecimalPrecision:
		return Type{}, p.errf("DECIMAL precision %d: want 1 to %d", prec, MaxDecimalPrecision)
	case scale > prec:
		return Type{}, p.errf("DECIMAL scale %d is greater than its precision %d", scale, prec)
	}
	return DecimalOf(prec, scale), nil
}

// number reads a small whole number.
func (p *ddl) number(what string) (int, error) {
	start := p.pos
	for !p.eof() && '0' <= p.s[p.pos] && p.s[p.pos] <= '9' && p.pos-start < 4 {
		p.pos++
	}
	if p.pos == start || (!p.eof() && '0' <= p.s[p.pos] && p.s[p.pos] <= '9') {
		p.pos = start
		return 0, p.errf("want %s (a whole number), got %s", what, p.describe())
	}
	n, _ := strconv.Atoi(p.s[start:p.pos])
	return n, nil
}

// structFields reads the fields of STRUCT<...> up to (not including) the
// closing '>': "name[:] TYPE [NOT NULL] [COMMENT '...']", separated by
// commas. Two fields whose names are equal ignoring case are refused, as
// Spark's file source refuses them (CheckNames).
func (p *ddl) structFields(depth int) (Type, error) {
	t := StructOf()
	if !p.eof() && p.s[p.pos] == '>' {
		return t, nil
	}
	for {
		at := p.pos
		name, err := p.name()
		if err != nil {
			return Type{}, err
		}
		p.space()
		if !p.eof() && p.s[p.pos] == ':' {
			p.pos++
			p.space()
		}
		ft, err := p.typeAt(depth + 1)
		if err != nil {
			return Type{}, err
		}
		if err := p.constraints(); err != nil {
			return Type{}, err
		}
		if len(t.Fields) == MaxFields {
			p.pos = at
			return Type{}, p.errf("a struct of more than %d fields", MaxFields)
		}
		for _, g := range t.Fields {
			if LowerRoot(g.Name) == LowerRoot(name) {
				p.pos = at
				if g.Name == name {
					return Type{}, p.errf("struct field %q given twice", name)
				}
				return Type{}, p.errf("struct fields %q and %q differ only in case: Spark's file source refuses them (COLUMN_ALREADY_EXISTS)", g.Name, name)
			}
		}
		t.Fields = append(t.Fields, Field{Name: name, Type: ft})
		p.space()
		if p.eof() || p.s[p.pos] != ',' {
			return t, nil
		}
		p.pos++
		p.space()
	}
}

// mapTypes reads "KEY, VALUE" of MAP<...>.
func (p *ddl) mapTypes(depth int) (Type, error) {
	k, err := p.typeAt(depth + 1)
	if err != nil {
		return Type{}, err
	}
	p.space()
	if p.eof() || p.s[p.pos] != ',' {
		return Type{}, p.errf("want ',' between a MAP's key and value types, got %s", p.describe())
	}
	p.pos++
	p.space()
	v, err := p.typeAt(depth + 1)
	if err != nil {
		return Type{}, err
	}
	return MapOf(k, v), nil
}

// suggestType finds the modelled keyword w is a typo of, with the
// project's one "did you mean" (internal/suggest).
func suggestType(w string) string {
	return suggest.Best(w, slices.Sorted(maps.Keys(typeNames)))
}

// Package scenarios loads declarative scenario files (a query, a workload,
// faults, run length, and the findings the run must or must not produce),
// runs them on the simulator, checks them, and holds the catalogue of the
// failure modes of the seed articles, embedded in the binary.
package scenarios

import (
	"github.com/dedupsim/dedupsim/internal/suggest"
	"github.com/dedupsim/dedupsim/internal/yamlstrict"

	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sim/check"
)

// Scenario is one scenario file.
type Scenario struct {
	// Name is the scenario's stable name (default: the file name without
	// .yaml); the catalogue lists it.
	Name string
	// Description says what the scenario reproduces and why.
	Description string
	// Source names where the failure mode comes from (a seed article).
	Source string
	// File is where it was loaded from ("" for an in-memory one); catalogue
	// files are "catalogue:<name>.yaml".
	File   string
	Config sim.Config
	Check  check.Options
	Expect Expect
	// SparkVersionFlag is the --spark-version the scenario runs with
	// (folded into Config.Query); ReplayCommand repeats it.
	SparkVersionFlag string
}

// Expect is the verdict a scenario states.
type Expect struct {
	// ExactlyOnce, when set, is the expected overall verdict.
	ExactlyOnce *bool
	// Findings maps a finding kind to a condition on its count:
	// "present" (>= 1), "absent" (0), or a comparison such as ">= 10",
	// "< 5", "== 0".
	Findings map[string]string
	// FaultsFired lists faults that must have fired (coverage); by
	// default every fault the scenario enables.
	FaultsFired []string
	order       []string // finding kinds in file order
}

// file is the YAML shape: the simulator's configuration inline, plus the
// scenario's own sections.
type file struct {
	Name        string     `yaml:"name"`
	Description string     `yaml:"description"`
	Source      string     `yaml:"source"`
	Check       checkYAML  `yaml:"check"`
	Expect      expectYAML `yaml:"expect"`
	sim.Config  `yaml:",inline"`
}

type checkYAML struct {
	StateMargin    float64      `yaml:"state_margin"`
	StallSpan      sim.Duration `yaml:"stall_span"`
	GrowthFraction float64      `yaml:"growth_fraction"`
	MaxExamples    int          `yaml:"max_examples"`
}

type expectYAML struct {
	ExactlyOnce *bool     `yaml:"exactly_once"`
	Findings    yaml.Node `yaml:"findings"`
	FaultsFired []string  `yaml:"faults_fired"`
}

// maxFileBytes bounds a scenario file (the catalogue's are about 2 KB).
const maxFileBytes = 1 << 20

// Parse reads a scenario from data; filename labels errors, and its base
// name without .yaml is the default scenario name. Every field is checked
// against its domain; a problem is an *yamlstrict.Error naming file, line and field.
func Parse(filename string, data []byte) (*Scenario, error) {
	if len(data) > maxFileBytes {
		return nil, &yamlstrict.Error{File: filename, Msg: fmt.Sprintf("%d bytes: a scenario file is at most 1 MiB", len(data))}
	}
	if err := checkUTF8(filename, data); err != nil {
		return nil, err
	}
	root, err := yamlstrict.One(data)
	var second *yamlstrict.SecondDocError
	switch {
	case errors.Is(err, yamlstrict.ErrEmpty):
		return nil, &yamlstrict.Error{File: filename, Msg: "empty file: a scenario is a YAML mapping (query, sources, faults, expect, ...)"}
	case errors.As(err, &second):
		return nil, &yamlstrict.Error{File: filename, Line: max(second.Line, 1), Msg: "a second YAML document (after ---): a scenario file holds exactly one"}
	case err != nil:
		return nil, yamlError(filename, data, err)
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, &yamlstrict.Error{File: filename, Msg: "a scenario is a YAML mapping (query, sources, faults, expect, ...)"}
	}
	doc := root.Content[0]
	w := &walker{file: filename}
	if err := w.plain(doc, ""); err != nil {
		return nil, err
	}
	if err := w.value(doc, reflect.TypeOf(file{}), ""); err != nil {
		return nil, err
	}
	var f file
	fdec := yaml.NewDecoder(bytes.NewReader(data))
	fdec.KnownFields(true)
	if err := fdec.Decode(&f); err != nil {
		return nil, yamlError(filename, data, err)
	}
	if err := w.defaulted(doc, &f); err != nil {
		return nil, err
	}
	if err := w.applicable(doc, &f); err != nil {
		return nil, err
	}
	s := &Scenario{Name: f.Name, Description: strings.TrimSpace(f.Description), Source: f.Source, File: filename, Config: f.Config}
	nameLine := 0
	if k := keyNode(doc, "name"); k != nil {
		nameLine = k.Line
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(path.Base(filename), path.Ext(filename))
		if !safeName(s.Name) {
			return nil, &yamlstrict.Error{File: filename, Field: "name", Msg: fmt.Sprintf("the file name gives the scenario name %q: %s; rename the file or set name:", s.Name, nameRule)}
		}
	} else if !safeName(s.Name) {
		return nil, &yamlstrict.Error{File: filename, Line: nameLine, Field: "name", Msg: fmt.Sprintf("%q: %s", s.Name, nameRule)}
	}
	// Keep the queries' own lines so their errors point into this file.
	for _, key := range []string{"query", "shape_change_query"} {
		if text, _ := sourceLines(data, doc, key); text != "" {
			if key == "query" {
				s.Config.Query = sim.QueryText(text)
			} else {
				s.Config.ShapeChangeQuery = sim.QueryText(text)
			}
		}
	}
	s.Check = check.Options{StateMargin: f.Check.StateMargin, StallSpanMs: f.Check.StallSpan.Ms(),
		GrowthFraction: f.Check.GrowthFraction, MaxExamples: f.Check.MaxExamples}
	exp, err := parseExpect(filename, data, f.Expect)
	if err != nil {
		return nil, err
	}
	s.Expect = exp
	if err := s.Config.Validate(); err != nil {
		return nil, validateError(filename, data, doc, err)
	}
	// spark_version and spark_conf go into the query text, which every
	// runner (the simulator, an engine process over Kafka) reads; Validate
	// has checked them.
	if err := s.Config.FoldSparkVersion(); err != nil {
		return nil, &yamlstrict.Error{File: filename, Field: "spark_version", Msg: err.Error()}
	}
	return s, nil
}

// nameRule is what a scenario name may be: it names the report folder
// (OUT/<name>-<seed>) and appears in summary.md and index.html links.
const nameRule = "a scenario name is 1 to 128 characters of [A-Za-z0-9._-], not starting with '.' or '-' (it names the report folder)"

func safeName(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkUTF8 refuses a file that is not UTF-8, naming the line.
func checkUTF8(filename string, data []byte) error {
	if utf8.Valid(data) {
		return nil
	}
	line := 1
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return &yamlstrict.Error{File: filename, Line: line, Msg: fmt.Sprintf("invalid UTF-8 (byte 0x%02x): a scenario file is UTF-8 text", data[i])}
		}
		if r == '\n' {
			line++
		}
		i += n
	}
	return nil
}

// Load reads a scenario file, or a catalogue scenario by name.
func Load(nameOrPath string) (*Scenario, error) {
	data, err := readFile(nameOrPath)
	if err == nil {
		return Parse(nameOrPath, data)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	all, err := Catalogue()
	if err != nil {
		return nil, fmt.Errorf("catalogue: %w", err) // a broken catalogue file must not pass for a missing scenario
	}
	name := strings.TrimSuffix(nameOrPath, ".yaml")
	var names []string
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	msg := "no such file, and no catalogue scenario of that name (see `dedupsim list`)"
	if sug := suggest.Best(path.Base(name), names); sug != "" {
		msg = fmt.Sprintf("no such file, and no catalogue scenario of that name: did you mean %s?", sug)
	}
	return nil, &yamlstrict.Error{File: nameOrPath, Msg: msg}
}

// readFile reads at most maxFileBytes+1 bytes, so that a huge file (or
// /dev/zero) is refused by Parse without being read whole.
func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, &yamlstrict.Error{File: name, Msg: "is a folder: give a scenario file (.yaml)"}
	}
	return io.ReadAll(io.LimitReader(f, maxFileBytes+1))
}

func parseExpect(filename string, data []byte, e expectYAML) (Expect, error) {
	out := Expect{ExactlyOnce: e.ExactlyOnce, FaultsFired: e.FaultsFired, Findings: map[string]string{}}
	n := &e.Findings
	if n.Kind == 0 || yamlstrict.IsNull(n) {
		return out, nil
	}
	if n.Kind != yaml.MappingNode {
		return out, &yamlstrict.Error{File: filename, Line: n.Line, Field: "expect.findings", Msg: "want a mapping of finding kind to present, absent or a bound such as \">= 1\""}
	}
	var known []string
	for _, k := range check.Kinds {
		known = append(known, string(k))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := "expect.findings." + k.Value
		if !slices.Contains(known, k.Value) {
			return out, &yamlstrict.Error{File: filename, Line: k.Line, Field: field, Msg: unknownMsg("finding kind", "", k.Value, known)}
		}
		if _, dup := out.Findings[k.Value]; dup {
			return out, &yamlstrict.Error{File: filename, Line: k.Line, Field: field, Msg: "given twice"}
		}
		if v.Kind == yaml.ScalarNode && v.Style&(yaml.FoldedStyle|yaml.LiteralStyle) != 0 {
			written := strings.TrimSpace(lineText(data, v.Line)[v.Column-1:])
			return out, &yamlstrict.Error{File: filename, Line: v.Line, Field: field, Msg: fmt.Sprintf("YAML reads %s as a block scalar (> and | start one), not as a bound: quote it, %s: \"%s\"", written, k.Value, boundFrom(written))}
		}
		if _, _, err := parseCond(v.Value); err != nil || v.Kind != yaml.ScalarNode {
			return out, &yamlstrict.Error{File: filename, Line: v.Line, Field: field, Msg: fmt.Sprintf("%s: want present, absent or a bound such as \">= 1\" (>=, >, <=, <, == and a whole number)", yamlstrict.Plain(v))}
		}
		out.Findings[k.Value] = v.Value
		out.order = append(out.order, k.Value)
	}
	return out, nil
}

// boundFrom spaces a bound as the catalogue writes it: ">5" is "> 5".
func boundFrom(s string) string {
	s, _, _ = strings.Cut(s, " #")
	for _, o := range []string{">=", "<=", "==", ">", "<"} {
		if rest, ok := strings.CutPrefix(s, o); ok {
			return o + " " + strings.TrimSpace(rest)
		}
	}
	return s
}

// parseCond reads "present", "absent" or "<op> <n>".
func parseCond(c string) (op string, n int, err error) {
	c = strings.TrimSpace(c)
	switch c {
	case "present":
		return ">=", 1, nil
	case "absent":
		return "==", 0, nil
	}
	for _, o := range []string{">=", "<=", "==", ">", "<"} {
		if strings.HasPrefix(c, o) {
			n, err := strconv.Atoi(strings.TrimSpace(c[len(o):]))
			if err != nil || n < 0 {
				return "", 0, fmt.Errorf("bad bound %q", c)
			}
			return o, n, nil
		}
	}
	if n, err := strconv.Atoi(c); err == nil && n >= 0 {
		return "==", n, nil
	}
	return "", 0, fmt.Errorf("bad condition %q", c)
}

func holds(op string, bound, got int) bool {
	switch op {
	case ">=":
		return got >= bound
	case "<=":
		return got <= bound
	case ">":
		return got > bound
	case "<":
		return got < bound
	}
	return got == bound
}

var (
	lineRE = regexp.MustCompile(`line (\d+): (.*)`)
	// blockStart is a mapping value that YAML reads as the start of a
	// block scalar but that is not a valid block header: ">= 10", "> 5".
	blockStart = regexp.MustCompile(`^(\s*(?:- )?[^\s#:][^#:]*:\s+)([>|]\S*(?:\s+[^\s#].*)?)$`)
	validBlock = regexp.MustCompile(`^[>|](?:[1-9][+-]?|[+-][1-9]?)?$`)
)

// yamlError turns go-yaml v3's errors into file:line: messages, with a hint
// for the usual slip: an unquoted bound such as >= 10, which YAML takes for
// the start of a block scalar.
func yamlError(filename string, data []byte, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		m := lineRE.FindStringSubmatch(te.Errors[0])
		if m != nil {
			line, _ := strconv.Atoi(m[1])
			msg := strings.Replace(m[2], " in type scenarios.file", "", 1)
			return &yamlstrict.Error{File: filename, Line: line, Msg: msg}
		}
		return &yamlstrict.Error{File: filename, Msg: te.Errors[0]}
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	// The block-scalar slip: find the line (go-yaml v3 does not always say).
	for i, l := range strings.Split(string(data), "\n") {
		m := blockStart.FindStringSubmatch(l)
		if m == nil || validBlock.MatchString(strings.Fields(m[2])[0]) && len(strings.Fields(m[2])) == 1 {
			continue
		}
		if line == 0 || line == i+1 || line == i+2 {
			key := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m[1]), ":"))
			key = strings.TrimPrefix(key, "- ")
			return &yamlstrict.Error{File: filename, Line: i + 1, Msg: fmt.Sprintf("YAML reads %s as the start of a block scalar (> and | start one): quote it, %s: \"%s\"", strings.TrimSpace(m[2]), key, boundFrom(strings.TrimSpace(m[2])))}
		}
	}
	return &yamlstrict.Error{File: filename, Line: line, Msg: "invalid YAML: " + msg}
}

// validateError places a simulator validation error on the line of the
// field it names.
func validateError(filename string, data []byte, doc *yaml.Node, err error) error {
	var fe *sim.FieldError
	if errors.As(err, &fe) {
		msg := fe.Msg
		if fe.Got != "" {
			if s := suggest.Best(fe.Got, fe.Choices); s != "" {
				msg += "; did you mean " + s + "?"
			}
		}
		return &yamlstrict.Error{File: filename, Line: lineOf(doc, fe.Path), Field: fe.Path, Msg: msg}
	}
	var qe *query.Error
	msg := strings.TrimPrefix(err.Error(), "sim: ")
	for _, key := range []string{"query", "shape_change_query"} {
		if strings.HasPrefix(msg, key+": ") && errors.As(err, &qe) {
			_, first := sourceLines(data, doc, key)
			line := 0
			if first > 0 && qe.Line > 0 {
				line = first + qe.Line - 1
			} else if k := keyNode(doc, key); k != nil {
				line = k.Line
			}
			m := qe.Msg
			if qe.Path != "" {
				m = qe.Path + ": " + m
			}
			return &yamlstrict.Error{File: filename, Line: line, Field: key, Msg: m}
		}
	}
	// Fault errors: "faults: fault NAME ...", "fault NAME: ...".
	if rest, ok := strings.CutPrefix(msg, "fault "); ok {
		name, detail, _ := strings.Cut(rest, ": ")
		return &yamlstrict.Error{File: filename, Line: lineOf(doc, "faults."+name), Field: "faults." + name, Msg: detail}
	}
	if rest, ok := strings.CutPrefix(msg, "faults: "); ok {
		return &yamlstrict.Error{File: filename, Line: lineOf(doc, "faults"), Field: "faults", Msg: rest}
	}
	field, detail, ok := strings.Cut(msg, ": ")
	if !ok || strings.ContainsAny(field, " ") {
		field, detail = "", msg
	}
	return &yamlstrict.Error{File: filename, Line: lineOf(doc, field), Field: field, Msg: detail}
}

// lineOf is the line of the field at path ("sources[1].rate.per_sec"), or
// of its deepest ancestor written in the file (a default can be what is
// wrong); 0 when none is.
func lineOf(doc *yaml.Node, p string) int {
	line := 0
	n := doc
	for _, part := range splitPath(p) {
		if n == nil {
			break
		}
		switch {
		case part.index >= 0:
			if n.Kind != yaml.SequenceNode || part.index >= len(n.Content) {
				return line
			}
			n = n.Content[part.index]
			line = n.Line
		default:
			if n.Kind != yaml.MappingNode {
				return line
			}
			k := keyNode(n, part.key)
			if k == nil {
				return line
			}
			line = k.Line
			n = valueNode(n, part.key)
		}
	}
	return line
}

type pathPart struct {
	key   string
	index int // >= 0: a list index
}

// splitPath splits "sources[1].rate.per_sec" into sources, [1], rate,
// per_sec. Fault names contain '-' but never '.'.
func splitPath(p string) []pathPart {
	var out []pathPart
	for _, seg := range strings.Split(p, ".") {
		for seg != "" {
			i := strings.IndexByte(seg, '[')
			if i < 0 {
				out = append(out, pathPart{key: seg, index: -1})
				break
			}
			if i > 0 {
				out = append(out, pathPart{key: seg[:i], index: -1})
			}
			j := strings.IndexByte(seg[i:], ']')
			if j < 0 {
				break
			}
			n, err := strconv.Atoi(seg[i+1 : i+j])
			if err != nil {
				break
			}
			out = append(out, pathPart{index: n})
			seg = seg[i+j+1:]
		}
	}
	return out
}

func keyNode(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}

func valueNode(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// sourceLines returns the text of a top-level key's value exactly as
// written (dedented), and the file line its first line is on, so that
// errors inside it can be reported at the right line.
func sourceLines(data []byte, doc *yaml.Node, key string) (string, int) {
	var k, v, next *yaml.Node
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == key {
			k, v = doc.Content[i], doc.Content[i+1]
			if i+2 < len(doc.Content) {
				next = doc.Content[i+2]
			}
		}
	}
	if v == nil {
		return "", 0
	}
	lines := strings.Split(string(data), "\n")
	if v.Kind == yaml.ScalarNode {
		// A block scalar (|) starts on the line after the key.
		if v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			return v.Value, k.Line + 1
		}
		return v.Value, v.Line
	}
	if v.Style&yaml.FlowStyle != 0 {
		return "", 0 // a one-line flow mapping: the re-encoded text is fine
	}
	end := len(lines)
	if next != nil {
		end = next.Line - 1
	}
	first := v.Line
	col := v.Column - 1
	var out []string
	for i := first - 1; i < end && i < len(lines); i++ {
		l := lines[i]
		if len(l) >= col && strings.TrimSpace(l[:col]) == "" {
			l = l[col:]
		} else {
			l = strings.TrimLeft(l, " ")
		}
		out = append(out, l)
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n") + "\n", first
}

//go:embed catalogue/*.yaml
var catalogueFS embed.FS

// Catalogue returns every embedded scenario, sorted by name.
func Catalogue() ([]*Scenario, error) {
	entries, err := fs.ReadDir(catalogueFS, "catalogue")
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	for _, e := range entries {
		data, err := fs.ReadFile(catalogueFS, "catalogue/"+e.Name())
		if err != nil {
			return nil, err
		}
		s, err := Parse("catalogue:"+e.Name(), data)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Find returns the catalogue scenario with that name.
func Find(name string) (*Scenario, error) {
	all, err := Catalogue()
	if err != nil {
		return nil, err
	}
	name = strings.TrimSuffix(name, ".yaml")
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no catalogue scenario %q", name)
}

// Duration of the simulated run, for listings.
func (s *Scenario) Duration() time.Duration {
	d := sim.Defaults()
	fp, hp := s.Config.FaultPhase, s.Config.HealPhase
	if fp == 0 {
		fp = d.FaultPhase
	}
	if hp == 0 {
		hp = d.HealPhase
	}
	return time.Duration(fp + hp)
}

// ExpectationHolds says whether the finding expectation cond ("present",
// "absent", ">= 1", "3", ...) holds for a count got: merge re-judges each
// expectation of a shard manifest with it. A cond that is none is an
// error.
func ExpectationHolds(cond string, got int) (bool, error) {
	op, n, err := parseCond(cond)
	if err != nil {
		return false, err
	}
	return holds(op, n, got), nil
}

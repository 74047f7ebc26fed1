// Package scenarios loads declarative scenario files (a query, a workload,
// faults, run length, and the findings the run must or must not produce),
// runs them on the simulator, checks them, and holds the catalogue of the
// failure modes of the seed articles, embedded in the binary.
package scenarios

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

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

// Error is a problem with a scenario file, naming file, line and field.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

var lineRE = regexp.MustCompile(`line (\d+): (.*)`)

// Parse reads a scenario from data; name labels errors and is the default
// scenario name.
func Parse(filename string, data []byte) (*Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(filename, err)
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{File: filename, Msg: "a scenario is a YAML mapping (query, sources, faults, expect, ...)"}
	}
	doc := root.Content[0]
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, yamlError(filename, err)
	}
	s := &Scenario{Name: f.Name, Description: strings.TrimSpace(f.Description), Source: f.Source, File: filename, Config: f.Config}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(path.Base(filename), path.Ext(filename))
	}
	// Keep the query's own lines so its errors point into this file.
	qLine := 0
	if v := valueNode(doc, "query"); v != nil {
		text, first := sourceLines(data, doc, "query")
		if text != "" {
			s.Config.Query = sim.QueryText(text)
			qLine = first
		}
		_ = v
	}
	s.Check = check.Options{StateMargin: f.Check.StateMargin, StallSpanMs: f.Check.StallSpan.Ms(),
		GrowthFraction: f.Check.GrowthFraction, MaxExamples: f.Check.MaxExamples}
	exp, err := parseExpect(filename, f.Expect)
	if err != nil {
		return nil, err
	}
	s.Expect = exp
	if err := s.Config.Validate(); err != nil {
		return nil, validateError(filename, doc, qLine, err)
	}
	return s, nil
}

// Load reads a scenario file, or a catalogue scenario by name.
func Load(nameOrPath string) (*Scenario, error) {
	if data, err := os.ReadFile(nameOrPath); err == nil {
		return Parse(nameOrPath, data)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	all, err := Catalogue()
	if err != nil {
		return nil, fmt.Errorf("catalogue: %w", err) // a broken catalogue file must not pass for a missing scenario
	}
	name := strings.TrimSuffix(nameOrPath, ".yaml")
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
	}
	return nil, &Error{File: nameOrPath, Msg: "no such file, and no catalogue scenario of that name (see `dedupsim list`)"}
}

func parseExpect(filename string, e expectYAML) (Expect, error) {
	out := Expect{ExactlyOnce: e.ExactlyOnce, FaultsFired: e.FaultsFired, Findings: map[string]string{}}
	n := &e.Findings
	if n.Kind == 0 {
		return out, nil
	}
	if n.Kind != yaml.MappingNode {
		return out, &Error{File: filename, Line: n.Line, Field: "expect.findings", Msg: "want a mapping of finding kind to present, absent or a bound such as \">= 1\""}
	}
	known := map[string]bool{}
	for _, k := range check.Kinds {
		known[string(k)] = true
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !known[k.Value] {
			return out, &Error{File: filename, Line: k.Line, Field: "expect.findings." + k.Value, Msg: "unknown finding kind (want one of " + kindList() + ")"}
		}
		if _, _, err := parseCond(v.Value); err != nil || v.Kind != yaml.ScalarNode {
			return out, &Error{File: filename, Line: v.Line, Field: "expect.findings." + k.Value, Msg: fmt.Sprintf("%q: want present, absent or a bound such as \">= 1\"", v.Value)}
		}
		if _, dup := out.Findings[k.Value]; dup {
			return out, &Error{File: filename, Line: k.Line, Field: "expect.findings." + k.Value, Msg: "given twice"}
		}
		out.Findings[k.Value] = v.Value
		out.order = append(out.order, k.Value)
	}
	return out, nil
}

func kindList() string {
	var s []string
	for _, k := range check.Kinds {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
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

// yamlError turns yaml.v3's errors into file:line: messages.
func yamlError(filename string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		m := lineRE.FindStringSubmatch(te.Errors[0])
		if m != nil {
			line, _ := strconv.Atoi(m[1])
			msg := strings.Replace(m[2], "in type scenarios.file", "in a scenario", 1)
			return &Error{File: filename, Line: line, Msg: msg}
		}
		return &Error{File: filename, Msg: te.Errors[0]}
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: filename, Line: line, Msg: m[2]}
	}
	return &Error{File: filename, Msg: msg}
}

// validateError places a simulator validation error on the line of the
// field it names.
func validateError(filename string, doc *yaml.Node, qLine int, err error) error {
	msg := strings.TrimPrefix(err.Error(), "sim: ")
	// A query error from query.Parse reads "query: query:LINE: path: msg".
	if rest, ok := strings.CutPrefix(msg, "query: query:"); ok && qLine > 0 {
		if i := strings.Index(rest, ":"); i > 0 {
			if rel, e := strconv.Atoi(rest[:i]); e == nil {
				return &Error{File: filename, Line: qLine + rel - 1, Field: "query", Msg: strings.TrimSpace(rest[i+1:])}
			}
		}
	}
	field := msg
	if i := strings.Index(msg, ":"); i > 0 {
		field = msg[:i]
		msg = strings.TrimSpace(msg[i+1:])
	}
	top := field
	if i := strings.IndexAny(top, ".[ "); i > 0 {
		top = top[:i]
	}
	line := 0
	if k := keyNode(doc, top); k != nil {
		line = k.Line
	} else if k := keyNode(doc, "faults"); k != nil && strings.Contains(err.Error(), "fault") {
		line = k.Line
	}
	return &Error{File: filename, Line: line, Field: field, Msg: msg}
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

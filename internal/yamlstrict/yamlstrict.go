// Package yamlstrict holds what the two strict YAML front ends, queries
// (engine/query) and scenarios, share: the decode of exactly one document,
// the file:line: field: message error, the key checks of a mapping (a key
// given twice, an unknown key and the known one it is a typo of), and the
// names of YAML node kinds in messages. Each front end words its own
// messages; this package finds the problems and places them.
package yamlstrict

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dedupsim/dedupsim/internal/suggest"
)

// Error is a problem with a YAML file, naming file, line and field. It
// prints as "file:line: field: message"; the line is left out when it is
// 0 (no line, e.g. an empty file), the field when it is empty (the
// document as a whole).
type Error struct {
	File string
	// Line is 1-based; 0 when the problem has no line.
	Line int
	// Field is the field's path, e.g. "dedup.api" or "sources[1].watermark.delay".
	Field string
	Msg   string
}

func (e *Error) Error() string { return Format(e.File, e.Line, e.Field, e.Msg) }

// Format writes a positioned problem as Error prints it:
// "file:line: field: message".
func Format(file string, line int, field, msg string) string {
	var b strings.Builder
	b.WriteString(file)
	if line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(line))
	}
	b.WriteString(": ")
	if field != "" {
		b.WriteString(field)
		b.WriteString(": ")
	}
	b.WriteString(msg)
	return b.String()
}

// ErrEmpty is One's error for data that holds no YAML document.
var ErrEmpty = errors.New("yamlstrict: no YAML document")

// SecondDocError is One's error for data that holds a second document
// after the first; Line is where that document starts (its --- line).
type SecondDocError struct{ Line int }

func (e *SecondDocError) Error() string {
	return "yamlstrict: a second YAML document at line " + strconv.Itoa(e.Line)
}

// One decodes the one YAML document of data into its node tree (a
// DocumentNode). It returns ErrEmpty when there is none, a
// *SecondDocError when another document follows, and go-yaml's own error
// (a syntax error, in either document) unchanged, for the front end to
// word.
func One(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrEmpty
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &SecondDocError{Line: extra.Line}
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	return &doc, nil
}

// Keys checks the keys of one mapping as they come, in document order:
// each must be a known field name, given once.
type Keys struct {
	known []string
	seen  map[string]int
}

// NewKeys checks keys against the known field names.
func NewKeys(known []string) *Keys { return &Keys{known: known, seen: map[string]int{}} }

// Problem is what Keys.Check found wrong with a key.
type Problem int

const (
	// OK: a known name, the first time.
	OK Problem = iota
	// Unknown: not a known name.
	Unknown
	// Twice: a known name given before (at the line Check returns).
	Twice
)

// Check checks the next key, at line; for Twice it returns the line the
// name was first given at.
func (k *Keys) Check(name string, line int) (Problem, int) {
	if !contains(k.known, name) {
		return Unknown, 0
	}
	if first, dup := k.seen[name]; dup {
		return Twice, first
	}
	k.seen[name] = line
	return OK, 0
}

// Suggest is the known name to suggest for an unknown one, or ""
// (internal/suggest.Best).
func (k *Keys) Suggest(name string) string { return suggest.Best(name, k.known) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// IsNull is whether n is the null scalar (nothing written, ~ or null).
func IsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// KindName is the bare name of n's kind: "mapping", "list", "alias" or
// "value".
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	}
	return "value"
}

// Typed names a node with its YAML type, for "want X, got Y": "a
// mapping", "a list", "null", `string "x"`, "integer 5", "number 1.5",
// "boolean true".
func Typed(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!str":
			return "string " + strconv.Quote(n.Value)
		case "!!int":
			return "integer " + n.Value
		case "!!float":
			return "number " + n.Value
		case "!!bool":
			return "boolean " + n.Value
		}
		return n.ShortTag() + " " + strconv.Quote(n.Value)
	}
	return "an unsupported YAML node"
}

// Plain names a node as written, for "want X, got Y": "a mapping", "a
// list", "nothing", a string quoted, any other value as written.
func Plain(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case IsNull(n):
		return "nothing"
	case n.ShortTag() == "!!str":
		return strconv.Quote(n.Value)
	}
	return n.Value
}

// Join extends a field path by one key: "" and "a" give "a", "a" and "b"
// give "a.b".
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

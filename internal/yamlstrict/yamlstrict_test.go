package yamlstrict

import (
	"errors"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestOne(t *testing.T) {
	if _, err := One([]byte("")); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
	if _, err := One([]byte("# only a comment\n")); !errors.Is(err, ErrEmpty) {
		t.Errorf("comment: %v", err)
	}
	var second *SecondDocError
	if _, err := One([]byte("a: 1\n---\nb: 2\n")); !errors.As(err, &second) || second.Line != 2 {
		t.Errorf("second document: %v", err)
	}
	if _, err := One([]byte("a: [1\n")); err == nil || errors.Is(err, ErrEmpty) || errors.As(err, &second) {
		t.Errorf("syntax: %v", err)
	}
	if _, err := One([]byte("a: 1\n---\nb: [\n")); err == nil || errors.As(err, &second) {
		t.Errorf("syntax in the second document: %v", err)
	}
	doc, err := One([]byte("a: 1\n"))
	if err != nil || doc.Kind != yaml.DocumentNode || doc.Content[0].Kind != yaml.MappingNode {
		t.Fatalf("one: %v %v", doc, err)
	}
}

func TestKeys(t *testing.T) {
	k := NewKeys([]string{"delay", "column"})
	for _, tc := range []struct {
		name        string
		line        int
		want        Problem
		first       int
		wantSuggest string
	}{
		{"delay", 1, OK, 0, ""},
		{"dealy", 2, Unknown, 0, "delay"},
		{"colum", 3, Unknown, 0, "column"},
		{"zzz", 4, Unknown, 0, ""},
		{"column", 5, OK, 0, ""},
		{"delay", 6, Twice, 1, ""},
	} {
		p, first := k.Check(tc.name, tc.line)
		if p != tc.want || first != tc.first {
			t.Errorf("Check(%s) = %v %d, want %v %d", tc.name, p, first, tc.want, tc.first)
		}
		if p == Unknown && k.Suggest(tc.name) != tc.wantSuggest {
			t.Errorf("Suggest(%s) = %q, want %q", tc.name, k.Suggest(tc.name), tc.wantSuggest)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "q.yaml", Line: 3, Field: "dedup.api", Msg: "bad"}, "q.yaml:3: dedup.api: bad"},
		{Error{File: "q.yaml", Msg: "empty"}, "q.yaml: empty"},
		{Error{File: "q.yaml", Line: 2, Msg: "m"}, "q.yaml:2: m"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
	}
}

func TestNames(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(`[{a: 1}, [1], ~, "x", 5, 1.5, true, !!binary aGk=]`), &doc); err != nil {
		t.Fatal(err)
	}
	items := doc.Content[0].Content
	typed := []string{"a mapping", "a list", "null", `string "x"`, "integer 5", "number 1.5", "boolean true", `!!binary "aGk="`}
	plain := []string{"a mapping", "a list", "nothing", `"x"`, "5", "1.5", "true", "aGk="}
	kinds := []string{"mapping", "list", "value", "value", "value", "value", "value", "value"}
	for i, n := range items {
		if got := Typed(n); got != typed[i] {
			t.Errorf("Typed(%d) = %q, want %q", i, got, typed[i])
		}
		if got := Plain(n); got != plain[i] {
			t.Errorf("Plain(%d) = %q, want %q", i, got, plain[i])
		}
		if got := KindName(n); got != kinds[i] {
			t.Errorf("KindName(%d) = %q, want %q", i, got, kinds[i])
		}
		if IsNull(n) != (i == 2) {
			t.Errorf("IsNull(%d) = %v", i, IsNull(n))
		}
	}
	if Join("", "a") != "a" || Join("a", "b") != "a.b" {
		t.Error("Join")
	}
}

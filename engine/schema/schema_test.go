package schema

import "testing"

// Equal compares columns in order, names and types, down into nested
// types; nil equals only nil.
func TestSchemaEqual(t *testing.T) {
	a := &Schema{Fields: []Field{{Name: "id", Type: Type{Kind: String}}, {Name: "ts", Type: Type{Kind: Double}}}}
	same := &Schema{Fields: []Field{{Name: "id", Type: Type{Kind: String}}, {Name: "ts", Type: Type{Kind: Double}}}}
	for _, tc := range []struct {
		name string
		b    *Schema
		want bool
	}{
		{"same", same, true},
		{"a type", &Schema{Fields: []Field{{Name: "id", Type: Type{Kind: String}}, {Name: "ts", Type: Type{Kind: Long}}}}, false},
		{"a name", &Schema{Fields: []Field{{Name: "id", Type: Type{Kind: String}}, {Name: "TS", Type: Type{Kind: Double}}}}, false},
		{"the order", &Schema{Fields: []Field{{Name: "ts", Type: Type{Kind: Double}}, {Name: "id", Type: Type{Kind: String}}}}, false},
		{"a column more", &Schema{Fields: append(append([]Field{}, same.Fields...), Field{Name: "x", Type: Type{Kind: Boolean}})}, false},
		{"nil", nil, false},
	} {
		if got := a.Equal(tc.b); got != tc.want {
			t.Errorf("%s: Equal %v, want %v", tc.name, got, tc.want)
		}
	}
	var n *Schema
	if !n.Equal(nil) || n.Equal(a) {
		t.Error("nil: equal only to nil")
	}
}

package crashpoint

import (
	"slices"
	"testing"
)

// TestOrder: the points and their order are part of the steps format, of
// scenario files and of the simulator's streams; changing them changes
// saved histories.
func TestOrder(t *testing.T) {
	want := []string{"after-offsets-write", "after-state-commit", "after-sink-write", "after-commit"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	if got := List(); got != "after-offsets-write, after-state-commit, after-sink-write, after-commit" {
		t.Fatalf("List() = %q", got)
	}
	for i, p := range All() {
		if string(p) != want[i] || Index(p) != i {
			t.Errorf("All()[%d] = %s (index %d)", i, p, Index(p))
		}
		if got, ok := Parse(want[i]); !ok || got != p {
			t.Errorf("Parse(%q) = %q, %v", want[i], got, ok)
		}
		if Infos()[i].Point != p || Infos()[i].Leaves == "" {
			t.Errorf("Infos()[%d] = %+v", i, Infos()[i])
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, s := range []string{"", "after-sink", "After-Commit", "after-commit ", "crash-after-commit"} {
		if p, ok := Parse(s); ok {
			t.Errorf("Parse(%q) = %q", s, p)
		}
		if Index(Point(s)) != -1 {
			t.Errorf("Index(%q) != -1", s)
		}
	}
}

// TestCopies: callers may not change the list through a result.
func TestCopies(t *testing.T) {
	All()[0] = "x"
	Names()[0] = "x"
	Infos()[0].Point = "x"
	if All()[0] != AfterOffsetsWrite || Infos()[0].Point != AfterOffsetsWrite {
		t.Fatal("a result shares the list")
	}
}

package suggest

import (
	"reflect"
	"strconv"
	"testing"
)

func TestClosest(t *testing.T) {
	flags := []string{"seeds", "first-seed", "shard", "out", "swarm", "keep-history", "jobs", "quiet"}
	names := []string{"replay-append-sink", "replay-table-stable-app-id", "replay-table-generated-app-id", "retry-gap-beyond-delay"}
	for _, tc := range []struct {
		word  string
		known []string
		want  []string
	}{
		{"seed", flags, []string{"seeds"}},
		{"seds", flags, []string{"seeds"}},
		{"sede", []string{"seed", "out"}, []string{"seed"}},
		{"sedes", flags, []string{"seeds"}},
		{"first", flags, []string{"first-seed"}},
		{"first_seed", flags, nil}, // the same name once normalised: no suggestion
		{"SWARM", flags, nil},
		{"keep-histories", flags, []string{"keep-history"}},
		{"xyz", flags, nil},
		{"o", flags, nil},
		{"", flags, nil},
		{"replay-apend-sink", names, []string{"replay-append-sink"}},
		{"retry-gap-beyond-dealy", names, []string{"retry-gap-beyond-delay"}},
		{"replay-table", names, []string{"replay-table-stable-app-id", "replay-table-generated-app-id"}},
		{"no-such-scenario", names, nil},
	} {
		if got := Closest(tc.word, tc.known); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Closest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

func TestPhrase(t *testing.T) {
	q := strconv.Quote
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"a"}, ` (did you mean "a"?)`},
		{[]string{"a", "b"}, ` (did you mean "a" or "b"?)`},
		{[]string{"a", "b", "c", "d"}, ` (did you mean "a", "b" or "c"?)`},
	} {
		if got := Phrase(tc.in, q); got != tc.want {
			t.Errorf("Phrase(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestOrList(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a or b"}, {[]string{"a", "b", "c"}, "a, b or c"}} {
		if got := OrList(tc.in); got != tc.want {
			t.Errorf("OrList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

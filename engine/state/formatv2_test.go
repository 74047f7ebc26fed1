package state

import (
	"strings"
	"testing"
)

const (
	lidA = "427de593-b812-4091-a44f-1dccefca4d2a"
	lidB = "fab142ec-e8b0-41f8-a6c2-f8324fc7a148"
)

// The header the Lifecycle writes reads back; every lineage Spark could
// not have written is refused naming the file.
func TestV2Header(t *testing.T) {
	l := []LineageItem{{3, lidA}, {4, lidB}}
	h, err := v2Header(l)
	if err != nil {
		t.Fatal(err)
	}
	if want := "\x00\x02v3\x00\x95" + `[{"version":3,"checkpointUniqueId":"` + lidA + `"},{"version":4,"checkpointUniqueId":"` + lidB + `"}]`; string(h) != want {
		t.Fatalf("header %q, want Spark's %q", h, want)
	}
	got, rest, err := splitV2Header("f", append(h, 0xff, 0xff, 0xff, 0xff), 5)
	if err != nil || len(got) != 2 || got[1] != l[1] || len(rest) != 4 {
		t.Fatalf("read %v %q %v", got, rest, err)
	}
	if h, _ := v2Header(nil); string(h) != "\x00\x02v3\x00\x02[]" {
		t.Fatalf("version 1's header %q", h)
	}
	for _, tc := range []struct {
		name string
		l    []LineageItem
		v    int64
		want string
	}{
		{"ends early", l, 6, "does not end at version 5"},
		{"loop", []LineageItem{{5, lidA}}, 5, "not in [1, 4]"},
		{"gap", []LineageItem{{2, lidA}, {4, lidB}}, 5, "consecutive"},
		{"not a uuid", []LineageItem{{4, "x"}}, 5, "not a UUID"},
		{"empty above 1", nil, 2, "does not end at version 1"},
	} {
		h, _ := v2Header(tc.l)
		if _, _, err := splitV2Header("state/0/0/5_x.changelog", h, tc.v); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "state/0/0/5_x.changelog") {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, bad := range []string{"", "\x00\x02v1", "\x00\x02v3\x00", "\x00\x02v3\x00\x09[{}]", "\x00\x02v3\x00\x04[]xx"} {
		if _, _, err := splitV2Header("f", []byte(bad), 1); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzSplitV2Header(f *testing.F) {
	h, _ := v2Header([]LineageItem{{1, lidA}})
	f.Add(h, int64(2))
	f.Add([]byte("\x00\x02v3\x00\x02[]"), int64(1))
	f.Fuzz(func(t *testing.T, b []byte, v int64) {
		l, rest, err := splitV2Header("f", b, v)
		if err != nil {
			return
		}
		if len(rest) > len(b) {
			t.Fatal("rest longer than the input")
		}
		for i, it := range l {
			if it.Version < 1 || it.Version >= v || !idRe.MatchString(it.ID) || i > 0 && it.Version != l[i-1].Version+1 {
				t.Fatalf("accepted lineage %v for version %d", l, v)
			}
		}
		// What is accepted is what the writer writes.
		h2, err := v2Header(l)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := splitV2Header("f", h2, v); err != nil {
			t.Fatalf("written header refused: %v", err)
		}
	})
}

package row

import (
	"strings"
	"testing"
)

// Issue 10 item 7: strings that are not Unicode text are refused, and
// distinct Unicode strings keep distinct keys (a literal U+FFFD is a
// character like any other).
func TestDecodeUnicode(t *testing.T) {
	d := NewDecoder([]string{"id"}, "")
	for _, bad := range []string{
		`{"id":"a` + "\xff" + `"}`,
		`{"id":"a` + "\xfe" + `"}`,
		`{"id":"a\ud800"}`,
		`{"id":"a\udfff"}`,
		`{"id":"a","note":"` + "\xc3" + `"}`, // any column, not only the key
		`{"id":"a","n` + "\x80" + `":1}`,     // a field name
	} {
		var r Row
		err := d.Decode([]byte(bad), &r)
		if err == nil || !(strings.Contains(err.Error(), "UTF-8") || strings.Contains(err.Error(), "surrogate")) {
			t.Errorf("%q: err = %v, want a UTF-8 or surrogate error", bad, err)
		}
	}
	keys := map[string]string{}
	for _, good := range []string{
		`{"id":"a"}`, `{"id":"a` + "\xef\xbf\xbd" + `"}`, `{"id":"a\u0000"}`, `{"id":"a\ud83d\ude00"}`, `{"id":"a\ud83d\ude01"}`, `{"id":"A"}`,
	} {
		var r Row
		if err := d.Decode([]byte(good), &r); err != nil {
			t.Fatalf("%q: %v", good, err)
		}
		if prev, dup := keys[string(r.Key)]; dup {
			t.Errorf("%q and %q share a key", prev, good)
		}
		keys[string(r.Key)] = good
	}
	// An escaped and a literal character are the same string.
	var a, b Row
	if err := d.Decode([]byte(`{"id":"\ufffd"}`), &a); err != nil {
		t.Fatal(err)
	}
	if err := d.Decode([]byte(`{"id":"`+"\xef\xbf\xbd"+`"}`), &b); err != nil || string(a.Key) != string(b.Key) {
		t.Errorf("escaped and literal U+FFFD differ: %v", err)
	}
}

package row

import (
	"encoding/json"
	"testing"
)

func TestKeyHasNull(t *testing.T) {
	for _, tc := range []struct {
		vals []string
		want bool
	}{
		{[]string{`"a"`, `1`}, false},
		{[]string{`"null"`, `true`, `false`, `{"a":null}`}, false},
		{[]string{`"a"`, `null`}, true},
		{[]string{`null`}, true},
		{nil, false},
	} {
		var vals []json.RawMessage
		for _, v := range tc.vals {
			vals = append(vals, json.RawMessage(v))
		}
		if got := KeyHasNull(EncodeKeyValues(vals)); got != tc.want {
			t.Errorf("%v: KeyHasNull %v, want %v", tc.vals, got, tc.want)
		}
	}
	k := AppendKeyEventTime(EncodeKeyValues([]json.RawMessage{json.RawMessage(`"a"`)}), 1_000_000, false)
	if KeyHasNull(k) {
		t.Error("an event-time item read as null")
	}
	if !KeyHasNull(AppendKeyEventTime(k, 0, true)) {
		t.Error("a null event time not seen")
	}
	if KeyHasNull([]byte{tagString, 9, 'a', tagNull}) {
		t.Error("a truncated item was read past")
	}
}

package steps

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// The Reader streams a steps file: it counts rows per source, checks each
// line as it reaches it, and refuses rows the merge sink cannot match.
func TestReaderStreams(t *testing.T) {
	q := mustQuery(t, "dedup: {api: dropDuplicates, keys: [id]}\nsources:\n  - {name: web}\n  - {name: app}\n")
	r, err := NewReader("s.jsonl", strings.NewReader(`{"sources": {"web": [{"id":1},{"id":2}]}}`+"\n# c\n"+`{"sources": {"app": [{"id":3}], "web": []}}`+"\n"+`{"sources": {"tv": []}}`), q)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.Rows(); got[0] != 2 || got[1] != 1 {
		t.Fatalf("rows %v", got)
	}
	_, err = r.Next()
	var se *Error
	if !errors.As(err, &se) || se.Line != 4 || !strings.Contains(err.Error(), `unknown source "tv"`) {
		t.Fatalf("line 4: %v", err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after an error: %v", err)
	}

	m := mustQuery(t, "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: merge, keys: [id, region]}\n")
	_, err = Parse("s.jsonl", []byte(`{"rows": [{"id":1,"region":"eu"}]}`+"\n"+`{"rows": [{"id":1}]}`), m)
	if !errors.As(err, &se) || se.Line != 2 || !strings.Contains(err.Error(), "rows[0]: sink.keys: missing key column \"region\"") {
		t.Fatalf("merge row without region: %v", err)
	}
	// Without sink.keys the merge matches on the dedup keys, already checked.
	d := mustQuery(t, "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: merge}\n")
	if _, err := Parse("s.jsonl", []byte(`{"rows": [{"id":1}]}`), d); err != nil {
		t.Fatal(err)
	}
	// Invalid UTF-8 anywhere on a line is refused with its column.
	_, err = Parse("s.jsonl", []byte("{\"restart\": true, \"x\xff\": 1}"), d)
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "invalid UTF-8 at column 21") {
		t.Fatalf("invalid UTF-8: %v", err)
	}
}

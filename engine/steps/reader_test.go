package steps

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
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
	var se *query.Error
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

// InferCheck checks each row under the types inferred so far; Checked
// names the last line checked under other types than the file's (to be
// checked again), and the first row refused under the file's types.
func TestInferCheckRecheck(t *testing.T) {
	cases := []struct {
		name, file string
		recheck    int
		err        string
	}{
		{"types fixed by the first row", `{"rows": [{"id":"a","ts":"2024-01-02T03:04:05Z"}]}` + "\n" + `{"rows": [{"id":"b","ts":"soon"}]}`, 0, `s.jsonl:2: rows[0]: event-time column "ts"`},
		{"key column seen late", `{"rows": [{"ts":1}]}` + "\n\n" + `{"rows": [{"id":"b","ts":2}]}`, 1, ""},
		{"key widened on line 3", `{"rows": [{"id":1,"ts":1}]}` + "\n" + `{"tick": true}` + "\n" + `{"rows": [{"id":2,"ts":1},{"id":"x","ts":2}]}` + "\n" + `{"rows": [{"id":3,"ts":3}]}`, 3, ""},
		{"an unrelated column widens", `{"rows": [{"id":"a","ts":1,"v":1}]}` + "\n" + `{"rows": [{"id":"b","ts":1,"v":"x"}]}`, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := mustQuery(t, "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\n")
			r, err := NewReader("s.jsonl", strings.NewReader(c.file), q)
			if err != nil {
				t.Fatal(err)
			}
			lp, inf := r.LineParser(), row.NewInferrer()
			for {
				l, err := r.NextLine()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := lp.InferCheck(l, inf); err != nil {
					t.Fatal(err)
				}
			}
			if err := SetInferred("s.jsonl", inf, q); err != nil {
				t.Fatal(err)
			}
			recheck, err := lp.Checked(q)
			if recheck != c.recheck || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Fatalf("recheck %d, err %v; want %d, %q", recheck, err, c.recheck, c.err)
			}
		})
	}
	// A parser whose types never reach the file's (another part of the
	// file widened them) vouches for nothing.
	q := mustQuery(t, "dedup: {api: dropDuplicates, keys: [id]}\n")
	r, _ := NewReader("s.jsonl", strings.NewReader(`{"rows": [{"id":1}]}`), q)
	lp, inf := r.LineParser(), row.NewInferrer()
	l, _ := r.NextLine()
	if err := lp.InferCheck(l, inf); err != nil {
		t.Fatal(err)
	}
	other := row.NewInferrer()
	if err := other.Add([]byte(`{"id":"x"}`)); err != nil {
		t.Fatal(err)
	}
	inf.Merge(other)
	if err := SetInferred("s.jsonl", inf, q); err != nil {
		t.Fatal(err)
	}
	if recheck, err := lp.Checked(q); recheck != math.MaxInt || err != nil {
		t.Fatalf("recheck %d, err %v; want all lines", recheck, err)
	}
}

// StopAfter ends the input after a line: a bad line after it is not read.
func TestReaderStopAfter(t *testing.T) {
	q := mustQuery(t, "dedup: {api: dropDuplicates, keys: [id]}\n")
	r, err := NewReader("s.jsonl", strings.NewReader(`{"rows": [{"id":1}]}`+"\n# c\n"+`{"tick": true}`+"\n"+`{"bad"}`), q)
	if err != nil {
		t.Fatal(err)
	}
	r.StopAfter(3)
	if err := r.Check(); err != nil {
		t.Fatalf("lines 1-3: %v", err)
	}
	if r.Line() != 3 {
		t.Fatalf("read through line %d, want 3", r.Line())
	}
}

// Under a sink that keeps no rows (foreachBatch), a row's Data is a slice
// of its line and every line gets a buffer of its own: the rows of every
// step read stay intact while later lines (blank, comment, spaced or
// longer) are read, and are the rows a table sink's reader copies. Under
// a table sink no row holds its line.
func TestReaderSharesLines(t *testing.T) {
	var file strings.Builder
	for i := range 6 {
		file.WriteString(`{"rows": [`)
		for j := range 3 + i*50 {
			if j > 0 {
				file.WriteString(",")
			}
			file.WriteString(`{"id":"k` + strings.Repeat("x", i) + `-` + string(rune('a'+j%26)) + `","n":` + strings.Repeat("7", 1+j%5) + `}`)
		}
		file.WriteString("]}\n\n# a comment\n")
		if i == 2 {
			file.WriteString(`{"rows": [ {"id" : "spaced", "n": 1} ]}` + "\n")
		}
	}
	read := func(yaml string) [][]string {
		q := mustQuery(t, yaml)
		all, err := Parse("s.jsonl", []byte(file.String()), q)
		if err != nil {
			t.Fatal(err)
		}
		var out [][]string
		for _, st := range all {
			var rows []string
			for _, r := range st.Rows["default"] {
				if !strings.Contains(yaml, "table") && !strings.Contains(string(r.Data), "spaced") && cap(r.Data) != len(r.Data) {
					t.Fatalf("%s: a row's Data has room past it (%d > %d): an append would write into its line", yaml, cap(r.Data), len(r.Data))
				}
				rows = append(rows, string(r.Data))
			}
			out = append(out, rows)
		}
		return out
	}
	q := mustQuery(t, "dedup: {api: dropDuplicates, keys: [id]}\n")
	if rd, _ := NewReader("s.jsonl", strings.NewReader(""), q); !rd.p.shareLine {
		t.Fatal("foreachBatch: rows do not share their lines")
	}
	if rd, _ := NewReader("s.jsonl", strings.NewReader(""), mustQuery(t, "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: table}\n")); rd.p.shareLine {
		t.Fatal("table sink: rows share their lines")
	}
	shared := read("dedup: {api: dropDuplicates, keys: [id]}\n")
	copied := read("dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: table}\n")
	if len(shared) != 7 || len(shared[6]) != 253 || shared[3][0] != `{"id":"spaced","n":1}` {
		t.Fatalf("steps %d, rows of the last %d, the spaced row %q", len(shared), len(shared[len(shared)-1]), shared[3])
	}
	for i := range shared {
		if strings.Join(shared[i], "\n") != strings.Join(copied[i], "\n") {
			t.Fatalf("step %d: shared rows\n%v\ncopied rows\n%v", i, shared[i], copied[i])
		}
	}
}

// TestReaderHeapAfterBigLine: under a sink that keeps no rows, rows share
// their line; a large line followed by many small ones must not make each
// small line's rows hold a buffer as large as the large line (the reused
// read buffer's size). The steps Parse holds stay within a small factor
// of the file.
func TestReaderHeapAfterBigLine(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"rows": [`)
	for i := range 8000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"big-%07d","pad":"%s"}`, i, strings.Repeat("x", 100))
	}
	b.WriteString("]}\n")
	for i := range 200 {
		fmt.Fprintf(&b, `{"rows": [{"id":"s%d"}]}`+"\n", i)
		if i%50 == 0 {
			b.WriteString(`{"tick": true}` + "\n")
		}
	}
	data := []byte(b.String())
	for _, yaml := range []string{"dedup: {api: dropDuplicates, keys: [id]}\n", "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: table}\n"} {
		q := mustQuery(t, yaml)
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		st, err := Parse("s.jsonl", data, q)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		held := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
		// The rows' Data (the file's size at most), 80-byte rows, keys'
		// chunks: about 2.5 MB; a big buffer per small line is 200 MB.
		if limit := 4*int64(len(data)) + 1<<20; held > limit {
			t.Errorf("%q: the steps of a %d-byte file hold %d bytes of heap, more than %d", yaml, len(data), held, limit)
		}
		if len(st) != 1+200+4 || len(st[0].Rows["default"]) != 8000 || string(st[len(st)-1].Rows["default"][0].Data) != `{"id":"s199"}` {
			t.Fatalf("%q: %d steps", yaml, len(st))
		}
		runtime.KeepAlive(st)
	}
}

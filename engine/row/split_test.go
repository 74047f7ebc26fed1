package row

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

var splitSeeds = []string{
	`{"a":"x y"}`, `{"a": 1}`, ` [1,2]`, `[1,2] `, `[1,"\ud800"]`, `{"a":{"b":[1, 2]}}`, `"plain"`,
	`{"a":1,"b":[1, 2],"c":{"d" : "x y"}}`,
	` [ {"a":1} , 2 ,"s t",[ ],{}, null ] `,
	`{"a":[{"b":1}, [2], {}], "c": [ ], "d": [1 2]}`, `{"a": [1,]}`, `{"a":[`,
	`[]`, `{}`, `[1,]`, `{"a":1,}`, `[1] x`, `{"a":1}}`, `[`, `{"a"}`,
	`["\ud800"]`, `{"\u0061":"\"\\ "}`, "[\"\t\"]", "{\"a\":\t1\n}\r\n",
}

// A container Members or Elements accepts is JSON encoding/json accepts,
// split where encoding/json splits it, and AppendCompact is json.Compact.
func checkSplit(t *testing.T, data []byte) {
	var parts []json.RawMessage
	merr := Members(data, nil, func(name []byte, esc bool, val []byte) error {
		parts = append(parts, val)
		return nil
	})
	// Walking the arrays' elements as they are scanned changes nothing.
	var inline [][]byte
	ierr := Members(data, func([]byte, bool) (func([]byte) (int, error), error) {
		return func(rest []byte) (int, error) {
			s := scanner{data: rest}
			if _, _, err := s.value(ElementDepth - 1); err != nil {
				return 0, err
			}
			inline = append(inline, rest[:s.pos])
			return s.pos, nil
		}, nil
	}, func(name []byte, esc bool, val []byte) error {
		if len(val) > 0 && val[0] == '[' {
			var want [][]byte
			if err := Elements(val, func(e []byte) error { want = append(want, e); return nil }); err != nil {
				t.Fatalf("%q: Elements(%q): %v", data, val, err)
			}
			if len(want) != len(inline) {
				t.Fatalf("%q: %q walked as %q", data, val, inline)
			}
			for i := range want {
				if !bytes.Equal(want[i], inline[i]) {
					t.Fatalf("%q: %q walked as %q", data, val, inline)
				}
			}
		}
		inline = nil
		return nil
	})
	if (ierr == nil) != (merr == nil) {
		t.Fatalf("%q: Members %v, walking arrays %v", data, merr, ierr)
	}
	var eparts []json.RawMessage
	eerr := Elements(data, func(e []byte) error {
		eparts = append(eparts, e)
		return nil
	})
	if merr == nil && eerr == nil {
		t.Fatalf("%q is both an object and an array", data)
	}
	if merr == nil || eerr == nil {
		if !json.Valid(data) {
			t.Fatalf("%q accepted, encoding/json refuses it", data)
		}
		var want []json.RawMessage
		if merr == nil {
			// The names may repeat: the values in order, through a decoder.
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.Token()
			for dec.More() {
				dec.Token()
				var v json.RawMessage
				dec.Decode(&v)
				want = append(want, v)
			}
		} else {
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatal(err)
			}
			parts = eparts
		}
		if len(parts) != len(want) {
			t.Fatalf("%q: %d parts, want %d", data, len(parts), len(want))
		}
		for i := range parts {
			if !bytes.Equal(parts[i], want[i]) {
				t.Fatalf("%q part %d: %q, want %q", data, i, parts[i], want[i])
			}
		}
	}
	if json.Valid(data) {
		var c bytes.Buffer
		json.Compact(&c, data)
		if got := AppendCompact(nil, data); !bytes.Equal(got, c.Bytes()) {
			t.Fatalf("AppendCompact(%q) = %q, json.Compact %q", data, got, c.Bytes())
		}
		if IsCompact(data) && !bytes.Equal(data, c.Bytes()) {
			t.Fatalf("IsCompact(%q) but json.Compact gives %q", data, c.Bytes())
		}
	}
	// ValidCompact is exactly: valid under the scanner, and json.Compact
	// leaves it as it is (the encoder then copies the row).
	want := Valid(data) && bytes.Equal(AppendCompact(nil, data), data)
	if got := ValidCompact(data); got != want {
		t.Fatalf("ValidCompact(%q) = %v, want %v", data, got, want)
	}
}

func TestSplit(t *testing.T) {
	for _, s := range splitSeeds {
		checkSplit(t, []byte(s))
	}
	var n int
	if err := Elements([]byte(`[{"a":1}, {"b": 2}]`), func(e []byte) error { n++; return nil }); err != nil || n != 2 {
		t.Fatalf("Elements: %d, %v", n, err)
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkSplit(t, data) })
}

// Inferrers over two parts of the rows, merged, infer what one Inferrer
// over all of them infers.
func TestInferrerMerge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		vals := []string{`1`, `-2`, `1.5`, `12345678901234567890`, `1e400`, `"s"`, `true`, `null`, `{}`, `[]`}
		n := rapid.IntRange(0, 8).Draw(t, "rows")
		var rows [][]byte
		for range n {
			b := []byte{'{'}
			for j, c := range rapid.SliceOfDistinct(rapid.SampledFrom([]string{"a", "b", "c"}), func(s string) string { return s }).Draw(t, "cols") {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, `"`+c+`":`+rapid.SampledFrom(vals).Draw(t, "v")...)
			}
			rows = append(rows, append(b, '}'))
		}
		cut := rapid.IntRange(0, n).Draw(t, "cut")
		whole, a, b := NewInferrer(), NewInferrer(), NewInferrer()
		for i, r := range rows {
			part := a
			if i >= cut {
				part = b
			}
			if err := whole.Add(r); err != nil {
				t.Fatal(err)
			}
			if err := part.Add(r); err != nil {
				t.Fatal(err)
			}
		}
		if !a.Merge(b) {
			t.Fatal("merge refused")
		}
		if fmt.Sprint(a.Schema()) != fmt.Sprint(whole.Schema()) || a.Rows() != whole.Rows() {
			t.Fatalf("merged %v (%d rows), whole %v (%d rows)", a.Schema(), a.Rows(), whole.Schema(), whole.Rows())
		}
	})
	x, y := NewInferrer(), NewInferrer()
	x.Add([]byte(`{"Id":1}`))
	y.Add([]byte(`{"id":1}`))
	if x.Merge(y) {
		t.Fatal("Id and id merged")
	}
}

// An Inferrer reading rows one after another (which reuses what it found
// in the row before when the columns repeat) infers what Inferrers of one
// row each, merged, infer, and refuses the same first row.
func TestInferrerRowAfterRow(t *testing.T) {
	names := []string{"id", "ts", "v", "w"}
	values := []string{`1`, `"a"`, `2.5`, `true`, `null`, `{"x":1}`, `[1]`, `123456789012345678901234`}
	rapid.Check(t, func(rt *rapid.T) {
		in, ref := NewInferrer(), NewInferrer()
		var inErr, refErr error
		d := NewDecoder([]string{"id"}, "ts")
		var f Found
		// Rows mostly of one shape (columns in one order), as files are;
		// now and then another, or a column given twice.
		shapes := rapid.SliceOfN(rapid.SliceOfNDistinct(rapid.SampledFrom(names), 0, 4, rapid.ID[string]), 1, 3).Draw(rt, "shapes")
		for range rapid.IntRange(1, 30).Draw(rt, "rows") {
			cols := shapes[rapid.IntRange(0, len(shapes)-1).Draw(rt, "shape")]
			if rapid.IntRange(0, 19).Draw(rt, "twice") == 0 && len(cols) > 0 {
				cols = append(slices.Clone(cols), cols[0])
			}
			var b strings.Builder
			b.WriteByte('{')
			for i, n := range cols {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%q:%s", n, rapid.SampledFrom(values).Draw(rt, "value"))
			}
			b.WriteByte('}')
			data := []byte(b.String())
			if inErr == nil {
				if rapid.Bool().Draw(rt, "find") {
					if _, inErr = in.AddPrefixFind(data, 1, d, &f); inErr == nil {
						// The walk found what Decode's own walk finds.
						var got, want Row
						gerr, werr := d.DecodeFound(data, &f, &got), d.Decode(data, &want)
						if fmt.Sprint(gerr) != fmt.Sprint(werr) || gerr == nil && (!bytes.Equal(got.Key, want.Key) || got.EventTime != want.EventTime || got.EventTimeNull != want.EventTimeNull) {
							rt.Fatalf("%s: DecodeFound %+v %v, Decode %+v %v", data, got, gerr, want, werr)
						}
					}
				} else {
					inErr = in.Add(data)
				}
			}
			if refErr == nil {
				one := NewInferrer()
				if refErr = one.Add(data); refErr == nil && !ref.Merge(one) {
					rt.Fatal("merge refused")
				}
			}
		}
		if fmt.Sprint(inErr) != fmt.Sprint(refErr) {
			rt.Fatalf("row after row: %v; one by one: %v", inErr, refErr)
		}
		if inErr == nil && in.Schema().String() != ref.Schema().String() {
			rt.Fatalf("row after row: %s; one by one: %s", in.Schema(), ref.Schema())
		}
	})
}

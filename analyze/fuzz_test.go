package analyze

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzLine: no input line panics the parser; a bad line is a *LineError
// naming its line; the report of whatever was accepted keeps its sums.
func FuzzLine(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","acct":1,"ts":100,"at":100}`,
		`{"id":"a","acct":1,"ts":"2024-01-01T00:00:00Z","at":"2024-01-01T00:00:00.5Z"}`,
		`{"id":null,"acct":[1,{"x":2}],"ts":1.5e3,"at":2e3}`,
		`{"id":"a","ts":-1,"at":0,"acct":true}`,
		`{"id":"a","ts":99999999999,"at":1,"acct":"\u00e9"}`,
		`# comment`, ``, `{`, `[]`, `{"id":"a","id":"a"}`, `{"ts":null}`, "{\"id\":\"\\ud800\",\"acct\":1,\"ts\":1,\"at\":1}",
	} {
		f.Add([]byte(s), []byte(`{"id":"a","acct":1,"ts":160,"at":170}`), false, uint8(0))
	}
	f.Add([]byte(`{"id":"a","acct":1,"ts":1717200000000,"at":1717200000001}`), []byte(`{"id":"a","acct":1,"ts":1717200060000,"at":1717200060000}`), true, uint8(1))
	f.Fuzz(func(t *testing.T, line, next []byte, arrival bool, unit uint8) {
		opt := Options{File: "f", Keys: []string{"id", "acct"}, Time: "ts", MaxKeys: 2, SkipBad: false, Margin: DefaultMargin, TimeUnit: TimeUnit(unit % 3)}
		if arrival {
			opt.Arrival = "at"
		}
		a, err := New(opt)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range [][]byte{line, next, line} {
			err := a.Line(l)
			var le *LineError
			if err != nil && (!errors.As(err, &le) || le.Line != int64(i+1) || le.File != "f") {
				t.Fatalf("line %d: %v", i+1, err)
			}
		}
		r := a.Finish()
		if r.Events != r.Analysed+r.BeforeEpoch+r.Future {
			t.Fatalf("events %d != analysed %d + impossible %d + %d", r.Events, r.Analysed, r.BeforeEpoch, r.Future)
		}
		if r.DistinctKeys+r.ExtraCopies != r.Analysed {
			t.Fatalf("keys %d + extra %d != analysed %d", r.DistinctKeys, r.ExtraCopies, r.Analysed)
		}
		c := r.CopiesPerKey
		if c.One+c.Two+c.Three+c.FourPlus != r.DistinctKeys || c.Two+c.Three+c.FourPlus != r.KeysWithCopies {
			t.Fatalf("copies per key %+v, keys %d, with copies %d", c, r.DistinctKeys, r.KeysWithCopies)
		}
		r.WriteText(io.Discard)
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
		// The same lines through Run, with --skip-bad, never fail.
		opt.SkipBad = true
		in := bytes.Join([][]byte{line, next, line}, []byte("\n"))
		if _, err := Run(bytes.NewReader(in), opt); err != nil {
			t.Fatal(err)
		}
	})
}

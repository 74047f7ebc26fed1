package capture

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// FuzzParseBound: any flag value parses to a bound in its domain or an
// error naming the flag, never a panic.
func FuzzParseBound(f *testing.F) {
	for _, s := range []string{"earliest", "latest", "0", "-3", "0:1,1:2", "1:1,1:1", "2026-11-30T09:00:00Z", "x:1", "9223372036854775808", ""} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, start bool) {
		b, err := ParseBound("start", s, start)
		if err != nil {
			if !strings.Contains(err.Error(), "--start") {
				t.Fatalf("error %q does not name the flag", err)
			}
			return
		}
		switch b.Kind {
		case Earliest, Latest:
		case AtOffset:
			if b.Offset < 0 {
				t.Fatalf("offset %d", b.Offset)
			}
			for p, o := range b.PerPartition {
				if p < 0 || o < 0 {
					t.Fatalf("partition %d offset %d", p, o)
				}
			}
		case AtTime:
			if b.TimeMs < minTime.UnixMilli() || b.TimeMs > maxTime.UnixMilli() {
				t.Fatalf("time %d", b.TimeMs)
			}
		default:
			t.Fatalf("kind %d", b.Kind)
		}
	})
}

// FuzzAppendLine: a record value either becomes one JSON object whose
// first members are the record's place and whose other members are the
// value's, or is refused; and the place reads back.
func FuzzAppendLine(f *testing.F) {
	for _, s := range []string{`{"id":"a","ts":1}`, `{}`, `[1]`, `{"id":1,"id":2}`, `{"_offset":1}`, "{\"a\":\"\xff\"}", `{"a":1} x`, `"text"`, ``} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, value []byte, raw bool) {
		format := JSONValues
		if raw {
			format = RawValues
		}
		rec := &kgo.Record{Topic: "t", Partition: 3, Offset: 41, Timestamp: time.UnixMilli(1_700_000_000_123), Value: value}
		line, err := AppendLine(nil, rec, format)
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil || !json.Valid(line) || bytes.ContainsRune(line, '\n') {
			t.Fatalf("line %q is not one JSON object: %v", line, err)
		}
		p, off, ts, err := readPosition(line)
		if err != nil || p != 3 || off != 41 || ts != 1_700_000_000_123 {
			t.Fatalf("position of %q: %d %d %d %v", line, p, off, ts, err)
		}
		if raw {
			var v struct{ Value *string }
			json.Unmarshal(line, &v)
			if (v.Value == nil) != (value == nil) || (v.Value != nil && *v.Value != string(value)) {
				t.Fatalf("raw value %q became %q", value, line)
			}
		}
	})
}

// FuzzScan: a damaged partial file is refused or cut, never a panic, and
// what is kept is never longer than the file.
func FuzzScan(f *testing.F) {
	h := "# dedupsim capture: topic t, read_committed, value-format json"
	for _, s := range []string{
		h + "\n" + `{"_partition":0,"_offset":1,"_timestamp":"2026-01-01T00:00:00.000Z","id":1}` + "\n",
		h + "\n" + `{"_partition":0,"_offset":1,"_timestamp":"2026-01-01T00:00:00.000Z"}` + "\n" + `{"_partition":0,"_offset":0,"_timestamp":"2026-01-01T00:00:00.000Z"}` + "\n",
		h + "\n" + `{"_partition":0,"_off`,
		h + "\n" + `{"rows": [], "once": true}` + "\n" + `# next {"next":{"0":3},"records":0,"batches":1}` + "\n" + `{"rows": [`,
		h + "\n# next {bad\n",
		"other\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, steps bool) {
		st, keep, err := scan("p", bytes.NewReader(data), h, steps)
		if err != nil {
			return
		}
		if keep < 0 || keep > int64(len(data)) || st.next == nil {
			t.Fatalf("keep %d of %d", keep, len(data))
		}
		for p, n := range st.next {
			if p < 0 || n < 0 {
				t.Fatalf("next %d: %d", p, n)
			}
		}
	})
}

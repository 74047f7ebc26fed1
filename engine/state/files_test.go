package state

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestParseFileName(t *testing.T) {
	tests := []struct {
		name     string
		version  int64
		snapshot bool
		ok       bool
	}{
		{"1.delta", 1, false, true},
		{"0.delta", 0, false, true},
		{"120.snapshot", 120, true, true},
		{"007.delta", 0, false, false},
		{"-1.delta", 0, false, false},
		{"+1.delta", 0, false, false},
		{".1.delta.tmp", 0, false, false},
		{"1.delta.tmp", 0, false, false},
		{"_metadata", 0, false, false},
		{".delta", 0, false, false},
		{"1.zip", 0, false, false},
	}
	for _, tt := range tests {
		v, snap, ok := parseFileName(tt.name)
		if v != tt.version || snap != tt.snapshot || ok != tt.ok {
			t.Errorf("parseFileName(%q) = %d, %v, %v; want %d, %v, %v", tt.name, v, snap, ok, tt.version, tt.snapshot, tt.ok)
		}
	}
}

func TestDeltaEncoding(t *testing.T) {
	// The exact bytes of Spark's (uncompressed) delta framing.
	var b []byte
	b = AppendPut(b, []byte("ab"), []byte("xyz"))
	b = AppendRemove(b, []byte("c"))
	b = AppendPut(b, []byte{}, nil)
	b = AppendEnd(b)
	want := []byte{
		0, 0, 0, 2, 'a', 'b', 0, 0, 0, 3, 'x', 'y', 'z',
		0, 0, 0, 1, 'c', 0xff, 0xff, 0xff, 0xff,
		0, 0, 0, 0, 0, 0, 0, 0,
		0xff, 0xff, 0xff, 0xff,
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded\n%v\nwant\n%v", b, want)
	}
	m := map[string][]byte{"c": []byte("old"), "z": []byte("keep")}
	var size int64 = 1 + 3 + 1 + 4
	if err := applyFile("f", b, false, m, &size); err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 || string(m["ab"]) != "xyz" || string(m["z"]) != "keep" {
		t.Fatalf("applied: %q", m)
	}
	if v, ok := m[""]; !ok || len(v) != 0 {
		t.Fatalf("empty key/value not applied: %q", m)
	}
	if size != 2+3+1+4 {
		t.Fatalf("size = %d", size)
	}
}

func TestEncodeSnapshotDeterministic(t *testing.T) {
	a := map[string][]byte{}
	b := map[string][]byte{}
	var size int64
	for i := range 100 {
		k := string(rune('a'+i%26)) + strings.Repeat("x", i)
		a[k] = []byte{byte(i)}
		size += int64(len(k) + 1)
	}
	for k, v := range a { // a different insertion order
		b[k] = v
	}
	sa, sb := encodeSnapshot(a, size), encodeSnapshot(b, size)
	if !bytes.Equal(sa, sb) {
		t.Fatal("snapshot bytes depend on map order")
	}
	if int64(len(sa)) != size+8*100+4 {
		t.Fatalf("snapshot of %d bytes, want %d", len(sa), size+8*100+4)
	}
	m := map[string][]byte{}
	var got int64
	if err := applyFile("s", sa, true, m, &got); err != nil || len(m) != 100 || got != size {
		t.Fatalf("round trip: %d keys, size %d, err %v", len(m), got, err)
	}
}

func TestCorruptFile(t *testing.T) {
	valid := AppendEnd(AppendRemove(AppendPut(nil, []byte("key"), []byte("value")), []byte("gone")))
	validSnapshot := AppendEnd(AppendPut(AppendPut(nil, []byte("a"), []byte("1")), []byte("b"), nil))
	tests := []struct {
		name     string
		data     []byte
		snapshot bool
		reason   string
	}{
		{"empty file", nil, false, "truncated: no key length"},
		{"no end marker", valid[:len(valid)-4], false, "truncated: no key length"},
		{"torn end marker", valid[:len(valid)-2], false, "truncated: no key length"},
		{"torn key", valid[:6], false, "truncated: key of 3 bytes has only 2"},
		{"torn value", valid[:14], false, "truncated: value of 5 bytes has only 3"},
		{"no value length", valid[:7], false, "truncated: no value length"},
		{"trailing bytes", append(bytes.Clone(valid), 0), false, "1 bytes after the end marker"},
		{"negative key length", appendInt32(nil, -2), false, "negative key length -2"},
		{"negative value length", appendInt32(append(appendInt32(nil, 1), 'k'), -7), false, "negative value length -7"},
		{"remove in snapshot", valid, true, "remove record in a snapshot"},
		{"torn snapshot", validSnapshot[:len(validSnapshot)-1], true, "truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var size int64
			err := applyFile("state/0/3/7.delta", tt.data, tt.snapshot, map[string][]byte{}, &size)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), "state/0/3/7.delta") || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("err = %q, want the file name and %q", err, tt.reason)
			}
		})
	}
	// Every proper prefix of a valid file is corrupt.
	for _, f := range []struct {
		data     []byte
		snapshot bool
	}{{valid, false}, {validSnapshot, true}} {
		for n := range len(f.data) {
			var size int64
			if err := applyFile("f", f.data[:n], f.snapshot, map[string][]byte{}, &size); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("prefix of %d of %d bytes: err = %v, want ErrCorrupt", n, len(f.data), err)
			}
		}
		var size int64
		if err := applyFile("f", f.data, f.snapshot, map[string][]byte{}, &size); err != nil {
			t.Fatalf("whole file: %v", err)
		}
	}
}

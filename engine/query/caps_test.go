package query

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 10 items 19 and 20: tags are refused, sizes are capped, and a
// key list far over the cap is refused without quadratic work.
func TestTagsAndCaps(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"int tag on a string", "dedup: {api: !!int dropDuplicates}\n", "query.yaml:1: YAML tag !!int is not supported"},
		{"str tag on an int", "dedup: {api: dropDuplicates}\nshuffle_partitions: !!str 4\n", "query.yaml:2: YAML tag !!str"},
		{"custom tag", "dedup: !mine {api: dropDuplicates}\n", "YAML tag !mine"},
		{"tag in a list", "dedup: {api: dropDuplicates, keys: [!!binary aWQ=]}\n", "YAML tag !!binary"},
		{"tag on a key", "!!str dedup: {api: dropDuplicates}\n", "YAML tag !!str"},
		{"second document", "dedup: {api: dropDuplicates}\n---\n", "more than one YAML document"},
		{"second document with content", "dedup: {api: dropDuplicates}\n---\ndedup: {api: dropDuplicates}\n", "more than one YAML document"},
		{"too many keys", "dedup: {api: dropDuplicates, keys: [" + strings.Repeat("k,", MaxColumns) + "k]}\n", "dedup.keys: 1025 columns: at most 1024"},
		{"too many sink keys", "dedup: {api: dropDuplicates, keys: [id]}\nsink: {kind: merge, keys: [" + strings.Repeat("k,", 2000) + "k]}\n", "sink.keys: 2001 columns: at most 1024"},
		{"long column name", "dedup: {api: dropDuplicates, keys: [" + strings.Repeat("k", MaxNameBytes+1) + "]}\n", "column name of 1025 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("query.yaml", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// 200,000 keys: refused by the cap, not after quadratic duplicate checks.
	big := "dedup: {api: dropDuplicates, keys: [" + strings.Repeat("k1,", 200_000) + "k]}\n"
	if _, err := Parse("q.yaml", []byte(big)); err == nil || !strings.Contains(err.Error(), "at most 1024") {
		t.Fatalf("200,000 keys: %v", err)
	}
	// A file over MaxQueryBytes is refused after reading one byte more.
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, []byte("# "+strings.Repeat("x", MaxQueryBytes)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseFile(p); err == nil || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
		t.Fatalf("big file: %v", err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := ParseFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("/dev/zero: %v", err)
		}
	}
}

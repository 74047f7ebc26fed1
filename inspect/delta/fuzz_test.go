package delta

import (
	"os"
	"path/filepath"
	"testing"
)

// fuzzTable writes a one-file log: name under _delta_log holding data,
// plus a _last_checkpoint when last is not empty.
func fuzzTable(t *testing.T, name string, data, last []byte) string {
	dir := t.TempDir()
	log := filepath.Join(dir, "_delta_log")
	if err := os.MkdirAll(log, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(log, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if len(last) > 0 {
		if err := os.WriteFile(filepath.Join(log, "_last_checkpoint"), last, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func seedFiles(f *testing.F, glob string) {
	paths, _ := filepath.Glob(glob)
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, []byte(`{"version":0,"size":3}`))
		}
	}
}

// FuzzCommit: any bytes as a JSON commit (and any _last_checkpoint) are
// replayed or refused with an Error, never a panic; a replayed log has its
// metadata and protocol and only files inside the table.
func FuzzCommit(f *testing.F) {
	seedFiles(f, "testdata/*/table/_delta_log/00000000000000000000.json")
	f.Add([]byte(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`+"\n"+`{"metaData":{"id":"x","schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":[],"configuration":{}}}`+"\n"+`{"add":{"path":"../x","size":1}}`), []byte("{"))
	f.Add([]byte(`{"txn":{"appId":"","version":-1}}`), []byte(`{"version":-5}`))
	f.Fuzz(func(t *testing.T, commit, last []byte) {
		dir := fuzzTable(t, "00000000000000000000.json", commit, last)
		l, err := ReadLog(dir)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if l.Metadata == nil || l.Protocol == nil || l.Version != 0 {
			t.Fatalf("replayed without metadata or protocol: %+v", l)
		}
		for _, a := range l.Files {
			if filepath.IsAbs(a.Path) || a.Path == ".." || len(a.Path) > 2 && a.Path[:3] == "../" {
				t.Fatalf("a file outside the table: %q", a.Path)
			}
		}
	})
}

// FuzzCheckpoint: any bytes as a Parquet checkpoint are read or refused
// with an Error, never a panic.
func FuzzCheckpoint(f *testing.F) {
	seedFiles(f, "testdata/*/table/_delta_log/*.checkpoint.parquet")
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"), []byte(`{"version":0}`))
	f.Fuzz(func(t *testing.T, cp, last []byte) {
		dir := fuzzTable(t, "00000000000000000000.checkpoint.parquet", cp, last)
		if _, err := ReadLog(dir); err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
		}
	})
}

package delta

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func copyTable(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// TestCleanedUpHistory: with the commits before the checkpoint of version
// 10 gone (log retention), the state comes from the Parquet checkpoint and
// the commits after it, and gives what the whole log gives; the txn
// history before it is the checkpoint's latest version per app id. With
// the checkpoint gone too, the log cannot be replayed (exit 2), and a
// _last_checkpoint naming a missing checkpoint is a warning only.
func TestCleanedUpHistory(t *testing.T) {
	full, err := Inspect("testdata/checkpointed/table", Options{Keys: []string{"id", "day"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := copyTable(t, "testdata/checkpointed/table")
	for v := range 10 {
		os.Remove(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v)))
	}
	r, err := Inspect(dir, Options{Keys: []string{"id", "day"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Checkpoint != 10 || r.HistoryFrom != 10 || r.Rows != full.Rows || r.DuplicateKeys != full.DuplicateKeys || r.ExtraRows != full.ExtraRows || r.Files != full.Files {
		t.Fatalf("from the checkpoint: %+v\nwhole log: %+v", r, full)
	}
	if len(r.CheckpointTxns) != 1 || r.CheckpointTxns[0] != (Txn{AppID: "app", Version: 10}) {
		t.Fatalf("checkpoint txns %v", r.CheckpointTxns)
	}
	os.WriteFile(filepath.Join(dir, "_delta_log", "_last_checkpoint"), []byte(`{"version":11,"size":3}`), 0o644)
	if r, err = Inspect(dir, Options{}); err != nil || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "version 11") {
		t.Fatalf("a _last_checkpoint naming no checkpoint: %v %v", err, r)
	}
	os.Remove(filepath.Join(dir, "_delta_log", "00000000000000000010.checkpoint.parquet"))
	os.Remove(filepath.Join(dir, "_delta_log", "00000000000000000005.checkpoint.parquet"))
	if _, err := Inspect(dir, Options{}); err == nil || !strings.Contains(err.Error(), "cannot be replayed") {
		t.Fatalf("no checkpoint and no early commits: %v", err)
	}
}

// TestRefused: what inspect cannot read is an Error naming the file and
// the reason; a --keys column the table lacks is a KeyError.
func TestRefused(t *testing.T) {
	base := "testdata/table-clean/table"
	commit0 := func(dir string) string { return filepath.Join(dir, "_delta_log", "00000000000000000000.json") }
	for _, tc := range []struct {
		name  string
		edit  func(dir string)
		keys  []string
		want  string
		isKey bool
	}{
		{"unknown reader feature", func(dir string) {
			b, _ := os.ReadFile(commit0(dir))
			b = []byte(strings.Replace(string(b), `"minReaderVersion":1,"minWriterVersion":2`, `"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["futureThing"],"writerFeatures":[]`, 1))
			os.WriteFile(commit0(dir), b, 0o644)
		}, nil, `reader table feature "futureThing"`, false},
		{"path out of the table", func(dir string) {
			f, _ := os.OpenFile(filepath.Join(dir, "_delta_log", "00000000000000000003.json"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"add":{"path":"../../secret.parquet","partitionValues":{},"size":1,"dataChange":true}}` + "\n")
			f.Close()
		}, nil, "outside the table", false},
		{"absolute URI", func(dir string) {
			f, _ := os.OpenFile(filepath.Join(dir, "_delta_log", "00000000000000000003.json"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"add":{"path":"file:/etc/x.parquet","partitionValues":{},"size":1,"dataChange":true}}` + "\n")
			f.Close()
		}, nil, "not a path relative to the table", false},
		{"missing data file", func(dir string) {
			files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
			for _, f := range files {
				os.Remove(f)
			}
		}, nil, "a live data file of the table", false},
		{"malformed commit", func(dir string) {
			os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000002.json"), []byte("{\"txn\":{\"appId\":\"a\",\"version\":-3}}\n"), 0o644)
		}, nil, "00000000000000000002.json: line 1: txn \"a\": version -3 is negative", false},
		{"a gap in the log", func(dir string) {
			os.Remove(commit0(dir))
		}, nil, "commits before version 1 are gone", false},
		{"unknown key column", func(string) {}, []string{"nope"}, `column "nope" is not in the table (id, n, ts, amount)`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTable(t, base)
			tc.edit(dir)
			_, err := Inspect(dir, Options{Keys: tc.keys})
			var de *Error
			var ke *KeyError
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.isKey && !errors.As(err, &ke)) || (!tc.isKey && !errors.As(err, &de)) {
				t.Fatalf("error %v (%T), want %q", err, err, tc.want)
			}
		})
	}
}

// TestKeysCaseInsensitive: --keys resolves a name ignoring case, as Spark's
// default resolution does, and reports the table's own name.
func TestKeysCaseInsensitive(t *testing.T) {
	r, err := Inspect("testdata/table-clean/table", Options{Keys: []string{"ID"}})
	if err != nil || len(r.Keys) != 1 || r.Keys[0] != "id" {
		t.Fatalf("%v %v", r, err)
	}
}

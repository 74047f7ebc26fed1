package inspect

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/internal/codec"
)

// v2Src is the real format-v2 checkpoint the red-team cases break:
// dropDuplicates(id, ts), 24 batches, a snapshot every 3 versions, a batch
// run again after a crash.
const v2Src = v2Fixtures + "/v2-dedup/checkpoint"

// v2Part0 is what partition 0 of v2Src holds at the last commit: the id
// of version 24 and its changelog's lineage.
func v2Part0(t *testing.T, dir string) (top lineageItem, lineage []lineageItem) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "commits", "23"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := parseCommit(b)
	if err != nil {
		t.Fatal(err)
	}
	top = lineageItem{24, e.IDs[0][0][0]}
	h, _ := decodeChangelog(t, filepath.Join(dir, "state/0/0", v2Name(24, top.ID, "changelog")))
	return top, h.Lineage
}

// decodeChangelog reads a format-v2 changelog: its head and the records
// after it, decoded.
func decodeChangelog(t *testing.T, p string) (changelogHead, []byte) {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(codec.NewLZ4BlockReader(bytes.NewReader(raw)))
	h, err := readHead(r, headV2)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return h, body
}

// writeChangelog writes a v3 changelog with lineage and records body.
func writeChangelog(t *testing.T, p string, lineage []lineageItem, body []byte) {
	t.Helper()
	b := append(utf("v3"), utf(lineageJSON(lineage...))...)
	if err := os.WriteFile(p, lz4Frame(t, append(b, body...)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func replaceInFile(t *testing.T, p, old, new string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s holds no %q", p, old)
	}
	if err := os.WriteFile(p, bytes.ReplaceAll(b, []byte(old), []byte(new)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// brokenV2 copies v2Src without what inspect never reads (Hadoop's
// hidden .crc files, the SSTs) and without the state files' checksum
// sidecars, then applies break_.
func brokenV2(t *testing.T, break_ func(t *testing.T, dir string)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ckpt")
	err := filepath.WalkDir(v2Src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(v2Src, p)
		dst := filepath.Join(dir, rel)
		switch {
		case d.IsDir() && d.Name() == "SSTs":
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(rel, "state/") && strings.HasSuffix(rel, ".crc"):
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	break_(t, dir)
	return dir
}

// TestRedteamInspectV2: every way of pointing inspect at the wrong state
// in a format-v2 checkpoint is an inspect.Error naming the file, never a
// report built from files the commit log does not name.
func TestRedteamInspectV2(t *testing.T) {
	const fresh = "0b0e5b0a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
	part := func(d string) string { return filepath.Join(d, "state/0/0") }
	for _, tc := range []struct {
		name, want string
		break_     func(t *testing.T, dir string)
	}{
		{"commit names a missing uuid", "commits/23 names checkpoint id " + fresh + " for partition 0, but neither 24_" + fresh + ".changelog nor", func(t *testing.T, d string) {
			top, _ := v2Part0(t, d)
			replaceInFile(t, filepath.Join(d, "commits/23"), top.ID, fresh)
		}},
		{"commit id not a uuid", `commits/23: line 2: stateUniqueIds: operator 0 partition 0: checkpoint id "not-a-uuid" is not a UUID`, func(t *testing.T, d string) {
			top, _ := v2Part0(t, d)
			replaceInFile(t, filepath.Join(d, "commits/23"), top.ID, "not-a-uuid")
		}},
		{"commit v1 over v2 files", "a state file named <version>_<checkpoint id> (checkpoint format v2), but commits/23 is v1", func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(d, "commits/23"), []byte("v1\n{\"nextBatchWatermarkMs\":1796532854000}"), 0o644)
		}},
		{"commit without ids", "stateUniqueIds names no checkpoint ids for operator 0", func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(d, "commits/23"), []byte("v2\n{\"nextBatchWatermarkMs\":1796532854000}"), 0o644)
		}},
		{"commit names one partition of two", "stateUniqueIds names 1 partitions for operator 0, which has 2", func(t *testing.T, d string) {
			top, _ := v2Part0(t, d)
			os.WriteFile(filepath.Join(d, "commits/23"), []byte(`v2
{"nextBatchWatermarkMs":1796532854000,"stateUniqueIds":{"0":[["`+top.ID+`"]]}}`), 0o644)
		}},
		{"commit trailing data", "commits/23: line 3: data after the commit metadata line", func(t *testing.T, d string) {
			f, _ := os.OpenFile(filepath.Join(d, "commits/23"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("\n{}")
			f.Close()
		}},
		{"lineage loop", "names version 24, not below the changelog's own version 24 (a loop)", func(t *testing.T, d string) {
			top, l := v2Part0(t, d)
			p := filepath.Join(part(d), v2Name(24, top.ID, "changelog"))
			_, body := decodeChangelog(t, p)
			writeChangelog(t, p, append(l, top), body)
		}},
		{"lineage pointing past the snapshot", "its lineage starts at version 22, and no snapshot of a version in it", func(t *testing.T, d string) {
			top, l := v2Part0(t, d)
			p := filepath.Join(part(d), v2Name(24, top.ID, "changelog"))
			_, body := decodeChangelog(t, p)
			var from22 []lineageItem
			for _, it := range l {
				if it.Version >= 22 {
					from22 = append(from22, it)
				}
			}
			writeChangelog(t, p, from22, body)
			os.Remove(filepath.Join(part(d), v2Name(24, top.ID, "zip")))
		}},
		{"lineage names a changelog that is gone", "missing: the lineage of version 24 names it (version 23", func(t *testing.T, d string) {
			top, l := v2Part0(t, d)
			os.Remove(filepath.Join(part(d), v2Name(23, l[len(l)-1].ID, "changelog")))
			os.Remove(filepath.Join(part(d), v2Name(24, top.ID, "zip")))
		}},
		{"lineages disagree", "the lineages disagree", func(t *testing.T, d string) {
			top, l := v2Part0(t, d)
			p := filepath.Join(part(d), v2Name(24, top.ID, "changelog"))
			_, body := decodeChangelog(t, p)
			l[0].ID = fresh
			writeChangelog(t, p, l, body)
		}},
		{"lineage id not a uuid", "checkpointUniqueId \"x\" is not a UUID", func(t *testing.T, d string) {
			top, l := v2Part0(t, d)
			p := filepath.Join(part(d), v2Name(24, top.ID, "changelog"))
			_, body := decodeChangelog(t, p)
			l[0].ID = "x"
			writeChangelog(t, p, l, body)
		}},
		{"changelog trailing data", ".changelog: data after the end marker", func(t *testing.T, d string) {
			top, l := v2Part0(t, d)
			p := filepath.Join(part(d), v2Name(24, top.ID, "changelog"))
			_, body := decodeChangelog(t, p)
			writeChangelog(t, p, l, append(body, 1, 2, 3))
		}},
		{"file name uuid not a uuid", "5_nope.changelog: checkpoint id \"nope\" in the file name is not a UUID", func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(part(d), "5_nope.changelog"), nil, 0o644)
		}},
		{"v1 name among v2 files", "5.changelog: a state file named without a checkpoint id in a format-v2 checkpoint", func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(part(d), "5.changelog"), nil, 0o644)
		}},
		{"changelog fifo", "changelog: not a regular file", func(t *testing.T, d string) {
			top, _ := v2Part0(t, d)
			mkfifo(t, filepath.Join(part(d), v2Name(24, top.ID, "changelog")))
		}},
		{"changelog symlink out", "a symbolic link leading out of the checkpoint", func(t *testing.T, d string) {
			top, _ := v2Part0(t, d)
			p := filepath.Join(part(d), v2Name(24, top.ID, "changelog"))
			out := filepath.Join(t.TempDir(), "c")
			b, _ := os.ReadFile(p)
			os.WriteFile(out, b, 0o644)
			symlink(t, out, p)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := brokenV2(t, tc.break_)
			_, err := Inspect(dir)
			var ie *Error
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an inspect.Error with %q", err, tc.want)
			}
		})
	}
}

// The state is what the commit log names, not the newest file listed: a
// crashed attempt's changelog of the last version, with other keys, is
// ignored (listing would pick either).
func TestV2IgnoresUnnamedAttempt(t *testing.T) {
	const other = "0b0e5b0a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
	want, err := Inspect(v2Src)
	if err != nil {
		t.Fatal(err)
	}
	dir := brokenV2(t, func(t *testing.T, d string) {
		top, l := v2Part0(t, d)
		// A second version 24 holding nothing: the crashed attempt.
		writeChangelog(t, filepath.Join(d, "state/0/0", v2Name(24, other, "changelog")), l, records())
		_ = top
	})
	got, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, w := got.Operators[0].Partitions[0], want.Operators[0].Partitions[0]
	if g.Keys != w.Keys || g.MinUs != w.MinUs || g.Ignored != w.Ignored+1 {
		t.Fatalf("got %+v, want %+v with one more ignored file", g, w)
	}
}

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fixtureFiles is a real checkpoint fixture as a badCase's files, under
// prefix, without the 4.1 checksum sidecars of the state files when noCRC.
func fixtureFiles(t *testing.T, name, prefix string, noCRC bool) map[string]string {
	t.Helper()
	src := filepath.Join(fixtures, name, "checkpoint")
	out := map[string]string{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if noCRC && strings.HasPrefix(rel, "state/") && strings.HasSuffix(rel, ".crc") {
			return nil
		}
		b, err := os.ReadFile(p)
		out[filepath.Join(prefix, rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// with is files with some changed ("" content: removed).
func with(files map[string]string, change map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[k] = v
	}
	for k, v := range change {
		if v == "" {
			delete(out, k)
			for f := range out {
				if strings.HasPrefix(f, k+"/") {
					delete(out, f)
				}
			}
			continue
		}
		out[k] = v
	}
	return out
}

// TestInspectBadInput is inspect's bad-input corpus for issue 25: a
// partition gone, times out of Spark's range or order, each exit 2 with
// one line naming the file.
func TestInspectBadInput(t *testing.T) {
	in := func(args ...string) []string { return append([]string{"inspect"}, args...) }
	hdfs := fixtureFiles(t, "unbounded-hdfs", "c", false)
	rocks := fixtureFiles(t, "healthy-rocksdb", "c", false)
	off11 := hdfs["c/offsets/11"]
	if !strings.Contains(off11, `"batchWatermarkMs":0,"batchTimestampMs":1796133571118`) {
		t.Fatalf("fixture offsets/11 changed: %s", off11)
	}
	cases := []badCase{
		{name: "inspect partition gone", files: with(hdfs, map[string]string{"c/state/0/1": ""}), args: in("$DIR/c"), code: 2, want: []string{"inspect: $DIR/c/state/0/1: missing", "names 2 partitions"}},
		{name: "inspect rocksdb partition gone", files: with(rocks, map[string]string{"c/state/0/1": ""}), args: in("$DIR/c"), code: 2, want: []string{"$DIR/c/state/0/1: missing"}},
		{name: "inspect partition beyond metadata", files: with(hdfs, map[string]string{"c/state/0/5/1.delta": hdfs["c/state/0/1/1.delta"]}), args: in("$DIR/c"), code: 2, want: []string{"$DIR/c/state/0/5: a partition beyond the 2"}},
		{name: "inspect partition a file", files: with(with(hdfs, map[string]string{"c/state/0/1": ""}), map[string]string{"c/state/0/1": "x"}), args: in("$DIR/c"), code: 2, want: []string{"$DIR/c/state/0/1: not a folder"}},
		{name: "inspect watermark 9e18", files: with(hdfs, map[string]string{"c/offsets/11": strings.Replace(off11, `"batchWatermarkMs":0`, `"batchWatermarkMs":9000000000000000000`, 1)}), args: in("$DIR/c"), code: 2, want: []string{"$DIR/c/offsets/11: line 2: batchWatermarkMs 9000000000000000000 is outside [0, 253402300799999]"}},
		{name: "inspect timestamp past 9999", files: with(hdfs, map[string]string{"c/offsets/11": strings.Replace(off11, `1796133571118`, `253402300800000`, 1)}), args: in("$DIR/c"), code: 2, want: []string{"batchTimestampMs 253402300800000 is outside"}},
		{name: "inspect next watermark 9e18", files: with(hdfs, map[string]string{"c/commits/11": "v1\n{\"nextBatchWatermarkMs\":9000000000000000000}"}), args: in("$DIR/c"), code: 2, want: []string{"$DIR/c/commits/11: line 2: nextBatchWatermarkMs 9000000000000000000 is outside"}},
		{name: "inspect next watermark goes down", files: with(hdfs, map[string]string{
			"c/offsets/11": strings.Replace(off11, `"batchWatermarkMs":0`, `"batchWatermarkMs":7000`, 1),
			"c/commits/11": "v1\n{\"nextBatchWatermarkMs\":5000}"}), args: in("$DIR/c"), code: 2, want: []string{"commits/11: line 2: nextBatchWatermarkMs 5000 is below the batchWatermarkMs 7000 of offsets/11"}},
		{name: "inspect two batches in flight", files: with(hdfs, map[string]string{"c/offsets/13": off11}), args: in("$DIR/c"), code: 2, want: []string{"offsets/13: batch 13 is planned but the last commit is commits/11"}},
		{name: "inspect commit without offsets", files: with(hdfs, map[string]string{"c/commits/12": hdfs["c/commits/11"]}), args: in("$DIR/c"), code: 2, want: []string{"commits/12: batch 12 has a commit but no offsets/12"}},
		// 3.5 writes no operator metadata: the pinned shuffle partitions name them.
		{name: "inspect 3.5 partition gone", files: with(hdfs, map[string]string{"c/state/0/_metadata/metadata": "", "c/state/0/1": ""}), args: in("$DIR/c"), code: 2, want: []string{"$DIR/c/state/0/1: missing: offsets/11 (spark.sql.shuffle.partitions) names 2 partitions"}},
		{name: "inspect bad shuffle partitions", files: with(hdfs, map[string]string{"c/offsets/11": strings.Replace(off11, `"spark.sql.shuffle.partitions":"2"`, `"spark.sql.shuffle.partitions":"-2"`, 1)}), args: in("$DIR/c"), code: 2, want: []string{"spark.sql.shuffle.partitions \"-2\""}},
	}
	n := badInputCorpus(t, cases)
	t.Logf("%d inspect bad-input cases (issue 25)", n)
}

// TestRedteamInspectCLI: pipes and links planted in a checkpoint are
// refused with exit 2 and one line, never a hang (a hang fails the test
// by the go test timeout; no timed assertion).
func TestRedteamInspectCLI(t *testing.T) {
	bin := binary(t)
	for _, tc := range []struct {
		name, want string
		plant      func(t *testing.T, c string)
	}{
		{"commit fifo", "commits/11: not a regular file (a named pipe)", func(t *testing.T, c string) { fifo(t, filepath.Join(c, "commits/11")) }},
		{"delta fifo", "state/0/1/3.delta: not a regular file (a named pipe)", func(t *testing.T, c string) {
			os.Remove(filepath.Join(c, "state/0/1/3.delta.crc"))
			fifo(t, filepath.Join(c, "state/0/1/3.delta"))
		}},
		{"link to /dev/zero as offsets", "offsets/11: a symbolic link leading out of the checkpoint", func(t *testing.T, c string) {
			os.Remove(filepath.Join(c, "offsets/11"))
			if err := os.Symlink("/dev/zero", filepath.Join(c, "offsets/11")); err != nil {
				t.Fatal(err)
			}
		}},
		{"partition link out", "state/0/1: a symbolic link leading out of the checkpoint", func(t *testing.T, c string) {
			out := t.TempDir()
			os.RemoveAll(filepath.Join(c, "state/0/1"))
			if err := os.Symlink(out, filepath.Join(c, "state/0/1")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := filepath.Join(dir, "c")
			for name, content := range fixtureFiles(t, "unbounded-hdfs", "c", false) {
				p := filepath.Join(dir, name)
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, []byte(content), 0o644)
			}
			tc.plant(t, c)
			_, errOut, code := run(bin, "inspect", c)
			if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q; want 2 and one line with %q", code, errOut, tc.want)
			}
		})
	}
}

func fifo(t *testing.T, p string) {
	t.Helper()
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// TestRedteamRunFifo: run and sweep over a folder holding a named pipe
// named *.yaml exit 2 naming it, instead of blocking for ever.
func TestRedteamRunFifo(t *testing.T) {
	bin := binary(t)
	for _, args := range [][]string{{"run"}, {"sweep", "--seeds", "1"}} {
		t.Run(args[0], func(t *testing.T) {
			dir := t.TempDir()
			fifo(t, filepath.Join(dir, "s.yaml"))
			_, errOut, code := run(bin, append(args, "--out", filepath.Join(dir, "o"), dir)...)
			if code != 2 || !strings.Contains(errOut, filepath.Join(dir, "s.yaml")+": not a regular file (a named pipe)") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
		})
	}
}

package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestCrashAndCorruptCheckpoint (issue 10): a real-disk checkpoint left by
// a first exec, then one file damaged, then a second exec resuming from
// it. For every file kind (offsets, commits, metadata, the state schema
// and operator metadata, the memory store's deltas and snapshots, the
// Pebble store's changelogs and zips) and every fault (truncate, empty,
// garble, delete, a copy over the previous file or to the next name,
// out-of-range values), the second run must either recover with what a
// fault-free run puts in the table, or refuse the checkpoint: exit 2, one
// line "checkpoint error: <file in the checkpoint>: ...". Exit 0 with a
// different table, exit 1, or a panic fails the test.
func TestCrashAndCorruptCheckpoint(t *testing.T) {
	bin := binary(t)
	for _, store := range []string{"memory", "pebble"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			q := write(t, dir, "q.yaml", "dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 2 seconds}\n"+
				"shuffle_partitions: 2\nstate_store: "+store+"\nsink: {kind: table, app_id: corrupt-test}\n")
			var first, all strings.Builder
			for i := range 24 {
				// Duplicates inside and across lines, late rows, eviction.
				line := fmt.Sprintf(`{"rows": [{"id":"k%d","ts":%d},{"id":"k%d","ts":%d},{"id":"k%d","ts":%d}]}`+"\n",
					i, 2*i, i%5, 2*i+1, (i+3)%7, max(2*i-5, 0))
				all.WriteString(line)
				if i < 16 {
					first.WriteString(line)
				}
			}
			s1 := write(t, dir, "first.jsonl", first.String())
			s2 := write(t, dir, "all.jsonl", all.String())
			base := filepath.Join(dir, "base")
			if _, errOut, code := run(bin, "exec", "--query", q, "--input", s1, "--checkpoint", base); code != 0 {
				t.Fatalf("first run: exit %d: %s", code, errOut)
			}
			resume := func(ck string) (string, string, int) {
				return run(bin, "exec", "--query", q, "--input", s2, "--checkpoint", ck)
			}
			ref := filepath.Join(dir, "ref")
			copyDir(t, base, ref)
			out, errOut, code := resume(ref)
			if code != 0 {
				t.Fatalf("fault-free resume: exit %d: %s", code, errOut)
			}
			want := tableLine(out)
			if want == "" || !strings.Contains(want, `"k23"`) {
				t.Fatalf("fault-free resume has no table line with the new rows:\n%s", out)
			}

			files := pickFiles(t, base, store)
			type job struct {
				name, ck string
			}
			var jobs []job
			for _, f := range files {
				for _, fault := range faultsFor(f) {
					ck := filepath.Join(dir, "c", strconv.Itoa(len(jobs)))
					copyDir(t, base, ck)
					if !fault.apply(t, ck, f) {
						os.RemoveAll(ck)
						continue // nothing to do for this file
					}
					jobs = append(jobs, job{f + " " + fault.name, ck})
				}
			}
			// The runs wait on fsync more than on the CPU: a few at a time.
			var mu sync.Mutex
			recovered, refused := 0, 0
			work := make(chan job)
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range work {
						out, errOut, code := resume(j.ck)
						mu.Lock()
						switch {
						case strings.Contains(errOut, "panic:"):
							t.Errorf("%s: panic:\n%s", j.name, errOut)
						case code == 0:
							if got := tableLine(out); got != want {
								t.Errorf("%s: exit 0 with a different table:\n got %s\nwant %s", j.name, got, want)
							}
							recovered++
						case code == 2:
							line := strings.TrimRight(errOut, "\n")
							if strings.Contains(line, "\n") || !strings.HasPrefix(line, "dedupsim: checkpoint error: "+j.ck+string(filepath.Separator)) {
								t.Errorf("%s: exit 2 without one checkpoint error line naming a file of %s:\n%s", j.name, j.ck, errOut)
							}
							refused++
						default:
							t.Errorf("%s: exit %d (want 0 with the same table, or 2): %s", j.name, code, errOut)
						}
						mu.Unlock()
						os.RemoveAll(j.ck)
					}
				}()
			}
			for _, j := range jobs {
				work <- j
			}
			close(work)
			wg.Wait()
			t.Logf("%s store: %d files, %d damaged checkpoints recovered identically, %d refused with a checkpoint error", store, len(files), recovered, refused)
			if refused == 0 || recovered == 0 {
				t.Fatalf("degenerate corpus: %d recovered, %d refused", recovered, refused)
			}
		})
	}
}

// tableLine is the table of the {"table": ...} line of an exec output,
// without the table sink's txn list: a recovered run may re-run a batch
// whose commit was lost, which this invocation's in-memory sink commits
// again (its rows are the same).
func tableLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, `{"table":`) {
			if i := strings.Index(l, `,"txn":`); i >= 0 {
				return l[:i] + "}"
			}
			return l
		}
	}
	return ""
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

var numbered = regexp.MustCompile(`^(.*/)?(\d+)(\.[a-z]+)?$`)

// pickFiles chooses, per kind, the files a resume reads or could read:
// the newest two and the oldest of each log and of partition 0's state
// files, and the single metadata files.
func pickFiles(t *testing.T, ck, store string) []string {
	t.Helper()
	byKind := map[string][]string{}
	filepath.WalkDir(ck, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(ck, p)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(filepath.Base(rel), ".") {
			return nil // the lock
		}
		kind := rel
		if m := numbered.FindStringSubmatch(rel); m != nil {
			kind = m[1] + "N" + m[3]
		}
		byKind[kind] = append(byKind[kind], rel)
		return nil
	})
	var kinds []string
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	snap := ".snapshot"
	if store == "pebble" {
		snap = ".zip"
	}
	var out []string
	for _, k := range kinds {
		fs := byKind[k]
		if strings.HasPrefix(k, "state/0/1/") {
			continue // partition 0 stands for both
		}
		sort.Slice(fs, func(i, j int) bool { return numberOf(fs[i]) < numberOf(fs[j]) })
		if len(fs) <= 3 {
			out = append(out, fs...)
		} else {
			out = append(out, fs[0], fs[len(fs)-2], fs[len(fs)-1])
		}
	}
	hasSnap := false
	for _, f := range out {
		hasSnap = hasSnap || strings.HasSuffix(f, snap)
	}
	if !hasSnap {
		t.Fatalf("the first run left no %s file to damage: %v", snap, out)
	}
	return out
}

func numberOf(p string) int64 {
	m := numbered.FindStringSubmatch(p)
	if m == nil {
		return -1
	}
	n, _ := strconv.ParseInt(m[2], 10, 64)
	return n
}

type corruptFault struct {
	name string
	// apply damages file f (relative) of checkpoint ck; false when the
	// fault does not apply to f.
	apply func(t *testing.T, ck, f string) bool
}

func faultsFor(f string) []corruptFault {
	rw := func(fn func(b []byte) []byte) func(t *testing.T, ck, f string) bool {
		return func(t *testing.T, ck, f string) bool {
			p := filepath.Join(ck, filepath.FromSlash(f))
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			nb := fn(b)
			if nb == nil || bytes.Equal(nb, b) {
				return false
			}
			if err := os.WriteFile(p, nb, 0o644); err != nil {
				t.Fatal(err)
			}
			return true
		}
	}
	// sibling is f with its number moved by d, "" when f has none.
	sibling := func(f string, d int64) string {
		m := numbered.FindStringSubmatch(f)
		if m == nil {
			return ""
		}
		n, _ := strconv.ParseInt(m[2], 10, 64)
		if n+d < 0 {
			return ""
		}
		return m[1] + strconv.FormatInt(n+d, 10) + m[3]
	}
	copyTo := func(d int64, mustExist bool) func(t *testing.T, ck, f string) bool {
		return func(t *testing.T, ck, f string) bool {
			to := sibling(f, d)
			if to == "" {
				return false
			}
			dst := filepath.Join(ck, filepath.FromSlash(to))
			if _, err := os.Stat(dst); (err == nil) != mustExist {
				return false
			}
			b, err := os.ReadFile(filepath.Join(ck, filepath.FromSlash(f)))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return true
		}
	}
	number := regexp.MustCompile(`\d+`)
	faults := []corruptFault{
		{"truncated to half", rw(func(b []byte) []byte { return b[:len(b)/2] })},
		{"cut by one byte", rw(func(b []byte) []byte { return b[:max(len(b)-1, 0)] })},
		{"emptied", rw(func(b []byte) []byte { return []byte{} })},
		{"garbled in the middle", rw(func(b []byte) []byte {
			if len(b) == 0 {
				return nil
			}
			c := bytes.Clone(b)
			c[len(c)/2] ^= 0x5a
			return c
		})},
		{"garbled at the end", rw(func(b []byte) []byte {
			if len(b) == 0 {
				return nil
			}
			c := bytes.Clone(b)
			c[len(c)-1] ^= 0x01
			return c
		})},
		{"one byte appended", rw(func(b []byte) []byte { return append(bytes.Clone(b), '0') })},
		{"deleted", func(t *testing.T, ck, f string) bool {
			return os.Remove(filepath.Join(ck, filepath.FromSlash(f))) == nil
		}},
		{"copied over the previous one", copyTo(-1, true)},
		{"copied to the next name", copyTo(1, false)},
	}
	if !strings.HasSuffix(f, ".delta") && !strings.HasSuffix(f, ".snapshot") && !strings.HasSuffix(f, ".changelog") && !strings.HasSuffix(f, ".zip") {
		for _, v := range []string{"9223372036854775807", "-1", "253402300800000"} {
			v := v
			faults = append(faults, corruptFault{"every number " + v, rw(func(b []byte) []byte {
				return number.ReplaceAll(b, []byte(v))
			})})
		}
	} else {
		// The first length field of a record file set out of range.
		faults = append(faults, corruptFault{"first length 2^31-1", rw(func(b []byte) []byte {
			if len(b) < 4 || strings.HasSuffix(f, ".zip") {
				return nil
			}
			c := bytes.Clone(b)
			copy(c, []byte{0x7f, 0xff, 0xff, 0xff})
			return c
		})})
	}
	return faults
}

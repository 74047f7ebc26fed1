package fsys_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

// testConformance checks the FS contract (not durability) on any FS, so Mem
// and OS are held to the same behaviour.
func testConformance(t *testing.T, f fsys.FS) {
	t.Helper()
	mustNil := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	wantContent := func(name, want string) {
		t.Helper()
		got, err := f.ReadFile(name)
		if err != nil {
			t.Fatalf("ReadFile(%s): %v", name, err)
		}
		if string(got) != want {
			t.Fatalf("ReadFile(%s) = %q, want %q", name, got, want)
		}
	}

	// Absent things.
	if _, err := f.ReadDir("a"); !fsys.IsNotExist(err) {
		t.Fatalf("ReadDir(absent) err = %v, want not-exist", err)
	}
	if _, err := f.ReadFile("a/x"); !fsys.IsNotExist(err) {
		t.Fatalf("ReadFile(absent) err = %v, want not-exist", err)
	}
	if ok, err := f.Exists("a/x"); ok || err != nil {
		t.Fatalf("Exists(absent) = %v, %v", ok, err)
	}
	mustNil(f.Remove("a/x")) // absent: not an error
	if file, err := f.Create("nodir/x"); err == nil || file != nil {
		t.Fatalf("Create without parent = %v, %v; want nil file and an error", file, err)
	}

	// Write, read, list.
	mustNil(f.MkdirAll("a/b"))
	mustNil(f.MkdirAll("a/b")) // idempotent
	mustNil(fsys.WriteAtomic(f, "a/b/2.delta", []byte("two")))
	mustNil(fsys.WriteAtomic(f, "a/b/10.delta", []byte("ten")))
	mustNil(fsys.WriteAtomic(f, "a/top", []byte("t")))
	wantContent("a/b/2.delta", "two")
	names, err := f.ReadDir("a/b")
	mustNil(err)
	if want := []string{"10.delta", "2.delta"}; !slices.Equal(names, want) {
		t.Fatalf("ReadDir = %v, want %v (sorted, no temp files)", names, want)
	}
	names, err = f.ReadDir("a")
	mustNil(err)
	if want := []string{"b", "top"}; !slices.Equal(names, want) {
		t.Fatalf("ReadDir(a) = %v, want %v", names, want)
	}
	if ok, err := f.Exists("a/b"); !ok || err != nil {
		t.Fatalf("Exists(dir) = %v, %v", ok, err)
	}

	// Overwrite via WriteAtomic, plain Create truncates.
	mustNil(fsys.WriteAtomic(f, "a/b/2.delta", []byte("TWO")))
	wantContent("a/b/2.delta", "TWO")
	file, err := f.Create("a/b/2.delta")
	mustNil(err)
	_, err = file.Write([]byte("x"))
	mustNil(err)
	mustNil(file.Sync())
	mustNil(file.Close())
	wantContent("a/b/2.delta", "x")

	// Rename replaces.
	mustNil(f.Rename("a/b/2.delta", "a/b/10.delta"))
	wantContent("a/b/10.delta", "x")
	if ok, _ := f.Exists("a/b/2.delta"); ok {
		t.Fatal("rename source still exists")
	}
	if err := f.Rename("a/b/none", "a/b/y"); !fsys.IsNotExist(err) {
		t.Fatalf("Rename(absent) err = %v, want not-exist", err)
	}

	// Remove.
	mustNil(f.Remove("a/b/10.delta"))
	names, err = f.ReadDir("a/b")
	mustNil(err)
	if len(names) != 0 {
		t.Fatalf("ReadDir after remove = %v", names)
	}
	mustNil(f.SyncDir("a/b"))
	if err := f.SyncDir("nope"); !fsys.IsNotExist(err) {
		t.Fatalf("SyncDir(absent) err = %v, want not-exist", err)
	}
}

func TestOSConformance(t *testing.T) {
	testConformance(t, fsys.NewOS(t.TempDir()))
}

// A scratch OS (exec's temporary checkpoint) keeps the contract; only its
// fsyncs are skipped: its files are not *os.File, whose Sync is fsync(2).
func TestScratchOSConformance(t *testing.T) {
	testConformance(t, fsys.NewScratchOS(t.TempDir()))
	for _, tc := range []struct {
		fs      *fsys.OS
		syncing bool
	}{{fsys.NewOS(t.TempDir()), true}, {fsys.NewScratchOS(t.TempDir()), false}} {
		f, err := tc.fs.Create("x")
		if err != nil {
			t.Fatal(err)
		}
		if _, isOS := f.(*os.File); isOS != tc.syncing {
			t.Errorf("Scratch %v: Create gave %T (an *os.File, which fsyncs: %v), want %v", tc.fs.Scratch, f, isOS, tc.syncing)
		}
		if err := f.Sync(); err != nil {
			t.Errorf("Scratch %v: Sync: %v", tc.fs.Scratch, err)
		}
		f.Close()
	}
}

func TestMemConformance(t *testing.T) {
	testConformance(t, fsys.NewMem())
}

// TestMemSpillConformance: the same FS with every synced file (one byte or
// more) spilled to a host temp file.
func TestMemSpillConformance(t *testing.T) {
	m := fsys.NewMem()
	m.SpillAbove(1)
	testConformance(t, m)
}

func TestOSWritesUnderRoot(t *testing.T) {
	root := t.TempDir()
	o := fsys.NewOS(root)
	if err := fsys.WriteAtomic(o, "state/0/3/1.delta", []byte("abc")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "state", "0", "3", "1.delta"))
	if err != nil || string(got) != "abc" {
		t.Fatalf("file on disk = %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(root, "state", "0", "3", ".1.delta.tmp")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("temp file left behind: %v", err)
	}
	// Temp names are unique on the real disk, so no temp file of any name
	// is left either.
	if ents, _ := os.ReadDir(filepath.Join(root, "state", "0", "3")); len(ents) != 1 {
		t.Fatalf("the folder holds %d entries, want only 1.delta", len(ents))
	}
}

// Issue 10 item 1: on the real disk, temp names are unique, WriteNew
// never replaces an existing file, and Lock is exclusive until released.
func TestOSSharing(t *testing.T) {
	o := fsys.NewOS(t.TempDir())
	if a, b := o.TempName("offsets/3"), o.TempName("offsets/3"); a == b || !strings.HasPrefix(a, "offsets/.3.") || !strings.HasSuffix(a, ".tmp") {
		t.Fatalf("temp names %q %q", a, b)
	}
	if err := fsys.WriteNew(o, "offsets/3", []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteNew(o, "offsets/3", []byte("second")); !errors.Is(err, fsys.ErrExist) {
		t.Fatalf("second WriteNew: %v", err)
	}
	if b, _ := o.ReadFile("offsets/3"); string(b) != "first" {
		t.Fatalf("offsets/3 = %q", b)
	}
	if names, _ := o.ReadDir("offsets"); len(names) != 1 {
		t.Fatalf("offsets holds %v", names)
	}
	release, err := o.Lock(".lock")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Lock(".lock"); !errors.Is(err, fsys.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("(pid %d)", os.Getpid())) {
		t.Fatalf("second Lock: %v", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	again, err := o.Lock(".lock")
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	again()
	// Mem refuses a taken name too (the simulator's disk does not offer
	// it and falls back to WriteAtomic).
	m := fsys.NewMem()
	fsys.WriteNew(m, "c/1", []byte("a"))
	if err := fsys.WriteNew(m, "c/1", []byte("b")); !errors.Is(err, fsys.ErrExist) {
		t.Fatalf("Mem WriteNew: %v", err)
	}
}

// step is one operation of a crash scenario.
type step func(t *testing.T, m *fsys.Mem)

func writeAtomic(name, data string) step {
	return func(t *testing.T, m *fsys.Mem) {
		if err := fsys.WriteAtomic(m, name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
}

// write creates name and writes data; sync says whether the file is
// fsynced, syncDir whether its directory is.
func write(name, data string, sync, syncDir bool) step {
	return func(t *testing.T, m *fsys.Mem) {
		f, err := m.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
		if sync {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if syncDir {
			if err := m.SyncDir(path.Dir(name)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func mkdir(dir string) step {
	return func(t *testing.T, m *fsys.Mem) {
		if err := m.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
	}
}

func rename(from, to string, syncDir bool) step {
	return func(t *testing.T, m *fsys.Mem) {
		if err := m.Rename(from, to); err != nil {
			t.Fatal(err)
		}
		if syncDir {
			if err := m.SyncDir(path.Dir(to)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func remove(name string, syncDir bool) step {
	return func(t *testing.T, m *fsys.Mem) {
		if err := m.Remove(name); err != nil {
			t.Fatal(err)
		}
		if syncDir {
			if err := m.SyncDir(path.Dir(name)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestMemCrash(t *testing.T) {
	tests := []struct {
		name string
		// before runs before the crash
		before []step
		// want is the content of every file after the crash
		want map[string]string
	}{
		{
			name:   "WriteAtomic survives",
			before: []step{writeAtomic("d/f", "hello")},
			want:   map[string]string{"d/f": "hello"},
		},
		{
			name:   "WriteAtomic replacing an old version survives",
			before: []step{writeAtomic("d/f", "old"), writeAtomic("d/f", "new")},
			want:   map[string]string{"d/f": "new"},
		},
		{
			name:   "unsynced write to a new file is lost entirely",
			before: []step{mkdir("d"), write("d/f", "data", false, false)},
			want:   map[string]string{},
		},
		{
			name:   "unsynced content of a dir-synced file is lost",
			before: []step{mkdir("d"), write("d/f", "data", false, true)},
			want:   map[string]string{"d/f": ""},
		},
		{
			name:   "synced content without a dir sync is lost with the name",
			before: []step{mkdir("d"), write("d/f", "data", true, false)},
			want:   map[string]string{},
		},
		{
			name:   "synced file and dir survive",
			before: []step{mkdir("d"), write("d/f", "data", true, true)},
			want:   map[string]string{"d/f": "data"},
		},
		{
			name: "unsynced overwrite reverts to the last sync",
			before: []step{
				writeAtomic("d/f", "v1"),
				write("d/f", "v2", false, true),
			},
			want: map[string]string{"d/f": "v1"},
		},
		{
			name: "appends after a sync are lost, the synced prefix stays",
			before: []step{
				mkdir("d"),
				func(t *testing.T, m *fsys.Mem) {
					f, _ := m.Create("d/f")
					f.Write([]byte("abc"))
					f.Sync()
					f.Write([]byte("def"))
					if err := m.SyncDir("d"); err != nil {
						t.Fatal(err)
					}
					if got, _ := m.ReadFile("d/f"); string(got) != "abcdef" {
						t.Fatalf("before the crash: %q", got)
					}
				},
			},
			want: map[string]string{"d/f": "abc"},
		},
		{
			name: "rename without dir sync reverts to the previous entry",
			before: []step{
				writeAtomic("d/f", "old"),
				write("d/tmp", "new", true, false),
				rename("d/tmp", "d/f", false),
			},
			want: map[string]string{"d/f": "old"},
		},
		{
			name: "remove without dir sync is undone",
			before: []step{
				writeAtomic("d/f", "keep"),
				remove("d/f", false),
			},
			want: map[string]string{"d/f": "keep"},
		},
		{
			name: "remove with dir sync is durable",
			before: []step{
				writeAtomic("d/f", "gone"),
				remove("d/f", true),
			},
			want: map[string]string{},
		},
		{
			name: "dir sync covers every entry of that dir only",
			before: []step{
				mkdir("a"), mkdir("b"),
				write("a/x", "ax", true, false),
				write("b/y", "by", true, false),
				write("a/z", "az", true, true), // syncs a: x and z
			},
			want: map[string]string{"a/x": "ax", "a/z": "az"},
		},
	}
	// Every case with spilling off, on for every synced file, and on for
	// files of 3 bytes or more only (some spilled, some not, in one FS):
	// what a crash keeps is the same.
	for _, spill := range []int{0, 1, 3} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/spill=%d", tt.name, spill), func(t *testing.T) {
				m := fsys.NewMem()
				m.SpillAbove(spill)
				testMemCrash(t, m, tt.before, tt.want)
			})
		}
	}
}

func testMemCrash(t *testing.T, m *fsys.Mem, before []step, want map[string]string) {
	t.Helper()
	for _, s := range before {
		s(t, m)
	}
	m.Crash()
	got := map[string]string{}
	for _, name := range m.Files() {
		data, err := m.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		got[name] = string(data)
	}
	if len(got) != len(want) {
		t.Fatalf("after crash: %v, want %v", got, want)
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Fatalf("after crash: %v, want %v", got, want)
		}
	}
}

// TestMemSpillCap: past the cap on open spill files a file stays in the
// heap, with the same content.
func TestMemSpillCap(t *testing.T) {
	old := fsys.SetMaxOpenSpills(0)
	defer fsys.SetMaxOpenSpills(old)
	m := fsys.NewMem()
	m.SpillAbove(1)
	if err := fsys.WriteAtomic(m, "d/f", []byte("content")); err != nil {
		t.Fatal(err)
	}
	if fsys.Spilled(m, "d/f") {
		t.Fatal("spilled past the cap")
	}
	if got, _ := m.ReadFile("d/f"); string(got) != "content" {
		t.Fatalf("d/f = %q", got)
	}
}

// TestMemSpill: a synced file of the threshold or more leaves the heap, a
// smaller one does not; a spilled file written again, read, cloned and
// crashed keeps the model's content.
func TestMemSpill(t *testing.T) {
	m := fsys.NewMem()
	m.SpillAbove(64 << 10)
	big := strings.Repeat("x", 64<<10)
	if err := fsys.WriteAtomic(m, "d/big", []byte(big)); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteAtomic(m, "d/small", []byte("small")); err != nil {
		t.Fatal(err)
	}
	if !fsys.Spilled(m, "d/big") || fsys.Spilled(m, "d/small") {
		t.Fatalf("spilled: big %v (want true), small %v (want false)", fsys.Spilled(m, "d/big"), fsys.Spilled(m, "d/small"))
	}
	if got, err := m.ReadFile("d/big"); err != nil || string(got) != big {
		t.Fatalf("ReadFile(d/big): %d bytes, %v", len(got), err)
	}
	// A read hands out a copy: changing it changes nothing.
	got, _ := m.ReadFile("d/big")
	got[0] = 'y'
	if again, _ := m.ReadFile("d/big"); again[0] != 'x' {
		t.Fatal("a ReadFile result shares the file's bytes")
	}
	c := m.Clone()
	// A file spills at the write that takes it past the threshold, before
	// any sync; appending to a synced spilled file copies it to a new spill
	// file, and a crash loses what was not synced.
	f, err := m.Create("d/log")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(big[:100]))
	if fsys.Spilled(m, "d/log") {
		t.Fatal("d/log spilled under the threshold")
	}
	f.Write([]byte(big[100:]))
	if !fsys.Spilled(m, "d/log") {
		t.Fatal("d/log not spilled at the write past the threshold")
	}
	f.Write([]byte("more"))
	if got, _ := m.ReadFile("d/log"); string(got) != big+"more" {
		t.Fatalf("d/log before its sync: %d bytes", len(got))
	}
	f.Close()
	f, _ = m.Create("d/log") // truncate: the unsynced spill file is dropped
	f.Write([]byte(big))
	f.Sync()
	if !fsys.Spilled(m, "d/log") {
		t.Fatal("d/log not spilled at its sync")
	}
	f.Write([]byte("tail"))
	if !fsys.Spilled(m, "d/log") {
		t.Fatal("d/log not spilled after a write past its sync")
	}
	if got, _ := m.ReadFile("d/log"); string(got) != big+"tail" {
		t.Fatalf("d/log before the crash: %d bytes", len(got))
	}
	f.Close()
	m.SyncDir("d")
	// An unsynced spilled file in the same directory: gone at the crash
	// with its name (dir not synced since).
	g, _ := m.Create("d/unsynced")
	g.Write([]byte(big))
	g.Close()
	m.Crash()
	if ok, _ := m.Exists("d/unsynced"); ok {
		t.Fatal("an unsynced spilled file survived the crash")
	}
	if got, _ := m.ReadFile("d/log"); string(got) != big {
		t.Fatalf("d/log after the crash: %d bytes, want the synced %d", len(got), len(big))
	}
	if got, _ := c.ReadFile("d/big"); string(got) != big {
		t.Fatalf("clone's d/big: %d bytes", len(got))
	}
	if ok, _ := c.Exists("d/log"); ok {
		t.Fatal("a file created after the clone is in the clone")
	}
}

func TestMemHandleDeadAfterCrash(t *testing.T) {
	m := fsys.NewMem()
	if err := m.MkdirAll("d"); err != nil {
		t.Fatal(err)
	}
	f, err := m.Create("d/f")
	if err != nil {
		t.Fatal(err)
	}
	m.Crash()
	if _, err := f.Write([]byte("x")); err == nil {
		t.Fatal("write through a pre-crash handle succeeded")
	}
	if err := f.Sync(); err == nil {
		t.Fatal("sync through a pre-crash handle succeeded")
	}
	if ok, _ := m.Exists("d"); !ok {
		t.Fatal("directories are durable on creation")
	}
}

func TestMemClone(t *testing.T) {
	m := fsys.NewMem()
	if err := fsys.WriteAtomic(m, "d/f", []byte("durable")); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteAtomic(m, "d/g", []byte("also")); err != nil {
		t.Fatal(err)
	}
	f, _ := m.Create("d/f") // truncate, not synced
	f.Write([]byte("volatile"))
	f.Close()

	c := m.Clone()
	if err := m.Remove("d/g"); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.ReadFile("d/f"); string(got) != "volatile" {
		t.Fatalf("clone current content = %q", got)
	}
	if ok, _ := c.Exists("d/g"); !ok {
		t.Fatal("remove on the original reached the clone")
	}
	c.Crash()
	if got, _ := c.ReadFile("d/f"); string(got) != "durable" {
		t.Fatalf("clone after crash = %q, want the durable content", got)
	}
	if got, _ := m.ReadFile("d/f"); string(got) != "volatile" {
		t.Fatalf("crash of the clone reached the original: %q", got)
	}
	if want := []string{"d/f", "d/g"}; !slices.Equal(c.Files(), want) {
		t.Fatalf("clone files = %v, want %v", c.Files(), want)
	}
	if want := []string{"d/f"}; !slices.Equal(m.Files(), want) {
		t.Fatalf("original files = %v, want %v", m.Files(), want)
	}
}

func TestMemPaths(t *testing.T) {
	m := fsys.NewMem()
	if err := fsys.WriteAtomic(m, "/x/./y/../z", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if got, err := m.ReadFile("x/z"); err != nil || string(got) != "1" {
		t.Fatalf("ReadFile(x/z) = %q, %v", got, err)
	}
	if err := fsys.WriteAtomic(m, "top", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if want := []string{"top", "x/z"}; !slices.Equal(m.Files(), want) {
		t.Fatalf("Files = %v, want %v", m.Files(), want)
	}
	if err := m.Remove("x"); err == nil {
		t.Fatal("removed a non-empty directory")
	}
	if _, err := m.Create("x"); err == nil {
		t.Fatal("created a file over a directory")
	}
	if err := m.MkdirAll("top/sub"); err == nil {
		t.Fatal("created a directory under a file")
	}
}

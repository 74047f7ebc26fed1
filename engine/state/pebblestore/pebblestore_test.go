package pebblestore_test

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/pebblestore"
)

var id03 = state.ID{Operator: 0, Partition: 3}

type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

func newProvider(t tb, f fsys.FS, opts pebblestore.Options) *pebblestore.Provider {
	t.Helper()
	p, err := pebblestore.New(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func mustLoad(t tb, p state.Provider, id state.ID, v int64) state.Store {
	t.Helper()
	st, err := p.Load(id, v)
	if err != nil {
		t.Fatalf("Load(%v, %d): %v", id, v, err)
	}
	return st
}

func contents(t tb, st state.Store) map[string]string {
	t.Helper()
	got := map[string]string{}
	if err := st.Range(func(k, v []byte) bool {
		got[string(k)] = string(v)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

type change struct {
	put map[string]string
	del []string
}

func apply(t tb, p state.Provider, id state.ID, v int64, c change) {
	t.Helper()
	st := mustLoad(t, p, id, v)
	for _, k := range slices.Sorted(maps.Keys(c.put)) {
		if err := st.Put([]byte(k), []byte(c.put[k])); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range c.del {
		if err := st.Delete([]byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.Commit()
	if err != nil {
		t.Fatalf("Commit of version %d: %v", v+1, err)
	}
	if got != v+1 {
		t.Fatalf("Commit returned %d, want %d", got, v+1)
	}
}

func listDir(t tb, f fsys.FS, dir string) string {
	t.Helper()
	names, err := f.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, n := range names {
		if !strings.HasPrefix(n, ".") {
			keep = append(keep, n)
		}
	}
	return strings.Join(keep, " ")
}

func customs(st state.Store) (hits, misses int64) {
	m := st.Metrics().Custom
	return m["loadedMapCacheHitCount"], m["loadedMapCacheMissCount"]
}

func TestPutGetDeleteCommit(t *testing.T) {
	m := fsys.NewMem()
	p := newProvider(t, m, pebblestore.Options{})
	st := mustLoad(t, p, id03, 0)
	if st.Version() != 0 {
		t.Fatalf("Version = %d", st.Version())
	}
	for _, kv := range [][2]string{{"a", "1"}, {"b", "22"}, {"", "empty key"}, {"c", ""}} {
		if err := st.Put([]byte(kv[0]), []byte(kv[1])); err != nil {
			t.Fatal(err)
		}
	}
	st.Put([]byte("a"), []byte("111")) // overwrite: no new key
	st.Delete([]byte("b"))
	st.Delete([]byte("absent")) // no-op, not in the changelog
	if v, ok, err := st.Get([]byte("a")); err != nil || !ok || string(v) != "111" {
		t.Fatalf("Get(a) = %q %v %v", v, ok, err)
	}
	if _, ok, _ := st.Get([]byte("b")); ok {
		t.Fatal("deleted key found")
	}
	if got := st.Metrics(); got.NumKeys != 3 || got.Custom["stateOnCurrentVersionSizeBytes"] != 1+3+9+1 {
		t.Fatalf("metrics before commit: %+v", got)
	}
	if v, err := st.Commit(); err != nil || v != 1 {
		t.Fatalf("Commit = %d, %v", v, err)
	}
	want := map[string]string{"a": "111", "": "empty key", "c": ""}
	if got := st.Metrics(); got.NumKeys != 3 || got.Custom["stateOnCurrentVersionSizeBytes"] != 14 {
		t.Fatalf("metrics after commit: %+v", got)
	}
	if got := listDir(t, m, id03.Dir()); got != "1.changelog" {
		t.Fatalf("files: %s", got)
	}
	// The changelog has Spark's changelog v1 format, then dedupsim's trailer.
	data, _ := m.ReadFile("state/0/3/1.changelog")
	if want := "\x00\x00\x00\x01a\x00\x00\x00\x011" + "\x00\x00\x00\x01b\x00\x00\x00\x0222" +
		"\x00\x00\x00\x00\x00\x00\x00\x09empty key" + "\x00\x00\x00\x01c\x00\x00\x00\x00" + "\x00\x00\x00\x01a\x00\x00\x00\x03111" +
		"\x00\x00\x00\x01b\xff\xff\xff\xff" + "\xff\xff\xff\xff"; string(data) != string(state.AppendTrailer([]byte(want), state.KindChangelog, id03, 1)) {
		t.Fatalf("changelog = %q\nwant %q", data, want)
	}

	st = mustLoad(t, p, id03, 1) // cache hit
	if got := contents(t, st); !maps.Equal(got, want) {
		t.Fatalf("version 1 = %v", got)
	}
	st.Abort()
	st = mustLoad(t, newProvider(t, m, pebblestore.Options{}), id03, 1) // rebuilt
	if got := contents(t, st); !maps.Equal(got, want) {
		t.Fatalf("version 1 reloaded = %v", got)
	}
	if got := st.Metrics(); got.NumKeys != 3 || got.Custom["stateOnCurrentVersionSizeBytes"] != 14 {
		t.Fatalf("metrics after reload: %+v", got)
	}
	st.Abort()
}

func TestFilesAfterEachCommit(t *testing.T) {
	m := fsys.NewMem()
	p := newProvider(t, m, pebblestore.Options{MinDeltasForSnapshot: 3, MinVersionsToRetain: 4})
	want := []string{
		1: "1.changelog",
		2: "1.changelog 2.changelog",
		3: "1.changelog 2.changelog 3.changelog 3.zip",
		4: "1.changelog 2.changelog 3.changelog 3.zip 4.changelog",
		5: "1.changelog 2.changelog 3.changelog 3.zip 4.changelog 5.changelog",
		// 6: snapshot; versions 3..6 retained: 3.zip is the base.
		6: "3.changelog 3.zip 4.changelog 5.changelog 6.changelog 6.zip",
		7: "3.changelog 3.zip 4.changelog 5.changelog 6.changelog 6.zip 7.changelog",
		8: "3.changelog 3.zip 4.changelog 5.changelog 6.changelog 6.zip 7.changelog 8.changelog",
		// 9: versions 6..9 retained.
		9: "6.changelog 6.zip 7.changelog 8.changelog 9.changelog 9.zip",
	}
	model := map[string]string{}
	for v := int64(0); v < 9; v++ {
		c := change{put: map[string]string{fmt.Sprint("k", v): fmt.Sprint(v), "k0": fmt.Sprint("again", v)}}
		if v%2 == 1 {
			c.del = []string{fmt.Sprint("k", v-1)}
		}
		apply(t, p, id03, v, c)
		maps.Copy(model, c.put)
		for _, d := range c.del {
			delete(model, d)
		}
		if got := listDir(t, m, id03.Dir()); got != want[v+1] {
			t.Fatalf("after version %d: %s\nwant %s", v+1, got, want[v+1])
		}
		// Every retained version loads in a fresh provider, from its
		// snapshot and changelogs.
		st := mustLoad(t, newProvider(t, m, p.Options()), id03, v+1)
		if got := contents(t, st); !maps.Equal(got, model) {
			t.Fatalf("version %d reloaded = %v, want %v", v+1, got, model)
		}
		if n := st.Metrics().NumKeys; n != int64(len(model)) {
			t.Fatalf("version %d reloaded NumKeys = %d, want %d", v+1, n, len(model))
		}
		st.Abort()
	}
}

func TestCacheHitsAndMisses(t *testing.T) {
	m := fsys.NewMem()
	p := newProvider(t, m, pebblestore.Options{})
	st := mustLoad(t, p, id03, 0) // neither
	st.Put([]byte("a"), []byte("1"))
	st.Commit()
	if h, mi := customs(st); h != 0 || mi != 0 {
		t.Fatalf("after version 0: hits %d misses %d", h, mi)
	}
	apply(t, p, id03, 1, change{put: map[string]string{"b": "2"}}) // hit
	st = mustLoad(t, p, id03, 1)                                   // miss: the cache holds 2
	if h, mi := customs(st); h != 1 || mi != 1 {
		t.Fatalf("hits %d misses %d", h, mi)
	}
	// A second open of the cached version while it is in use is a miss.
	st2 := mustLoad(t, p, id03, 2)
	st3 := mustLoad(t, p, id03, 2)
	if h, mi := customs(st3); h != 2 || mi != 2 {
		t.Fatalf("hits %d misses %d", h, mi)
	}
	st3.Put([]byte("c"), []byte("3"))
	st3.Commit() // the rebuilt database becomes the cache (version 3)
	st2.Abort()  // the old one is disposed of
	st.Abort()
	st = mustLoad(t, p, id03, 3)
	if h, mi := customs(st); h != 3 || mi != 2 {
		t.Fatalf("hits %d misses %d", h, mi)
	}
	if got := contents(t, st); !maps.Equal(got, map[string]string{"a": "1", "b": "2", "c": "3"}) {
		t.Fatalf("version 3 = %v", got)
	}
	st.Abort()
}

func TestAbortLeavesDatabase(t *testing.T) {
	m := fsys.NewMem()
	p := newProvider(t, m, pebblestore.Options{})
	apply(t, p, id03, 0, change{put: map[string]string{"a": "1", "b": "2"}})
	st := mustLoad(t, p, id03, 1)
	st.Put([]byte("c"), []byte("3"))
	st.Put([]byte("a"), []byte("changed"))
	st.Delete([]byte("b"))
	if got := st.Metrics().NumKeys; got != 2 {
		t.Fatalf("NumKeys while updating = %d", got)
	}
	st.Abort()
	if got := st.Metrics(); got.NumKeys != 2 || got.Custom["stateOnCurrentVersionSizeBytes"] != 4 {
		t.Fatalf("metrics after Abort: %+v", got)
	}
	if err := st.Put([]byte("x"), nil); !errors.Is(err, state.ErrStoreDone) {
		t.Fatalf("Put after Abort: %v", err)
	}
	st = mustLoad(t, p, id03, 1)
	if h, _ := customs(st); h != 2 {
		t.Fatal("aborted store lost the cache")
	}
	if got := contents(t, st); !maps.Equal(got, map[string]string{"a": "1", "b": "2"}) {
		t.Fatalf("version 1 after an aborted batch = %v", got)
	}
	st.Abort()
	if got := listDir(t, m, id03.Dir()); got != "1.changelog" {
		t.Fatalf("files: %s", got)
	}
}

func TestRangeWithDeletes(t *testing.T) {
	p := newProvider(t, fsys.NewMem(), pebblestore.Options{})
	c := change{put: map[string]string{}}
	for i := range 100 {
		c.put[fmt.Sprintf("k%03d", i)] = fmt.Sprint(i)
	}
	apply(t, p, id03, 0, c)
	st := mustLoad(t, p, id03, 1)
	st.Put([]byte("k100"), []byte("new")) // in the batch only
	// Eviction: delete every even key while iterating; delete k099 early
	// (never visited), change k098 before it is reached.
	var seen []string
	err := st.Range(func(k, v []byte) bool {
		seen = append(seen, string(k)+"="+string(v))
		if string(k) == "k010" {
			st.Delete([]byte("k099"))
			st.Put([]byte("k098"), []byte("changed"))
		}
		var n int
		fmt.Sscanf(string(k), "k%d", &n)
		if n%2 == 0 {
			if err := st.Delete(k); err != nil {
				t.Fatal(err)
			}
			st.Delete(k) // twice: a no-op
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 100 || seen[98] != "k098=changed" || seen[99] != "k100=new" {
		t.Fatalf("visited %d: ... %v", len(seen), seen[95:])
	}
	if n := st.Metrics().NumKeys; n != 49 {
		t.Fatalf("NumKeys = %d, want 49", n)
	}
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	st = mustLoad(t, newProvider(t, fsys.NewMem(), pebblestore.Options{}), id03, 0)
	st.Abort()

	// Stopping early.
	st = mustLoad(t, p, id03, 2)
	n := 0
	st.Range(func(k, v []byte) bool { n++; return n < 3 })
	if n != 3 {
		t.Fatalf("Range went on after false: %d", n)
	}
	if got := contents(t, st); len(got) != 49 {
		t.Fatalf("%d keys", len(got))
	}
	st.Abort()
}

func TestStoreDone(t *testing.T) {
	p := newProvider(t, fsys.NewMem(), pebblestore.Options{})
	for _, finish := range []string{"commit", "abort"} {
		t.Run(finish, func(t *testing.T) {
			st := mustLoad(t, p, id03, 0)
			if finish == "commit" {
				if _, err := st.Commit(); err != nil {
					t.Fatal(err)
				}
			} else {
				st.Abort()
			}
			for name, err := range map[string]error{
				"Put":    st.Put([]byte("k"), nil),
				"Delete": st.Delete([]byte("k")),
				"Range":  st.Range(func(k, v []byte) bool { return true }),
			} {
				if !errors.Is(err, state.ErrStoreDone) {
					t.Fatalf("%s: %v", name, err)
				}
			}
			if _, _, err := st.Get([]byte("k")); !errors.Is(err, state.ErrStoreDone) {
				t.Fatalf("Get: %v", err)
			}
			if _, err := st.Commit(); !errors.Is(err, state.ErrStoreDone) {
				t.Fatalf("Commit: %v", err)
			}
			st.Abort()
		})
	}
	p.Close()
	if _, err := p.Load(id03, 0); !errors.Is(err, state.ErrProviderClosed) {
		t.Fatalf("Load after Close: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	m := fsys.NewMem()
	p := newProvider(t, m, pebblestore.Options{MinDeltasForSnapshot: 100})
	for v := int64(0); v < 3; v++ {
		apply(t, p, id03, v, change{put: map[string]string{fmt.Sprint(v): "v"}})
	}
	fresh := func() *pebblestore.Provider { return newProvider(t, m, pebblestore.Options{}) }

	_, err := fresh().Load(id03, 5)
	if err == nil || err.Error() != "cannot load state version 5 of state/0/3: missing 4.changelog (file does not exist)" {
		t.Fatalf("Load(5) err = %v", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("missing changelog error does not wrap ErrNotExist")
	}
	if _, err := fresh().Load(id03, -1); err == nil {
		t.Fatal("negative version loaded")
	}
	// The cached database does not need the files.
	data2, _ := m.ReadFile("state/0/3/2.changelog")
	m.Remove("state/0/3/2.changelog")
	st := mustLoad(t, p, id03, 3)
	if got := len(contents(t, st)); got != 3 {
		t.Fatalf("cached version 3 has %d keys", got)
	}
	st.Abort()
	if _, err := fresh().Load(id03, 3); err == nil || !strings.Contains(err.Error(), "missing 2.changelog") {
		t.Fatalf("Load(3) without 2.changelog: %v", err)
	}

	// A well-formed changelog copied over another version's is refused by
	// its stamp.
	data, _ := m.ReadFile("state/0/3/3.changelog")
	fsys.WriteAtomic(m, "state/0/3/2.changelog", data)
	if _, err := fresh().Load(id03, 3); !errors.Is(err, state.ErrCorrupt) || !strings.Contains(err.Error(), "state/0/3/2.changelog") || !strings.Contains(err.Error(), "stale or misplaced") {
		t.Fatalf("Load(3) with 3.changelog copied to 2.changelog: %v", err)
	}
	fsys.WriteAtomic(m, "state/0/3/2.changelog", data2)

	// A truncated or garbled changelog is an error naming the file.
	for _, bad := range []string{string(data[:len(data)-4]), string(data) + "x", "\xff\xff\xff\xf0", "\x00\x00\x00\x05ab"} {
		fsys.WriteAtomic(m, "state/0/3/3.changelog", []byte(bad))
		_, err = fresh().Load(id03, 3)
		if !errors.Is(err, state.ErrCorrupt) || !strings.Contains(err.Error(), "state/0/3/3.changelog") {
			t.Fatalf("Load(3) with changelog %q: %v", bad, err)
		}
	}
	if _, err := fresh().Load(id03, 2); err != nil {
		t.Fatalf("Load(2) does not read 3.changelog: %v", err)
	}

	// A corrupt snapshot is an error too, not a reason to fall back.
	fsys.WriteAtomic(m, "state/0/3/3.changelog", data)
	p2 := newProvider(t, m, pebblestore.Options{MinDeltasForSnapshot: 1})
	apply(t, p2, id03, 3, change{})
	zip, err := m.ReadFile("state/0/3/4.zip")
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"truncated": zip[:len(zip)/2],
		"flipped":   flip(zip, len(zip)/3),
		"garbage":   []byte("not a zip"),
	} {
		fsys.WriteAtomic(m, "state/0/3/4.zip", bad)
		_, err = fresh().Load(id03, 4)
		if !errors.Is(err, state.ErrCorrupt) || !strings.Contains(err.Error(), "state/0/3/4.zip") {
			t.Fatalf("Load(4) with a %s snapshot: %v", name, err)
		}
	}
	fsys.WriteAtomic(m, "state/0/3/4.zip", zip)
	st = mustLoad(t, fresh(), id03, 4)
	// Versions 2 to 4 are {0, 1, 2}.
	if got := len(contents(t, st)); got != 3 {
		t.Fatalf("version 4 from the snapshot has %d keys", got)
	}
	st.Abort()
}

func flip(b []byte, i int) []byte {
	c := slices.Clone(b)
	c[i] ^= 0x40
	return c
}

func TestReplayOverwritesFailedAttempt(t *testing.T) {
	m := fsys.NewMem()
	p := newProvider(t, m, pebblestore.Options{MinDeltasForSnapshot: 2})
	apply(t, p, id03, 0, change{put: map[string]string{"a": "1"}})
	apply(t, p, id03, 1, change{put: map[string]string{"failed": "attempt"}})
	if got := listDir(t, m, id03.Dir()); got != "1.changelog 2.changelog 2.zip" {
		t.Fatalf("files after the failed attempt: %s", got)
	}
	m.Crash()

	// The restart replays batch 1: it loads version 1, ignoring 2.changelog
	// and 2.zip...
	p2 := newProvider(t, m, pebblestore.Options{MinDeltasForSnapshot: 10})
	st := mustLoad(t, p2, id03, 1)
	if got := contents(t, st); !maps.Equal(got, map[string]string{"a": "1"}) {
		t.Fatalf("version 1 = %v", got)
	}
	// ...and its commit replaces 2.changelog; the stale 2.zip goes.
	st.Put([]byte("replayed"), []byte("yes"))
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, m, id03.Dir()); got != "1.changelog 2.changelog" {
		t.Fatalf("files after the replay: %s", got)
	}
	m.Crash()
	st = mustLoad(t, newProvider(t, m, pebblestore.Options{}), id03, 2)
	if got := contents(t, st); !maps.Equal(got, map[string]string{"a": "1", "replayed": "yes"}) {
		t.Fatalf("version 2 after replay = %v", got)
	}
	if n := st.Metrics().NumKeys; n != 2 {
		t.Fatalf("NumKeys = %d", n)
	}
	st.Abort()
}

func TestCommittedSurvivesCrash(t *testing.T) {
	m := fsys.NewMem()
	opts := pebblestore.Options{MinDeltasForSnapshot: 3, MinVersionsToRetain: 2}
	p := newProvider(t, m, opts)
	model := map[string]string{}
	for v := int64(0); v < 20; v++ {
		k := fmt.Sprint("k", v%7)
		c := change{put: map[string]string{k: fmt.Sprint(v)}}
		if v%3 == 0 {
			c.del = []string{fmt.Sprint("k", (v+3)%7)}
		}
		apply(t, p, id03, v, c)
		maps.Copy(model, c.put)
		for _, d := range c.del {
			delete(model, d)
		}
		files := m.Files()
		m.Crash()
		if after := m.Files(); !slices.Equal(files, after) {
			t.Fatalf("version %d: files changed by a crash: %v → %v", v+1, files, after)
		}
		p.Close()
		p = newProvider(t, m, opts)
		st := mustLoad(t, p, id03, v+1)
		if got := contents(t, st); !maps.Equal(got, model) {
			t.Fatalf("version %d after crash = %v, want %v", v+1, got, model)
		}
		if n := st.Metrics().NumKeys; n != int64(len(model)) {
			t.Fatalf("version %d after crash: NumKeys %d, want %d", v+1, n, len(model))
		}
		st.Abort()
	}
}

// faultyFS fails chosen operations on paths with a given suffix.
type faultyFS struct {
	fsys.FS
	failRenameTo string
	failRemove   string
}

var errInjected = errors.New("injected fault")

func (f *faultyFS) Rename(oldname, newname string) error {
	if f.failRenameTo != "" && strings.HasSuffix(newname, f.failRenameTo) {
		return errInjected
	}
	return f.FS.Rename(oldname, newname)
}

func (f *faultyFS) Remove(name string) error {
	if f.failRemove != "" && strings.HasSuffix(name, f.failRemove) {
		return errInjected
	}
	return f.FS.Remove(name)
}

func TestCommitFailureRollsBack(t *testing.T) {
	m := fsys.NewMem()
	ffs := &faultyFS{FS: m}
	p := newProvider(t, ffs, pebblestore.Options{})
	apply(t, p, id03, 0, change{put: map[string]string{"a": "1"}})

	st := mustLoad(t, p, id03, 1)
	st.Put([]byte("b"), []byte("2"))
	st.Delete([]byte("a"))
	ffs.failRenameTo = "2.changelog"
	if _, err := st.Commit(); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "cannot commit state version 2 of state/0/3") {
		t.Fatalf("Commit err = %v", err)
	}
	if err := st.Put([]byte("c"), nil); !errors.Is(err, state.ErrStoreDone) {
		t.Fatalf("store usable after a failed commit: %v", err)
	}
	if n := st.Metrics().NumKeys; n != 1 {
		t.Fatalf("NumKeys after a failed commit = %d", n)
	}
	ffs.failRenameTo = ""
	st = mustLoad(t, p, id03, 1)
	if h, _ := customs(st); h != 2 {
		t.Fatal("cache lost after a failed commit")
	}
	if got := contents(t, st); !maps.Equal(got, map[string]string{"a": "1"}) {
		t.Fatalf("version 1 after a failed commit = %v", got)
	}
	st.Abort()
	if _, err := p.Load(id03, 2); err == nil {
		t.Fatal("version 2 loads although its commit failed")
	}
}

func TestMaintenanceErrorsDoNotFailCommit(t *testing.T) {
	m := fsys.NewMem()
	ffs := &faultyFS{FS: m, failRenameTo: ".zip"}
	var reported []string
	p := newProvider(t, ffs, pebblestore.Options{
		MinDeltasForSnapshot: 2,
		MinVersionsToRetain:  1,
		OnMaintenanceError: func(id state.ID, err error) {
			if id != id03 || !errors.Is(err, errInjected) {
				t.Errorf("reported %v: %v", id, err)
			}
			reported = append(reported, err.Error())
		},
	})
	for v := int64(0); v < 3; v++ {
		apply(t, p, id03, v, change{put: map[string]string{fmt.Sprint(v): "x"}})
	}
	if len(reported) != 2 {
		t.Fatalf("reported %d errors: %v", len(reported), reported)
	}
	if got := listDir(t, m, id03.Dir()); got != "1.changelog 2.changelog 3.changelog" {
		t.Fatalf("files: %s", got)
	}
	ffs.failRenameTo = ""
	apply(t, p, id03, 3, change{})
	if got := listDir(t, m, id03.Dir()); got != "4.changelog 4.zip" {
		t.Fatalf("files after healing: %s", got)
	}
	reported = nil
	ffs.failRemove = "4.changelog"
	apply(t, p, id03, 4, change{})
	apply(t, p, id03, 5, change{})
	if len(reported) != 1 || !strings.Contains(reported[0], "state/0/3/4.changelog") {
		t.Fatalf("reported: %v", reported)
	}
	ffs.failRemove = ""
	apply(t, p, id03, 6, change{})
	if got := listDir(t, m, id03.Dir()); got != "6.changelog 6.zip 7.changelog" {
		t.Fatalf("files after the retried delete: %s", got)
	}
	st := mustLoad(t, newProvider(t, m, pebblestore.Options{}), id03, 7)
	if got := len(contents(t, st)); got != 3 {
		t.Fatalf("version 7 has %d keys", got)
	}
	st.Abort()
}

// TestWorkDirOnDisk runs the working databases on the local disk, with a
// small memtable and low compaction thresholds so that flushes, both kinds
// of compaction and multi-file snapshots happen, and checks that Close
// removes the working directory.
func TestWorkDirOnDisk(t *testing.T) {
	work := t.TempDir()
	ckpt := fsys.NewOS(t.TempDir())
	opts := pebblestore.Options{WorkDir: work, MemTableSize: 1 << 20, CompactL0Sublevels: 2, CompactGarbageMin: 1000, MinDeltasForSnapshot: 3}
	p := newProvider(t, ckpt, opts)
	model := map[string]string{}
	for v := int64(0); v < 12; v++ {
		st := mustLoad(t, p, id03, v)
		for i := range 5000 {
			k := fmt.Sprintf("key-%06d", (int(v)*3001+i*7)%20000)
			val := fmt.Sprintf("value-%d-%d", v, i)
			if _, ok, _ := st.Get([]byte(k)); !ok {
				st.Put([]byte(k), []byte(val))
				model[k] = val
			}
		}
		// Evict a third.
		st.Range(func(k, val []byte) bool {
			if len(k) > 0 && int(k[len(k)-1])%3 == int(v)%3 {
				st.Delete(k)
				delete(model, string(k))
			}
			return true
		})
		if _, err := st.Commit(); err != nil {
			t.Fatal(err)
		}
		if n := st.Metrics().NumKeys; n != int64(len(model)) {
			t.Fatalf("version %d: NumKeys %d, want %d", v+1, n, len(model))
		}
	}
	entries, _ := os.ReadDir(work)
	if len(entries) != 1 {
		t.Fatalf("work dir holds %d entries", len(entries))
	}
	st := mustLoad(t, newProvider(t, ckpt, opts), id03, 12)
	if got := contents(t, st); !maps.Equal(got, model) {
		t.Fatalf("version 12 rebuilt: %d keys, want %d", len(got), len(model))
	}
	if m := st.Metrics(); m.NumKeys != int64(len(model)) || m.Custom["rocksdbSstFileSize"] == 0 {
		t.Fatalf("metrics: %+v", m)
	}
	st.Abort()
	p.Close()
	entries, _ = os.ReadDir(work)
	if len(entries) != 1 { // the second provider is still open
		t.Fatalf("after Close the work dir holds %d entries", len(entries))
	}
}

// TestCloseWithOpenStore: Close leaves an open store usable; its commit is
// written, its database disposed of, and the working directory goes with
// the last database.
func TestCloseWithOpenStore(t *testing.T) {
	work := t.TempDir()
	m := fsys.NewMem()
	p := newProvider(t, m, pebblestore.Options{WorkDir: work})
	apply(t, p, id03, 0, change{put: map[string]string{"a": "1"}})
	st := mustLoad(t, p, id03, 1)
	other := mustLoad(t, p, state.ID{Partition: 1}, 0)
	st.Put([]byte("b"), []byte("2"))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if v, err := st.Commit(); err != nil || v != 2 {
		t.Fatalf("Commit after Close = %d, %v", v, err)
	}
	if n := st.Metrics().NumKeys; n != 2 {
		t.Fatalf("NumKeys = %d", n)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 1 {
		t.Fatalf("work dir removed while a store is open: %d entries", len(entries))
	}
	other.Abort()
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Fatalf("work dir holds %d entries after the last store ended", len(entries))
	}
	st = mustLoad(t, newProvider(t, m, pebblestore.Options{}), id03, 2)
	if got := contents(t, st); !maps.Equal(got, map[string]string{"a": "1", "b": "2"}) {
		t.Fatalf("version 2 = %v", got)
	}
	st.Abort()
}

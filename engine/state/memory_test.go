package state_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
	"pgregory.net/rapid"
)

var id03 = state.ID{Operator: 0, Partition: 3}

// tb is what the helpers need of *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func mustLoad(t tb, p state.Provider, id state.ID, v int64) state.Store {
	t.Helper()
	st, err := p.Load(id, v)
	if err != nil {
		t.Fatalf("Load(%v, %d): %v", id, v, err)
	}
	return st
}

// contents reads a store through Range.
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

// change is one batch: puts, then deletes.
type change struct {
	put map[string]string
	del []string
}

// apply loads version v, applies c and commits.
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

// listDir lists dir without the temp files a failed fsys.WriteAtomic
// leaves behind.
func listDir(t tb, f fsys.FS, dir string) string {
	t.Helper()
	names, err := f.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return strings.HasPrefix(n, ".") })
	return strings.Join(names, " ")
}

func TestFilesAfterEachCommit(t *testing.T) {
	// MinDeltasForSnapshot 3, MinVersionsToRetain 4: after commit V the
	// files must let every version in [V-3, V] load, and nothing older.
	want := []string{
		1: "1.delta",
		2: "1.delta 2.delta",
		3: "1.delta 2.delta 3.delta 3.snapshot", // 3-0 >= 3
		4: "1.delta 2.delta 3.delta 3.snapshot 4.delta",
		5: "1.delta 2.delta 3.delta 3.snapshot 4.delta 5.delta",
		// snapshot 6; minVersion 3 → newest snapshot <= 3 is 3: drop < 3
		6: "3.delta 3.snapshot 4.delta 5.delta 6.delta 6.snapshot",
		7: "3.delta 3.snapshot 4.delta 5.delta 6.delta 6.snapshot 7.delta",
		8: "3.delta 3.snapshot 4.delta 5.delta 6.delta 6.snapshot 7.delta 8.delta",
		// snapshot 9; minVersion 6 → drop < 6
		9: "6.delta 6.snapshot 7.delta 8.delta 9.delta 9.snapshot",
	}
	m := fsys.NewMem()
	p := state.NewMemoryProvider(m, state.MemoryOptions{MinDeltasForSnapshot: 3, MinVersionsToRetain: 4})
	for v := int64(0); v < 9; v++ {
		apply(t, p, id03, v, change{put: map[string]string{fmt.Sprint("k", v): "x"}})
		if got := listDir(t, m, id03.Dir()); got != want[v+1] {
			t.Fatalf("after commit %d:\n got %s\nwant %s", v+1, got, want[v+1])
		}
	}
	// Every retained version loads from files alone.
	fresh := state.NewMemoryProvider(m, state.MemoryOptions{})
	for v := int64(6); v <= 9; v++ {
		got := contents(t, mustLoad(t, fresh, id03, v))
		if len(got) != int(v) {
			t.Fatalf("version %d has %d keys: %v", v, len(got), got)
		}
	}
	// Version 5 needs 3.snapshot, which is gone; no snapshot <= 5 is left,
	// so the rebuild starts from version 0 and misses 1.delta.
	if _, err := fresh.Load(id03, 5); err == nil || !strings.Contains(err.Error(), "missing 1.delta") {
		t.Fatalf("Load(5) after cleanup: err = %v, want missing 1.delta", err)
	}
}

func TestDefaults(t *testing.T) {
	p := state.NewMemoryProvider(fsys.NewMem(), state.MemoryOptions{})
	if o := p.Options(); o.MinDeltasForSnapshot != 10 || o.MinVersionsToRetain != 100 {
		t.Fatalf("defaults = %+v", o)
	}
	m := fsys.NewMem()
	p = state.NewMemoryProvider(m, state.MemoryOptions{})
	for v := int64(0); v < 10; v++ {
		apply(t, p, id03, v, change{})
	}
	if ok, _ := m.Exists("state/0/3/10.snapshot"); !ok {
		t.Fatal("no snapshot at version 10 with the defaults")
	}
	if ok, _ := m.Exists("state/0/3/9.snapshot"); ok {
		t.Fatal("snapshot before version 10")
	}
	// Empty commits still write a delta: the terminator alone, then
	// dedupsim's trailer (stamped for state/0/3 version 1).
	if data, err := m.ReadFile("state/0/3/1.delta"); err != nil || string(data) != string(state.AppendTrailer([]byte("\xff\xff\xff\xff"), state.KindDelta, id03, 1)) {
		t.Fatalf("empty delta = %q, %v", data, err)
	}
}

func TestLoadAndReload(t *testing.T) {
	m := fsys.NewMem()
	opts := state.MemoryOptions{MinDeltasForSnapshot: 2, MinVersionsToRetain: 10}
	p := state.NewMemoryProvider(m, opts)
	batches := []change{
		{put: map[string]string{"a": "1", "b": "2", "": "empty key"}},
		{put: map[string]string{"a": "1b", "c": ""}, del: []string{"b", "absent"}},
		{del: []string{""}},
		{put: map[string]string{"b": "again"}, del: []string{"a", "c"}},
	}
	want := []map[string]string{{}}
	model := map[string]string{}
	for i, c := range batches {
		apply(t, p, id03, int64(i), c)
		maps.Copy(model, c.put)
		for _, k := range c.del {
			delete(model, k)
		}
		want = append(want, maps.Clone(model))
	}
	for _, prov := range []*state.MemoryProvider{p, state.NewMemoryProvider(m, opts)} {
		for v := range want {
			st := mustLoad(t, prov, id03, int64(v))
			if got := contents(t, st); !maps.Equal(got, want[v]) {
				t.Fatalf("version %d = %v, want %v", v, got, want[v])
			}
			if n := st.Metrics().NumKeys; n != int64(len(want[v])) {
				t.Fatalf("version %d NumKeys = %d", v, n)
			}
			val, ok, err := st.Get([]byte("b"))
			if wv, wok := want[v]["b"]; err != nil || ok != wok || string(val) != wv {
				t.Fatalf("version %d Get(b) = %q, %v, %v", v, val, ok, err)
			}
			st.Abort()
		}
	}
}

func customs(st state.Store) (hits, misses int64) {
	c := st.Metrics().Custom
	return c["loadedMapCacheHitCount"], c["loadedMapCacheMissCount"]
}

func TestCacheHitsAndMisses(t *testing.T) {
	m := fsys.NewMem()
	p := state.NewMemoryProvider(m, state.MemoryOptions{})
	other := state.ID{Operator: 0, Partition: 4}
	steps := []struct {
		name         string
		id           state.ID
		load         int64
		commit       bool // else abort
		hits, misses int64
	}{
		{"version 0 counts as neither", id03, 0, true, 0, 0},
		{"the latest committed version is a hit", id03, 1, true, 1, 0},
		{"again after its commit", id03, 2, true, 2, 0},
		{"an older version is a miss", id03, 1, false, 2, 1},
		{"the cache still holds the latest", id03, 3, true, 3, 1},
		{"counters are per store ID", other, 0, false, 0, 0},
	}
	for _, s := range steps {
		st := mustLoad(t, p, s.id, s.load)
		if h, ms := customs(st); h != s.hits || ms != s.misses {
			t.Fatalf("%s: hits %d misses %d, want %d %d", s.name, h, ms, s.hits, s.misses)
		}
		if !s.commit {
			st.Abort()
			continue
		}
		if err := st.Put([]byte(fmt.Sprint("k", s.load)), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Commit(); err != nil {
			t.Fatal(err)
		}
		if h, ms := customs(st); h != s.hits || ms != s.misses {
			t.Fatalf("%s, after commit: hits %d misses %d", s.name, h, ms)
		}
	}
	// A new provider (a restart) has a cold cache and fresh counters.
	p2 := state.NewMemoryProvider(m, state.MemoryOptions{})
	st := mustLoad(t, p2, id03, 4)
	if h, ms := customs(st); h != 0 || ms != 1 {
		t.Fatalf("after restart: hits %d misses %d, want 0 1", h, ms)
	}
	if err := st.Put([]byte("k4"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	// A second open of the cached version while the first is still open
	// cannot share the map: it is rebuilt from the files.
	first := mustLoad(t, p2, id03, 5)
	second := mustLoad(t, p2, id03, 5)
	if h, ms := customs(second); h != 1 || ms != 2 {
		t.Fatalf("concurrent open: hits %d misses %d, want 1 2", h, ms)
	}
	first.Put([]byte("only-in-first"), nil)
	if got := contents(t, second); len(got) != 5 {
		t.Fatalf("second store sees %v", got)
	}
	first.Abort()
	second.Abort()
}

func TestAbortRestoresCachedMap(t *testing.T) {
	m := fsys.NewMem()
	p := state.NewMemoryProvider(m, state.MemoryOptions{})
	apply(t, p, id03, 0, change{put: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}})
	before := listDir(t, m, id03.Dir())

	st := mustLoad(t, p, id03, 1)
	if h, _ := customs(st); h != 1 {
		t.Fatal("expected a cache hit")
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.Put([]byte("a"), []byte("changed")))
	must(st.Put([]byte("new"), []byte("x")))
	must(st.Put([]byte("new"), []byte("y")))
	must(st.Delete([]byte("b")))
	must(st.Put([]byte("b"), []byte("back")))
	must(st.Delete([]byte("new")))
	must(st.Range(func(k, v []byte) bool {
		if string(k) == "c" || string(k) == "d" {
			must(st.Delete(k))
		}
		return true
	}))
	if got := contents(t, st); !maps.Equal(got, map[string]string{"a": "changed", "b": "back"}) {
		t.Fatalf("before abort: %v", got)
	}
	st.Abort()
	if got := st.Metrics().NumKeys; got != 4 {
		t.Fatalf("metrics after abort: %d keys, want the loaded 4", got)
	}

	st = mustLoad(t, p, id03, 1)
	if h, _ := customs(st); h != 2 {
		t.Fatal("expected the restored map to be a cache hit")
	}
	if got := contents(t, st); !maps.Equal(got, map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}) {
		t.Fatalf("after abort: %v", got)
	}
	if got := st.Metrics().MemoryUsedBytes; got != 4*(2+state.EntryOverheadBytes) {
		t.Fatalf("memory after abort = %d", got)
	}
	st.Abort()
	if after := listDir(t, m, id03.Dir()); after != before {
		t.Fatalf("abort changed files: %s → %s", before, after)
	}
}

func TestRangeDeleteAll(t *testing.T) {
	m := fsys.NewMem()
	p := state.NewMemoryProvider(m, state.MemoryOptions{})
	put := map[string]string{}
	for i := range 1000 {
		put[fmt.Sprint("key", i)] = fmt.Sprint(i)
	}
	apply(t, p, id03, 0, change{put: put})
	st := mustLoad(t, p, id03, 1)
	visited := 0
	if err := st.Range(func(k, v []byte) bool {
		visited++
		if string(v) != put[string(k)] {
			t.Fatalf("Range gave %q=%q", k, v)
		}
		if len(v)%2 == 0 { // keys 10..99 have 2-digit values
			if err := st.Delete(k); err != nil {
				t.Fatal(err)
			}
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if visited != 1000 {
		t.Fatalf("visited %d entries", visited)
	}
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := st.Metrics().NumKeys; n != 910 {
		t.Fatalf("NumKeys = %d, want 910", n)
	}
	got := contents(t, mustLoad(t, state.NewMemoryProvider(m, state.MemoryOptions{}), id03, 2))
	if len(got) != 910 {
		t.Fatalf("reloaded %d keys", len(got))
	}
	// Stopping early.
	st = mustLoad(t, p, id03, 2)
	n := 0
	st.Range(func(k, v []byte) bool { n++; return n < 5 })
	if n != 5 {
		t.Fatalf("Range did not stop: %d calls", n)
	}
}

func TestMetricsEstimate(t *testing.T) {
	p := state.NewMemoryProvider(fsys.NewMem(), state.MemoryOptions{})
	st := mustLoad(t, p, id03, 0)
	st.Put([]byte("abc"), []byte("12345678")) // 11
	st.Put([]byte("d"), nil)                  // 1
	st.Put([]byte("abc"), []byte("1234"))     // 11 → 7
	st.Put([]byte("e"), []byte("zz"))         // 3
	st.Delete([]byte("e"))                    // 0
	want := int64(7 + 1 + 2*state.EntryOverheadBytes)
	check := func(when string) {
		t.Helper()
		m := st.Metrics()
		if m.NumKeys != 2 || m.MemoryUsedBytes != want || m.Custom["stateOnCurrentVersionSizeBytes"] != want {
			t.Fatalf("%s: metrics %+v, want 2 keys and %d bytes", when, m, want)
		}
	}
	check("before commit")
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	check("after commit")
	// The next batch changes the same map in place; the committed store's
	// metrics must not move.
	next := mustLoad(t, p, id03, 1)
	next.Put([]byte("more"), []byte("x"))
	check("after the next batch changed the cached map")
}

func TestStoreDone(t *testing.T) {
	p := state.NewMemoryProvider(fsys.NewMem(), state.MemoryOptions{})
	for _, finish := range []string{"commit", "abort"} {
		t.Run(finish, func(t *testing.T) {
			st := mustLoad(t, p, id03, 0)
			st.Put([]byte("k"), []byte("v"))
			if finish == "commit" {
				if _, err := st.Commit(); err != nil {
					t.Fatal(err)
				}
				if st.Version() != 0 {
					t.Fatalf("Version after commit = %d, want the loaded 0", st.Version())
				}
			} else {
				st.Abort()
			}
			_, _, errGet := st.Get([]byte("k"))
			_, errCommit := st.Commit()
			for name, err := range map[string]error{
				"Get":    errGet,
				"Put":    st.Put([]byte("k"), nil),
				"Delete": st.Delete([]byte("k")),
				"Range":  st.Range(func(k, v []byte) bool { return true }),
				"Commit": errCommit,
			} {
				if !errors.Is(err, state.ErrStoreDone) {
					t.Errorf("%s after %s: err = %v, want ErrStoreDone", name, finish, err)
				}
			}
			st.Abort() // a no-op
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
	p := state.NewMemoryProvider(m, state.MemoryOptions{MinDeltasForSnapshot: 100})
	for v := int64(0); v < 3; v++ {
		apply(t, p, id03, v, change{put: map[string]string{fmt.Sprint(v): "v"}})
	}
	fresh := func() *state.MemoryProvider { return state.NewMemoryProvider(m, state.MemoryOptions{}) }

	_, err := fresh().Load(id03, 5)
	if err == nil || err.Error() != "cannot load state version 5 of state/0/3: missing 4.delta (file does not exist)" {
		t.Fatalf("Load(5) err = %v", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("missing delta error does not wrap ErrNotExist")
	}
	if _, err := fresh().Load(state.ID{Operator: 9}, 1); err == nil || !strings.Contains(err.Error(), "state/9/0: missing 1.delta") {
		t.Fatalf("Load of a store without files: %v", err)
	}
	if _, err := fresh().Load(id03, -1); err == nil {
		t.Fatal("negative version loaded")
	}

	if err := m.Remove("state/0/3/2.delta"); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh().Load(id03, 3); err == nil || !strings.Contains(err.Error(), "cannot load state version 3 of state/0/3: missing 2.delta") {
		t.Fatalf("Load(3) without 2.delta: %v", err)
	}
	// The cached map does not need the files.
	st := mustLoad(t, p, id03, 3)
	if got := len(contents(t, st)); got != 3 {
		t.Fatalf("cached version 3 has %d keys", got)
	}
	st.Abort()

	// A truncated delta is reported, never partially applied.
	data, _ := m.ReadFile("state/0/3/3.delta")
	fsys.WriteAtomic(m, "state/0/3/2.delta", state.AppendTrailer([]byte("\xff\xff\xff\xff"), state.KindDelta, id03, 2))
	fsys.WriteAtomic(m, "state/0/3/3.delta", data[:len(data)-4])
	_, err = fresh().Load(id03, 3)
	if !errors.Is(err, state.ErrCorrupt) || !strings.Contains(err.Error(), "state/0/3/3.delta") {
		t.Fatalf("Load(3) with a truncated delta: %v", err)
	}
	if _, err := fresh().Load(id03, 2); err != nil {
		t.Fatalf("Load(2) does not read 3.delta: %v", err)
	}

	// A corrupt snapshot is an error too, not a reason to fall back.
	fsys.WriteAtomic(m, "state/0/3/3.delta", data)
	fsys.WriteAtomic(m, "state/0/3/3.snapshot", []byte{0, 0, 0, 1, 'k'})
	_, err = fresh().Load(id03, 3)
	if !errors.Is(err, state.ErrCorrupt) || !strings.Contains(err.Error(), "state/0/3/3.snapshot") {
		t.Fatalf("Load(3) with a corrupt snapshot: %v", err)
	}
}

func TestReplayOverwritesFailedAttempt(t *testing.T) {
	m := fsys.NewMem()
	// The first run snapshots every 2 versions, so the failed attempt at
	// version 2 leaves 2.delta and 2.snapshot.
	p := state.NewMemoryProvider(m, state.MemoryOptions{MinDeltasForSnapshot: 2})
	apply(t, p, id03, 0, change{put: map[string]string{"a": "1"}})
	apply(t, p, id03, 1, change{put: map[string]string{"failed": "attempt"}})
	if got := listDir(t, m, id03.Dir()); got != "1.delta 2.delta 2.snapshot" {
		t.Fatalf("files after the failed attempt: %s", got)
	}
	m.Crash()

	// The restart replays batch 1: it loads version 1, ignoring 2.delta...
	p2 := state.NewMemoryProvider(m, state.MemoryOptions{MinDeltasForSnapshot: 10})
	st := mustLoad(t, p2, id03, 1)
	if got := contents(t, st); !maps.Equal(got, map[string]string{"a": "1"}) {
		t.Fatalf("version 1 = %v", got)
	}
	// ...and its commit replaces 2.delta; the stale 2.snapshot goes.
	st.Put([]byte("replayed"), []byte("yes"))
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, m, id03.Dir()); got != "1.delta 2.delta" {
		t.Fatalf("files after the replay: %s", got)
	}
	m.Crash()
	st = mustLoad(t, state.NewMemoryProvider(m, state.MemoryOptions{}), id03, 2)
	if got := contents(t, st); !maps.Equal(got, map[string]string{"a": "1", "replayed": "yes"}) {
		t.Fatalf("version 2 after replay = %v", got)
	}
}

func TestCommittedSurvivesCrash(t *testing.T) {
	m := fsys.NewMem()
	p := state.NewMemoryProvider(m, state.MemoryOptions{MinDeltasForSnapshot: 3, MinVersionsToRetain: 2})
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
		p = state.NewMemoryProvider(m, p.Options())
		st := mustLoad(t, p, id03, v+1)
		if got := contents(t, st); !maps.Equal(got, model) {
			t.Fatalf("version %d after crash = %v, want %v", v+1, got, model)
		}
		st.Abort()
	}
}

// faultyFS fails chosen operations on paths with a given suffix.
type faultyFS struct {
	fsys.FS
	failRenameTo string // suffix
	failRemove   string // suffix
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
	p := state.NewMemoryProvider(ffs, state.MemoryOptions{})
	apply(t, p, id03, 0, change{put: map[string]string{"a": "1"}})

	st := mustLoad(t, p, id03, 1) // a hit: changes in place
	st.Put([]byte("b"), []byte("2"))
	st.Delete([]byte("a"))
	ffs.failRenameTo = "2.delta"
	if _, err := st.Commit(); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "cannot commit state version 2 of state/0/3") {
		t.Fatalf("Commit err = %v", err)
	}
	if err := st.Put([]byte("c"), nil); !errors.Is(err, state.ErrStoreDone) {
		t.Fatalf("store usable after a failed commit: %v", err)
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
	ffs := &faultyFS{FS: m, failRenameTo: ".snapshot"}
	var reported []string
	p := state.NewMemoryProvider(ffs, state.MemoryOptions{
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
	// Snapshots were due at 2 and 3; both failed; nothing was deleted.
	if len(reported) != 2 {
		t.Fatalf("reported %d errors: %v", len(reported), reported)
	}
	if got := listDir(t, m, id03.Dir()); !strings.HasPrefix(got, "1.delta 2.delta 3.delta") {
		t.Fatalf("files: %s", got)
	}
	// Healed: the next commit writes the overdue snapshot and cleans up.
	ffs.failRenameTo = ""
	apply(t, p, id03, 3, change{})
	if got := listDir(t, m, id03.Dir()); !strings.HasPrefix(got, "4.delta 4.snapshot") {
		t.Fatalf("files after healing: %s", got)
	}
	// A failing delete is reported and retried.
	reported = nil
	ffs.failRemove = "4.delta"
	apply(t, p, id03, 4, change{})
	apply(t, p, id03, 5, change{})
	// 5: no snapshot due, nothing to delete; 6: snapshot, delete 4.delta
	// (fails), 4.snapshot and 5.delta.
	if len(reported) != 1 || !strings.Contains(reported[0], "state/0/3/4.delta") {
		t.Fatalf("reported: %v", reported)
	}
	ffs.failRemove = ""
	apply(t, p, id03, 6, change{})
	if got := listDir(t, m, id03.Dir()); got != "6.delta 6.snapshot 7.delta" {
		t.Fatalf("files after the retried delete: %s", got)
	}
}

// testExpiry is the expiry layout of the EvictUpTo property test: an empty
// value or one whose first byte is a multiple of 5 has none (like a null
// event time); otherwise the first two bytes, big-endian.
func testExpiry(v []byte) (int64, bool) {
	if len(v) == 0 || v[0]%5 == 0 {
		return 0, false
	}
	at := int64(v[0]) << 8
	if len(v) > 1 {
		at |= int64(v[1])
	}
	return at, true
}

// evictUpTo runs EvictUpTo and checks it against a Range-based reference
// taken from the same store just before: the entries left and the count.
func (m *propModel) evictUpTo(t *rapid.T) {
	m.requireOpen(t)
	x, ok := m.st.(state.Expirer)
	if !ok {
		t.Fatalf("%T does not implement state.Expirer", m.st)
	}
	limit := int64(rapid.IntRange(0, 256).Draw(t, "limit"))<<8 + int64(rapid.IntRange(0, 255).Draw(t, "limitLow"))
	want := contents(t, m.st)
	if !maps.Equal(want, m.work) {
		t.Fatalf("before EvictUpTo: store %q, model %q", want, m.work)
	}
	wantN := int64(0)
	for k, v := range want {
		if at, ok := testExpiry([]byte(v)); ok && at <= limit {
			delete(want, k)
			wantN++
		}
	}
	n, err := x.EvictUpTo(limit, testExpiry)
	if err != nil {
		t.Fatal(err)
	}
	if got := contents(t, m.st); n != wantN || !maps.Equal(got, want) {
		t.Fatalf("EvictUpTo(%d) removed %d, left %q; want %d, %q", limit, n, got, wantN, want)
	}
	m.work = want
	m.checkMetrics(t)
}

// evictBatch is a micro-batch that ends with EvictUpTo, as the dedup
// operator's are, then commits or aborts.
func (m *propModel) evictBatch(t *rapid.T) {
	m.load(t)
	ops := []func(*rapid.T){m.put, m.put, m.put, m.delete, m.get, m.evictUpTo}
	for range rapid.IntRange(0, 8).Draw(t, "ops") {
		ops[rapid.IntRange(0, len(ops)-1).Draw(t, "op")](t)
	}
	m.evictUpTo(t)
	if rapid.IntRange(0, 3).Draw(t, "abort") == 0 {
		m.abort(t)
	} else {
		m.commit(t)
	}
}

// TestEvictUpToProperties: on random sequences of puts, deletes,
// evictions, commits, aborts, cache-hit and cache-miss loads and restarts,
// EvictUpTo removes exactly what a Range scan with the same predicate
// removes, and everything else (files, reloads, metrics) stays as the
// model says.
func TestEvictUpToProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newPropModel(t)
		t.Repeat(map[string]func(*rapid.T){
			"batch":     m.evictBatch,
			"batch2":    m.evictBatch,
			"load":      m.load,
			"put":       m.put,
			"delete":    m.delete,
			"evict":     m.evict,
			"evictUpTo": m.evictUpTo,
			"commit":    m.commit,
			"abort":     m.abort,
			"restart":   m.restart,
			"":          m.check,
		})
	})
}

// TestEvictUpToStaleItems: many overwrites and deletes between evictions
// (stale heap items, compaction) never make EvictUpTo remove a live entry
// that is not due or miss one that is.
func TestEvictUpToStaleItems(t *testing.T) {
	p := state.NewMemoryProvider(fsys.NewMem(), state.MemoryOptions{})
	id := state.ID{Operator: 7, Partition: 0}
	model := map[string]string{}
	val := func(at int) string { return string([]byte{byte(at>>8) | 1, byte(at)}) }
	for v := int64(0); v < 8; v++ {
		st := mustLoad(t, p, id, v)
		x := st.(state.Expirer)
		if v > 0 {
			// Build (or reuse) the index first so the changes below go
			// through Put's pushes.
			if _, err := x.EvictUpTo(-1, testExpiry); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 3000 {
			k := fmt.Sprint("k", i%(500+1500*int(v%2))) // odd versions: no compaction
			at := (int(v)*3000 + i*7919) % 4000
			if v%2 == 1 {
				// Mostly ascending, as event times arrive, with a few
				// stragglers.
				at = int(v)*600 + i/5
				if i%10 == 0 {
					at -= 300
				}
			}
			if i%3 == 0 {
				if err := st.Delete([]byte(k)); err != nil {
					t.Fatal(err)
				}
				delete(model, k)
				continue
			}
			if err := st.Put([]byte(k), []byte(val(at))); err != nil {
				t.Fatal(err)
			}
			model[k] = val(at)
		}
		limit := int64(v+1) * 4096 / 8
		if v%2 == 1 {
			limit, _ = testExpiry([]byte(val(int(v)*600 + 200)))
		}
		want := int64(0)
		for k, s := range model {
			if at, ok := testExpiry([]byte(s)); ok && at <= limit {
				delete(model, k)
				want++
			}
		}
		n, err := x.EvictUpTo(limit, testExpiry)
		if err != nil {
			t.Fatal(err)
		}
		if got := contents(t, st); n != want || !maps.Equal(got, model) {
			t.Fatalf("version %d: removed %d (want %d), %d keys left, want %d", v, n, want, len(got), len(model))
		}
		if _, err := st.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEvictUpToOrder: EvictUpTo removes in ascending (expiry, key) order,
// whatever order the entries were put or indexed in, so the delta's bytes
// do not follow Go's map order.
func TestEvictUpToOrder(t *testing.T) {
	m := fsys.NewMem()
	p := state.NewMemoryProvider(m, state.MemoryOptions{})
	keys := []string{"q", "b", "z", "a", "m", "c", "y", "d"}
	val := func(at int) []byte { return []byte{1, byte(at)} }
	// Version 1 holds the first half; the index of version 2 is built from
	// the map (map order), and Put pushes the second half onto it.
	st := mustLoad(t, p, id03, 0)
	for i, k := range keys[:4] {
		st.Put([]byte(k), val(i%2))
	}
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	st = mustLoad(t, state.NewMemoryProvider(m, state.MemoryOptions{}), id03, 1)
	x := st.(state.Expirer)
	if _, err := x.EvictUpTo(-1, testExpiry); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys[4:] {
		st.Put([]byte(k), val(i%2))
	}
	if n, err := x.EvictUpTo(257, testExpiry); err != nil || n != 8 {
		t.Fatalf("EvictUpTo = %d, %v", n, err)
	}
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	// Expiry 256 (byte 0 is 1): q z m y; 257: b a c d.
	var want []byte
	for i, k := range keys[4:] {
		want = state.AppendPut(want, []byte(k), val(i%2))
	}
	for _, k := range []string{"m", "q", "y", "z", "a", "b", "c", "d"} {
		want = state.AppendRemove(want, []byte(k))
	}
	want = state.AppendTrailer(state.AppendEnd(want), state.KindDelta, id03, 2)
	if got, err := m.ReadFile("state/0/3/2.delta"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("2.delta = %q, %v\nwant %q", got, err, want)
	}
}

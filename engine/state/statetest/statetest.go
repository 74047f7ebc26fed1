// Package statetest is the contract suite of the state store providers
// built on state.Lifecycle: Run checks files, versions, caching, replay,
// crashes, failures and metrics the same way for every store, and each
// provider's tests call it with a factory (engine/state for the memory
// provider, engine/state/pebblestore for Pebble). What only one store has
// (the memory store's expiry index and estimate, Pebble's ordered Range
// and working folders) stays in that store's own tests.
//
// The expectations are written in the memory store's file names
// (<V>.delta, <V>.snapshot) and mapped to the store's own (Store.Files).
package statetest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
)

// Store describes a provider under test.
type Store struct {
	// New opens a provider over f with the lifecycle options o (zero
	// values: the defaults). The provider is closed when the test ends.
	New func(t testing.TB, f fsys.FS, o state.Options) state.Provider
	// Files are the store's file names and delta kind.
	Files state.FileNames
	// EntryOverhead is what stateOnCurrentVersionSizeBytes adds per entry
	// to Σ len(key)+len(value): state.EntryOverheadBytes for the memory
	// store's estimate, 0 for a store that reports the logical size.
	EntryOverhead int64
	// MemoryIsSize: MemoryUsedBytes equals stateOnCurrentVersionSizeBytes
	// (the memory store's estimate); otherwise it is not checked.
	MemoryIsSize bool
}

// Run runs the contract suite against s.
func Run(t *testing.T, s Store) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, Store)
	}{
		{"FilesAfterEachCommit", testFilesAfterEachCommit},
		{"DefaultSnapshotInterval", testDefaultSnapshotInterval},
		{"PutGetDeleteCommit", testPutGetDeleteCommit},
		{"LoadAndReload", testLoadAndReload},
		{"CacheHitsAndMisses", testCacheHitsAndMisses},
		{"CacheAfterConcurrentOpen", testCacheAfterConcurrentOpen},
		{"AbortRestoresCachedVersion", testAbortRestoresCachedVersion},
		{"RangeDeleteAll", testRangeDeleteAll},
		{"MetricsAfterCommit", testMetricsAfterCommit},
		{"StoreDone", testStoreDone},
		{"LoadErrors", testLoadErrors},
		{"StaleFilesRefused", testStaleFilesRefused},
		{"ReplayOverwritesFailedAttempt", testReplayOverwritesFailedAttempt},
		{"CommittedSurvivesCrash", testCommittedSurvivesCrash},
		{"CommitFailureRollsBack", testCommitFailureRollsBack},
		{"MaintenanceErrorsDoNotFailCommit", testMaintenanceErrorsDoNotFailCommit},
		{"PutIfAbsent", testPutIfAbsent},
		{"EvictUpToStaleItems", testEvictUpToStaleItems},
		{"EvictUpToOrder", testEvictUpToOrder},
		{"EvictUpToBatches", testEvictUpToBatches},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}
}

// names maps file names written as the memory store's to the store's.
func (s Store) names(memoryNames string) string {
	return strings.NewReplacer(".delta", s.Files.Delta, ".snapshot", s.Files.Snapshot).Replace(memoryNames)
}

// kindName is how corruption messages name the store's delta files.
func (s Store) kindName() string {
	if s.Files.DeltaKind == state.KindChangelog {
		return "the changelog"
	}
	return "the delta"
}

// checkSize checks the size metrics of m against dataBytes, the logical
// size (Σ len(key)+len(value)).
func (s Store) checkSize(t TB, what string, m state.Metrics, dataBytes int64) {
	t.Helper()
	want := dataBytes + s.EntryOverhead*m.NumKeys
	if got := m.Custom["stateOnCurrentVersionSizeBytes"]; got != want {
		t.Fatalf("%s: stateOnCurrentVersionSizeBytes = %d, want %d (%d keys, %d bytes of keys and values)", what, got, want, m.NumKeys, dataBytes)
	}
	if s.MemoryIsSize && m.MemoryUsedBytes != want {
		t.Fatalf("%s: MemoryUsedBytes = %d, want %d", what, m.MemoryUsedBytes, want)
	}
}

var id03 = state.ID{Operator: 0, Partition: 3}

// TB is what the helpers need of *testing.T, *testing.B and *rapid.T.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// MustLoad loads id at version v.
func MustLoad(t TB, p state.Provider, id state.ID, v int64) state.Store {
	t.Helper()
	st, err := p.Load(id, v)
	if err != nil {
		t.Fatalf("Load(%v, %d): %v", id, v, err)
	}
	return st
}

// Contents reads a store through Range.
func Contents(t TB, st state.Store) map[string]string {
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

// Change is one batch: puts (in key order), then deletes.
type Change struct {
	Put map[string]string
	Del []string
}

// Apply loads version v, applies c and commits version v+1.
func Apply(t TB, p state.Provider, id state.ID, v int64, c Change) {
	t.Helper()
	st := MustLoad(t, p, id, v)
	for _, k := range slices.Sorted(maps.Keys(c.Put)) {
		if err := st.Put([]byte(k), []byte(c.Put[k])); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range c.Del {
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

// model applies c to m.
func model(m map[string]string, c Change) {
	maps.Copy(m, c.Put)
	for _, k := range c.Del {
		delete(m, k)
	}
}

// ListDir lists dir without the temp files a failed fsys.WriteAtomic
// leaves behind.
func ListDir(t TB, f fsys.FS, dir string) string {
	t.Helper()
	names, err := f.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return strings.HasPrefix(n, ".") })
	return strings.Join(names, " ")
}

// Customs returns the cache hit and miss counts of st.
func Customs(st state.Store) (hits, misses int64) {
	c := st.Metrics().Custom
	return c["loadedMapCacheHitCount"], c["loadedMapCacheMissCount"]
}

// FaultyFS fails chosen operations on paths with a given suffix.
type FaultyFS struct {
	fsys.FS
	FailRenameTo string // suffix
	FailRemove   string // suffix
}

// ErrInjected is the error of FaultyFS.
var ErrInjected = errors.New("injected fault")

func (f *FaultyFS) Rename(oldname, newname string) error {
	if f.FailRenameTo != "" && strings.HasSuffix(newname, f.FailRenameTo) {
		return ErrInjected
	}
	return f.FS.Rename(oldname, newname)
}

func (f *FaultyFS) Remove(name string) error {
	if f.FailRemove != "" && strings.HasSuffix(name, f.FailRemove) {
		return ErrInjected
	}
	return f.FS.Remove(name)
}

// testFilesAfterEachCommit: MinDeltasForSnapshot 3, MinVersionsToRetain 4:
// after commit V the files must let every version in [V-3, V] load, and
// nothing older; each retained version reloads, in a fresh provider, from
// its snapshot and deltas. Two workloads: one new key per version, and new
// keys with an overwrite every version and a delete every other one.
func testFilesAfterEachCommit(t *testing.T, s Store) {
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
	for _, w := range []struct {
		name   string
		change func(v int64) Change
	}{
		{"one new key per version", func(v int64) Change { return Change{Put: map[string]string{fmt.Sprint("k", v): "x"}} }},
		{"overwrites and deletes", func(v int64) Change {
			c := Change{Put: map[string]string{fmt.Sprint("k", v): fmt.Sprint(v), "k0": fmt.Sprint("again", v)}}
			if v%2 == 1 {
				c.Del = []string{fmt.Sprint("k", v-1)}
			}
			return c
		}},
	} {
		t.Run(w.name, func(t *testing.T) {
			m := fsys.NewMem()
			opts := state.Options{MinDeltasForSnapshot: 3, MinVersionsToRetain: 4}
			p := s.New(t, m, opts)
			models := []map[string]string{{}}
			for v := int64(0); v < 9; v++ {
				c := w.change(v)
				Apply(t, p, id03, v, c)
				next := maps.Clone(models[v])
				model(next, c)
				models = append(models, next)
				if got := ListDir(t, m, id03.Dir()); got != s.names(want[v+1]) {
					t.Fatalf("after commit %d:\n got %s\nwant %s", v+1, got, s.names(want[v+1]))
				}
				st := MustLoad(t, s.New(t, m, opts), id03, v+1)
				if got := Contents(t, st); !maps.Equal(got, next) {
					t.Fatalf("version %d reloaded = %v, want %v", v+1, got, next)
				}
				if n := st.Metrics().NumKeys; n != int64(len(next)) {
					t.Fatalf("version %d reloaded NumKeys = %d, want %d", v+1, n, len(next))
				}
				st.Abort()
			}
			// Every retained version loads from files alone, with any
			// options.
			fresh := s.New(t, m, state.Options{})
			for v := int64(6); v <= 9; v++ {
				st := MustLoad(t, fresh, id03, v)
				if got := Contents(t, st); !maps.Equal(got, models[v]) {
					t.Fatalf("version %d = %v, want %v", v, got, models[v])
				}
				st.Abort()
			}
			// Version 5 needs 3.snapshot, which is gone; no snapshot <= 5
			// is left, so the rebuild starts from version 0 and misses
			// 1.delta.
			if _, err := fresh.Load(id03, 5); err == nil || !strings.Contains(err.Error(), s.names("missing 1.delta")) {
				t.Fatalf("Load(5) after cleanup: err = %v, want %s", err, s.names("missing 1.delta"))
			}
		})
	}
}

// testDefaultSnapshotInterval: with the default options the first snapshot
// is version 10's; an empty commit still writes a delta: the end marker
// alone, then dedupsim's trailer stamped for the store and version.
func testDefaultSnapshotInterval(t *testing.T, s Store) {
	m := fsys.NewMem()
	p := s.New(t, m, state.Options{})
	for v := int64(0); v < 10; v++ {
		Apply(t, p, id03, v, Change{})
	}
	if ok, _ := m.Exists(s.names("state/0/3/10.snapshot")); !ok {
		t.Fatal("no snapshot at version 10 with the defaults")
	}
	if ok, _ := m.Exists(s.names("state/0/3/9.snapshot")); ok {
		t.Fatal("snapshot before version 10")
	}
	name := s.names("state/0/3/1.delta")
	if data, err := m.ReadFile(name); err != nil || string(data) != string(state.AppendTrailer([]byte("\xff\xff\xff\xff"), s.Files.DeltaKind, id03, 1)) {
		t.Fatalf("empty %s = %q, %v", name, data, err)
	}
}

// testPutGetDeleteCommit: one batch of puts, an overwrite and deletes, its
// figures before and after the commit, the delta's exact bytes (Spark's
// HDFS delta and RocksDB changelog v1 format, then dedupsim's trailer),
// and the version reloaded from the cache and from the files.
func testPutGetDeleteCommit(t *testing.T, s Store) {
	m := fsys.NewMem()
	p := s.New(t, m, state.Options{})
	st := MustLoad(t, p, id03, 0)
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
	st.Delete([]byte("absent")) // no-op, not in the delta
	if v, ok, err := st.Get([]byte("a")); err != nil || !ok || string(v) != "111" {
		t.Fatalf("Get(a) = %q %v %v", v, ok, err)
	}
	if _, ok, _ := st.Get([]byte("b")); ok {
		t.Fatal("deleted key found")
	}
	const size = 1 + 3 + 9 + 1 // a=111, ""="empty key", c=""
	if got := st.Metrics(); got.NumKeys != 3 {
		t.Fatalf("metrics before commit: %+v", got)
	}
	s.checkSize(t, "before commit", st.Metrics(), size)
	if v, err := st.Commit(); err != nil || v != 1 {
		t.Fatalf("Commit = %d, %v", v, err)
	}
	want := map[string]string{"a": "111", "": "empty key", "c": ""}
	if got := st.Metrics(); got.NumKeys != 3 {
		t.Fatalf("metrics after commit: %+v", got)
	}
	s.checkSize(t, "after commit", st.Metrics(), size)
	if got := ListDir(t, m, id03.Dir()); got != s.names("1.delta") {
		t.Fatalf("files: %s", got)
	}
	data, _ := m.ReadFile(s.names("state/0/3/1.delta"))
	if want := "\x00\x00\x00\x01a\x00\x00\x00\x011" + "\x00\x00\x00\x01b\x00\x00\x00\x0222" +
		"\x00\x00\x00\x00\x00\x00\x00\x09empty key" + "\x00\x00\x00\x01c\x00\x00\x00\x00" + "\x00\x00\x00\x01a\x00\x00\x00\x03111" +
		"\x00\x00\x00\x01b\xff\xff\xff\xff" + "\xff\xff\xff\xff"; string(data) != string(state.AppendTrailer([]byte(want), s.Files.DeltaKind, id03, 1)) {
		t.Fatalf("delta = %q\nwant %q", data, want)
	}

	st = MustLoad(t, p, id03, 1) // cache hit
	if got := Contents(t, st); !maps.Equal(got, want) {
		t.Fatalf("version 1 = %v", got)
	}
	st.Abort()
	st = MustLoad(t, s.New(t, m, state.Options{}), id03, 1) // rebuilt
	if got := Contents(t, st); !maps.Equal(got, want) {
		t.Fatalf("version 1 reloaded = %v", got)
	}
	if got := st.Metrics(); got.NumKeys != 3 {
		t.Fatalf("metrics after reload: %+v", got)
	}
	s.checkSize(t, "after reload", st.Metrics(), size)
	st.Abort()
}

// testLoadAndReload: every version of a short history (the empty key, an
// empty value, overwrites, deletes of present and absent keys) loads, from
// the cache's provider and from a fresh one, with its contents, NumKeys
// and Get.
func testLoadAndReload(t *testing.T, s Store) {
	m := fsys.NewMem()
	opts := state.Options{MinDeltasForSnapshot: 2, MinVersionsToRetain: 10}
	p := s.New(t, m, opts)
	batches := []Change{
		{Put: map[string]string{"a": "1", "b": "2", "": "empty key"}},
		{Put: map[string]string{"a": "1b", "c": ""}, Del: []string{"b", "absent"}},
		{Del: []string{""}},
		{Put: map[string]string{"b": "again"}, Del: []string{"a", "c"}},
	}
	want := []map[string]string{{}}
	cur := map[string]string{}
	for i, c := range batches {
		Apply(t, p, id03, int64(i), c)
		model(cur, c)
		want = append(want, maps.Clone(cur))
	}
	for _, prov := range []state.Provider{p, s.New(t, m, opts)} {
		for v := range want {
			st := MustLoad(t, prov, id03, int64(v))
			if got := Contents(t, st); !maps.Equal(got, want[v]) {
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

// testCacheHitsAndMisses: loadedMapCacheHitCount and
// loadedMapCacheMissCount per store ID, for the provider's life; a
// restart starts cold; a second open of the cached version while the
// first is open is rebuilt from the files and does not see the first's
// changes.
func testCacheHitsAndMisses(t *testing.T, s Store) {
	m := fsys.NewMem()
	p := s.New(t, m, state.Options{})
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
	for _, step := range steps {
		st := MustLoad(t, p, step.id, step.load)
		if h, ms := Customs(st); h != step.hits || ms != step.misses {
			t.Fatalf("%s: hits %d misses %d, want %d %d", step.name, h, ms, step.hits, step.misses)
		}
		if !step.commit {
			st.Abort()
			continue
		}
		if err := st.Put([]byte(fmt.Sprint("k", step.load)), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Commit(); err != nil {
			t.Fatal(err)
		}
		if h, ms := Customs(st); h != step.hits || ms != step.misses {
			t.Fatalf("%s, after commit: hits %d misses %d", step.name, h, ms)
		}
	}
	// A new provider (a restart) has a cold cache and fresh counters.
	p2 := s.New(t, m, state.Options{})
	st := MustLoad(t, p2, id03, 4)
	if h, ms := Customs(st); h != 0 || ms != 1 {
		t.Fatalf("after restart: hits %d misses %d, want 0 1", h, ms)
	}
	if err := st.Put([]byte("k4"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	// A second open of the cached version while the first is still open
	// cannot share it: it is rebuilt from the files.
	first := MustLoad(t, p2, id03, 5)
	second := MustLoad(t, p2, id03, 5)
	if h, ms := Customs(second); h != 1 || ms != 2 {
		t.Fatalf("concurrent open: hits %d misses %d, want 1 2", h, ms)
	}
	first.Put([]byte("only-in-first"), nil)
	if got := Contents(t, second); len(got) != 5 {
		t.Fatalf("second store sees %v", got)
	}
	first.Abort()
	second.Abort()
}

// testCacheAfterConcurrentOpen: when the rebuilt second open of a version
// commits, its copy becomes the cache (the first open's goes when it
// ends), and the next load of the new version is a hit.
func testCacheAfterConcurrentOpen(t *testing.T, s Store) {
	m := fsys.NewMem()
	p := s.New(t, m, state.Options{})
	st := MustLoad(t, p, id03, 0) // neither
	st.Put([]byte("a"), []byte("1"))
	st.Commit()
	if h, mi := Customs(st); h != 0 || mi != 0 {
		t.Fatalf("after version 0: hits %d misses %d", h, mi)
	}
	Apply(t, p, id03, 1, Change{Put: map[string]string{"b": "2"}}) // hit
	st = MustLoad(t, p, id03, 1)                                   // miss: the cache holds 2
	if h, mi := Customs(st); h != 1 || mi != 1 {
		t.Fatalf("hits %d misses %d", h, mi)
	}
	// A second open of the cached version while it is in use is a miss.
	st2 := MustLoad(t, p, id03, 2)
	st3 := MustLoad(t, p, id03, 2)
	if h, mi := Customs(st3); h != 2 || mi != 2 {
		t.Fatalf("hits %d misses %d", h, mi)
	}
	st3.Put([]byte("c"), []byte("3"))
	st3.Commit() // the rebuilt copy becomes the cache (version 3)
	st2.Abort()  // the old one is disposed of
	st.Abort()
	st = MustLoad(t, p, id03, 3)
	if h, mi := Customs(st); h != 3 || mi != 2 {
		t.Fatalf("hits %d misses %d", h, mi)
	}
	if got := Contents(t, st); !maps.Equal(got, map[string]string{"a": "1", "b": "2", "c": "3"}) {
		t.Fatalf("version 3 = %v", got)
	}
	st.Abort()
}

// testAbortRestoresCachedVersion: an aborted batch on the cached version
// (overwrites, a key put twice and deleted, a delete and re-put, deletes
// during Range) leaves that version as it was: still a cache hit, the same
// contents and size, no file changed. The store reports the loaded
// version's figures after Abort and refuses to be used.
func testAbortRestoresCachedVersion(t *testing.T, s Store) {
	m := fsys.NewMem()
	p := s.New(t, m, state.Options{})
	Apply(t, p, id03, 0, Change{Put: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}})
	before := ListDir(t, m, id03.Dir())

	st := MustLoad(t, p, id03, 1)
	if h, _ := Customs(st); h != 1 {
		t.Fatal("expected a cache hit")
	}
	must := func(err error) {
		t.Helper()
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
	if got := Contents(t, st); !maps.Equal(got, map[string]string{"a": "changed", "b": "back"}) {
		t.Fatalf("before abort: %v", got)
	}
	if got := st.Metrics().NumKeys; got != 2 {
		t.Fatalf("NumKeys while updating = %d", got)
	}
	st.Abort()
	if got := st.Metrics().NumKeys; got != 4 {
		t.Fatalf("metrics after abort: %d keys, want the loaded 4", got)
	}
	s.checkSize(t, "the aborted store", st.Metrics(), 4*2)
	if err := st.Put([]byte("x"), nil); !errors.Is(err, state.ErrStoreDone) {
		t.Fatalf("Put after Abort: %v", err)
	}

	st = MustLoad(t, p, id03, 1)
	if h, _ := Customs(st); h != 2 {
		t.Fatal("expected the restored version to be a cache hit")
	}
	if got := Contents(t, st); !maps.Equal(got, map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}) {
		t.Fatalf("after abort: %v", got)
	}
	s.checkSize(t, "after abort", st.Metrics(), 4*2)
	st.Abort()
	if after := ListDir(t, m, id03.Dir()); after != before || after != s.names("1.delta") {
		t.Fatalf("abort changed files: %s → %s", before, after)
	}
}

// testRangeDeleteAll: Range visits every entry once with its value while
// fn deletes the current key, the deletions commit and reload, and Range
// stops when fn returns false.
func testRangeDeleteAll(t *testing.T, s Store) {
	m := fsys.NewMem()
	p := s.New(t, m, state.Options{})
	put := map[string]string{}
	for i := range 1000 {
		put[fmt.Sprint("key", i)] = fmt.Sprint(i)
	}
	Apply(t, p, id03, 0, Change{Put: put})
	st := MustLoad(t, p, id03, 1)
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
	got := Contents(t, MustLoad(t, s.New(t, m, state.Options{}), id03, 2))
	if len(got) != 910 {
		t.Fatalf("reloaded %d keys", len(got))
	}
	// Stopping early.
	st = MustLoad(t, p, id03, 2)
	n := 0
	st.Range(func(k, v []byte) bool { n++; return n < 5 })
	if n != 5 {
		t.Fatalf("Range did not stop: %d calls", n)
	}
	st.Abort()
}

// testMetricsAfterCommit: the figures follow puts, overwrites and deletes,
// and a committed store's figures do not move when the next batch changes
// the version it committed.
func testMetricsAfterCommit(t *testing.T, s Store) {
	p := s.New(t, fsys.NewMem(), state.Options{})
	st := MustLoad(t, p, id03, 0)
	st.Put([]byte("abc"), []byte("12345678")) // 11
	st.Put([]byte("d"), nil)                  // 1
	st.Put([]byte("abc"), []byte("1234"))     // 11 → 7
	st.Put([]byte("e"), []byte("zz"))         // 3
	st.Delete([]byte("e"))                    // 0
	check := func(when string) {
		t.Helper()
		if m := st.Metrics(); m.NumKeys != 2 {
			t.Fatalf("%s: metrics %+v, want 2 keys", when, m)
		}
		s.checkSize(t, when, st.Metrics(), 7+1)
	}
	check("before commit")
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	check("after commit")
	next := MustLoad(t, p, id03, 1)
	next.Put([]byte("more"), []byte("x"))
	check("after the next batch changed the cached version")
	next.Abort()
}

// testStoreDone: after Commit or Abort every operation fails with
// ErrStoreDone (Abort is a no-op), Version stays the loaded one, and Load
// after Close fails with ErrProviderClosed.
func testStoreDone(t *testing.T, s Store) {
	p := s.New(t, fsys.NewMem(), state.Options{})
	for _, finish := range []string{"commit", "abort"} {
		t.Run(finish, func(t *testing.T) {
			st := MustLoad(t, p, id03, 0)
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
			for _, op := range []struct {
				name string
				err  error
			}{
				{"Get", errGet},
				{"Put", st.Put([]byte("k"), nil)},
				{"Delete", st.Delete([]byte("k"))},
				{"Range", st.Range(func(k, v []byte) bool { return true })},
				{"Commit", errCommit},
			} {
				if !errors.Is(op.err, state.ErrStoreDone) {
					t.Errorf("%s after %s: err = %v, want ErrStoreDone", op.name, finish, op.err)
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

// testLoadErrors: a missing, misplaced, truncated or garbled delta or
// snapshot fails the load with an error naming the file (never a fallback
// or a partial apply); the cached version needs no files; a version below
// the damage still loads.
func testLoadErrors(t *testing.T, s Store) {
	m := fsys.NewMem()
	p := s.New(t, m, state.Options{MinDeltasForSnapshot: 100})
	for v := int64(0); v < 3; v++ {
		Apply(t, p, id03, v, Change{Put: map[string]string{fmt.Sprint(v): "v"}})
	}
	fresh := func() state.Provider { return s.New(t, m, state.Options{}) }
	delta := func(v int64) string { return s.names(fmt.Sprintf("state/0/3/%d.delta", v)) }

	_, err := fresh().Load(id03, 5)
	if want := s.names("cannot load state version 5 of state/0/3: missing 4.delta (file does not exist)"); err == nil || err.Error() != want {
		t.Fatalf("Load(5) err = %v, want %s", err, want)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("missing delta error does not wrap ErrNotExist")
	}
	if _, err := fresh().Load(state.ID{Operator: 9}, 1); err == nil || !strings.Contains(err.Error(), s.names("state/9/0: missing 1.delta")) {
		t.Fatalf("Load of a store without files: %v", err)
	}
	if _, err := fresh().Load(id03, -1); err == nil {
		t.Fatal("negative version loaded")
	}

	// The cached version does not need the files.
	data2, _ := m.ReadFile(delta(2))
	if err := m.Remove(delta(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh().Load(id03, 3); err == nil || !strings.Contains(err.Error(), s.names("cannot load state version 3 of state/0/3: missing 2.delta")) {
		t.Fatalf("Load(3) without 2.delta: %v", err)
	}
	st := MustLoad(t, p, id03, 3)
	if got := len(Contents(t, st)); got != 3 {
		t.Fatalf("cached version 3 has %d keys", got)
	}
	st.Abort()

	// A well-formed delta copied over another version's is refused by its
	// stamp.
	data, _ := m.ReadFile(delta(3))
	fsys.WriteAtomic(m, delta(2), data)
	if _, err := fresh().Load(id03, 3); !errors.Is(err, state.ErrCorrupt) || !strings.Contains(err.Error(), delta(2)) || !strings.Contains(err.Error(), "stale or misplaced") {
		t.Fatalf("Load(3) with 3.delta copied to 2.delta: %v", err)
	}
	fsys.WriteAtomic(m, delta(2), data2)

	// A truncated or garbled delta is an error naming the file, never
	// partially applied.
	for _, bad := range []string{string(data[:len(data)-4]), string(data) + "x", "\xff\xff\xff\xf0", "\x00\x00\x00\x05ab"} {
		fsys.WriteAtomic(m, delta(3), []byte(bad))
		_, err = fresh().Load(id03, 3)
		if !errors.Is(err, state.ErrCorrupt) || !strings.Contains(err.Error(), delta(3)) {
			t.Fatalf("Load(3) with delta %q: %v", bad, err)
		}
	}
	if _, err := fresh().Load(id03, 2); err != nil {
		t.Fatalf("Load(2) does not read 3.delta: %v", err)
	}

	// A corrupt snapshot is an error too, not a reason to fall back.
	fsys.WriteAtomic(m, delta(3), data)
	Apply(t, s.New(t, m, state.Options{MinDeltasForSnapshot: 1}), id03, 3, Change{})
	snapName := s.names("state/0/3/4.snapshot")
	snap, err := m.ReadFile(snapName)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		name string
		data []byte
	}{
		{"truncated", snap[:len(snap)/2]},
		{"flipped", flip(snap, len(snap)/3)},
		{"garbage", []byte("not a snapshot")},
		{"a record without its value", []byte{0, 0, 0, 1, 'k'}},
	} {
		fsys.WriteAtomic(m, snapName, bad.data)
		_, err = fresh().Load(id03, 4)
		if !errors.Is(err, state.ErrCorrupt) || !strings.Contains(err.Error(), snapName) {
			t.Fatalf("Load(4) with a %s snapshot: %v", bad.name, err)
		}
	}
	fsys.WriteAtomic(m, snapName, snap)
	st = MustLoad(t, fresh(), id03, 4)
	// Versions 2 to 4 are {0, 1, 2}.
	if got := len(Contents(t, st)); got != 3 {
		t.Fatalf("version 4 from the snapshot has %d keys", got)
	}
	st.Abort()
}

func flip(b []byte, i int) []byte {
	c := slices.Clone(b)
	c[i] ^= 0x40
	return c
}

// testStaleFilesRefused (issue 10 item 10): a stale but well-formed state
// file (an old snapshot copied over a newer one, a delta copied into
// another partition) is refused by its stamp.
func testStaleFilesRefused(t *testing.T, s Store) {
	m := fsys.NewMem()
	p := s.New(t, m, state.Options{MinDeltasForSnapshot: 2})
	other := state.ID{Operator: 0, Partition: 4}
	for v := int64(0); v < 6; v++ {
		Apply(t, p, id03, v, Change{Put: map[string]string{fmt.Sprint(v): "v"}})
		Apply(t, p, other, v, Change{Put: map[string]string{"o" + fmt.Sprint(v): "v"}})
	}
	fresh := func() state.Provider { return s.New(t, m, state.Options{}) }
	if _, err := fresh().Load(id03, 6); err != nil {
		t.Fatal(err)
	}
	restore := func(name string) func() {
		data, err := m.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return func() { fsys.WriteAtomic(m, name, data) }
	}
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"old snapshot over a newer one", "state/0/3/4.snapshot", "state/0/3/6.snapshot", "stamped as the snapshot of state/0/3 version 4"},
		{"another partition's delta", "state/0/4/5.delta", "state/0/3/5.delta", "stamped as " + s.kindName() + " of state/0/4 version 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to := s.names(tc.from), s.names(tc.to)
			undo := restore(to)
			defer undo()
			data, _ := m.ReadFile(from)
			fsys.WriteAtomic(m, to, data)
			if strings.HasSuffix(tc.to, ".delta") {
				// Make the delta needed: no snapshot at or above it.
				snap := s.names("state/0/3/6.snapshot")
				undoSnap := restore(snap)
				defer undoSnap()
				m.Remove(snap)
			}
			_, err := fresh().Load(id03, 6)
			var cf *state.CorruptFileError
			if !errors.As(err, &cf) || cf.Path != to || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a corrupt %s: %s", err, to, tc.want)
			}
		})
	}
	if _, err := fresh().Load(id03, 6); err != nil {
		t.Fatalf("restored: %v", err)
	}
}

// testReplayOverwritesFailedAttempt: after a crash the replayed batch
// loads the version below the failed attempt's files, ignores them, and
// its commit replaces the delta and drops the stale snapshot.
func testReplayOverwritesFailedAttempt(t *testing.T, s Store) {
	m := fsys.NewMem()
	// The first run snapshots every 2 versions, so the failed attempt at
	// version 2 leaves 2.delta and 2.snapshot.
	p := s.New(t, m, state.Options{MinDeltasForSnapshot: 2})
	Apply(t, p, id03, 0, Change{Put: map[string]string{"a": "1"}})
	Apply(t, p, id03, 1, Change{Put: map[string]string{"failed": "attempt"}})
	if got := ListDir(t, m, id03.Dir()); got != s.names("1.delta 2.delta 2.snapshot") {
		t.Fatalf("files after the failed attempt: %s", got)
	}
	m.Crash()

	// The restart replays batch 1: it loads version 1, ignoring 2.delta
	// and 2.snapshot...
	p2 := s.New(t, m, state.Options{MinDeltasForSnapshot: 10})
	st := MustLoad(t, p2, id03, 1)
	if got := Contents(t, st); !maps.Equal(got, map[string]string{"a": "1"}) {
		t.Fatalf("version 1 = %v", got)
	}
	// ...and its commit replaces 2.delta; the stale 2.snapshot goes.
	st.Put([]byte("replayed"), []byte("yes"))
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := ListDir(t, m, id03.Dir()); got != s.names("1.delta 2.delta") {
		t.Fatalf("files after the replay: %s", got)
	}
	m.Crash()
	st = MustLoad(t, s.New(t, m, state.Options{}), id03, 2)
	if got := Contents(t, st); !maps.Equal(got, map[string]string{"a": "1", "replayed": "yes"}) {
		t.Fatalf("version 2 after replay = %v", got)
	}
	if n := st.Metrics().NumKeys; n != 2 {
		t.Fatalf("NumKeys = %d", n)
	}
	st.Abort()
}

// testCommittedSurvivesCrash: every committed version is durable: a power
// cut right after the commit changes no file, and a new provider loads the
// version with its contents and NumKeys.
func testCommittedSurvivesCrash(t *testing.T, s Store) {
	m := fsys.NewMem()
	opts := state.Options{MinDeltasForSnapshot: 3, MinVersionsToRetain: 2}
	p := s.New(t, m, opts)
	cur := map[string]string{}
	for v := int64(0); v < 20; v++ {
		k := fmt.Sprint("k", v%7)
		c := Change{Put: map[string]string{k: fmt.Sprint(v)}}
		if v%3 == 0 {
			c.Del = []string{fmt.Sprint("k", (v+3)%7)}
		}
		Apply(t, p, id03, v, c)
		model(cur, c)
		files := m.Files()
		m.Crash()
		if after := m.Files(); !slices.Equal(files, after) {
			t.Fatalf("version %d: files changed by a crash: %v → %v", v+1, files, after)
		}
		p.Close()
		p = s.New(t, m, opts)
		st := MustLoad(t, p, id03, v+1)
		if got := Contents(t, st); !maps.Equal(got, cur) {
			t.Fatalf("version %d after crash = %v, want %v", v+1, got, cur)
		}
		if n := st.Metrics().NumKeys; n != int64(len(cur)) {
			t.Fatalf("version %d after crash: NumKeys %d, want %d", v+1, n, len(cur))
		}
		st.Abort()
	}
}

// testCommitFailureRollsBack: a commit whose delta cannot be written fails
// naming the version, leaves the store aborted with the loaded figures,
// keeps the cached version as it was, and the version does not load.
func testCommitFailureRollsBack(t *testing.T, s Store) {
	m := fsys.NewMem()
	ffs := &FaultyFS{FS: m}
	p := s.New(t, ffs, state.Options{})
	Apply(t, p, id03, 0, Change{Put: map[string]string{"a": "1"}})

	st := MustLoad(t, p, id03, 1) // a hit: changes the cached version
	st.Put([]byte("b"), []byte("2"))
	st.Delete([]byte("a"))
	ffs.FailRenameTo = s.names("2.delta")
	if _, err := st.Commit(); !errors.Is(err, ErrInjected) || !strings.Contains(err.Error(), "cannot commit state version 2 of state/0/3") {
		t.Fatalf("Commit err = %v", err)
	}
	if err := st.Put([]byte("c"), nil); !errors.Is(err, state.ErrStoreDone) {
		t.Fatalf("store usable after a failed commit: %v", err)
	}
	if n := st.Metrics().NumKeys; n != 1 {
		t.Fatalf("NumKeys after a failed commit = %d", n)
	}
	ffs.FailRenameTo = ""
	st = MustLoad(t, p, id03, 1)
	if h, _ := Customs(st); h != 2 {
		t.Fatal("cache lost after a failed commit")
	}
	if got := Contents(t, st); !maps.Equal(got, map[string]string{"a": "1"}) {
		t.Fatalf("version 1 after a failed commit = %v", got)
	}
	st.Abort()
	if _, err := p.Load(id03, 2); err == nil {
		t.Fatal("version 2 loads although its commit failed")
	}
}

// testMaintenanceErrorsDoNotFailCommit: a snapshot or a deletion that
// fails is reported to OnMaintenanceError, does not fail the commit, and
// is retried by the next commit.
func testMaintenanceErrorsDoNotFailCommit(t *testing.T, s Store) {
	m := fsys.NewMem()
	ffs := &FaultyFS{FS: m, FailRenameTo: s.Files.Snapshot}
	var reported []string
	p := s.New(t, ffs, state.Options{
		MinDeltasForSnapshot: 2,
		MinVersionsToRetain:  1,
		OnMaintenanceError: func(id state.ID, err error) {
			if id != id03 || !errors.Is(err, ErrInjected) {
				t.Errorf("reported %v: %v", id, err)
			}
			reported = append(reported, err.Error())
		},
	})
	for v := int64(0); v < 3; v++ {
		Apply(t, p, id03, v, Change{Put: map[string]string{fmt.Sprint(v): "x"}})
	}
	// Snapshots were due at 2 and 3; both failed; nothing was deleted.
	if len(reported) != 2 {
		t.Fatalf("reported %d errors: %v", len(reported), reported)
	}
	if got := ListDir(t, m, id03.Dir()); got != s.names("1.delta 2.delta 3.delta") {
		t.Fatalf("files: %s", got)
	}
	// Healed: the next commit writes the overdue snapshot and cleans up.
	ffs.FailRenameTo = ""
	Apply(t, p, id03, 3, Change{})
	if got := ListDir(t, m, id03.Dir()); got != s.names("4.delta 4.snapshot") {
		t.Fatalf("files after healing: %s", got)
	}
	// A failing delete is reported and retried.
	reported = nil
	ffs.FailRemove = s.names("4.delta")
	Apply(t, p, id03, 4, Change{})
	Apply(t, p, id03, 5, Change{})
	// 5: no snapshot due, nothing to delete; 6: snapshot, delete 4.delta
	// (fails), 4.snapshot and 5.delta.
	if len(reported) != 1 || !strings.Contains(reported[0], s.names("state/0/3/4.delta")) {
		t.Fatalf("reported: %v", reported)
	}
	ffs.FailRemove = ""
	Apply(t, p, id03, 6, Change{})
	if got := ListDir(t, m, id03.Dir()); got != s.names("6.delta 6.snapshot 7.delta") {
		t.Fatalf("files after the retried delete: %s", got)
	}
	st := MustLoad(t, s.New(t, m, state.Options{}), id03, 7)
	if got := len(Contents(t, st)); got != 3 {
		t.Fatalf("version 7 has %d keys", got)
	}
	st.Abort()
}

// testPutIfAbsent: a store that implements state.Inserter stores exactly
// what Get followed by Put would, over enough batches of inserts, deletes,
// aborts and reloads (cache hits and misses) for a store's own shortcuts
// (Pebble's key filter, rebuilt once full) to be exercised: contents, key
// count and the bool it returns follow a map model.
func testPutIfAbsent(t *testing.T, s Store) {
	f := fsys.NewMem()
	p := s.New(t, f, state.Options{})
	st := MustLoad(t, p, id03, 0)
	if _, ok := st.(state.Inserter); !ok {
		st.Abort()
		t.Skipf("%T does not implement state.Inserter", st)
	}
	st.Abort()
	rng := rand.New(rand.NewPCG(7, 15))
	model := map[string]string{}
	version := int64(0)
	for batch := range 8 {
		if batch == 5 {
			p = s.New(t, f, state.Options{}) // a restart: a miss, rebuilt from the files
		}
		st := MustLoad(t, p, id03, version)
		ins := st.(state.Inserter)
		work := maps.Clone(model)
		for range 20_000 {
			k := fmt.Sprintf("k%d", rng.IntN(60_000))
			if rng.IntN(8) == 0 {
				if err := st.Delete([]byte(k)); err != nil {
					t.Fatal(err)
				}
				delete(work, k)
				continue
			}
			v := fmt.Sprint(batch)
			stored, err := ins.PutIfAbsent([]byte(k), []byte(v))
			if err != nil {
				t.Fatal(err)
			}
			_, had := work[k]
			if stored == had {
				t.Fatalf("batch %d: PutIfAbsent(%q) = %v, but the key was present: %v", batch, k, stored, had)
			}
			if !had {
				work[k] = v
			}
		}
		if batch%3 == 2 {
			st.Abort()
			continue
		}
		if got := Contents(t, st); !maps.Equal(got, work) {
			t.Fatalf("batch %d: %d entries, want %d", batch, len(got), len(work))
		}
		if _, err := st.Commit(); err != nil {
			t.Fatal(err)
		}
		if n := st.Metrics().NumKeys; n != int64(len(work)) {
			t.Fatalf("batch %d: NumKeys = %d, want %d", batch, n, len(work))
		}
		model = work
		version++
	}
	st = MustLoad(t, s.New(t, f, state.Options{}), id03, version)
	defer st.Abort()
	if got := Contents(t, st); !maps.Equal(got, model) {
		t.Fatalf("reloaded: %d entries, want %d", len(got), len(model))
	}
}

// TestExpiry is the expiry layout of the EvictUpTo property test: an empty
// value or one whose first byte is a multiple of 5 has none (like a null
// event time); otherwise the first two bytes, big-endian.
func TestExpiry(v []byte) (int64, bool) {
	if len(v) == 0 || v[0]%5 == 0 {
		return 0, false
	}
	at := int64(v[0]) << 8
	if len(v) > 1 {
		at |= int64(v[1])
	}
	return at, true
}

// testEvictUpToStaleItems: many overwrites and deletes between evictions
// (stale heap items, compaction) never make EvictUpTo remove a live entry
// that is not due or miss one that is.
func testEvictUpToStaleItems(t *testing.T, s Store) {
	p := s.New(t, fsys.NewMem(), state.Options{})
	id := state.ID{Operator: 7, Partition: 0}
	model := map[string]string{}
	val := func(at int) string { return string([]byte{byte(at>>8) | 1, byte(at)}) }
	for v := int64(0); v < 8; v++ {
		st := MustLoad(t, p, id, v)
		x := st.(state.Expirer)
		if v > 0 {
			// Build (or reuse) the index first so the changes below go
			// through Put's pushes.
			if _, err := x.EvictUpTo(-1, TestExpiry); err != nil {
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
			limit, _ = TestExpiry([]byte(val(int(v)*600 + 200)))
		}
		want := int64(0)
		for k, s := range model {
			if at, ok := TestExpiry([]byte(s)); ok && at <= limit {
				delete(model, k)
				want++
			}
		}
		n, err := x.EvictUpTo(limit, TestExpiry)
		if err != nil {
			t.Fatal(err)
		}
		if got := Contents(t, st); n != want || !maps.Equal(got, model) {
			t.Fatalf("version %d: removed %d (want %d), %d keys left, want %d", v, n, want, len(got), len(model))
		}
		if _, err := st.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// testEvictUpToOrder: EvictUpTo removes in ascending (expiry, key) order,
// whatever order the entries were put or indexed in, so the delta's bytes
// do not follow Go's map order.
func testEvictUpToOrder(t *testing.T, s Store) {
	m := fsys.NewMem()
	p := s.New(t, m, state.Options{})
	keys := []string{"q", "b", "z", "a", "m", "c", "y", "d"}
	val := func(at int) []byte { return []byte{1, byte(at)} }
	// Version 1 holds the first half; the index of version 2 is built from
	// the map (map order), and Put pushes the second half onto it.
	st := MustLoad(t, p, id03, 0)
	for i, k := range keys[:4] {
		st.Put([]byte(k), val(i%2))
	}
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	st = MustLoad(t, s.New(t, m, state.Options{}), id03, 1)
	x := st.(state.Expirer)
	if _, err := x.EvictUpTo(-1, TestExpiry); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys[4:] {
		st.Put([]byte(k), val(i%2))
	}
	if n, err := x.EvictUpTo(257, TestExpiry); err != nil || n != 8 {
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
	want = state.AppendTrailer(state.AppendEnd(want), s.Files.DeltaKind, id03, 2)
	if got, err := m.ReadFile(s.names("state/0/3/2.delta")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("2.delta = %q, %v\nwant %q", got, err, want)
	}
}

// EvictChecked runs EvictUpTo(limit, TestExpiry) on st and checks it
// against a Range-based reference taken from st just before, and against
// want (the entries st must hold before the call): what is left, the count
// returned, NumKeys. It returns what is left.
func EvictChecked(t TB, st state.Store, want map[string]string, limit int64) map[string]string {
	t.Helper()
	before := Contents(t, st)
	if want != nil && !maps.Equal(before, want) {
		t.Fatalf("before EvictUpTo(%d): store %q, want %q", limit, before, want)
	}
	left := maps.Clone(before)
	wantN := int64(0)
	for k, v := range before {
		if at, ok := TestExpiry([]byte(v)); ok && at <= limit {
			delete(left, k)
			wantN++
		}
	}
	x, ok := st.(state.Expirer)
	if !ok {
		t.Fatalf("%T does not implement state.Expirer", st)
	}
	n, err := x.EvictUpTo(limit, TestExpiry)
	if err != nil {
		t.Fatal(err)
	}
	if got := Contents(t, st); n != wantN || !maps.Equal(got, left) {
		t.Fatalf("EvictUpTo(%d) removed %d, left %q; want %d, %q", limit, n, got, wantN, left)
	}
	if k := st.Metrics().NumKeys; k != int64(len(left)) {
		t.Fatalf("EvictUpTo(%d): NumKeys %d, want %d", limit, k, len(left))
	}
	return left
}

// testEvictUpToBatches: EvictUpTo's deletions are the batch's changes,
// whatever the store keeps between batches: undone by Abort (the next
// attempt removes them again), redone by the replay of an older version,
// and the same after a restart from snapshots or from deltas alone.
func testEvictUpToBatches(t *testing.T, s Store) {
	for _, snap := range []int{1, 100} {
		t.Run(fmt.Sprintf("snapshotEvery%d", snap), func(t *testing.T) {
			f := fsys.NewMem()
			opts := state.Options{MinDeltasForSnapshot: snap}
			p := s.New(t, f, opts)
			val := func(at int) string { return string([]byte{byte(at>>8) | 1, byte(at)}) }
			versions := []map[string]string{{}}
			// batch runs version v's batch: puts keys first..first+n with
			// expiries ascending but for every 7th, then evicts up to limit.
			batch := func(p state.Provider, v int64, first, n int, limit int64, commit bool) {
				t.Helper()
				st := MustLoad(t, p, id03, v)
				work := maps.Clone(versions[v])
				for i := first; i < first+n; i++ {
					at := 256 + i
					if i%7 == 0 {
						at -= 40
					}
					k := fmt.Sprintf("k%04d", i)
					if i%11 == 0 {
						k = fmt.Sprintf("k%04d", i-5) // an overwrite, or a key again
					}
					if err := st.Put([]byte(k), []byte(val(at))); err != nil {
						t.Fatal(err)
					}
					work[k] = val(at)
				}
				if i := first + 1; i%3 == 0 {
					if err := st.Delete([]byte(fmt.Sprintf("k%04d", i-2))); err != nil {
						t.Fatal(err)
					}
					delete(work, fmt.Sprintf("k%04d", i-2))
				}
				work = EvictChecked(t, st, work, limit)
				if !commit {
					st.Abort()
					return
				}
				got, err := st.Commit()
				if err != nil {
					t.Fatal(err)
				}
				versions = append(versions[:got], work)
			}
			batch(p, 0, 0, 100, 256+30, true)
			batch(p, 1, 100, 100, 256+120, false) // aborted: a hit next
			batch(p, 1, 100, 100, 256+120, true)
			batch(p, 2, 200, 50, 256+180, true)
			batch(p, 3, 250, 50, 256+260, true)
			// Replay of an older version (a miss), then the next batch on it.
			batch(p, 2, 200, 60, 256+190, true)
			batch(p, 3, 260, 40, 256+250, true)
			// A no-data batch: eviction only.
			batch(p, 4, 0, 0, 256+290, true)
			latest := int64(len(versions) - 1)
			// A restart: the index is built from the files.
			p = s.New(t, f, opts)
			for v := int64(1); v <= latest; v++ {
				st := MustLoad(t, p, id03, v)
				EvictChecked(t, st, versions[v], 256+int64(v)*40)
				st.Abort()
			}
			batch(p, latest, 300, 30, 256+310, true)
			st := MustLoad(t, s.New(t, f, opts), id03, latest+1)
			defer st.Abort()
			EvictChecked(t, st, versions[latest+1], 256+400)
		})
	}
}

package state_test

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/state"
	"pgregory.net/rapid"
)

// propModel drives a MemoryProvider over a Mem FS through random batches,
// restarts (with or without a crash) and loads of older versions, and
// compares it with a map of versions, a model of the cache counters and a
// model of the files the snapshot and cleanup rules must leave.
type propModel struct {
	opts state.Options
	id   state.ID
	fs   *fsys.Mem
	p    *state.MemoryProvider

	versions map[int64]map[string]string // the committed timeline
	latest   int64
	// floor is the oldest version the retention rule guarantees (with
	// latest, the range every check reloads). It only grows: after the
	// query is rewound to an older version the files of versions below the
	// old window are gone already.
	floor int64

	st   state.Store // the open store, if any
	base int64
	work map[string]string

	cached       int64 // version the provider caches; -1: none
	hits, misses int64

	deltas, snapshots map[int64]bool // the files that must exist
}

var propKeys = []string{"", "a", "b", "c", "dd", "e\x00f", "long-key-0123456789"}

func drawOptions(t *rapid.T) state.Options {
	return state.Options{
		MinDeltasForSnapshot: rapid.IntRange(1, 5).Draw(t, "minDeltasForSnapshot"),
		MinVersionsToRetain:  rapid.IntRange(1, 6).Draw(t, "minVersionsToRetain"),
	}
}

func newPropModel(t *rapid.T) *propModel {
	m := &propModel{
		opts:      drawOptions(t),
		id:        state.ID{Operator: 1, Partition: 2},
		fs:        fsys.NewMem(),
		versions:  map[int64]map[string]string{0: {}},
		cached:    -1,
		deltas:    map[int64]bool{},
		snapshots: map[int64]bool{},
	}
	m.p = state.NewMemoryProvider(m.fs, m.opts)
	return m
}

// loadable are the versions the model guarantees can be loaded.
func (m *propModel) loadable() []int64 {
	vs := []int64{0}
	for v := max(1, m.floor); v <= m.latest; v++ {
		vs = append(vs, v)
	}
	return vs
}

func (m *propModel) requireOpen(t *rapid.T) {
	if m.st == nil {
		t.Skip("no open store")
	}
}

// pickVersion mostly picks the latest version, as the engine does, and
// otherwise any guaranteed one (a replay, or a query rewound by hand).
func (m *propModel) pickVersion(t *rapid.T) int64 {
	if rapid.IntRange(0, 2).Draw(t, "older") == 0 {
		return rapid.SampledFrom(m.loadable()).Draw(t, "version")
	}
	return m.latest
}

func (m *propModel) load(t *rapid.T) { m.loadVersion(t, m.pickVersion(t)) }

func (m *propModel) loadVersion(t *rapid.T, v int64) {
	if m.st != nil {
		m.st.Abort()
		m.st = nil
	}
	st, err := m.p.Load(m.id, v)
	if err != nil {
		t.Fatalf("Load(%d): %v", v, err)
	}
	if v > 0 {
		if m.cached == v {
			m.hits++
		} else {
			m.misses++
		}
	}
	m.st, m.base, m.work = st, v, maps.Clone(m.versions[v])
	if got := contents(t, st); !maps.Equal(got, m.work) {
		t.Fatalf("Load(%d) = %q, want %q", v, got, m.work)
	}
	m.checkMetrics(t)
}

func (m *propModel) checkMetrics(t *rapid.T) {
	met := m.st.Metrics()
	if met.NumKeys != int64(len(m.work)) {
		t.Fatalf("NumKeys = %d, want %d", met.NumKeys, len(m.work))
	}
	size := int64(0)
	for k, v := range m.work {
		size += int64(len(k)+len(v)) + state.EntryOverheadBytes
	}
	if met.MemoryUsedBytes != size || met.Custom["stateOnCurrentVersionSizeBytes"] != size {
		t.Fatalf("memory %d / %d, want %d", met.MemoryUsedBytes, met.Custom["stateOnCurrentVersionSizeBytes"], size)
	}
	if h, ms := met.Custom["loadedMapCacheHitCount"], met.Custom["loadedMapCacheMissCount"]; h != m.hits || ms != m.misses {
		t.Fatalf("cache hits %d misses %d, want %d %d", h, ms, m.hits, m.misses)
	}
}

func (m *propModel) put(t *rapid.T) {
	m.requireOpen(t)
	k := rapid.SampledFrom(propKeys).Draw(t, "key")
	v := string(rapid.SliceOfN(rapid.Byte(), 0, 3).Draw(t, "value"))
	if err := m.st.Put([]byte(k), []byte(v)); err != nil {
		t.Fatal(err)
	}
	m.work[k] = v
}

func (m *propModel) delete(t *rapid.T) {
	m.requireOpen(t)
	k := rapid.SampledFrom(propKeys).Draw(t, "key")
	if err := m.st.Delete([]byte(k)); err != nil {
		t.Fatal(err)
	}
	delete(m.work, k)
}

func (m *propModel) get(t *rapid.T) {
	m.requireOpen(t)
	k := rapid.SampledFrom(propKeys).Draw(t, "key")
	v, ok, err := m.st.Get([]byte(k))
	want, wantOK := m.work[k]
	if err != nil || ok != wantOK || string(v) != want {
		t.Fatalf("Get(%q) = %q, %v, %v; want %q, %v", k, v, ok, err, want, wantOK)
	}
}

// evict deletes, during Range, the entries whose value starts with a byte
// below a threshold, like watermark eviction.
func (m *propModel) evict(t *rapid.T) {
	m.requireOpen(t)
	limit := rapid.IntRange(0, 256).Draw(t, "limit")
	evicted := func(v string) bool { return v == "" || int(v[0]) < limit }
	if err := m.st.Range(func(k, v []byte) bool {
		if evicted(string(v)) {
			if err := m.st.Delete(k); err != nil {
				t.Fatal(err)
			}
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	maps.DeleteFunc(m.work, func(_, v string) bool { return evicted(v) })
}

func (m *propModel) commit(t *rapid.T) {
	m.requireOpen(t)
	newV := m.base + 1
	got, err := m.st.Commit()
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if got != newV {
		t.Fatalf("Commit = %d, want %d", got, newV)
	}
	m.checkMetrics(t)
	m.st = nil

	// Versions after newV belong to an abandoned timeline.
	for v := range m.versions {
		if v > newV {
			delete(m.versions, v)
		}
	}
	m.versions[newV] = m.work
	m.latest = newV
	m.floor = max(m.floor, newV-int64(m.opts.MinVersionsToRetain)+1)
	m.cached = newV

	// The files: a stale snapshot of newV goes, the delta is written, a
	// snapshot is due MinDeltasForSnapshot after the last one below newV,
	// and files older than the newest snapshot <= the oldest retained
	// version are deleted.
	delete(m.snapshots, newV)
	m.deltas[newV] = true
	newest := func(atMost int64) int64 {
		best := int64(0)
		for v := range m.snapshots {
			if v <= atMost && v > best {
				best = v
			}
		}
		return best
	}
	if newV-newest(newV-1) >= int64(m.opts.MinDeltasForSnapshot) {
		m.snapshots[newV] = true
	}
	if minV := newV - int64(m.opts.MinVersionsToRetain) + 1; minV > 0 {
		if s := newest(minV); s > 0 {
			maps.DeleteFunc(m.deltas, func(v int64, _ bool) bool { return v < s })
			maps.DeleteFunc(m.snapshots, func(v int64, _ bool) bool { return v < s })
		}
	}
}

// batch is a whole micro-batch: load, a few changes, commit or abort.
func (m *propModel) batch(t *rapid.T) {
	m.load(t)
	ops := []func(*rapid.T){m.put, m.put, m.delete, m.get, m.evict}
	for range rapid.IntRange(0, 8).Draw(t, "ops") {
		ops[rapid.IntRange(0, len(ops)-1).Draw(t, "op")](t)
	}
	if rapid.IntRange(0, 3).Draw(t, "abort") == 0 {
		m.abort(t)
	} else {
		m.commit(t)
	}
}

func (m *propModel) abort(t *rapid.T) {
	m.requireOpen(t)
	m.st.Abort()
	m.st = nil
}

// restart abandons the provider (and any open store) as a crashed process
// would, optionally cutting the power too, and starts a new provider,
// possibly with other options (Spark does not pin these two settings in the
// checkpoint).
func (m *propModel) restart(t *rapid.T) {
	if rapid.Bool().Draw(t, "crash") {
		m.fs.Crash()
	}
	if rapid.Bool().Draw(t, "newOptions") {
		m.opts = drawOptions(t)
	}
	m.p = state.NewMemoryProvider(m.fs, m.opts)
	m.st = nil
	m.cached, m.hits, m.misses = -1, 0, 0
}

// check: the files are exactly the model's, and every guaranteed version
// reloads from the files alone to exactly the model's content.
func (m *propModel) check(t *rapid.T) {
	var want []string
	for v := range m.deltas {
		want = append(want, strconv.FormatInt(v, 10)+".delta")
	}
	for v := range m.snapshots {
		want = append(want, strconv.FormatInt(v, 10)+".snapshot")
	}
	slices.Sort(want)
	var got []string
	if names, err := m.fs.ReadDir(m.id.Dir()); err == nil {
		got = names
	} else if !fsys.IsNotExist(err) {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}

	fresh := state.NewMemoryProvider(m.fs, m.opts)
	for _, v := range m.loadable() {
		st, err := fresh.Load(m.id, v)
		if err != nil {
			t.Fatalf("reload version %d (latest %d, files %s): %v", v, m.latest, strings.Join(got, " "), err)
		}
		if got := contents(t, st); !maps.Equal(got, m.versions[v]) {
			t.Fatalf("reloaded version %d = %q, want %q", v, got, m.versions[v])
		}
		st.Abort()
	}
}

func TestMemoryProviderProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newPropModel(t)
		t.Repeat(map[string]func(*rapid.T){
			"batch":   m.batch,
			"load":    m.load,
			"put":     m.put,
			"delete":  m.delete,
			"get":     m.get,
			"evict":   m.evict,
			"commit":  m.commit,
			"abort":   m.abort,
			"restart": m.restart,
			"":        m.check,
		})
	})
}

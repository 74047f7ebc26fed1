package engine_test

// Store equivalence: the Pebble state store (engine/state/pebblestore, the
// RocksDB analogue) must give the same results and metrics as the memory
// store (the HDFS analogue), as Spark's RocksDB provider does (§8.5).
//
// TestStoreEquivalence draws the oracle test's random queries and traces
// (rows, clean restarts, crashes at the four crash points) plus the
// stores' snapshot and retention settings, and runs each trace through
// trace.Run twice, once per store, each on its own in-memory checkpoint.
// Optionally every start after the first also cuts the power
// (fsys.Mem.Crash), so that only durably written files survive. Every
// execution record must be identical — batch id, replay and crash flags,
// the rows in sink order, and the whole StreamingQueryProgress — except
// memoryUsedBytes and the byte-valued custom metrics, and so must the
// final table, the number of restarts and crashes, and any error (with
// the store's file names mapped: <V>.changelog ↔ <V>.delta, <V>.zip ↔
// <V>.snapshot).
//
// TestGoldenOnPebble runs every exec of testdata/*.txt on both stores and
// compares them the same way; `files` commands are compared without the
// store's own version files.
//
// RAPID_CHECKS=1000 go test ./engine -run TestStoreEquivalence runs a longer search.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/state"
	"github.com/dedupsim/dedupsim/engine/state/pebblestore"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
	"pgregory.net/rapid"
)

// storeKind builds the providers of one store for one trace run.
type storeKind struct {
	name    string
	pebble  bool
	snap    int  // MinDeltasForSnapshot (0: default)
	retain  int  // MinVersionsToRetain (0: default)
	crashes bool // cut the power at every start but the first

	opened []state.Provider
}

func (k *storeKind) factory() func(string, fsys.FS) (state.Provider, error) {
	starts := 0
	return func(_ string, f fsys.FS) (state.Provider, error) {
		starts++
		if m, ok := f.(*fsys.Mem); ok && k.crashes && starts > 1 {
			m.Crash()
		}
		var p state.Provider
		if k.pebble {
			pp, err := pebblestore.New(f, pebblestore.Options{MinDeltasForSnapshot: k.snap, MinVersionsToRetain: k.retain})
			if err != nil {
				return nil, err
			}
			p = pp
		} else {
			p = state.NewMemoryProvider(f, state.Options{MinDeltasForSnapshot: k.snap, MinVersionsToRetain: k.retain})
		}
		k.opened = append(k.opened, p)
		return p, nil
	}
}

// closeAll closes the providers a run left open (a run that ends in an
// error does not stop its engine).
func (k *storeKind) closeAll() {
	for _, p := range k.opened {
		p.Close()
	}
	k.opened = nil
}

// storeRun is what one trace run produced, reduced to what must not
// depend on the store.
type storeRun struct {
	records  []string // one normalised JSON line per execution
	table    string
	counts   string
	err      string
	warnings []string
	maxBatch int64
}

// byteMetrics are the custom metrics that count bytes: each store has its
// own figure (the memory store's estimate, Pebble's sizes).
var byteMetrics = append([]string{"stateOnCurrentVersionSizeBytes"}, pebblestore.ByteMetrics...)

// storeFileName matches the version files of both stores.
var storeFileName = regexp.MustCompile(`(^|/)state/\d+/\d+/\d+(_[0-9a-f-]+)?\.(delta|snapshot|changelog|zip)$`)

// sidecarName: the memory store's Spark 4.1 checksum sidecars
// (spark-semantics §17.7), which the Pebble store does not write.
var sidecarName = regexp.MustCompile(`(^|/)state/\d+/\d+/\d+\.(delta|snapshot)\.crc$`)

// neutralNames maps the Pebble store's file names to the memory store's,
// for comparing error messages.
func neutralNames(s string) string {
	s = strings.ReplaceAll(s, ".changelog", ".delta")
	return strings.ReplaceAll(s, ".zip", ".snapshot")
}

func runOnStore(q *query.Query, st []steps.Step, ckpt *fsys.Mem, seed uint64, k *storeKind) storeRun {
	defer k.closeAll()
	var out storeRun
	res, err := trace.Run(q, st, trace.Options{Checkpoint: ckpt, Seed: seed, NewStateProvider: k.factory(),
		Warn: func(s string) { out.warnings = append(out.warnings, s) }})
	if err != nil {
		out.err = neutralNames(err.Error())
		return out
	}
	for _, r := range res.Records {
		out.maxBatch = max(out.maxBatch, r.BatchID)
		p := r.Progress
		ops := slices.Clone(p.StateOperators)
		for i := range ops {
			ops[i].MemoryUsedBytes = 0
			cm := map[string]int64{}
			for name, v := range ops[i].CustomMetrics {
				if !slices.Contains(byteMetrics, name) {
					cm[name] = v
				}
			}
			ops[i].CustomMetrics = cm
		}
		p.StateOperators = ops
		r.Progress = p
		b, err := json.Marshal(r)
		if err != nil {
			panic(err)
		}
		out.records = append(out.records, string(b))
	}
	if res.HasTable {
		b, _ := json.Marshal(res.Table)
		out.table = string(b)
	}
	out.counts = fmt.Sprintf("restarts=%d crashes=%d", res.Restarts, res.Crashes)
	return out
}

// diffRuns describes the first difference between two runs, or "".
func diffRuns(mem, peb storeRun) string {
	var b strings.Builder
	if mem.err != peb.err {
		fmt.Fprintf(&b, "error:\n  memory: %s\n  pebble: %s\n", mem.err, peb.err)
	}
	for i := range max(len(mem.records), len(peb.records)) {
		m, p := "(none)", "(none)"
		if i < len(mem.records) {
			m = mem.records[i]
		}
		if i < len(peb.records) {
			p = peb.records[i]
		}
		if m != p {
			fmt.Fprintf(&b, "execution #%d:\n  memory: %s\n  pebble: %s\n", i, m, p)
			break
		}
	}
	if mem.table != peb.table {
		fmt.Fprintf(&b, "table:\n  memory: %s\n  pebble: %s\n", mem.table, peb.table)
	}
	if mem.counts != peb.counts {
		fmt.Fprintf(&b, "counts: memory %s, pebble %s\n", mem.counts, peb.counts)
	}
	if !slices.Equal(mem.warnings, peb.warnings) {
		fmt.Fprintf(&b, "warnings:\n  memory: %q\n  pebble: %q\n", mem.warnings, peb.warnings)
	}
	return b.String()
}

type eqCoverage struct {
	Cases, Executions, Replays, Errors, PowerCuts, SmallSnapshots int
	MaxBatchID                                                    int64
}

func TestStoreEquivalence(t *testing.T) {
	var cov eqCoverage
	rapid.Check(t, func(t *rapid.T) {
		c := drawOracleCase(t)
		var snap, retain int
		if rapid.IntRange(0, 3).Draw(t, "storeDefaults") != 0 {
			snap = rapid.IntRange(1, 5).Draw(t, "minDeltasForSnapshot")
			retain = rapid.IntRange(2, 6).Draw(t, "minVersionsToRetain")
			cov.SmallSnapshots++
		}
		crashes := rapid.Bool().Draw(t, "powerCutAtRestart")
		queryYAML, stepsJSONL := c.queryYAML(), c.stepsJSONL()
		q, err := query.Parse("query.yaml", []byte(queryYAML))
		if err != nil {
			t.Fatal(err)
		}
		st, err := steps.Parse("steps.jsonl", []byte(stepsJSONL), q)
		if err != nil {
			t.Fatal(err)
		}
		mem := runOnStore(q, st, fsys.NewMem(), 1, &storeKind{name: "memory", snap: snap, retain: retain, crashes: crashes})
		peb := runOnStore(q, st, fsys.NewMem(), 1, &storeKind{name: "pebble", pebble: true, snap: snap, retain: retain, crashes: crashes})
		if d := diffRuns(mem, peb); d != "" {
			t.Fatalf("stores disagree (minDeltasForSnapshot=%d minVersionsToRetain=%d powerCut=%t)\n%s\n%s",
				snap, retain, crashes, d, c.repro(queryYAML, stepsJSONL))
		}
		cov.Cases++
		cov.Executions += len(mem.records)
		if mem.err != "" {
			cov.Errors++
		}
		if crashes {
			cov.PowerCuts++
		}
		for _, r := range mem.records {
			if strings.Contains(r, `"replay":true`) {
				cov.Replays++
			}
		}
		cov.MaxBatchID = max(cov.MaxBatchID, mem.maxBatch)
	})
	t.Logf("coverage over all checks: %+v", cov)
}

// TestGoldenOnPebble replays every golden file's exec commands on both
// stores. The expected outputs in the files are the memory store's
// (TestGolden checks them); this test only compares the stores.
func TestGoldenOnPebble(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasSuffix(path, ".txt") {
			return
		}
		memCkpts, pebCkpts := map[string]*fsys.Mem{}, map[string]*fsys.Mem{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "exec":
				q, st, seed, ok := parseExec(t, d)
				if !ok {
					return d.Expected // a parse error: no store involved
				}
				mem := runOnStore(q, st, goldenCkpt(t, d, memCkpts), seed, &storeKind{name: "memory"})
				peb := runOnStore(q, st, goldenCkpt(t, d, pebCkpts), seed, &storeKind{name: "pebble", pebble: true})
				if diff := diffRuns(mem, peb); diff != "" {
					t.Errorf("%s: stores disagree\n%s", d.Pos, diff)
				}
				if d.HasArg("files") {
					compareFiles(t, d, memCkpts, pebCkpts)
				}
			case "files":
				compareFiles(t, d, memCkpts, pebCkpts)
			}
			return d.Expected
		})
	})
}

// parseExec reads an exec command's query and steps as golden_test.go does.
func parseExec(t *testing.T, d *datadriven.TestData) (*query.Query, []steps.Step, uint64, bool) {
	qText, stepsText, ok := strings.Cut(d.Input, "\n===\n")
	if !ok {
		qText, stepsText = strings.TrimSuffix(d.Input, "\n==="), ""
	}
	q, err := query.Parse("query.yaml", []byte(qText))
	if err != nil {
		return nil, nil, 0, false
	}
	st, err := steps.ParseTyped("steps.jsonl", []byte(stepsText), q)
	if err != nil {
		return nil, nil, 0, false
	}
	var seed uint64
	if d.HasArg("seed") {
		d.ScanArgs(t, "seed", &seed)
	}
	return q, st, seed, true
}

func goldenCkpt(t *testing.T, d *datadriven.TestData, ckpts map[string]*fsys.Mem) *fsys.Mem {
	if !d.HasArg("ckpt") {
		return fsys.NewMem()
	}
	var name string
	d.ScanArgs(t, "ckpt", &name)
	if ckpts[name] == nil {
		ckpts[name] = fsys.NewMem()
	}
	return ckpts[name]
}

// compareFiles compares the two checkpoints' files (or one file's
// content) without the stores' version files.
func compareFiles(t *testing.T, d *datadriven.TestData, memCkpts, pebCkpts map[string]*fsys.Mem) {
	var name string
	d.ScanArgs(t, "ckpt", &name)
	m, p := memCkpts[name], pebCkpts[name]
	if m == nil || p == nil {
		t.Errorf("%s: no checkpoint %q", d.Pos, name)
		return
	}
	if d.HasArg("cat") {
		var file string
		d.ScanArgs(t, "cat", &file)
		if storeFileName.MatchString(file) || sidecarName.MatchString(file) {
			return
		}
		mb, merr := m.ReadFile(file)
		pb, perr := p.ReadFile(file)
		if !bytes.Equal(mb, pb) || (merr == nil) != (perr == nil) {
			t.Errorf("%s: %s differs:\n  memory: %q %v\n  pebble: %q %v", d.Pos, file, mb, merr, pb, perr)
		}
		return
	}
	keep := func(files []string) []string {
		return slices.DeleteFunc(files, func(f string) bool { return storeFileName.MatchString(f) || sidecarName.MatchString(f) })
	}
	if mf, pf := keep(m.Files()), keep(p.Files()); !slices.Equal(mf, pf) {
		t.Errorf("%s: checkpoint files differ:\n  memory: %v\n  pebble: %v", d.Pos, mf, pf)
	}
	// The version files correspond one to one.
	versions := func(files []string) []string {
		var out []string
		for _, f := range files {
			if storeFileName.MatchString(f) {
				out = append(out, neutralNames(f))
			}
		}
		slices.Sort(out)
		return out
	}
	if mv, pv := versions(m.Files()), versions(p.Files()); !slices.Equal(mv, pv) {
		t.Errorf("%s: state version files differ:\n  memory: %v\n  pebble (as memory names): %v", d.Pos, mv, pv)
	}
}

// TestCoreDefaultsToMemory: without a NewStateProvider the engine core
// opens the memory store and refuses the others, which only a driver's
// stores.Open offers (the core does not link Pebble).
func TestCoreDefaultsToMemory(t *testing.T) {
	for _, store := range []string{"memory", "pebble"} {
		q, err := query.Parse("query.yaml", []byte("dedup: {api: dropDuplicates, keys: [id]}\nstate_store: "+store+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		st, err := steps.Parse("steps.jsonl", []byte(`{"rows": [{"id":"a"},{"id":"a"}]}`+"\n"), q)
		if err != nil {
			t.Fatal(err)
		}
		ckpt := fsys.NewMem()
		_, err = trace.Run(q, st, trace.Options{Checkpoint: ckpt})
		switch {
		case store == "memory" && err != nil:
			t.Fatalf("memory: %v", err)
		case store == "memory":
			if ok, _ := ckpt.Exists("state/0/0/1.delta"); !ok {
				t.Fatalf("memory: no 1.delta: %v", ckpt.Files())
			}
		case err == nil || !strings.Contains(err.Error(), `state_store "pebble" is not available from this driver`):
			t.Fatalf("pebble without a provider: %v", err)
		}
	}
}

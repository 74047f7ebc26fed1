package arch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/dedupsim/dedupsim"

// deterministic are the packages that take time, randomness and
// concurrency as inputs (rule 3 in doc.go).
// diagnose/... is here too: the same progress log must give the same
// findings and the same fitted scenario, so nothing in it reads the clock.
// So are the packages whose output is promised byte for byte: reports/...
// (every file a run or sweep writes is byte-identical for a seed, whatever
// -j: docs/ci.md), scenarios/... (the same seed gives the same run:
// scenarios/README.md), inspect/... (a function of the checkpoint it
// reads), shrink/... (the same scenario, seed and budget give the same
// bytes: docs/incidents.md) and execpipe/... (exec's --seed: the same
// input gives the same bytes, docs/exec-format.md). So are the shared
// pieces they are made of: internal/codec (Spark's compression framings,
// read by diagnose and inspect), internal/svgchart (the reports' charts),
// internal/duration (how every duration and timestamp a person reads is
// written), internal/atomicfile (how reports reach the disk) and
// internal/radix (the sort of the simulator's queue and the expiry index).
var deterministic = []string{"./engine/...", "./sim/...", "./faults/...", "./analyze/...", "./sizing/...", "./diagnose/...",
	"./reports/...", "./scenarios/...", "./inspect/...", "./shrink/...", "./execpipe/...", "./internal/codec/...",
	"./internal/svgchart", "./internal/duration", "./internal/atomicfile", "./internal/radix"}

// pebbleAdapters are the only packages of engine/... that may depend on
// Pebble (rule 2): the two adapters, and the two selectors drivers call to
// pick a store or a durable sink by name (no other engine package may
// import them, or it would depend on Pebble through them).
var pebbleAdapters = []string{"engine/state/pebblestore", "engine/sink/pebblesink", "engine/state/stores", "engine/sink/durable"}

// exception lets one package of the deterministic set use one construct
// that rule 3 forbids. what is the construct as a violation names it
// ("time.Since", "crypto/rand", "go statement"), or "*" for the whole
// package.
type exception struct {
	pkg, what, reason string
}

var exceptions = []exception{
	{"engine/source/kafkasource", "*", "the Kafka source reads a real broker: its poll intervals and " +
		"fetch timeouts are the network's wall clock and the client runs its own goroutines; the simulator " +
		"never uses it (it has its own simulated log)"},
	{"engine/sink/kafkasink", "*", "the Kafka sinks write to a real broker (producer flushes, transaction " +
		"timeouts, the client's goroutines); the simulator never uses them"},
	{"engine/state/pebblestore", "time.Since", "sweepDead removes a Pebble working folder that a crashed " +
		"process left without its lock once it is older than lockFreeMaxAge: a file's modification time is " +
		"wall clock, so its age is too; the folder is on the real disk, never in a simulation"},
	{"engine/fsys", "crypto/rand", "the OS filesystem's TempName gives each temp file a random suffix, as " +
		"Spark's CheckpointFileManager does, so that two processes never share one; the simulated disk " +
		"(fsys.Mem) has no TempName and stages files under a fixed name"},
	{"internal/atomicfile", "crypto/rand", "the atomic file writer (reports', diagnose's, conform's) stages each " +
		"file under a random temp name, so that two runs writing into one folder never share one; the temp name " +
		"never reaches the output (the file is renamed into place), so the bytes written are still a function of the run"},
	{"execpipe", "go statement", "exec's pipeline runs the engine in one goroutine and only its I/O beside it: " +
		"the passes before the run decode lines on every core and keep the lowest bad line's error (the " +
		"sequential pass's answer) and the run reads one step ahead and writes one record behind, in order: " +
		"neither changes what the engine sees or the bytes written"},
}

// Rule 1: engine/... imports only engine/... and internal/... of this
// module (its non-test files, directly or through other packages).
func TestEngineLayers(t *testing.T) {
	pkgs := goList(t, "-deps", "./engine/...")
	for _, root := range roots(pkgs) {
		for _, chain := range reach(pkgs, root, upperLayer) {
			t.Errorf("%s imports %s (%s): engine/... may import only engine/... and internal/...; "+
				"sim, faults, scenarios, reports, live, analyze, sizing and cmd are built on the engine",
				rel(root), rel(chain[len(chain)-1]), arrows(chain))
		}
	}
}

// upperLayer: a package of this module outside engine/ and internal/.
func upperLayer(p string) bool {
	r, ok := strings.CutPrefix(p, module+"/")
	return ok && !under(r, "engine") && !under(r, "internal")
}

// Rule 2: Pebble only in its adapters.
func TestPebbleOnlyInAdapters(t *testing.T) {
	pkgs := goList(t, "-deps", "./engine/...")
	isPebble := func(p string) bool {
		return under(p, "github.com/cockroachdb/pebble") || under(p, "github.com/cockroachdb/pebble/v2")
	}
	for _, root := range roots(pkgs) {
		if slices.ContainsFunc(pebbleAdapters, func(a string) bool { return under(rel(root), a) }) {
			continue
		}
		// One chain per package: every Pebble package comes in by the same
		// import, and that import is what to fix.
		if chains := reach(pkgs, root, isPebble); len(chains) > 0 {
			chain := chains[0]
			t.Errorf("%s depends on Pebble (%s): only %s may; the engine core defaults to the memory store "+
				"and a driver passes Pebble in (engine.Config.NewStateProvider, the sink it builds)",
				rel(root), arrows(chain), strings.Join(pebbleAdapters, " and "))
		}
	}
}

// Rule 3: no wall clock, no global rand, no go statements in the
// deterministic packages.
func TestDeterministicPackages(t *testing.T) {
	pkgs := goList(t, deterministic...)
	exports := goList(t, append([]string{"-deps", "-export"}, deterministic...)...)
	exportFile := map[string]string{}
	for _, p := range exports {
		exportFile[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exportFile[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	used := map[exception]bool{}
	checked := 0
	for _, p := range pkgs {
		if whole := findException(rel(p.ImportPath), "*"); whole != nil {
			used[*whole] = true
			continue
		}
		for _, v := range nondeterminism(t, fset, imp, p) {
			if e := findException(rel(p.ImportPath), v.what); e != nil {
				used[*e] = true
				continue
			}
			t.Errorf("%s: %s in deterministic package %s: %s", v.pos, v.what, rel(p.ImportPath), v.rule)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked only %d packages of %v: the listing is wrong", checked, deterministic)
	}
	for _, e := range exceptions {
		if !used[e] {
			t.Errorf("exception %s %q matches nothing any more: remove it from the table in arch_test.go", e.pkg, e.what)
		}
	}
}

func findException(pkg, what string) *exception {
	for i, e := range exceptions {
		if e.pkg == pkg && e.what == what {
			return &exceptions[i]
		}
	}
	return nil
}

type violation struct {
	pos        token.Position
	what, rule string
}

var (
	wallClock = map[string]bool{"Now": true, "Since": true, "Until": true, "After": true, "AfterFunc": true,
		"Tick": true, "NewTimer": true, "NewTicker": true, "Sleep": true}
	contextClock = map[string]bool{"WithTimeout": true, "WithDeadline": true, "WithTimeoutCause": true, "WithDeadlineCause": true}
	// randConstructors are the math/rand functions that take a seed or a
	// source, i.e. the deterministic way in; every other top-level function
	// reads the global, randomly seeded generator.
	randConstructors = map[string]bool{"New": true, "NewSource": true, "NewPCG": true, "NewChaCha8": true, "NewZipf": true}
)

// nondeterminism type-checks one package's non-test files and lists what
// rule 3 forbids in them.
func nondeterminism(t *testing.T, fset *token.FileSet, imp types.Importer, p pkg) []violation {
	t.Helper()
	var files []*ast.File
	for _, name := range append(slices.Clone(p.GoFiles), p.CgoFiles...) {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: imp}
	if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
		t.Fatalf("type-check %s: %v", p.ImportPath, err)
	}
	var out []violation
	for _, f := range files {
		for _, is := range f.Imports {
			if is.Path.Value == `"crypto/rand"` {
				out = append(out, violation{fset.Position(is.Pos()), "crypto/rand", "entropy cannot be replayed from a seed: take a *rand.Rand from the caller"})
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				out = append(out, violation{fset.Position(g.Pos()), "go statement", "no goroutines: the engine and the simulator are single-threaded, so a seed gives one order of events"})
			}
			return true
		})
	}
	for id, obj := range info.Uses {
		fn, ok := obj.(*types.Func)
		if !ok || fn.Pkg() == nil || fn.Signature().Recv() != nil {
			continue
		}
		var rule string
		switch path, name := fn.Pkg().Path(), fn.Name(); {
		case path == "time" && wallClock[name], path == "context" && contextClock[name]:
			rule = "no wall clock: take the time from the caller (a clock in the config, a virtual clock in the simulator)"
		case (path == "math/rand" || path == "math/rand/v2") && !randConstructors[name]:
			rule = "no global rand: draw from a seeded *rand.Rand passed in (sim.Stream gives one per purpose)"
		default:
			continue
		}
		out = append(out, violation{fset.Position(id.Pos()), fn.Pkg().Path() + "." + fn.Name(), rule})
	}
	slices.SortFunc(out, func(a, b violation) int {
		return strings.Compare(fmt.Sprintf("%s:%09d", a.pos.Filename, a.pos.Offset), fmt.Sprintf("%s:%09d", b.pos.Filename, b.pos.Offset))
	})
	for i := range out {
		if r, err := filepath.Rel(moduleDir(t), out[i].pos.Filename); err == nil {
			out[i].pos.Filename = r
		}
	}
	return out
}

// maxCmdFuncLines is issue 12's bar: the largest function in cmd/ is under
// 80 lines.
const maxCmdFuncLines = 80

// Rule 4: cmd/ functions are under 80 lines (non-test files; a function's
// lines run from func to its closing brace).
func TestCmdFunctionLength(t *testing.T) {
	var long []string
	for _, p := range goList(t, "./cmd/...") {
		fset := token.NewFileSet()
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			file := rel(p.ImportPath) + "/" + name
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok {
					continue
				}
				start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
				if n := end.Line - start.Line + 1; n >= maxCmdFuncLines {
					long = append(long, fmt.Sprintf("%s:%d: %s is %d lines", file, start.Line, fd.Name.Name, n))
				}
			}
		}
	}
	if len(long) > 0 {
		t.Errorf("%d functions in cmd/ are %d lines or more (want under %d): split them by what they do "+
			"(a verb's help text as a constant, its RunE as a function over its flags, shared checks as helpers):\n\t%s",
			len(long), maxCmdFuncLines, maxCmdFuncLines, strings.Join(long, "\n\t"))
	}
}

// pkg is what the tests read of `go list -json`.
type pkg struct {
	ImportPath, Dir, Export string
	GoFiles, CgoFiles       []string
	Imports                 []string
	Standard, DepOnly       bool
	Error                   *struct{ Err string }
}

// goList runs go list -json at the module root.
func goList(t *testing.T, args ...string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Dir,Export,GoFiles,CgoFiles,Imports,Standard,DepOnly,Error"}, args...)...)
	cmd.Dir = moduleDir(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var pkgs []pkg
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
		}
		if p.Error != nil {
			t.Fatalf("go list %s: %s: %s", strings.Join(args, " "), p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list %s: no packages", strings.Join(args, " "))
	}
	return pkgs
}

// moduleDir is the module's root folder.
func moduleDir(t *testing.T) string {
	t.Helper()
	dir, err := goMod()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

var goMod = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: not inside the module")
	}
	return filepath.Dir(gomod), nil
})

// roots are the packages the patterns named (not those listed only as
// dependencies).
func roots(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		if !p.DepOnly {
			out = append(out, p.ImportPath)
		}
	}
	return out
}

// reach returns, for every package bad() accepts that root depends on, the
// shortest import chain from root to it. The search does not go through a
// bad package: the first forbidden step is the one to fix.
func reach(pkgs []pkg, root string, bad func(string) bool) [][]string {
	imports := map[string][]string{}
	for _, p := range pkgs {
		if !p.Standard {
			imports[p.ImportPath] = p.Imports
		}
	}
	parent := map[string]string{root: ""}
	queue := []string{root}
	var out [][]string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p != root && bad(p) {
			var chain []string
			for q := p; q != ""; q = parent[q] {
				chain = append(chain, q)
			}
			slices.Reverse(chain)
			out = append(out, chain)
			continue
		}
		for _, q := range imports[p] {
			if _, seen := parent[q]; !seen {
				parent[q] = p
				queue = append(queue, q)
			}
		}
	}
	return out
}

// under: p is dir or inside it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// rel shortens a path of this module for messages ("engine/trace").
func rel(p string) string { return strings.TrimPrefix(p, module+"/") }

func arrows(chain []string) string {
	short := make([]string, len(chain))
	for i, p := range chain {
		short[i] = rel(p)
	}
	return strings.Join(short, " → ")
}

// TestNondeterminismFinds runs rule 3's checker on a fixture with every
// forbidden construct (renamed imports and function values included) and
// allowed look-alikes (seeded generators, their methods, a parameter named
// time): it must report exactly the lines marked "want".
func TestNondeterminismFinds(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("testdata", "nondet"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "nondet.go"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i, line := range strings.Split(string(src), "\n") {
		if _, w, ok := strings.Cut(line, "// want "); ok {
			want = append(want, fmt.Sprintf("%d %s", i+1, w))
		}
	}
	if len(want) < 10 {
		t.Fatalf("fixture has %d want marks", len(want))
	}
	exportFile := map[string]string{}
	for _, p := range goList(t, "-deps", "-export", "context", "crypto/rand", "math/rand", "math/rand/v2", "time") {
		exportFile[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) { return os.Open(exportFile[path]) })
	var got []string
	for _, v := range nondeterminism(t, fset, imp, pkg{ImportPath: "example.com/nondet", Dir: dir, GoFiles: []string{"nondet.go"}}) {
		got = append(got, fmt.Sprintf("%d %s", v.pos.Line, v.what))
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n got %q\nwant %q", got, want)
	}
}

// TestReach checks the import-chain search on a small graph: the shortest
// chain to each bad package, and none through a bad package.
func TestReach(t *testing.T) {
	pkgs := []pkg{
		{ImportPath: "a", Imports: []string{"b", "c", "fmt"}},
		{ImportPath: "b", Imports: []string{"x"}},
		{ImportPath: "c", Imports: []string{"d"}},
		{ImportPath: "d", Imports: []string{"x", "y"}},
		{ImportPath: "x", Imports: []string{"z"}},
		{ImportPath: "y"},
		{ImportPath: "z"},
		{ImportPath: "fmt", Standard: true, Imports: []string{"z"}},
	}
	bad := func(p string) bool { return p == "x" || p == "y" || p == "z" }
	var got []string
	for _, c := range reach(pkgs, "a", bad) {
		got = append(got, strings.Join(c, " "))
	}
	want := []string{"a b x", "a c d y"}
	if !slices.Equal(got, want) {
		t.Errorf("reach: got %q, want %q", got, want)
	}
	if c := reach(pkgs, "y", bad); len(c) != 0 {
		t.Errorf("reach from a bad root: got %q, want none (the root itself is not reported)", c)
	}
}

// TestUpperLayer pins which module packages rule 1 refuses under engine/.
func TestUpperLayer(t *testing.T) {
	for p, want := range map[string]bool{
		module + "/sim": true, module + "/sim/history": true, module + "/faults": true, module + "/scenarios": true,
		module + "/scenarios/result": true, module + "/reports": true, module + "/live": true, module + "/analyze": true,
		module + "/sizing": true, module + "/cmd/dedupsim": true,
		module + "/engine": false, module + "/engine/query": false, module + "/internal/suggest": false,
		module + "/engineering": true, "github.com/cockroachdb/pebble/v2": false, "fmt": false,
	} {
		if got := upperLayer(p); got != want {
			t.Errorf("upperLayer(%s) = %v, want %v", p, got, want)
		}
	}
}

// floors orders every package of the module, floor 0 at the bottom (rule
// 5 in doc.go; docs/architecture.md shows the same table). A room is a
// folder of this module; a package lives in the room with the longest
// path that contains it (diagnose/progress is a room of its own, below
// diagnose). A non-test file may import a package of its own room or of
// a room on a lower floor, never one on its own floor or above. Every
// package must be in a room, and every room must hold a package.
var floors = [][]string{
	{"internal"},
	{"engine", "diagnose/progress", "expect"},
	{"faults", "inspect", "capture", "conform"},
	{"sim"},
	{"scenarios", "sizing", "live"},
	{"reports", "analyze", "shrink"},
	{"diagnose", "execpipe", "sweep"},
	{"cmd", "docs"},
}

// engineFloors orders the packages inside the engine room the same way,
// each named whole so that a new engine package must be placed. The
// floors are the real imports, not a wish: engine/query sits above
// engine/sink because its parser checks a query's sink options against
// sink's descriptors (sink.Lookup, sink.Taking, sink.Settings), and the
// engine itself sits above checkpoint, query and the sources and sinks
// it runs.
var engineFloors = [][]string{
	{"engine/crashpoint", "engine/fsys", "engine/ids", "engine/schema", "engine/sparkver", "engine/state/expiry", "engine/watermark"},
	{"engine/row", "engine/state"},
	{"engine/dedup", "engine/sink", "engine/source", "engine/state/pebblestore", "engine/state/statetest"},
	{"engine/query"},
	{"engine/checkpoint", "engine/sink/pebblesink", "engine/state/stores", "engine/steps"},
	{"engine", "engine/source/kafkasource"},
	{"engine/sink/kafkasink", "engine/trace"},
	{"engine/sink/durable"},
}

// place finds p's room and floor in floors (longest room first); ok is
// false when no room holds p.
func place(p string) (room string, floor int, ok bool) {
	for f, rooms := range floors {
		for _, r := range rooms {
			if under(p, r) && len(r) > len(room) {
				room, floor, ok = r, f, true
			}
		}
	}
	return room, floor, ok
}

// engineFloor finds p's floor in engineFloors (p named whole).
func engineFloor(p string) (int, bool) {
	for f, pkgs := range engineFloors {
		if slices.Contains(pkgs, p) {
			return f, true
		}
	}
	return 0, false
}

// Rule 5: no import runs from a floor to the same floor or a higher one,
// between rooms and between the engine's packages.
func TestFloors(t *testing.T) {
	for _, e := range floorViolations(goList(t, "./...")) {
		t.Error(e)
	}
}

// floorViolations lists what rule 5 refuses in pkgs (module packages and
// their non-test imports), one message each.
func floorViolations(pkgs []pkg) []string {
	var errs []string
	errorf := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	usedRoom, usedEngine := map[string]bool{}, map[string]bool{}
	for _, p := range pkgs {
		name := rel(p.ImportPath)
		room, floor, ok := place(name)
		if !ok {
			errorf("%s is on no floor: add its folder to a floor of floors in internal/arch/arch_test.go "+
				"(above every package it imports, below every package that imports it) and to docs/architecture.md", name)
			continue
		}
		usedRoom[room] = true
		inner, innerOK := 0, false
		if room == "engine" {
			if inner, innerOK = engineFloor(name); innerOK {
				usedEngine[name] = true
			} else {
				errorf("%s is on no floor of engineFloors: add it in internal/arch/arch_test.go and docs/architecture.md", name)
			}
		}
		for _, imp := range p.Imports {
			to, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			toRoom, toFloor, ok := place(to)
			if !ok {
				continue // reported as a package of its own
			}
			switch {
			case toRoom != room && toFloor >= floor:
				errorf("%s (room %s, floor %d) imports %s (room %s, floor %d): a package may import only "+
					"its own room or rooms on lower floors (floors in internal/arch/arch_test.go, docs/architecture.md)",
					name, room, floor, to, toRoom, toFloor)
			case toRoom == room && room == "engine" && innerOK:
				if f, ok := engineFloor(to); ok && f >= inner {
					errorf("%s (engine floor %d) imports %s (engine floor %d): inside the engine a package may "+
						"import only packages on lower engine floors (engineFloors in internal/arch/arch_test.go, "+
						"docs/architecture.md)", name, inner, to, f)
				}
			}
		}
	}
	for _, rooms := range floors {
		for _, r := range rooms {
			if !usedRoom[r] {
				errorf("room %s of floors holds no package any more: remove it from internal/arch/arch_test.go and docs/architecture.md", r)
			}
		}
	}
	for _, ps := range engineFloors {
		for _, p := range ps {
			if !usedEngine[p] {
				errorf("%s of engineFloors is no package any more: remove it from internal/arch/arch_test.go and docs/architecture.md", p)
			}
		}
	}
	return errs
}

// TestFloorsDocumented: docs/architecture.md shows floors and engineFloors
// as they are here, top floor first, so the rule a reader sees is the one
// the test enforces.
func TestFloorsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(moduleDir(t), "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		marker string
		want   [][]string
	}{{"<!-- arch:floors -->", floors}, {"<!-- arch:engine-floors -->", engineFloors}} {
		got, err := docFloors(string(b), tc.marker)
		if err != nil {
			t.Errorf("docs/architecture.md: %v", err)
			continue
		}
		want := make([]string, len(tc.want))
		for i, rooms := range tc.want {
			s := slices.Clone(rooms)
			slices.Sort(s)
			want[len(want)-1-i] = fmt.Sprintf("%d: %s", i, strings.Join(s, " "))
		}
		if !slices.Equal(got, want) {
			t.Errorf("docs/architecture.md's table after %s differs from internal/arch/arch_test.go:\n got %q\nwant %q",
				tc.marker, got, want)
		}
	}
}

// docFloors reads the Markdown table after marker: one row per floor,
// "| N | `a`, `b` | ... |", as "N: a b" with the names sorted.
func docFloors(doc, marker string) ([]string, error) {
	_, after, ok := strings.Cut(doc, marker)
	if !ok {
		return nil, fmt.Errorf("no %s marker", marker)
	}
	var out []string
	lines := strings.Split(strings.TrimLeft(after, "\n"), "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if i < 2 { // the header and its rule
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			return nil, fmt.Errorf("row %q: want | floor | packages | ... |", line)
		}
		var names []string
		for _, f := range strings.Split(cells[2], ",") {
			names = append(names, strings.Trim(strings.TrimSpace(f), "`"))
		}
		slices.Sort(names)
		out = append(out, strings.TrimSpace(cells[1])+": "+strings.Join(names, " "))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no table after %s", marker)
	}
	return out, nil
}

// TestFloorViolationsFinds runs rule 5's checker on a made-up module: one
// package per room and engine package, with imports down (allowed), inside
// a room (allowed), up, sideways and inside the engine up, a package on
// no floor, and a room and an engine package that hold nothing. It must
// report exactly the bad ones.
func TestFloorViolationsFinds(t *testing.T) {
	imports := map[string][]string{
		"sim":               {"engine", "faults", "sizing", "fmt"}, // sizing is above sim
		"faults":            {"inspect"},                           // same floor, another room
		"diagnose":          {"diagnose/progress", "inspect"},
		"diagnose/progress": {"diagnose"}, // a room below its parent folder's
		"sim/history":       {"sim"},      // inside one room
		"engine/query":      {"engine/sink", "engine/checkpoint"},
		"engine/checkpoint": {"engine/query"},
		"engine/trace":      {"engine"},
		"cmd/dedupsim":      {"internal/suggest", "github.com/spf13/cobra"},
	}
	var pkgs []pkg
	add := func(p string) {
		var imps []string
		for _, i := range imports[p] {
			if !strings.Contains(i, ".") {
				i = module + "/" + i
			}
			imps = append(imps, i)
		}
		pkgs = append(pkgs, pkg{ImportPath: module + "/" + p, Imports: imps})
	}
	for _, rooms := range append(slices.Clone(floors), engineFloors...) {
		for _, r := range rooms {
			if r != "expect" && r != "engine/ids" && r != "cmd" {
				add(r)
			}
		}
	}
	for _, p := range []string{"sim/history", "cmd/dedupsim", "newtop", "engine/newpkg"} {
		add(p)
	}
	want := []string{
		"sim (room sim, floor 3) imports sizing (room sizing, floor 4)",
		"faults (room faults, floor 2) imports inspect (room inspect, floor 2)",
		"diagnose/progress (room diagnose/progress, floor 1) imports diagnose (room diagnose, floor 6)",
		"engine/query (engine floor 3) imports engine/checkpoint (engine floor 4)",
		"newtop is on no floor",
		"engine/newpkg is on no floor of engineFloors",
		"room expect of floors holds no package",
		"engine/ids of engineFloors is no package",
	}
	got := floorViolations(pkgs)
	if len(got) != len(want) {
		t.Errorf("got %d violations, want %d:\n\t%s", len(got), len(want), strings.Join(got, "\n\t"))
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("no violation starts %q; got:\n\t%s", w, strings.Join(got, "\n\t"))
		}
	}
}

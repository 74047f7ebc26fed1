package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/scenarios"
)

// The one home of the rule that no verb writes over a file it reads in the
// same run, nor one of its outputs over another (docs/exit-codes.md):
// every verb with an output flag lists what it reads and what it writes
// and calls refuseOverlap before it reads or writes anything.

// namedPath is a path with the flag (or argument) that gave it, for the
// error.
type namedPath struct {
	what string // "--out", "--input", "the log", "--out (report.json)"
	path string
	// dir: a folder read (a checkpoint, a golden folder): an output
	// anywhere inside it is refused too.
	dir bool
}

// readsFile, readsDir and writesFile build namedPaths.
func readsFile(what, path string) namedPath  { return namedPath{what: what, path: path} }
func readsDir(what, path string) namedPath   { return namedPath{what: what, path: path, dir: true} }
func writesFile(what, path string) namedPath { return namedPath{what: what, path: path} }

// refuseOverlap returns a one-line error (for exit 2) when an output is an
// input, lies inside an input folder, or is another output. Two paths are
// the same file when, made absolute with their symbolic links resolved
// (for a file not there yet: its folder's), they are equal, or when both
// exist and are the same inode on the same device (os.SameFile: hard
// links, bind mounts). Empty paths (a flag not given) are skipped, and so
// is an output that is a device or a pipe already (a terminal read and
// written, /dev/null): nothing is replaced there.
func refuseOverlap(verb string, inputs, outputs []namedPath) error {
	for i, o := range outputs {
		if o.path == "" {
			continue
		}
		if fi, err := os.Stat(o.path); err == nil && fi.Mode()&(os.ModeDevice|os.ModeCharDevice|os.ModeNamedPipe|os.ModeSocket) != 0 {
			continue
		}
		for _, r := range inputs {
			if r.path == "" {
				continue
			}
			if r.dir && inside(o.path, r.path) {
				return fmt.Errorf("%s: %s %s is inside %s %s, which this run reads: refusing to write there", verb, o.what, o.path, r.what, r.path)
			}
			if samePath(o.path, r.path) {
				return fmt.Errorf("%s: %s %s is the same file as %s %s, which this run reads: refusing to write over it", verb, o.what, o.path, r.what, r.path)
			}
		}
		for _, p := range outputs[:i] {
			if p.path != "" && samePath(o.path, p.path) {
				return fmt.Errorf("%s: %s %s is the same file as %s %s: one run cannot write both", verb, o.what, o.path, p.what, p.path)
			}
		}
	}
	return nil
}

// resolve makes p absolute with its symbolic links resolved; for a path
// not there yet, its deepest existing folder's links are resolved.
func resolve(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// samePath says whether a and b name one file.
func samePath(a, b string) bool {
	if resolve(a) == resolve(b) {
		return true
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// inside says whether p is the folder dir or lies under it.
func inside(p, dir string) bool {
	if samePath(p, dir) {
		return true
	}
	rp, rd := resolve(p), resolve(dir)
	if strings.HasPrefix(rp, rd+string(filepath.Separator)) {
		return true
	}
	// The same folder reached by another path (a bind mount): walk up p's
	// folders comparing inodes.
	fd, err := os.Stat(dir)
	if err != nil || !fd.IsDir() {
		return false
	}
	for cur := filepath.Dir(rp); ; cur = filepath.Dir(cur) {
		if fc, err := os.Stat(cur); err == nil && os.SameFile(fc, fd) {
			return true
		}
		if filepath.Dir(cur) == cur {
			return false
		}
	}
}

// writesInFolder is the outputs a verb writes into folder dir: one per
// name.
func writesInFolder(what, dir string, names ...string) []namedPath {
	if dir == "" {
		return nil
	}
	var ps []namedPath
	for _, n := range names {
		ps = append(ps, writesFile(fmt.Sprintf("%s (%s)", what, n), filepath.Join(dir, n)))
	}
	return ps
}

// diagnoseOverlap: diagnose's outputs (--emit-scenario, --out's
// report.html, report.json and junit.xml) against the logs it reads (a
// rolling event log is a folder), --query and --checkpoint.
func diagnoseOverlap(logs []string, o diagnoseOptions) error {
	inputs := []namedPath{readsFile("--query", o.queryFile), readsDir("--checkpoint", o.checkpoint)}
	for _, l := range logs {
		if fi, err := os.Stat(l); err == nil && fi.IsDir() {
			inputs = append(inputs, readsDir("the log", l))
		} else {
			inputs = append(inputs, readsFile("the log", l))
		}
	}
	outputs := append([]namedPath{writesFile("--emit-scenario", o.emit)}, writesInFolder("--out", o.out, "report.html", "report.json", "junit.xml")...)
	return refuseOverlap("diagnose", inputs, outputs)
}

// scenarioArgs are run's and sweep's scenario arguments as inputs (files;
// a folder argument is no folder input: the default --out may well lie
// inside the folder of scenarios given).
func scenarioArgs(args []string) []namedPath {
	var ps []namedPath
	for _, a := range args {
		ps = append(ps, readsFile("the scenario", a))
	}
	return ps
}

// batchOutputs are what run and sweep write at the top of --out.
func batchOutputs(dir string) []namedPath {
	return writesInFolder("--out", dir, "index.html", "summary.md", "junit.xml", "shard.json")
}

// refuseRunFolders refuses a scenario file that lies inside a report
// folder the run writes: <out>/<scenario>-<seed>/ of any scenario of list
// and any seed the run may give (seedIn), whose reports are replaced, whose
// history is removed and whose live/ is emptied (sweep.RunDir, sweep.WriteRun,
// freshLiveDir). batchOutputs covers the files at the top of --out; a
// folder of scenarios inside --out stays allowed.
func refuseRunFolders(verb, out string, list []*scenarios.Scenario, seedIn func(uint64) bool) error {
	for _, s := range list {
		if s.File == "" || strings.HasPrefix(s.File, "catalogue:") {
			continue
		}
		first, ok := firstFolderUnder(out, s.File)
		if !ok {
			continue
		}
		for _, t := range list {
			tail, ok := strings.CutPrefix(first, t.Name+"-")
			if !ok {
				continue
			}
			if seed, err := strconv.ParseUint(tail, 10, 64); err == nil && strconv.FormatUint(seed, 10) == tail && seedIn(seed) {
				return fmt.Errorf("%s: the scenario %s lies inside %s, the report folder of %s seed %d that this run writes: refusing to write there", verb, s.File, filepath.Join(out, first), t.Name, seed)
			}
		}
	}
	return nil
}

// refuseExportFolders refuses a path that is, or lies inside, an entry
// checkpoint-K (K >= 1) of replay's --export folder: an export writes the
// pairs of later checkpoints there and removes those an earlier export left
// (reports.ExportRun), so whatever is there is replaced or deleted.
func refuseExportFolders(exportDir string, paths ...namedPath) error {
	if exportDir == "" {
		return nil
	}
	for _, p := range paths {
		if p.path == "" {
			continue
		}
		rel, err := filepath.Rel(resolve(exportDir), resolve(p.path))
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		first, _, _ := strings.Cut(rel, string(filepath.Separator))
		if k, ok := strings.CutPrefix(first, "checkpoint-"); ok {
			if n, err := strconv.ParseUint(k, 10, 64); err == nil && n >= 1 {
				return fmt.Errorf("replay: %s %s lies inside %s, which --export writes or removes: refusing", p.what, p.path, filepath.Join(exportDir, first))
			}
		}
	}
	return nil
}

// firstFolderUnder is the name of the folder directly in dir that holds p
// (resolved), when p lies below such a folder.
func firstFolderUnder(dir, p string) (string, bool) {
	rel, err := filepath.Rel(resolve(dir), resolve(p))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	first, _, nested := strings.Cut(rel, string(filepath.Separator))
	return first, nested
}

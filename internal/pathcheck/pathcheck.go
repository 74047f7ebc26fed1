// Package pathcheck is the one home of the rule that no verb writes over a
// file it reads in the same run, nor one of its outputs over another
// (docs/exit-codes.md): every verb with an output flag lists what it reads
// and what it writes and calls RefuseOverlap before it reads or writes
// anything. The verbs' own lists stay in cmd/dedupsim/outpaths.go.
package pathcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Path is a path with the flag (or argument) that gave it, for the error.
type Path struct {
	What string // "--out", "--input", "the log", "--out (report.json)"
	Path string
	// Dir: a folder read (a checkpoint, a golden folder): an output
	// anywhere inside it is refused too.
	Dir bool
}

// ReadsFile, ReadsDir and WritesFile build Paths.
func ReadsFile(what, path string) Path  { return Path{What: what, Path: path} }
func ReadsDir(what, path string) Path   { return Path{What: what, Path: path, Dir: true} }
func WritesFile(what, path string) Path { return Path{What: what, Path: path} }

// WritesInFolder is the outputs a verb writes into folder dir: one per
// name.
func WritesInFolder(what, dir string, names ...string) []Path {
	if dir == "" {
		return nil
	}
	var ps []Path
	for _, n := range names {
		ps = append(ps, WritesFile(fmt.Sprintf("%s (%s)", what, n), filepath.Join(dir, n)))
	}
	return ps
}

// RefuseOverlap returns a one-line error (for exit 2) when an output is an
// input, lies inside an input folder, or is another output. Two paths are
// the same file when, made absolute with their symbolic links resolved
// (for a file not there yet: its folder's), they are equal, or when both
// exist and are the same inode on the same device (os.SameFile: hard
// links, bind mounts). Empty paths (a flag not given) are skipped, and so
// is an output that is a device or a pipe already (a terminal read and
// written, /dev/null): nothing is replaced there.
func RefuseOverlap(verb string, inputs, outputs []Path) error {
	for i, o := range outputs {
		if o.Path == "" {
			continue
		}
		if fi, err := os.Stat(o.Path); err == nil && fi.Mode()&(os.ModeDevice|os.ModeCharDevice|os.ModeNamedPipe|os.ModeSocket) != 0 {
			continue
		}
		for _, r := range inputs {
			if r.Path == "" {
				continue
			}
			if r.Dir && Inside(o.Path, r.Path) {
				return fmt.Errorf("%s: %s %s is inside %s %s, which this run reads: refusing to write there", verb, o.What, o.Path, r.What, r.Path)
			}
			if SamePath(o.Path, r.Path) {
				return fmt.Errorf("%s: %s %s is the same file as %s %s, which this run reads: refusing to write over it", verb, o.What, o.Path, r.What, r.Path)
			}
		}
		for _, p := range outputs[:i] {
			if p.Path != "" && SamePath(o.Path, p.Path) {
				return fmt.Errorf("%s: %s %s is the same file as %s %s: one run cannot write both", verb, o.What, o.Path, p.What, p.Path)
			}
		}
	}
	return nil
}

// Resolve makes p absolute with its symbolic links resolved; for a path
// not there yet, its deepest existing folder's links are resolved.
func Resolve(p string) string {
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

// SamePath says whether a and b name one file.
func SamePath(a, b string) bool {
	if Resolve(a) == Resolve(b) {
		return true
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// Inside says whether p is the folder dir or lies under it.
func Inside(p, dir string) bool {
	if SamePath(p, dir) {
		return true
	}
	rp, rd := Resolve(p), Resolve(dir)
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

// FirstFolderUnder is the name of the entry directly in dir that holds p
// (both resolved); nested says p lies below that entry rather than being
// it. ok is false when p is not below dir.
func FirstFolderUnder(dir, p string) (first string, nested, ok bool) {
	rel, err := filepath.Rel(Resolve(dir), Resolve(p))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false, false
	}
	first, _, nested = strings.Cut(rel, string(filepath.Separator))
	return first, nested, true
}

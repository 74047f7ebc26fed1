package sweep

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dedupsim/dedupsim/internal/atomicfile"
	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/scenarios/result"
)

// CheckRunName refuses a scenario name that is not a safe folder name:
// report folders are named <scenario>-<seed> under --out, so a name must
// not climb out of it (..), nest (/), hide (.x) or carry what breaks
// index.html or summary.md (control characters, invalid UTF-8). The
// scenario loader refuses such names too; this is defence in depth.
func CheckRunName(name string) error {
	why := ""
	switch {
	case name == "":
		why = "it is empty"
	case !utf8.ValidString(name):
		why = "it is not valid UTF-8"
	case len(name) > 200:
		why = "it is longer than 200 bytes"
	case strings.HasPrefix(name, "."):
		why = "it starts with a dot"
	case strings.ContainsAny(name, `/\:`):
		why = `it holds a / \ or :`
	case strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) || !unicode.IsPrint(r) }):
		why = "it holds a control or invisible character"
	}
	if why != "" {
		return fmt.Errorf("scenario name %q is not a safe folder name for its reports: %s", name, why)
	}
	return nil
}

// RunDir is a run's report folder: <out>/<scenario>-<seed>, never outside
// out.
func RunDir(out string, r *result.Run) (string, error) {
	if err := CheckRunName(r.Scenario); err != nil {
		return "", exitcode.Bad(err)
	}
	dir := filepath.Join(out, fmt.Sprintf("%s-%d", r.Scenario, r.Seed))
	if filepath.Dir(dir) != filepath.Clean(out) {
		return "", exitcode.Bad(fmt.Errorf("scenario name %q: its report folder %s is not directly in %s", r.Scenario, dir, out))
	}
	return dir, nil
}

// HistoryFile is where a run folder keeps its history, gzip-compressed
// (a history compresses about sevenfold at gzip's fastest level).
const HistoryFile = "history.json.gz"

// WriteRun writes one run's report folder, with the compressed history
// when keep (a failing run, or --keep-history). A history left by an
// earlier run in the same folder is removed when this run keeps none (and
// the uncompressed history.json of older versions always), so a folder
// never holds a history of another run.
func WriteRun(out string, r *result.Run, keep bool) (string, error) {
	dir, err := RunDir(out, r)
	if err != nil {
		return "", err
	}
	var extra []reports.File
	if keep && r.History != nil {
		h := r.History
		extra = append(extra, reports.File{Name: HistoryFile, Write: func(w io.Writer) error {
			zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
			if err != nil {
				return err
			}
			if err := h.Write(zw); err != nil {
				return err
			}
			return zw.Close()
		}})
	}
	if err := reports.WriteRun(dir, r, extra...); err != nil {
		return "", err
	}
	stale := []string{"history.json"}
	if !keep {
		stale = append(stale, HistoryFile)
	}
	root, err := atomicfile.OpenDir(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	for _, name := range stale {
		if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return dir, nil
}

// CheckOut refuses an --out that cannot be a folder; verb starts the
// message.
func CheckOut(verb, out string) error {
	if out == "" {
		return fmt.Errorf("%s: --out \"\": want a folder for the reports", verb)
	}
	if fi, err := os.Stat(out); err == nil && !fi.IsDir() {
		return fmt.Errorf("%s: --out %s: not a folder", verb, out)
	}
	return nil
}

// WriteOutputs writes what sits over all runs in out: index.html (when
// index), summary.md and junit.xml, and appends summary.md to the GitHub
// Actions step summary when GITHUB_STEP_SUMMARY is set.
func WriteOutputs(out string, runs []*result.Run, entries []reports.IndexEntry, index bool) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return exitcode.Fail(err)
	}
	if index {
		if err := reports.WriteIndex(filepath.Join(out, "index.html"), entries); err != nil {
			return exitcode.Output(err)
		}
	}
	md := []byte(reports.Markdown(runs))
	if err := atomicfile.WriteFile(filepath.Join(out, "summary.md"), md); err != nil {
		return exitcode.Output(err)
	}
	if err := reports.WriteJUnit(filepath.Join(out, "junit.xml"), runs); err != nil {
		return exitcode.Output(err)
	}
	if err := AppendStepSummary(md, filepath.Join(out, "summary.md")); err != nil {
		return exitcode.Fail(err)
	}
	return nil
}

// stepSummaryMax keeps an appended summary under GitHub's limit of 1 MiB
// per step.
const stepSummaryMax = 1<<20 - 4<<10

// AppendStepSummary appends md to the file GITHUB_STEP_SUMMARY names (a
// GitHub Actions job's summary page), cut at a line below GitHub's size
// limit with a pointer to whole, the file that holds all of it.
func AppendStepSummary(md []byte, whole string) error {
	p := os.Getenv("GITHUB_STEP_SUMMARY")
	if p == "" {
		return nil
	}
	if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("GITHUB_STEP_SUMMARY=%s: not a regular file", p)
	}
	if len(md) > stepSummaryMax {
		cut := md[:stepSummaryMax]
		if i := strings.LastIndexByte(string(cut), '\n'); i >= 0 {
			cut = cut[:i+1]
		}
		md = append(cut, fmt.Sprintf("\n_(cut at GitHub's size limit for a step summary: the whole summary is %s)_\n", whole)...)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	if _, err := f.Write(append(md, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	return nil
}

// Failed is the exit status of a batch: 1, naming the runs that missed
// their expectations, if any did.
func Failed(runs []*result.Run) error {
	var names []string
	for _, r := range runs {
		if !r.Passed {
			names = append(names, fmt.Sprintf("%s (seed %d)", r.Scenario, r.Seed))
		}
	}
	if len(names) == 0 {
		return nil
	}
	if len(names) > 10 {
		names = append(names[:10], fmt.Sprintf("and %d more", len(names)-10))
	}
	n := 0
	for _, r := range runs {
		if !r.Passed {
			n++
		}
	}
	return exitcode.Fail(fmt.Errorf("%d of %d runs did not meet their expectations: %s", n, len(runs), strings.Join(names, ", ")))
}

package reports

import (
	"io"
	"path/filepath"

	"github.com/dedupsim/dedupsim/internal/atomicfile"
	"github.com/dedupsim/dedupsim/scenarios/result"
)

// Reports reach the disk through internal/atomicfile: every file is
// written whole (a temporary file, fsynced, renamed over the target, the
// folder fsynced) and never through a symbolic link.

// File is an extra file of a run folder: Write streams its content.
type File struct {
	Name  string
	Write func(io.Writer) error
}

// WriteRun writes report.html, report.json, summary.md and the extra files
// of one run into dir, created if needed and refused if it is a symbolic
// link.
func WriteRun(dir string, r *result.Run, extra ...File) error {
	pts := Points(r.History) // once for both reports
	j, err := jsonWith(r, pts)
	if err != nil {
		return err
	}
	h, err := htmlWith(r, pts)
	if err != nil {
		return err
	}
	md := []byte(Markdown([]*result.Run{r}))
	root, err := atomicfile.OpenDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	files := append([]File{{"report.json", atomicfile.Bytes(j)}, {"report.html", atomicfile.Bytes(h)}, {"summary.md", atomicfile.Bytes(md)}}, extra...)
	for _, f := range files {
		if err := atomicfile.WriteIn(root, filepath.Join(dir, f.Name), f.Name, f.Write); err != nil {
			return err
		}
	}
	return atomicfile.SyncDir(root)
}

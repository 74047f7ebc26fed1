package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/scenarios/result"
)

// TestVersionInEveryReport: the dedupsim version line of a run appears in
// report.json, report.html, summary.md, junit.xml and index.html.
func TestVersionInEveryReport(t *testing.T) {
	r := sample()
	r.Version = "v1.2.3 commit 0123456789ab"
	dir := t.TempDir()
	if err := WriteRun(filepath.Join(dir, "sample-7"), r); err != nil {
		t.Fatal(err)
	}
	if err := WriteIndex(filepath.Join(dir, "index.html"), []IndexEntry{{Run: r, Dir: "sample-7"}}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJUnit(filepath.Join(dir, "junit.xml"), []*result.Run{r}); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{
		"sample-7/report.json": `"version": "v1.2.3 commit 0123456789ab"`,
		"sample-7/report.html": "dedupsim v1.2.3 commit 0123456789ab",
		"sample-7/summary.md":  "_dedupsim v1.2.3 commit 0123456789ab_",
		"junit.xml":            `<property name="dedupsim.version" value="v1.2.3 commit 0123456789ab">`,
		"index.html":           "dedupsim v1.2.3 commit 0123456789ab",
	} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q (%v)", f, want, err)
		}
	}
}

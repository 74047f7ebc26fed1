package conform

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dedupsim/dedupsim/conform/sparkrunner"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/internal/atomicfile"
)

// The table, merge and append sinks run on a real Delta Lake table in the
// Spark runner (docs/conformance.md, "Delta Lake"): the jars of the Delta
// release that serves the Spark line (conform/sparkrunner/delta.tsv) go on
// spark.jars.

// DeltaRelease is the Delta Lake artifact and version for a Spark version's
// line (MAJOR.MINOR), from the embedded table conform/sparkrunner/delta.tsv; an
// error names a line that no Delta release serves, or one the table lacks.
func DeltaRelease(sparkVersion string) (artifact, version string, err error) {
	m := regexp.MustCompile(`^([0-9]+\.[0-9]+)\.[0-9]+`).FindStringSubmatch(sparkVersion)
	if m == nil {
		return "", "", fmt.Errorf("Spark version %q is not MAJOR.MINOR.PATCH", sparkVersion)
	}
	sc := bufio.NewScanner(bytes.NewReader(sparkrunner.DeltaReleases))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			return "", "", fmt.Errorf("conform/sparkrunner/delta.tsv:%d: want SPARK_LINE, ARTIFACT and VERSION, tab-separated", n)
		}
		if f[0] != m[1] {
			continue
		}
		if f[1] == "-" {
			return "", "", fmt.Errorf("no Delta Lake release serves Spark %s yet (conform/sparkrunner/delta.tsv)", m[1])
		}
		return f[1], f[2], nil
	}
	return "", "", fmt.Errorf("Spark %s is not in conform/sparkrunner/delta.tsv (the Delta release per Spark line)", m[1])
}

// DefaultDeltaCache is where the Delta jars go when nothing else names a
// folder: DEDUPSIM_DELTA_CACHE, else delta/ in the pyspark cache.
func DefaultDeltaCache(sparkCache string) (string, error) {
	if d := os.Getenv("DEDUPSIM_DELTA_CACHE"); d != "" {
		return d, nil
	}
	if sparkCache == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			return "", err
		}
		sparkCache = d
	}
	return filepath.Join(sparkCache, "delta"), nil
}

// EnsureDelta makes sure cacheDir holds the Delta jars for sparkVersion's
// line and returns them, comma-separated, for spark.jars:
// conform/sparkrunner/delta-fetch.sh (embedded, with its table and pom) run with
// the machine's own Maven configuration. A complete copy is reused.
func EnsureDelta(ctx context.Context, sparkVersion, cacheDir string, log io.Writer) (string, error) {
	if _, _, err := DeltaRelease(sparkVersion); err != nil {
		return "", err
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(cacheDir, ".scripts-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	for name, data := range map[string][]byte{"delta-fetch.sh": sparkrunner.DeltaFetch, "delta.tsv": sparkrunner.DeltaReleases, "delta-pom.xml": sparkrunner.DeltaPom} {
		if err := atomicfile.WriteFile(filepath.Join(dir, name), data); err != nil {
			return "", err
		}
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(dir, "delta-fetch.sh"), sparkVersion)
	ownGroup(cmd)
	cmd.Env = append(os.Environ(), "DEDUPSIM_DELTA_CACHE="+cacheDir)
	cmd.Stdout = &out
	cmd.Stderr = io.Discard
	if log != nil {
		cmd.Stderr = log
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("fetch the Delta Lake jars for Spark %s into %s: %w", sparkVersion, cacheDir, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return lines[len(lines)-1], nil
}

// PysparkVersion asks a venv's python which pyspark it has.
func PysparkVersion(ctx context.Context, python string) (string, error) {
	out, err := exec.CommandContext(ctx, python, "-c", "import pyspark; print(pyspark.__version__)").Output()
	if err != nil {
		return "", fmt.Errorf("%s: import pyspark: %w", python, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// needsDelta reports whether a case's query writes a table (table, merge or
// append sink); a query dedupsim refuses needs nothing.
func (c *Case) needsDelta() bool {
	p, err := c.parse()
	if err != nil {
		return false
	}
	d, ok := sink.Lookup(p.q.Sink.Kind)
	return ok && d.HasTable
}

// deltaFor returns the Delta jars when need (a case writes a table): jars
// as given, else fetched into cacheDir for the runner's Spark
// version. A Spark line no Delta release serves gives no jars and the
// reason, which the cases that need Delta report as their skip reason.
func deltaFor(ctx context.Context, need bool, jars, python, cacheDir string, log io.Writer) (got, none string, err error) {
	if !need || jars != "" {
		return jars, "", nil
	}
	v, err := PysparkVersion(ctx, python)
	if err != nil {
		return "", "", err
	}
	if _, _, err := DeltaRelease(v); err != nil {
		return "", "the table, merge and append sinks run on Delta Lake: " + err.Error(), nil
	}
	got, err = EnsureDelta(ctx, v, cacheDir, log)
	return got, "", err
}

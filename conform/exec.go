package conform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dedupsim/dedupsim/conform/sparkrunner"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/internal/atomicfile"
)

// versionRE is the form of a pyspark version the runner serves: 3.5.x
// (dropDuplicatesWithinWatermark appeared in 3.5.0) and 4.x; env.sh holds
// the same rule.
var versionRE = regexp.MustCompile(`^(3\.5|4\.[0-9]+)\.[0-9]+$`)

// CheckVersion refuses a pyspark version the runner cannot serve, before
// anything is installed.
func CheckVersion(v string) error {
	if versionRE.MatchString(v) {
		return nil
	}
	if regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(v) {
		return fmt.Errorf("pyspark %s is not supported: dropDuplicatesWithinWatermark needs 3.5.0 or later (3.5.x, 4.x)", v)
	}
	return fmt.Errorf("%q is not a version MAJOR.MINOR.PATCH (e.g. 4.1.1 or 3.5.3)", v)
}

// DefaultCacheDir is where pyspark venvs go when neither a flag nor
// DEDUPSIM_SPARK_CACHE names a folder: the user's cache folder.
func DefaultCacheDir() (string, error) {
	if d := os.Getenv("DEDUPSIM_SPARK_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder for pyspark (set DEDUPSIM_SPARK_CACHE): %w", err)
	}
	return filepath.Join(d, "dedupsim", "spark"), nil
}

// SparkEnv says which Spark runs: a venv's python, or a pyspark version
// installed into CacheDir (EnsureEnv) when Python is empty.
type SparkEnv struct {
	Python, Version, CacheDir string
	// Log receives the install's progress and the runner's standard error
	// (Spark's own messages); nil discards them.
	Log io.Writer
	// DeltaJars and DeltaCache: Delta Lake's jars for a table, merge or
	// append sink, or the folder they are fetched into (Options).
	DeltaJars, DeltaCache string
}

// python returns the interpreter, installing the version when needed.
func (e SparkEnv) python(ctx context.Context) (string, error) {
	if e.Python != "" {
		return e.Python, nil
	}
	v := e.Version
	if v == "" {
		v = DefaultSparkVersion
	}
	if err := CheckVersion(v); err != nil {
		return "", err
	}
	if e.CacheDir == "" {
		return "", errors.New("conform: neither a python nor a cache folder for pyspark")
	}
	return EnsureEnv(ctx, v, e.CacheDir, e.Log)
}

// ExecSpark runs one exec query + steps pair (parsed by dedupsim's parsers;
// rawQuery is the QUERY.yaml text, for its schema) on Spark, as `dedupsim
// exec --engine spark` does, and returns Spark's outcome: Raw holds the
// batch records in exec's OUT.jsonl form (the runner's unsupported or error
// line last, when there is one). A non-empty checkpoint keeps Spark's
// checkpoint and source folder there across calls, as exec's --checkpoint
// does; the steps file is then the source's whole history.
func ExecSpark(ctx context.Context, env SparkEnv, q *query.Query, rawQuery []byte, st []steps.Step, checkpoint string) (*Outcome, error) {
	py, err := env.python(ctx)
	if err != nil {
		return nil, err
	}
	qj, err := SparkQuery(q, rawQuery)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "dedupsim-spark-exec-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	runner := filepath.Join(work, "runner.py")
	if err := atomicfile.WriteFile(runner, sparkrunner.Runner); err != nil {
		return nil, err
	}
	log := env.Log
	if log == nil {
		log = io.Discard
	}
	c := &Case{Name: "exec", Query: rawQuery, Checkpoint: checkpoint}
	deltaCache := env.DeltaCache
	if deltaCache == "" {
		if deltaCache, err = DefaultDeltaCache(env.CacheDir); err != nil {
			return nil, err
		}
	}
	d, _ := sink.Lookup(q.Sink.Kind)
	jars, none, err := deltaFor(ctx, d.HasTable, env.DeltaJars, py, deltaCache, env.Log)
	if err != nil {
		return nil, err
	}
	if none != "" {
		return &Outcome{Unsupported: none}, nil
	}
	sp := &Spark{Python: py, Runner: runner, Workers: 1, Log: log, DeltaJars: jars}
	if err := sp.Start(ctx); err != nil {
		return nil, err
	}
	defer sp.Close()
	out, err := sp.runFiles(ctx, work, c, qj, SparkSteps(q, st))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// runFiles runs one case from its runner files and returns Spark's
// outcome; a set c.Checkpoint is used as the checkpoint folder itself.
func (s *Spark) runFiles(ctx context.Context, dir string, c *Case, qj, sj []byte) (*Outcome, error) {
	r := request{Query: filepath.Join(dir, "spark-query.json"), Steps: filepath.Join(dir, "spark-steps.jsonl"), Out: filepath.Join(dir, "spark-out.jsonl")}
	if err := atomicfile.WriteFile(r.Query, qj); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(r.Steps, sj); err != nil {
		return nil, err
	}
	if c.Checkpoint != "" {
		abs, err := filepath.Abs(c.Checkpoint)
		if err != nil {
			return nil, err
		}
		r.Checkpoint = abs
	}
	ch := make(chan runnerStatus, 1)
	s.mu.Lock()
	s.waiters[r.Out] = ch
	s.mu.Unlock()
	if err := s.send([]request{r}); err != nil {
		return nil, err
	}
	select {
	case st := <-ch:
		out, err := readSparkOut(r.Out)
		if err != nil {
			return nil, fmt.Errorf("the Spark runner: %v (status %s %s)", err, st.Status, st.Error)
		}
		if st.Status == "error" && out.Err == "" {
			return nil, fmt.Errorf("the Spark runner failed: %s", strings.TrimSpace(st.Error))
		}
		return out, nil
	case <-s.exited:
		return nil, fmt.Errorf("the Spark runner exited early: %v", s.exitErr)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/dedupsim/dedupsim/conform"
	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/internal/pathcheck"
	"github.com/spf13/cobra"
)

// conformLong is conform's --help text.
const conformLong = `conform checks dedupsim's engine against a real Apache Spark: it installs the pyspark you
name into a cache folder (once; the machine's own pip configuration, Java 17 on PATH or in
JAVA_HOME), then runs the same exec traces through the engine and through Spark and compares
them batch for batch: the rows the sink received as a multiset, and every state metric of
Spark's progress that the exec format carries (docs/conformance.md). The table, merge and append
sinks run on a real Delta Lake table (the Delta release of the Spark line, fetched once with Maven
into DEDUPSIM_DELTA_CACHE, default delta/ under --cache); the final table and the txn versions
are compared too.

The traces are --traces random cases from the project's generator, drawn from --seed (all dedup
flavours, 1-8 partitions, restarts, the four crash points, two sources under min and max, null
keys and event times), plus the golden cases of --golden (a checkout's engine/testdata). It
prints a table, one row per feature and one column per flavour (agree/disagree/skipped, +N for
the documented expected differences), and for each disagreement a shrunk, ready-to-run query +
steps pair under --out.

Exit status (docs/exit-codes.md): 0 when every compared case agrees (or differs only where
documented), 1 on a disagreement or when Spark could not be installed or run, 2 for bad flags.`

// conformOptions are conform's flags.
type conformOptions struct {
	version, out, cache, python, golden string
	traces, workers                     int
	seed                                uint64
	typed                               bool
}

func newConformCmd() *cobra.Command {
	var o conformOptions
	cmd := &cobra.Command{
		Use:   "conform [--spark-version 4.1.1] [--traces 200] [--seed S] [--out DIR]",
		Short: "Compare the engine with a real Apache Spark (pyspark) on random and golden traces",
		Long:  conformLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConform(cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.version, "spark-version", conform.DefaultSparkVersion, "pyspark version to install and run (3.5.x or 4.x)")
	f.IntVar(&o.traces, "traces", 200, "random traces to compare [0, 100000]")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the random traces (trace i depends only on the seed and i)")
	f.BoolVar(&o.typed, "typed", false, "draw only traces whose key is typed or nested (struct, array, map, edge numbers; declared or inferred schemas; key types changed on restart)")
	f.StringVar(&o.out, "out", "", "folder for the cases, both outputs and the repros (default out/conform-VERSION)")
	f.StringVar(&o.cache, "cache", "", "folder of the pyspark venvs (default $DEDUPSIM_SPARK_CACHE, else the user cache folder)")
	f.StringVar(&o.python, "python", "", "python of an existing venv with pyspark (skips the install)")
	f.StringVar(&o.golden, "golden", "", "folder of engine golden files to compare as well (a checkout's engine/testdata)")
	f.IntVar(&o.workers, "workers", 3, "traces Spark runs at once in its one session [1, 16]")
	return cmd
}

// check refuses bad flags (exit 2) before anything is installed or run.
func (o *conformOptions) check() error {
	bad := func(format string, args ...any) error { return exitcode.Bad(fmt.Errorf("conform: "+format, args...)) }
	if err := conform.CheckVersion(o.version); err != nil {
		return bad("--spark-version: %v", err)
	}
	if o.traces < 0 || o.traces > 100000 {
		return bad("--traces %d: want a whole number in [0, 100000]", o.traces)
	}
	if o.workers < 1 || o.workers > 16 {
		return bad("--workers %d: want a whole number in [1, 16]", o.workers)
	}
	if o.golden != "" {
		if st, err := os.Stat(o.golden); err != nil || !st.IsDir() {
			return bad("--golden %s: not a folder", o.golden)
		}
	}
	if o.python != "" {
		if st, err := os.Stat(o.python); err != nil || st.IsDir() {
			return bad("--python %s: not a file", o.python)
		}
	}
	if o.traces == 0 {
		// Nothing to compare is no agreement (issue 25): refused before
		// pyspark is installed or Spark started.
		if o.golden == "" {
			return bad("--traces 0 without --golden: nothing to compare (give --traces N > 0 or --golden DIR)")
		}
	}
	if o.golden != "" {
		cases, err := conform.GoldenCases(o.golden)
		if err != nil {
			return bad("--golden %s: %v", o.golden, err)
		}
		if len(cases) == 0 {
			return bad("--golden %s: no golden case (*.txt with an exec) in this folder: nothing of it to compare", o.golden)
		}
	}
	if o.out == "" {
		o.out = filepath.Join("out", "conform-"+o.version)
	}
	if err := pathcheck.RefuseOverlap("conform", []pathcheck.Path{pathcheck.ReadsDir("--golden", o.golden), pathcheck.ReadsFile("--python", o.python)}, []pathcheck.Path{pathcheck.WritesFile("--out", o.out)}); err != nil {
		return exitcode.Bad(err)
	}
	if o.golden != "" && pathcheck.Inside(o.golden, o.out) {
		return bad("--golden %s is inside --out %s, which this run writes: give another --out", o.golden, o.out)
	}
	if st, err := os.Lstat(o.out); err == nil && (!st.IsDir() || st.Mode()&os.ModeSymlink != 0) {
		return bad("--out %s: not a folder (a symbolic link or a file)", o.out)
	}
	if o.cache == "" && o.python == "" {
		d, err := conform.DefaultCacheDir()
		if err != nil {
			return bad("%v", err)
		}
		o.cache = d
	}
	return nil
}

// runConform is conform's RunE: check the flags, install and run, print the
// table; a disagreement is exit 1.
func runConform(stdout, stderr io.Writer, o conformOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := conform.Run(ctx, conform.Options{
		SparkVersion: o.version, Python: o.python, CacheDir: o.cache, Traces: o.traces, Seed: o.seed, Typed: o.typed,
		GoldenDir: o.golden, OutDir: o.out, Workers: o.workers, Log: stderr,
	})
	if err != nil {
		return &exitcode.Error{Code: 1, Err: fmt.Errorf("conform: %w", err)}
	}
	if err := res.Table(stdout); err != nil {
		return &exitcode.Error{Code: 1, Err: err}
	}
	if res.Failed() {
		return &exitcode.Error{Code: 1, Err: fmt.Errorf("conform: %d case(s) disagree with Spark %s; repros under %s", res.Count(conform.Disagree), res.SparkVersion, o.out)}
	}
	return nil
}

package main

import (
	"errors"
	"fmt"

	"github.com/dedupsim/dedupsim/execpipe"
	"github.com/dedupsim/dedupsim/inspect/delta"
	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/internal/pathcheck"
	"github.com/dedupsim/dedupsim/sweep"
	"github.com/spf13/cobra"
)

// execLong is exec's --help text.
const execLong = `exec runs one streaming dedup query over the micro-batches of a steps file and prints,
one JSON line per batch execution (replays included), what the sink received and Spark's
StreamingQueryProgress. For table, merge and append sinks a final {"table": [...]} line
follows. With --checkpoint holding an earlier run, the query resumes from it under Spark's
restart rules; the steps file is then the source's whole history.

The whole input is checked before anything is written that outlives a refusal (a run whose
outputs are only kept once it ends well may start at once); --out is written atomically
(nothing of it changes unless the run succeeds). A checkpoint has one writer:
a second process on it is refused.

Exit status (docs/exit-codes.md): 0 on success, 2 on bad input (flags, query, steps file,
a corrupt or locked checkpoint; one line naming file, line and field), 1 on any other
failure.` + execSparkHelp

func newExecCmd() *cobra.Command {
	var o execpipe.Options
	cmd := &cobra.Command{
		Use:   "exec --query QUERY.yaml --input STEPS.jsonl [--checkpoint DIR] [--out OUT.jsonl]",
		Short: "Run one dedup query over explicit micro-batches and print every batch",
		Long:  execLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExec(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.QueryPath, "query", "", "query file (YAML)")
	f.StringVar(&o.InputPath, "input", "", "steps file (JSON Lines)")
	f.StringVar(&o.CheckpointDir, "checkpoint", "", "checkpoint folder (default: a temporary one, gone at the end)")
	f.StringVar(&o.OutPath, "out", "", "where batch records go, written atomically (default: standard output)")
	f.Uint64Var(&o.Seed, "seed", 0, "seed for the query and run ids")
	f.StringVar(&o.Format, "format", "jsonl", "output format: jsonl (the exec interface) or table (for people)")
	f.StringVar(&o.CheckPath, "check", "", "expectations file the run must meet (docs/expectations.md); exit 1 with the differences")
	f.StringVar(&o.RecordPath, "record", "", "write this run's outcome as an expectations file")
	f.StringVar(&o.ReportDir, "report", "", "with --check: write junit.xml and summary.md (one test per expectation line) into this folder")
	f.StringVar(&o.Engine, "engine", "dedupsim", "dedupsim, or spark: run the pair on a real Apache Spark (pyspark)")
	f.StringVar(&o.SparkVersion, "spark-version", "", "the Spark version to follow (3.5, 4.0, 4.1, 4.2 or 4.3, or a full version such as 4.3.0): pinned confs, key order, checks; same as the query's spark_version")
	return cmd
}

// runExec is exec's RunE: the flags are checked here, in the order the
// user sees their errors (docs/exit-codes.md), and the run is the
// pipeline's (execpipe.Run).
func runExec(o execpipe.Options) error {
	// Everything the user gave is checked before anything is written.
	switch {
	case o.QueryPath == "" || o.InputPath == "":
		return exitcode.Bad(errors.New("exec: --query and --input are required"))
	case o.Format != "jsonl" && o.Format != "table":
		return exitcode.Bad(fmt.Errorf("exec: --format %q (want jsonl or table)", o.Format))
	}
	if err := pathcheck.RefuseOverlap("exec",
		[]pathcheck.Path{pathcheck.ReadsFile("--query", o.QueryPath), pathcheck.ReadsFile("--input", o.InputPath), checkInput(o.CheckPath), pathcheck.ReadsDir("--checkpoint", o.CheckpointDir)},
		append([]pathcheck.Path{pathcheck.WritesFile("--out", o.OutPath), pathcheck.WritesFile("--record", o.RecordPath)}, pathcheck.WritesInFolder("--report", o.ReportDir, "junit.xml", "summary.md")...)); err != nil {
		return exitcode.Bad(err)
	}
	if err := checkEngine(o.Engine); err != nil {
		return err
	}
	o.Version = buildVersion
	o.StepSummary = sweep.AppendStepSummary
	return execpipe.Run(o)
}

// checkInput is --check as an input: a file, or a Delta table's folder.
func checkInput(path string) pathcheck.Path {
	if path != "" && delta.IsTable(path) {
		return pathcheck.ReadsDir("--check", path)
	}
	return pathcheck.ReadsFile("--check", path)
}

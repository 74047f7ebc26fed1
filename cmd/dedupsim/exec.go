package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
	"github.com/spf13/cobra"
)

func newExecCmd() *cobra.Command {
	var queryPath, inputPath, ckptDir, outPath string
	var seed uint64
	var format string
	cmd := &cobra.Command{
		Use:   "exec --query QUERY.yaml --input STEPS.jsonl [--checkpoint DIR] [--out OUT.jsonl]",
		Short: "Run one dedup query over explicit micro-batches and print every batch",
		Long: `exec runs one streaming dedup query over the micro-batches of a steps file and prints,
one JSON line per batch execution (replays included), what the sink received and Spark's
StreamingQueryProgress. For table, merge and append sinks a final {"table": [...]} line
follows. With --checkpoint holding an earlier run, the query resumes from it under Spark's
restart rules; the steps file is then the source's whole history.

Exit status: 0 on success, 2 on bad input (one line naming file, line and field),
1 on any other failure.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if queryPath == "" || inputPath == "" {
				return badInput(errors.New("exec: --query and --input are required"))
			}
			q, err := query.ParseFile(queryPath)
			if err != nil {
				return badInput(err)
			}
			st, err := steps.ParseFile(inputPath, q)
			if err != nil {
				return badInput(err)
			}
			dir := ckptDir
			if dir == "" {
				if dir, err = os.MkdirTemp("", "dedupsim-ckpt-"); err != nil {
					return err
				}
				defer os.RemoveAll(dir)
			} else if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			out := os.Stdout
			if outPath != "" {
				f, err := os.Create(outPath)
				if err != nil {
					return err
				}
				defer f.Close()
				out = f
			}
			if format != "jsonl" && format != "table" {
				return badInput(fmt.Errorf("exec: --format %q (want jsonl or table)", format))
			}
			res, err := trace.Run(q, st, trace.Options{
				Checkpoint: fsys.NewOS(dir), Seed: seed,
				Warn: func(s string) { fmt.Fprintln(os.Stderr, "dedupsim: warning: "+s) },
			})
			if err != nil {
				return classify(queryPath, inputPath, err)
			}
			if format == "table" {
				return writeTable(out, res)
			}
			return res.Write(out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&queryPath, "query", "", "query file (YAML)")
	f.StringVar(&inputPath, "input", "", "steps file (JSON Lines)")
	f.StringVar(&ckptDir, "checkpoint", "", "checkpoint folder (default: a temporary one, removed at the end)")
	f.StringVar(&outPath, "out", "", "where batch records go (default: standard output)")
	f.Uint64Var(&seed, "seed", 0, "seed for the query and run ids")
	f.StringVar(&format, "format", "jsonl", "output format: jsonl (the exec interface) or table (for people)")
	return cmd
}

// classify turns a run error into an exit status: a query the checkpoint
// refuses is bad input in the query file.
func classify(queryPath, inputPath string, err error) error {
	if err == nil {
		return nil
	}
	var inc *engine.IncompatibleError
	if errors.As(err, &inc) {
		return badInput(fmt.Errorf("%s: %v", queryPath, inc))
	}
	var se *trace.StepError
	if errors.As(err, &se) {
		return &exitError{code: 1, err: fmt.Errorf("%s:%d: %v", inputPath, se.Line, se.Err)}
	}
	return &exitError{code: 1, err: err}
}

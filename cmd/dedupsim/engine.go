package main

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/live/driver"
)

// newEngineCmd is the engine verb: its flags are live/driver's (the
// supervisor of a live run passes them), its work driver.Run. It is the
// child process of run --kafka (live/process.go), not a user's verb: hidden
// from dedupsim --help, and otherwise the same (engine --help documents it).
func newEngineCmd() *cobra.Command {
	var flags driver.Flags
	cmd := &cobra.Command{
		Use:   "engine --query QUERY.yaml --checkpoint DIR --bootstrap HOST:PORT --input-topic IN [--input-topic IN2] (--output-topic OUT | --sink table|merge --table DIR)",
		Short: "Run the dedup engine as a long-running process over Kafka",
		Long: `engine runs one streaming dedup query as a real driver process: it reads one input topic per
query source (read_committed, Spark's Kafka source offsets; --input-topic once per source, in
the query's order), keeps its checkpoint in DIR, and writes every batch to its sink:
  transactional  the output topic, exactly once (rows and an (app id, batch id) marker in one
                 Kafka transaction; a batch already committed is skipped)
  plain          the output topic, at least once (a replayed batch is written again)
  table, merge   a table kept with Pebble in --table DIR: the idempotent table sink (txnAppId /
                 txnVersion) or MERGE ... WHEN NOT MATCHED THEN INSERT, as the query's sink section
                 configures them
Restarted on the same checkpoint it resumes under Spark's restart rules, re-running a planned
batch that has no commit.

It prints one JSON line per batch execution and runs until SIGINT/SIGTERM, --max-batches
executions, or, with --until-idle, the first trigger that finds no new data. --records FILE
appends lines a harness needs to check what a killed process did: each execution as its sink
is called (rows read, where, their fate, the output, watermarks), the sink write, and the
completion with the StreamingQueryProgress; each in one write, so a SIGKILL loses at most the
line being written.

The Kafka source takes Spark's options: --starting-offsets (startingOffsets, for a new
checkpoint), --fetch-offset-num-retries (fetchOffset.numRetries, default 3) and
--fetch-offset-retry-interval-ms (fetchOffset.retryIntervalMs, default 1000): an offset request
that fails, or whose latest offset for a partition is behind the end of the last planned batch
(a broker cut off by a network partition can answer a stale end), is made again, that many
attempts in all, that far apart. A latest offset still behind after them fails the batch with
Spark's data-loss error (failOnDataLoss=true, the only mode; docs/spark-semantics.md §13.7).

--crash-at POINT[:BATCH] (or the environment variable DEDUPSIM_CRASH_AT) makes the process
kill itself with SIGKILL, no cleanup, at that crash point (of that batch, or of the first
batch reaching it): after-offsets-write, after-state-commit, after-sink-write, after-commit.
--crash-from MS and --crash-until MS (or DEDUPSIM_CRASH_FROM, DEDUPSIM_CRASH_UNTIL) arm it only
from and until those Unix times in ms.

Exit status (docs/exit-codes.md): 0 when stopped, 2 on bad input (flags, the query, a corrupt
checkpoint, a checkpoint in use by another process: a supervisor must not restart it), 1 on
any other failure (a supervisor restarts it), 137 (killed) at a crash point.`,
		Args:   cobra.NoArgs,
		Hidden: true,
	}
	flags.Register(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		// SIGINT/SIGTERM stop the process between batches; caught from the
		// start, so a stop during start-up is a clean stop too.
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		o, err := flags.Options(cmd.Flags().Changed, os.Getenv)
		if err == nil {
			o.Stdout, o.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			err = driver.Run(ctx, o)
		}
		return engineExit(err)
	}
	return cmd
}

// engineExit gives a failure of the engine verb its exit status: 2 for bad
// input (a supervisor must not restart it), 1 for any other failure (a
// supervisor restarts the process).
func engineExit(err error) error {
	if err == nil {
		return nil
	}
	var de *driver.Error
	if errors.As(err, &de) {
		return &exitcode.Error{Code: de.Code, Err: de.Err}
	}
	return &exitcode.Error{Code: 1, Err: err}
}

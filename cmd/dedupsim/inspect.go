package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dedupsim/dedupsim/inspect"
	"github.com/dedupsim/dedupsim/inspect/delta"
	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/spf13/cobra"
)

// inspectLong is inspect's --help text.
const inspectLong = `inspect reads a real Spark Structured Streaming checkpoint of a dedup query, or a Delta Lake
table, read-only, and prints what it holds.

A checkpoint (docs/diagnose.md): the query id; the last batch of the offset and commit logs and
whether one is in flight; the watermark the last batch ran with and the next one will; each
source's offset; the settings the offset log pins (shuffle partitions, watermark policy, state
store provider, ...); each stateful operator's metadata and key/value schema; and per state
partition the number of keys and the range of the stored event time (dropDuplicates) or
expiresAtMicros (dropDuplicatesWithinWatermark), rebuilt from the HDFS-backed store's
delta/snapshot files or the RocksDB provider's changelogs. RocksDB snapshots (SST files) cannot
be read without RocksDB: without changelogs the zip's key count is shown. Checkpoints in state
checkpoint format v2 (spark.sql.streaming.stateStore.checkpointFormatVersion=2, and every
real-time-mode query) are read from the files the commit log's checkpoint ids name and the
changelogs' lineages chain, never by listing: files of a batch run again after a crash are
counted as ignored.

A Delta table (a folder with _delta_log/; docs/delta.md): the log replayed (JSON commits,
Parquet checkpoints, _last_checkpoint) into the live files; their rows; with --keys COLS the
keys held more than once (how many, the extra rows, a sample), as Spark's groupBy(COLS) counts
them; the txn actions of idempotent writes per txnAppId (txnVersions, gaps, an app id that
changed and replayed batches: the replay-duplicates symptom); the operation of every version.
Memory: 8 bytes per row plus one row group's key values and the keys held twice.

Nothing is written. Exit status: 0; with --keys, 1 when a key is held more than once (a table
verdict like dbt's unique test); 2 for a folder that is neither, a corrupt file (named), a
--keys column the table lacks, or a Delta feature dedupsim does not read (named: deletion
vectors are refused, column mapping is read).`

func newInspectCmd() *cobra.Command {
	var asJSON bool
	var keys string
	var sample int
	cmd := &cobra.Command{
		Use:   "inspect CHECKPOINT|DELTA_TABLE [--keys COLS] [--json]",
		Short: "Show what a real Spark checkpoint or Delta table holds: batches, watermark, state keys; rows, duplicate keys, txn versions",
		Long:  inspectLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if delta.IsTable(args[0]) {
				return runInspectDelta(cmd.OutOrStdout(), args[0], keys, sample, asJSON)
			}
			if keys != "" {
				return exitcode.Bad(fmt.Errorf("inspect: --keys: %s is not a Delta table (no _delta_log/): --keys checks a table", args[0]))
			}
			return runInspect(cmd.OutOrStdout(), args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&keys, "keys", "", "Delta table: the key columns, comma-separated; exit 1 when a key is held more than once")
	cmd.Flags().IntVar(&sample, "sample", 10, "Delta table: how many duplicate keys to list")
	return cmd
}

func runInspect(w io.Writer, dir string, asJSON bool) error {
	r, err := inspect.Inspect(dir)
	var ie *inspect.Error
	if errors.As(err, &ie) {
		return exitcode.Bad(fmt.Errorf("inspect: %w", err))
	} else if err != nil {
		return err
	}
	return writeReport(w, r, asJSON)
}

// writeReport prints an inspect report as JSON or as text.
func writeReport(w io.Writer, r interface {
	JSON() ([]byte, error)
	WriteText(io.Writer)
}, asJSON bool) error {
	if !asJSON {
		r.WriteText(w)
		return nil
	}
	b, err := r.JSON()
	if err == nil {
		_, err = w.Write(b)
	}
	return err
}

func runInspectDelta(w io.Writer, dir, keys string, sample int, asJSON bool) error {
	if sample < 1 || sample > 10000 {
		return exitcode.Bad(fmt.Errorf("inspect: --sample %d: want 1-10000", sample))
	}
	var cols []string
	if keys != "" {
		for _, k := range strings.Split(keys, ",") {
			k = strings.TrimSpace(k)
			if k == "" {
				return exitcode.Bad(fmt.Errorf("inspect: --keys %q: an empty column name", keys))
			}
			cols = append(cols, k)
		}
	}
	r, err := delta.Inspect(dir, delta.Options{Keys: cols, Sample: sample})
	var de *delta.Error
	var ke *delta.KeyError
	if errors.As(err, &de) || errors.As(err, &ke) {
		return exitcode.Bad(fmt.Errorf("inspect: %w", err))
	} else if err != nil {
		return err
	}
	if err := writeReport(w, r, asJSON); err != nil {
		return err
	}
	if r.DuplicateKeys > 0 {
		return &exitcode.Error{Code: 1, Err: fmt.Errorf("inspect: %s holds %d key(s) of (%s) more than once (%d extra rows)",
			dir, r.DuplicateKeys, strings.Join(r.Keys, ", "), r.ExtraRows)}
	}
	return nil
}

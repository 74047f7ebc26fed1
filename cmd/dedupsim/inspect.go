package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/dedupsim/dedupsim/inspect"
	"github.com/spf13/cobra"
)

// inspectLong is inspect's --help text.
const inspectLong = `inspect reads a real Spark Structured Streaming checkpoint of a dedup query, read-only, and
prints what it holds (docs/diagnose.md): the query id; the last batch of the offset and commit
logs and whether one is in flight; the watermark the last batch ran with and the next one will;
each source's offset; the settings the offset log pins (shuffle partitions, watermark policy,
state store provider, ...); each stateful operator's metadata and key/value schema; and per
state partition the number of keys and the range of the stored event time (dropDuplicates) or
expiresAtMicros (dropDuplicatesWithinWatermark), rebuilt from the HDFS-backed store's
delta/snapshot files or the RocksDB provider's changelogs. RocksDB snapshots (SST files) cannot
be read without RocksDB: without changelogs the zip's key count is shown. Checkpoints in state
checkpoint format v2 (spark.sql.streaming.stateStore.checkpointFormatVersion=2, and every
real-time-mode query) are read from the files the commit log's checkpoint ids name and the
changelogs' lineages chain, never by listing: files of a batch run again after a crash are
counted as ignored.

Nothing is written to the checkpoint. Exit status: 0, or 2 for a folder that is no checkpoint
or a corrupt file (named, with the record).`

func newInspectCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect CHECKPOINT [--json]",
		Short: "Show what a real Spark checkpoint holds: batches, watermark, pinned settings, keys per state partition",
		Long:  inspectLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInspect(cmd.OutOrStdout(), args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func runInspect(w io.Writer, dir string, asJSON bool) error {
	r, err := inspect.Inspect(dir)
	var ie *inspect.Error
	if errors.As(err, &ie) {
		return badInput(fmt.Errorf("inspect: %w", err))
	} else if err != nil {
		return err
	}
	if asJSON {
		b, err := r.JSON()
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	r.WriteText(w)
	return nil
}

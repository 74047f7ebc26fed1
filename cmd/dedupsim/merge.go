package main

import (
	"io"

	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/internal/pathcheck"
	"github.com/dedupsim/dedupsim/reports"
	"github.com/dedupsim/dedupsim/sweep"
	"github.com/spf13/cobra"
)

// mergeLong is merge's --help text.
const mergeLong = `merge reads the shard.json each shard of a sweep wrote into its output folder (SHARD_OUT)
and writes DIR/index.html (linking to the shards' report folders), DIR/junit.xml and
DIR/summary.md over every run, in the order one unsharded sweep would have listed them; when
GITHUB_STEP_SUMMARY is set (GitHub Actions), summary.md is appended to it.

Exit status: 1 when a shard is missing (none of the folders holds it, or a folder has no
shard.json), a shard is missing seeds (it stopped early, or report folders are gone), a fault a
scenario asks for never fired in any seed of any shard, or a run missed its expectations; 2
when the folders are not shards of one sweep (other scenarios, seeds, shard count or dedupsim
version), a shard is given twice, or a shard.json is malformed; 0 otherwise.`

func newMergeCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge [--out DIR] SHARD_OUT...",
		Short: "Combine the outputs of a sharded sweep into one index.html, junit.xml and summary",
		Long:  mergeLong,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMerge(cmd.OutOrStdout(), args, out)
		},
	}
	cmd.Flags().StringVar(&out, "out", "out", "folder for the merged index.html, junit.xml and summary.md")
	return cmd
}

// runMerge is merge's RunE (its one flag is --out): it reads the shards
// in dirs, checks that they are one sweep, and writes the reports over
// all their runs into out, printing the runs that missed their
// expectations.
func runMerge(w io.Writer, dirs []string, out string) error {
	if err := sweep.CheckOut("merge", out); err != nil {
		return exitcode.Bad(err)
	}
	shards, problems, err := sweep.LoadShards(dirs, out) // problems: missing shards and seeds, exit 1
	if err != nil {
		return err
	}
	// Nothing is written yet: the reports must not land inside a shard.
	var shardDirs []pathcheck.Path
	for _, d := range dirs {
		shardDirs = append(shardDirs, pathcheck.ReadsDir("the shard folder", d))
	}
	if err := pathcheck.RefuseOverlap("merge", shardDirs, pathcheck.WritesInFolder("--out", out, "index.html", "junit.xml", "summary.md")); err != nil {
		return exitcode.Bad(err)
	}
	m, err := sweep.Merge(shards, problems, out)
	if err != nil {
		return err
	}
	for _, r := range m.Runs {
		if !r.Passed {
			reports.PrintRun(w, r)
		}
	}
	return m.Finish(w, out)
}

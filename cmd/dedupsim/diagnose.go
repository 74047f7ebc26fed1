package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dedupsim/dedupsim/diagnose"
	sparkprogress "github.com/dedupsim/dedupsim/diagnose/progress"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/spf13/cobra"
)

// diagnoseLong is diagnose's --help text.
const diagnoseLong = `diagnose reads a real Spark Structured Streaming query's progress records and says what is
wrong with its deduplication, with the evidence and what to change (docs/diagnose.md):

  LOG is any of: JSON Lines of StreamingQueryProgress (a listener writing event.progress.json,
  bare or as {"progress": {...}}, with its started/idle/terminated events); a JSON array
  (query.recentProgress); a driver log with "Streaming query made progress:" and the
  pretty-printed JSON among other lines; a Spark event log, one file or a rolling eventlog_v2_*
  folder, plain or lz4/snappy/zstd, or any of them in gzip, bzip2, an lz4 frame or snappy framing
  (told from the bytes, never the name). Several LOGs are read as one: queries
  are told apart by id, runs (restarts) by runId; a batch seen twice with the same figures counts
  once, with different figures it is conflicting-copies.

Findings, per query and stateful operator: no-watermark, state-unbounded (a fitted trend with
its R², and the time until --memory-budget), state-over-bound, watermark-stalled, watermark-jump
(future event times), late-dropped, batch-duration-growing, state-partitions-too-few,
query-failed, conflicting-copies, watermark-regressed (problems); event-time-in-key,
real-time-at-least-once (risks the metrics cannot show); duplicates-dropped, query-restarted,
bad-lines (info).

--out DIR writes report.html (the query's charts), report.json and junit.xml. --emit-scenario
FILE writes a scenario fitted to the log that reproduces the finding on the simulator (dedupsim
run FILE). --query QUERY.yaml gives what the log lacks (the watermark delay, the keys).

Exit status: 0 healthy, 1 a problem finding, 2 unreadable input (a missing file, a broken
compressed stream, binary data, an input with no progress record) or a bad flag. Bad lines are
counted and quoted; the records read per input are printed.`

// diagnoseOptions are diagnose's flags.
type diagnoseOptions struct {
	out, emit, queryFile, budget, futureTol string
	asJSON                                  bool
	// checkpoint is --checkpoint (diagnose_checkpoint.go); app is --app
	// (diagnose/folder.go).
	checkpoint, app string
}

func newDiagnoseCmd() *cobra.Command {
	var o diagnoseOptions
	cmd := &cobra.Command{
		Use:   "diagnose LOG... [--out DIR] [--memory-budget 8g] [--emit-scenario FILE] [--query QUERY.yaml] [--json]",
		Short: "Diagnose a real Spark query from its progress records: findings, evidence, fixes",
		Long:  diagnoseLong,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiagnose(cmd.OutOrStdout(), args, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "write report.html, report.json and junit.xml into this folder")
	f.StringVar(&o.budget, "memory-budget", "", "forecast when memoryUsedBytes reaches this size (such as 8g or 512m)")
	f.StringVar(&o.futureTol, "future-tolerance", "1h", "an eventTime.max further ahead of the trigger time is a future timestamp [1s, 365d]")
	f.StringVar(&o.emit, "emit-scenario", "", "write a scenario that reproduces the findings on the simulator")
	f.StringVar(&o.queryFile, "query", "", "the query's QUERY.yaml, for what the log lacks (watermark delay, keys)")
	f.BoolVar(&o.asJSON, "json", false, "print report.json instead of the summary")
	f.StringVar(&o.app, "app", "", "with a spark.eventLog.dir folder: diagnose only this application (its id, as listed)")
	f.StringVar(&o.checkpoint, "checkpoint", "", "the query's checkpoint folder: what the metrics cannot show (ids held under several event times)")
	return cmd
}

func runDiagnose(w io.Writer, logs []string, o diagnoseOptions) error {
	if err := diagnoseOverlap(logs, o); err != nil {
		return exitcode.Bad(err)
	}
	opt, q, err := o.options()
	if err != nil {
		return exitcode.Bad(fmt.Errorf("diagnose: %w", err))
	}
	logs, apps, err := diagnose.ExpandEventLogDirs(logs, o.app)
	if err != nil {
		return exitcode.Bad(err)
	}
	log, err := sparkprogress.Read(logs)
	var ie *sparkprogress.InputError
	if errors.As(err, &ie) {
		return exitcode.Bad(fmt.Errorf("diagnose: %w", err))
	} else if err != nil {
		return err
	}
	if len(log.Queries) == 0 {
		msg := "no StreamingQueryProgress record in the input"
		if len(log.Bad) > 0 {
			msg += fmt.Sprintf(" (%d bad lines; the first: %s: %s)", log.BadTotal, log.Bad[0].Where, log.Bad[0].Reason)
		}
		return exitcode.Bad(fmt.Errorf("diagnose: %s", msg))
	}
	rep := diagnose.Diagnose(log, opt)
	rep.Applications = apps
	if o.checkpoint != "" {
		if err := joinCheckpoint(&rep, o.checkpoint); err != nil {
			return err
		}
	}
	if o.asJSON {
		b, err := rep.JSON()
		if err != nil {
			return err
		}
		w.Write(b)
	} else {
		rep.WriteText(w)
	}
	if o.out != "" {
		if err := rep.Write(o.out); err != nil {
			return fmt.Errorf("diagnose: --out %s: %w", o.out, err)
		}
	}
	if o.emit != "" {
		if err := diagnose.EmitScenario(w, rep, q, o.emit); err != nil {
			return err
		}
	}
	if !rep.Healthy() {
		return &exitcode.Error{Code: 1, Err: fmt.Errorf("diagnose: %s", rep.Verdict)}
	}
	return nil
}

// options checks the flags and reads --query.
func (o diagnoseOptions) options() (diagnose.Options, *query.Query, error) {
	var opt diagnose.Options
	if o.budget != "" {
		n, err := scenarios.ParseSize(o.budget)
		if err != nil {
			return opt, nil, fmt.Errorf("--memory-budget %w", err)
		}
		opt.MemoryBudgetBytes = n
	}
	ms, err := parseTolerance(o.futureTol)
	if err != nil || ms < 1000 || ms > 365*86_400_000 {
		return opt, nil, fmt.Errorf("--future-tolerance %q: want a duration in [1s, 365d] such as 1h", o.futureTol)
	}
	opt.FutureToleranceMs = ms
	var q *query.Query
	if o.queryFile != "" {
		if q, err = query.ParseFile(o.queryFile); err != nil {
			return opt, nil, err
		}
		opt.FromQuery(q)
	}
	if o.emit != "" {
		if fi, err := os.Lstat(o.emit); err == nil && !fi.Mode().IsRegular() {
			return opt, nil, fmt.Errorf("--emit-scenario %s: not a regular file (a link or a folder is never written through)", o.emit)
		}
	}
	return opt, q, nil
}

// parseTolerance reads --future-tolerance: a Go duration (1h, 90m) or
// whole days (365d).
func parseTolerance(s string) (int64, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil || n < 1 || n > 365 {
			return 0, fmt.Errorf("bad days")
		}
		return n * 86_400_000, nil
	}
	d, err := time.ParseDuration(s)
	return d.Milliseconds(), err
}

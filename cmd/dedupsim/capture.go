package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/dedupsim/dedupsim/capture"
	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/internal/pathcheck"
)

// captureLong is capture's --help text.
const captureLong = `capture reads a slice of a Kafka topic (franz-go; read_committed by default, as Spark's Kafka
source) and writes it as JSON Lines for dedupsim analyze: each record's value (a JSON object,
or with --value-format raw a "value" string column) with _partition, _offset and _timestamp
(the record timestamp, the arrival time: analyze --arrival _timestamp) beside it.

With --as-steps it writes an exec steps file instead, one {"rows": [...], "once": true} line
per micro-batch: --trigger 30s cuts the records by arrival time as a processing-time trigger
of 30 s would (batches end at multiples of the interval; a trigger that finds nothing after a
batch is a {"tick": true} line, which runs Spark's no-data batch), --max-offsets N as
maxOffsetsPerTrigger would over a backlog. Replay it with dedupsim exec.

The slice is fixed when the capture begins (--start, --end; the end is not read and never
past the partition's end at that moment). --out is written atomically: the records go to
.<name>.capture-partial beside it, renamed over --out when complete. An interrupted capture
(SIGINT, a Kafka failure, SIGKILL) keeps that file; --resume continues it from the last
complete record or batch, or extends a finished --out with the records after it. Memory
is bounded: two fetches of 4 MiB as fetched (times their compression ratio once decoded)
and, with --as-steps, one batch (at most 256 MiB). A progress bar is shown when standard
error is a terminal.

Exit status (docs/exit-codes.md): 0 on success, 2 on bad input (flags, a record value that
cannot be captured, a partial file of other settings), 1 on any other failure.`

// captureOptions are capture's flags.
type captureOptions struct {
	kafka                  kafkaFlags
	out, valueFormat       string
	resume, asSteps, quiet bool
	trigger                time.Duration
	maxOffsets             int64
}

func newCaptureCmd() *cobra.Command {
	var o captureOptions
	cmd := &cobra.Command{
		Use:   "capture --bootstrap HOST:PORT --topic T --out FILE [--start S] [--end E] [--as-steps (--trigger 30s | --max-offsets N)] [--resume]",
		Short: "Capture a slice of a Kafka topic as JSON Lines for analyze, or as an exec steps file",
		Long:  captureLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runCapture(ctx, cmd.OutOrStdout(), o, cmd.Flags().Changed)
		},
	}
	f := cmd.Flags()
	o.kafka.register(f)
	f.StringVar(&o.out, "out", "", "the file written (required)")
	f.StringVar(&o.valueFormat, "value-format", capture.JSONValues, "record values: json (an object, merged into the line) or raw (UTF-8 text, a \"value\" column)")
	f.BoolVar(&o.resume, "resume", false, "continue an interrupted capture into --out, or extend a finished one")
	f.BoolVar(&o.asSteps, "as-steps", false, "write an exec steps file (needs --trigger or --max-offsets)")
	f.DurationVar(&o.trigger, "trigger", 0, "with --as-steps: processing-time trigger interval "+capture.TriggerRange)
	f.Int64Var(&o.maxOffsets, "max-offsets", 0, "with --as-steps: maxOffsetsPerTrigger, offsets per batch [1, 2^40]")
	f.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	return cmd
}

// runCapture is capture's RunE; changed says which flags were given.
func runCapture(ctx context.Context, w io.Writer, o captureOptions, changed func(string) bool) error {
	bad := func(format string, args ...any) error { return exitcode.Bad(fmt.Errorf("capture: "+format, args...)) }
	switch {
	case o.out == "":
		return bad("--out is required")
	case !o.asSteps && (changed("trigger") || changed("max-offsets")):
		return bad("--trigger and --max-offsets cut micro-batches: they need --as-steps")
	case changed("trigger") && o.trigger == 0:
		return bad("--trigger 0s: out of range, want %s", capture.TriggerRange)
	case changed("max-offsets") && o.maxOffsets <= 0:
		return bad("--max-offsets %d: out of range, want [1, 2^40]", o.maxOffsets)
	case o.asSteps && o.trigger == 0 && o.maxOffsets == 0:
		return bad("--as-steps needs --trigger (a processing-time trigger) or --max-offsets (maxOffsetsPerTrigger)")
	}
	if err := pathcheck.RefuseOverlap("capture",
		[]pathcheck.Path{pathcheck.ReadsFile("--tls-ca", o.kafka.auth.TLSCA), pathcheck.ReadsFile("--tls-cert", o.kafka.auth.TLSCert), pathcheck.ReadsFile("--tls-key", o.kafka.auth.TLSKey)},
		[]pathcheck.Path{pathcheck.WritesFile("--out", o.out)}); err != nil {
		return exitcode.Bad(err)
	}
	src, err := o.kafka.source("capture")
	if err != nil {
		return err
	}
	opt := capture.Options{Source: src, ValueFormat: o.valueFormat, Out: o.out, Resume: o.resume, Trigger: o.trigger, MaxOffsets: o.maxOffsets}
	var bar *progressbar.ProgressBar
	if !o.quiet && term.IsTerminal(int(os.Stderr.Fd())) {
		opt.Progress = func(done, total int64) {
			if bar == nil {
				bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionSetDescription("capture "+src.Topic),
					progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish(), progressbar.OptionShowCount())
			}
			bar.Set64(done)
		}
	}
	res, err := capture.Run(ctx, opt)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = fmt.Errorf("interrupted: %s holds what was read; --resume continues it (%w)", capture.PartialPath(o.out), err)
		}
		return kafkaExit("capture", err)
	}
	kind := "records"
	if o.asSteps {
		kind = fmt.Sprintf("records in %d batches", res.Batches)
	}
	fmt.Fprintf(w, "captured %d %s of topic %s into %s%s\n", res.Records, kind, src.Topic, o.out, map[bool]string{true: " (resumed)"}[res.Resumed])
	return nil
}

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/sim/analyze"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// progressLines is how many lines an input has before a progress bar
// appears on stderr.
const progressLines = 1_000_000

func newAnalyzeCmd() *cobra.Command {
	var keys, timeCol, arrival, futureTol string
	var maxKeys, partitions int
	var skipBad, asJSON, quiet bool
	var percentile, margin, bytesPerKey float64
	cmd := &cobra.Command{
		Use:   "analyze EVENTS [--key id] [--time ts] [--arrival COL] [--percentile 99.99] [--margin 0.25] [--json]",
		Short: "Measure duplicates and the gap between copies in a trace, and recommend a watermark delay",
		Long: `analyze reads a JSON Lines file of events (one per line, in arrival order; "-" for stdin;
blank lines and # comments skipped) and runs steps 2 to 4 of seed 000's checklist on it:

  - the duplicate rate (extra copies / events) and copies per key;
  - the gap between the first and the last copy of each key, in event time and in arrival
    order (the --arrival column, or the line order counted in events), at p50, p99, p99.9,
    p99.99 and max;
  - events with impossible timestamps: before the epoch, or in the future (more than
    --future-tolerance ahead of the arrival time; without --arrival, ahead of the median event
    time of its block of 1,000 events, default tolerances 1h and 24h); they are left out of
    every other figure, as the pipeline should filter them before withWatermark;
  - a recommended delay: the --percentile of the event-time gap x (1 + --margin), rounded up;
  - the state at that delay for dropDuplicates (event time in the keys) and
    dropDuplicatesWithinWatermark, from the measured rate of distinct keys per second of event
    time, --bytes-per-key and --partitions (the rule of dedupsim size).

Memory is bounded: about 40 bytes per distinct key, and at most --max-keys keys; beyond it the
key seen first is evicted and its later copies are counted as beyond the window. A progress bar
appears on stderr past 1,000,000 lines. A bad line fails with file:line: column: reason (exit 2)
unless --skip-bad, which counts and quotes them in the report.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt := analyze.Options{
				File: args[0], Time: timeCol, Arrival: arrival, MaxKeys: maxKeys, SkipBad: skipBad,
				Percentile: percentile, Margin: margin, BytesPerKey: bytesPerKey, Partitions: partitions,
			}
			for _, k := range strings.Split(keys, ",") {
				opt.Keys = append(opt.Keys, strings.TrimSpace(k))
			}
			if futureTol != "" {
				d, err := query.ParseDelay(futureTol)
				if err != nil {
					return badInput(fmt.Errorf("analyze: --future-tolerance: %v", err))
				}
				if d == 0 {
					return badInput(errors.New("analyze: --future-tolerance must be positive"))
				}
				opt.FutureTolerance = time.Duration(d) * time.Millisecond
			}
			if !(percentile > 0 && percentile <= 100) || bytesPerKey <= 0 || partitions < 1 || maxKeys < 1 {
				return badInput(errors.New("analyze: want 0 < --percentile <= 100, --bytes-per-key > 0, --partitions >= 1 and --max-keys >= 1"))
			}
			var in io.Reader = os.Stdin
			size := int64(-1)
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return badInput(fmt.Errorf("analyze: %v", err))
				}
				defer f.Close()
				if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
					size = st.Size()
				}
				in = f
			}
			// Progress past progressLines lines: for a file, judged up front
			// by its size over the bytes per line of its first 64 KiB, so the
			// bar starts at 0 and its rate is right; for stdin, once that many
			// lines are read.
			var bar *progressbar.ProgressBar
			newBar := func() {
				bar = progressbar.NewOptions64(size, progressbar.OptionSetWriter(os.Stderr),
					progressbar.OptionSetDescription("analyze "+args[0]), progressbar.OptionShowBytes(true),
					progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
				bar.RenderBlank() // starts the clock the rate is measured from
			}
			if !quiet {
				br := bufio.NewReaderSize(in, 1<<16)
				in = br
				if size > 0 {
					head, _ := br.Peek(1 << 16)
					if n := bytes.Count(head, []byte("\n")); n > 0 && size/int64(len(head)/n) >= progressLines {
						newBar()
					}
				}
				opt.Progress = func(lines, read int64) {
					if bar == nil && size < 0 && lines >= progressLines {
						newBar()
					}
					if bar != nil {
						bar.Set64(read)
					}
				}
			}
			a, err := analyze.New(opt)
			if err != nil {
				return badInput(err)
			}
			err = a.Read(in)
			if bar != nil {
				bar.Finish()
			}
			var le *analyze.LineError
			switch {
			case errors.As(err, &le):
				return badInput(err)
			case err != nil:
				return &exitError{code: 1, err: err} // reading
			}
			rep := a.Finish()
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			rep.WriteText(w)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&keys, "key", "id", "key column(s), comma-separated for a composite key")
	f.StringVar(&timeCol, "time", "ts", "event-time column (seconds since the epoch or RFC 3339)")
	f.StringVar(&arrival, "arrival", "", "arrival (processing) time column; default: the line order")
	f.StringVar(&futureTol, "future-tolerance", "", `how far ahead an event time may be ("1h"; default 1h with --arrival, 24h without)`)
	f.Float64Var(&percentile, "percentile", analyze.DefaultPercentile, "percentile of the event-time gap the delay covers")
	f.Float64Var(&margin, "margin", analyze.DefaultMargin, "delay = percentile x (1 + margin), rounded up")
	f.Float64Var(&bytesPerKey, "bytes-per-key", 100, "state bytes per key for the estimate")
	f.IntVar(&partitions, "partitions", 200, "spark.sql.shuffle.partitions for the estimate")
	f.IntVar(&maxKeys, "max-keys", analyze.DefaultMaxKeys, "most distinct keys held at once (memory bound); the oldest are evicted")
	f.BoolVar(&skipBad, "skip-bad", false, "count and report bad lines instead of failing on the first")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&quiet, "quiet", false, "no progress bar")
	return cmd
}

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

	"github.com/dedupsim/dedupsim/analyze"
	"github.com/dedupsim/dedupsim/sizing"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// progressLines is how many lines an input has before a progress bar
// appears on stderr.
const progressLines = 1_000_000

func newAnalyzeCmd() *cobra.Command {
	var keys, timeCol, arrival, futureTol, timeUnit, rateWindow string
	var maxKeys, partitions int
	var skipBad, asJSON, quiet bool
	var percentile, margin, bytesPerKey, ratePercentile, rate float64
	cmd := &cobra.Command{
		Use:   "analyze EVENTS [--key id] [--time ts] [--time-unit s] [--arrival COL] [--percentile 99.99] [--margin 0.25] [--json]",
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
  - a recommended delay: the --percentile of the event-time gap x (1 + --margin), rounded up, at
    most 365d (a gap of a year or more gets none: copies that far apart belong to the sink);
  - the key rate per --rate-window of event time (1m) and its mean, and the state at that delay
    for dropDuplicates (event time in the keys) and dropDuplicatesWithinWatermark, sized from the
    --rate-percentile (p99) of the per-window rate, never below the mean, or from --rate, with
    --bytes-per-key and --partitions (the rule of dedupsim size).

Epoch numbers are seconds unless --time-unit says ms or us; RFC 3339 strings carry their own
unit. Memory is bounded: about 40 bytes per distinct key, and at most --max-keys keys; beyond it
the key seen first is evicted and its later copies are counted as beyond the window. A line may
hold at most 16 MiB. A progress bar appears on stderr past 1,000,000 lines. A bad line fails with
file:line: column: reason (exit 2) unless --skip-bad, which counts and quotes them in the report.
See docs/sizing.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt := analyze.Options{
				File: args[0], Time: timeCol, Arrival: arrival, MaxKeys: maxKeys, SkipBad: skipBad,
				Percentile: percentile, Margin: margin, BytesPerKey: bytesPerKey, Partitions: partitions,
				RatePercentile: ratePercentile, Rate: rate,
			}
			bad := func(err error) error { return badInput(fmt.Errorf("analyze: %w", err)) }
			for _, k := range strings.Split(keys, ",") {
				opt.Keys = append(opt.Keys, strings.TrimSpace(k))
			}
			// A zero option is its default to analyze.New; typed by the
			// user it is out of range.
			flags := cmd.Flags()
			for _, z := range []struct {
				name, rng string
				zero      bool
			}{
				{"percentile", analyze.PercentileRange, percentile == 0},
				{"rate-percentile", analyze.PercentileRange, ratePercentile == 0},
				{"rate", sizing.RateRange, rate == 0},
				{"bytes-per-key", sizing.BytesPerKeyRange, bytesPerKey == 0},
				{"partitions", sizing.PartitionsRange, partitions == 0},
				{"max-keys", analyze.MaxKeysRange, maxKeys == 0},
			} {
				if z.zero && flags.Changed(z.name) {
					return bad(sizing.RangeError(z.name, "0", z.rng))
				}
			}
			var err error
			if opt.TimeUnit, err = analyze.ParseTimeUnit(timeUnit); err != nil {
				return bad(err)
			}
			if futureTol != "" {
				if opt.FutureTolerance, err = analyze.ParseDuration("future-tolerance", futureTol,
					analyze.MinFutureTolerance, analyze.MaxFutureTolerance, analyze.FutureToleranceRange); err != nil {
					return bad(err)
				}
			}
			if opt.RateWindow, err = analyze.ParseDuration("rate-window", rateWindow,
				analyze.MinRateWindow, analyze.MaxRateWindow, analyze.RateWindowRange); err != nil {
				return bad(err)
			}
			a, err := analyze.New(opt)
			if err != nil {
				return badInput(err)
			}
			var in io.Reader = os.Stdin
			size := int64(-1)
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return bad(err)
				}
				defer f.Close()
				st, err := f.Stat()
				if err != nil {
					return bad(err)
				}
				if st.IsDir() {
					return bad(fmt.Errorf("%s is a folder: give a JSON Lines file of events", args[0]))
				}
				if st.Mode().IsRegular() {
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
	f.StringVar(&timeCol, "time", "ts", "event-time column (an epoch number in --time-unit, or RFC 3339)")
	f.StringVar(&timeUnit, "time-unit", "s", "unit of epoch numbers in --time and --arrival: s, ms or us")
	f.StringVar(&arrival, "arrival", "", "arrival (processing) time column; default: the line order")
	f.StringVar(&futureTol, "future-tolerance", "", `how far ahead an event time may be ("1h"; default 1h with --arrival, 24h without) `+analyze.FutureToleranceRange)
	f.Float64Var(&percentile, "percentile", analyze.DefaultPercentile, "percentile of the event-time gap the delay covers "+analyze.PercentileRange)
	f.Float64Var(&margin, "margin", analyze.DefaultMargin, "delay = percentile x (1 + margin), rounded up "+analyze.MarginRange)
	f.StringVar(&rateWindow, "rate-window", "1m", "window of event time the distinct-key rate is counted in "+analyze.RateWindowRange)
	f.Float64Var(&ratePercentile, "rate-percentile", analyze.DefaultRatePercentile, "percentile of the per-window key rates the state is sized from "+analyze.PercentileRange)
	f.Float64Var(&rate, "rate", 0, "size the state from this key rate instead of the measured one "+sizing.RateRange)
	f.Float64Var(&bytesPerKey, "bytes-per-key", 100, "state bytes per key for the estimate "+sizing.BytesPerKeyRange)
	f.IntVar(&partitions, "partitions", 200, "spark.sql.shuffle.partitions for the estimate "+sizing.PartitionsRange)
	f.IntVar(&maxKeys, "max-keys", analyze.DefaultMaxKeys, "most distinct keys held at once (memory bound); the oldest are evicted "+analyze.MaxKeysRange)
	f.BoolVar(&skipBad, "skip-bad", false, "count and report bad lines instead of failing on the first")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&quiet, "quiet", false, "no progress bar")
	return cmd
}

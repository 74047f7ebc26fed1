package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dedupsim/dedupsim/analyze"
	"github.com/dedupsim/dedupsim/capture"
	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/internal/termprogress"
	"github.com/dedupsim/dedupsim/sizing"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// progressLines is how many lines an input has before a progress bar
// appears on stderr.
const progressLines = 1_000_000

// analyzeLong is analyze's --help text.
const analyzeLong = `analyze reads a JSON Lines file of events (one per line, in arrival order; "-" for stdin;
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
    --bytes-per-key and --partitions (the rule of dedupsim size): right for steady traffic;
  - the state curve: the events replayed in arrival order through Spark's rules at --delay
    (default: the recommended delay, which reads a file twice; stdin and --from-kafka need --delay),
    one micro-batch per --trigger (1m) of arrival time (the --arrival column, else the newest
    event time so far): the global watermark (max event time - delay, as of the batch before),
    late rows dropped, event time in the key for dropDuplicates, first-seen expiry for
    dropDuplicatesWithinWatermark, eviction after each batch, a no-data batch after a quiet
    trigger; per API the peak numRowsTotal, when it was reached, the keys at the end and the
    late rows, and the bytes at --bytes-per-key (--json: state.<api>.peakKeys, peakAt, endKeys).

Epoch numbers are seconds unless --time-unit says ms or us; RFC 3339 strings carry their own
unit. Memory is bounded: about 40 bytes per distinct key, and at most --max-keys keys; beyond it
the key seen first is evicted and its later copies are counted as beyond the window. The replay
adds about 55 bytes per key in state per API, at most --max-keys each (beyond it that API's
replay stops and its peak is a lower bound). A line may
hold at most 16 MiB. A progress bar appears on stderr past 1,000,000 lines. A bad line fails with
file:line: column: reason (exit 2) unless --skip-bad, which counts and quotes them in the report.
See docs/sizing.md.

With --from-kafka it reads a topic instead of a file (--bootstrap, --topic and the other flags of
dedupsim capture that choose the records: --topic-partitions, --start, --end,
--read-uncommitted, TLS and SASL), the events being what capture would write, with
--arrival _timestamp (the record timestamp) unless --arrival says otherwise.`

// analyzeOptions are analyze's flags.
type analyzeOptions struct {
	keys, timeCol, arrival, futureTol, timeUnit, rateWindow string
	delay, trigger                                          string
	maxKeys, partitions                                     int
	skipBad, asJSON, quiet                                  bool
	percentile, margin, bytesPerKey, ratePercentile, rate   float64
	kafka                                                   bool
	kafkaFlags                                              kafkaFlags
	valueFormat                                             string
}

func newAnalyzeCmd() *cobra.Command {
	var o analyzeOptions
	cmd := &cobra.Command{
		Use:   "analyze (EVENTS | --from-kafka --bootstrap HOST:PORT --topic T) [--key id] [--time ts] [--time-unit s] [--arrival COL] [--percentile 99.99] [--margin 0.25] [--json]",
		Short: "Measure duplicates and the gap between copies in a trace, and recommend a watermark delay",
		Long:  analyzeLong,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return fmt.Errorf("accepts 1 arg(s), received %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			file, err := o.eventsArg(cmd, args)
			if err != nil {
				return err
			}
			return runAnalyze(cmd.OutOrStdout(), cmd.Flags(), file, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.keys, "key", "id", "key column(s), comma-separated for a composite key")
	f.StringVar(&o.timeCol, "time", "ts", "event-time column (an epoch number in --time-unit, or RFC 3339)")
	f.StringVar(&o.timeUnit, "time-unit", "s", "unit of epoch numbers in --time and --arrival: s, ms or us")
	f.StringVar(&o.arrival, "arrival", "", "arrival (processing) time column; default: the line order")
	f.StringVar(&o.futureTol, "future-tolerance", "", `how far ahead an event time may be ("1h"; default 1h with --arrival, 24h without) `+analyze.FutureToleranceRange)
	f.Float64Var(&o.percentile, "percentile", analyze.DefaultPercentile, "percentile of the event-time gap the delay covers "+analyze.PercentileRange)
	f.Float64Var(&o.margin, "margin", analyze.DefaultMargin, "delay = percentile x (1 + margin), rounded up "+analyze.MarginRange)
	f.StringVar(&o.rateWindow, "rate-window", "1m", "window of event time the distinct-key rate is counted in "+analyze.RateWindowRange)
	f.Float64Var(&o.ratePercentile, "rate-percentile", analyze.DefaultRatePercentile, "percentile of the per-window key rates the state is sized from "+analyze.PercentileRange)
	f.Var((*rateFlag)(&o.rate), "rate", "size the state from this key rate instead of the measured one (50000, 50k, 1.5M) "+sizing.RateRange)
	f.Float64Var(&o.bytesPerKey, "bytes-per-key", 100, "state bytes per key for the estimate "+sizing.BytesPerKeyRange)
	f.IntVar(&o.partitions, "partitions", 200, "spark.sql.shuffle.partitions for the estimate "+sizing.PartitionsRange)
	f.IntVar(&o.maxKeys, "max-keys", analyze.DefaultMaxKeys, "most distinct keys held at once (memory bound); the oldest are evicted "+analyze.MaxKeysRange)
	f.StringVar(&o.delay, "delay", "", `watermark delay the state is replayed at ("7h 30m"; default: the recommended delay) `+sizing.DelayRange)
	f.StringVar(&o.trigger, "trigger", "1m", "processing-time trigger of the replay: one micro-batch per trigger of arrival time "+analyze.TriggerRange)
	f.BoolVar(&o.skipBad, "skip-bad", false, "count and report bad lines instead of failing on the first")
	f.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	f.BoolVar(&o.kafka, "from-kafka", false, "read the events from a Kafka topic (--bootstrap, --topic) instead of a file")
	f.BoolVar(&o.kafka, "kafka", false, "old spelling of --from-kafka")
	deprecateAlias(f, "kafka", "from-kafka")
	f.StringVar(&o.valueFormat, "value-format", "json", "with --from-kafka: record values, json or raw (as capture)")
	o.kafkaFlags.register(f)
	return cmd
}

// eventsArg checks that analyze has one input, a file or --from-kafka
// (old spelling --kafka, quoted in messages when given), and names it for
// messages ("kafka:TOPIC" for a topic). With --from-kafka the arrival
// column defaults to the record timestamp.
func (o *analyzeOptions) eventsArg(cmd *cobra.Command, args []string) (string, error) {
	f := cmd.Flags()
	kafkaFlag, err := spelling(cmd, "analyze", "from-kafka", "kafka")
	if err != nil {
		return "", exitcode.Bad(err)
	}
	switch {
	case o.kafka && len(args) == 1:
		return "", exitcode.Bad(fmt.Errorf("analyze: --%s reads a topic: give no EVENTS file (got %q)", kafkaFlag, args[0]))
	case o.kafka:
		if !f.Changed("arrival") {
			o.arrival = capture.ColTimestamp
		}
		return "kafka:" + o.kafkaFlags.topic, nil
	case len(args) == 0:
		return "", exitcode.Bad(errors.New("analyze: accepts 1 arg(s), received 0: give an EVENTS file, or --from-kafka"))
	}
	for _, name := range []string{"bootstrap", "topic", "topic-partitions", "start", "end", "read-uncommitted", "value-format"} {
		if f.Changed(name) {
			return "", exitcode.Bad(fmt.Errorf("analyze: --%s reads a topic: it needs --from-kafka", name))
		}
	}
	return args[0], nil
}

// runAnalyze is analyze's RunE: it checks the flags (f says which were
// given), reads the events of file ("-": standard input) and prints the
// report.
func runAnalyze(w io.Writer, f *pflag.FlagSet, file string, o analyzeOptions) error {
	bad := func(err error) error { return exitcode.Bad(fmt.Errorf("analyze: %w", err)) }
	opt, err := o.options(f, file)
	if err != nil {
		return bad(err)
	}
	a, err := analyze.New(opt)
	if err != nil {
		return exitcode.Bad(err)
	}
	in, size, closeIn, err := o.openInput(file)
	if err != nil {
		return err
	}
	defer closeIn()
	pb := &termprogress.Events{W: os.Stderr, Name: file, Size: size, Lines: progressLines}
	if !o.quiet {
		// BUG: analyze.New copied opt above, so this Progress never
		// reaches a: a file's bar stays at 0% and stdin gets none. Kept
		// by issue 12's refactor, which changes no behaviour; the fix is
		// to build a after this.
		in, opt.Progress = pb.Watch(in)
	}
	err = a.Read(in)
	pb.Finish()
	var le *analyze.LineError
	switch {
	case errors.As(err, &le):
		return exitcode.Bad(err)
	case o.kafka && err != nil:
		return kafkaExit("analyze", err)
	case err != nil:
		return &exitcode.Error{Code: 1, Err: err} // reading
	}
	rep := a.Finish()
	if !opt.Replay {
		if rep, err = o.replayPass(rep, opt, file); err != nil {
			return err
		}
	}
	if o.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.WriteText(w)
	return nil
}

// replayPass reads a file a second time to replay the state at the
// delay just recommended (the replay needs the delay before the first
// event). Standard input and a topic cannot be read twice: the report
// then says to give --delay.
func (o analyzeOptions) replayPass(rep *analyze.Report, opt analyze.Options, file string) (*analyze.Report, error) {
	rec := rep.Recommendation
	switch {
	case rec == nil || rec.DelayMs == 0:
		return rep, nil
	case o.kafka || file == "-":
		rep.Notes = append(rep.Notes, "no state curve: it is replayed at a delay known before the first event, and a topic or standard input cannot be read twice; give --delay "+rec.Delay)
		return rep, nil
	}
	in, _, closeIn, err := o.openInput(file)
	if err != nil {
		return nil, err
	}
	defer closeIn()
	opt.Replay, opt.Delay, opt.DelayBasis, opt.Progress = true, time.Duration(rec.DelayMs)*time.Millisecond, "the recommended delay", nil
	a, err := analyze.New(opt)
	if err != nil {
		return nil, exitcode.Bad(err)
	}
	if err := a.Read(in); err != nil {
		// The first pass read the same file without error.
		return nil, &exitcode.Error{Code: 1, Err: fmt.Errorf("analyze: second pass over %s: %w", file, err)}
	}
	return a.Finish(), nil
}

// options are analyze's flags as analyze.Options for file.
func (o analyzeOptions) options(f *pflag.FlagSet, file string) (analyze.Options, error) {
	opt := analyze.Options{
		File: file, Time: o.timeCol, Arrival: o.arrival, MaxKeys: o.maxKeys, SkipBad: o.skipBad,
		Percentile: o.percentile, Margin: o.margin, BytesPerKey: o.bytesPerKey, Partitions: o.partitions,
		RatePercentile: o.ratePercentile, Rate: o.rate,
	}
	for _, k := range strings.Split(o.keys, ",") {
		opt.Keys = append(opt.Keys, strings.TrimSpace(k))
	}
	if err := o.checkZeros(f); err != nil {
		return opt, err
	}
	var err error
	if opt.TimeUnit, err = analyze.ParseTimeUnit(o.timeUnit); err != nil {
		return opt, err
	}
	if o.futureTol != "" {
		if opt.FutureTolerance, err = analyze.ParseDuration("future-tolerance", o.futureTol,
			analyze.MinFutureTolerance, analyze.MaxFutureTolerance, analyze.FutureToleranceRange); err != nil {
			return opt, err
		}
	}
	if opt.RateWindow, err = analyze.ParseDuration("rate-window", o.rateWindow,
		analyze.MinRateWindow, analyze.MaxRateWindow, analyze.RateWindowRange); err != nil {
		return opt, err
	}
	if opt.Trigger, err = analyze.ParseDuration("trigger", o.trigger,
		analyze.MinTrigger, analyze.MaxTrigger, analyze.TriggerRange); err != nil {
		return opt, err
	}
	if f.Changed("delay") {
		if opt.Delay, err = analyze.ParseDuration("delay", o.delay, 0, sizing.MaxDelay, sizing.DelayRange); err != nil {
			return opt, err
		}
		opt.Replay, opt.DelayBasis = true, "--delay"
	}
	return opt, nil
}

// checkZeros refuses a 0 the user typed: a zero option is its default to
// analyze.New, so typed by the user it is out of range.
func (o analyzeOptions) checkZeros(f *pflag.FlagSet) error {
	for _, z := range []struct {
		name, rng string
		zero      bool
	}{
		{"percentile", analyze.PercentileRange, o.percentile == 0},
		{"rate-percentile", analyze.PercentileRange, o.ratePercentile == 0},
		{"rate", sizing.RateRange, o.rate == 0},
		{"bytes-per-key", sizing.BytesPerKeyRange, o.bytesPerKey == 0},
		{"partitions", sizing.PartitionsRange, o.partitions == 0},
		{"max-keys", analyze.MaxKeysRange, o.maxKeys == 0},
	} {
		if z.zero && f.Changed(z.name) {
			return sizing.RangeError(z.name, "0", z.rng)
		}
	}
	return nil
}

// openInput opens analyze's input: the topic with --from-kafka, else the file.
func (o analyzeOptions) openInput(file string) (io.Reader, int64, func(), error) {
	if !o.kafka {
		in, size, closeIn, err := analyze.OpenEvents(file)
		if err != nil {
			return nil, 0, nil, exitcode.Bad(fmt.Errorf("analyze: %w", err))
		}
		return in, size, closeIn, nil
	}
	src, err := o.kafkaFlags.source("analyze")
	if err != nil {
		return nil, 0, nil, err
	}
	if o.valueFormat != capture.JSONValues && o.valueFormat != capture.RawValues {
		return nil, 0, nil, exitcode.Bad(fmt.Errorf("analyze: --value-format %q: want json or raw", o.valueFormat))
	}
	rc := capture.Stream(context.Background(), src, o.valueFormat)
	return rc, -1, func() { rc.Close() }, nil
}

package driver

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/internal/suggest"
)

// Environment variables: CrashEnv arms a crash point like --crash-at;
// CrashFromEnv and CrashUntilEnv arm it from and disarm it at a wall-clock
// time, like --crash-from and --crash-until. A flag given wins.
const (
	CrashEnv      = "DEDUPSIM_CRASH_AT"
	CrashFromEnv  = "DEDUPSIM_CRASH_FROM"
	CrashUntilEnv = "DEDUPSIM_CRASH_UNTIL"
)

// Flags are the engine process's command-line flags (`dedupsim engine`),
// bound to a flag set by Register and turned into Options, every value
// checked, by Options. The CLI and the tests that re-exec their binary as
// the engine process (drivertest) share them, and live.RunProcess passes
// them.
type Flags struct {
	query, ckpt, bootstrap, outTopic, sink string
	startingOffsets, crashAt, appID, table string
	records, clock, sparkVersion           string
	inTopics                               []string
	trigger, timeout                       time.Duration
	maxBatches, fetchNumRetries            int
	untilIdle                              bool
	crashFrom, crashUntil, fetchIntervalMs int64
}

// Register defines the flags on fs.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.query, "query", "", "query YAML")
	fs.StringVar(&f.ckpt, "checkpoint", "", "checkpoint directory (created when missing)")
	fs.StringVar(&f.bootstrap, "bootstrap", "", "Kafka bootstrap addresses, comma-separated")
	fs.StringArrayVar(&f.inTopics, "input-topic", nil, "topic a source reads; once per query source, in the query's order")
	fs.StringVar(&f.outTopic, "output-topic", "", "topic the plain or transactional sink writes")
	fs.StringVar(&f.sink, "sink", "transactional", suggest.OrList(sink.Flags()))
	fs.StringVar(&f.table, "table", "", "directory of the "+suggest.OrList(sink.FlagsOn(sink.Pebble))+" sink's Pebble store")
	fs.StringVar(&f.appID, "app-id", "", "transactional or table sink's app id (default: the query's, else the checkpoint's query id)")
	fs.StringVar(&f.startingOffsets, "starting-offsets", "earliest", "where a new checkpoint starts: earliest, latest or a JSON offset")
	fs.DurationVar(&f.trigger, "trigger-interval", 0, "processing-time trigger interval (0: next batch as soon as the last ends)")
	fs.StringVar(&f.crashAt, "crash-at", "", "crash point POINT[:BATCH] at which the process kills itself (also "+CrashEnv+")")
	fs.Int64Var(&f.crashFrom, "crash-from", 0, "Unix time in ms before which --crash-at is not armed (also "+CrashFromEnv+")")
	fs.Int64Var(&f.crashUntil, "crash-until", 0, "Unix time in ms from which --crash-at is disarmed (also "+CrashUntilEnv+"; 0: never)")
	fs.StringVar(&f.sparkVersion, "spark-version", "", "the Spark version the query follows (3.5 to 4.3, or a full version such as 4.3.0; default: the query's spark_version)")
	fs.StringVar(&f.records, "records", "", "append a JSON line per sink write and batch execution to this file")
	fs.StringVar(&f.clock, "clock", "", "processing-time clock VIRT0_MS:WALL0_MS:SCALE: VIRT0 at wall time WALL0, SCALE times faster (a harness's compressed timeline; default the wall clock)")
	fs.IntVar(&f.maxBatches, "max-batches", 0, "stop after this many batch executions (0: no limit)")
	fs.BoolVar(&f.untilIdle, "until-idle", false, "stop at the first trigger with no new data")
	fs.DurationVar(&f.timeout, "kafka-timeout", 30*time.Second, "bound on one Kafka call of the source or sink")
	fs.IntVar(&f.fetchNumRetries, "fetch-offset-num-retries", kafkasource.DefaultFetchOffsetNumRetries,
		fmt.Sprintf("Spark's Kafka source option %s: attempts of an offset request that fails or answers a latest offset behind a known one [1, %d]",
			kafkasource.OptionFetchOffsetNumRetries, kafkasource.MaxFetchOffsetNumRetries))
	fs.Int64Var(&f.fetchIntervalMs, "fetch-offset-retry-interval-ms", kafkasource.DefaultFetchOffsetRetryIntervalMs,
		fmt.Sprintf("Spark's Kafka source option %s: milliseconds between two attempts [0, %d]",
			kafkasource.OptionFetchOffsetRetryIntervalMs, kafkasource.MaxFetchOffsetRetryIntervalMs))
}

// Options checks the parsed flags and returns the options they give.
// changed reports whether a flag was given (an environment variable only
// stands in for a flag left out); getenv reads the environment. An error
// is an *Error with ExitBadInput.
func (f *Flags) Options(changed func(flag string) bool, getenv func(string) string) (Options, error) {
	_, x, known := sink.LookupFlag(f.sink)
	tableSink := x.Store == sink.Pebble
	switch {
	case f.query == "" || f.ckpt == "" || f.bootstrap == "" || len(f.inTopics) == 0:
		return Options{}, badInput(errors.New("engine: --query, --checkpoint, --bootstrap and --input-topic are required"))
	case !known:
		return Options{}, badInput(fmt.Errorf("engine: --sink %q: want %s", f.sink, suggest.OrList(sink.Flags())))
	case tableSink && f.table == "":
		return Options{}, badInput(fmt.Errorf("engine: --sink %s needs --table DIR", f.sink))
	case !tableSink && f.outTopic == "":
		return Options{}, badInput(fmt.Errorf("engine: --sink %s needs --output-topic", f.sink))
	}
	crashAt, crashFrom, crashUntil := f.crashAt, f.crashFrom, f.crashUntil
	if !changed("crash-at") {
		crashAt = getenv(CrashEnv)
	}
	for _, w := range []struct {
		flag, env string
		v         *int64
	}{{"crash-from", CrashFromEnv, &crashFrom}, {"crash-until", CrashUntilEnv, &crashUntil}} {
		if v := getenv(w.env); v != "" && !changed(w.flag) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return Options{}, badInput(fmt.Errorf("engine: %s=%q: want Unix time in ms", w.env, v))
			}
			*w.v = n
		}
	}
	crash, err := ParseCrashAt(crashAt)
	if err != nil {
		return Options{}, badInput(fmt.Errorf("engine: %w", err))
	}
	clock, err := ParseClock(f.clock)
	if err != nil {
		return Options{}, badInput(fmt.Errorf("engine: %w", err))
	}
	o := Options{Query: f.query, Checkpoint: f.ckpt, Brokers: strings.Split(f.bootstrap, ","), InputTopics: f.inTopics,
		OutputTopic: f.outTopic, Sink: f.sink, Table: f.table, AppID: f.appID, StartingOffsets: f.startingOffsets,
		Trigger: f.trigger, KafkaTimeout: f.timeout, MaxBatches: f.maxBatches, UntilIdle: f.untilIdle,
		Clock: clock, Crash: crash, CrashFrom: crashFrom, CrashUntil: crashUntil, Records: f.records, SparkVersion: f.sparkVersion,
		FetchOffset: &kafkasource.FetchOffset{NumRetries: f.fetchNumRetries, RetryIntervalMs: f.fetchIntervalMs}}
	if err := o.check(f.bootstrap, changed("app-id")); err != nil {
		return Options{}, badInput(fmt.Errorf("engine: %w", err))
	}
	return o, nil
}

// Bounds of the engine's numeric flags.
const (
	maxEngineDuration = 24 * time.Hour
	maxMaxBatches     = 1 << 31
)

// check refuses every numeric or duration option outside its range, and
// empty names, with the range in human units and the flag's name.
func (o *Options) check(bootstrap string, appIDSet bool) error {
	switch {
	case o.MaxBatches < 0 || o.MaxBatches > maxMaxBatches:
		return fmt.Errorf("--max-batches %d: want 0 (no limit) or a count in [1, %d]", o.MaxBatches, maxMaxBatches)
	case o.Trigger < 0 || o.Trigger > maxEngineDuration || (o.Trigger > 0 && o.Trigger < time.Millisecond):
		return fmt.Errorf("--trigger-interval %v: want 0 (the next batch as soon as the last ends) or a duration in [1ms, 24h]", o.Trigger)
	case o.KafkaTimeout < time.Millisecond || o.KafkaTimeout > maxEngineDuration:
		return fmt.Errorf("--kafka-timeout %v: want a duration in [1ms, 24h]", o.KafkaTimeout)
	case o.CrashFrom < 0:
		return fmt.Errorf("--crash-from %d: want a Unix time in ms, >= 0", o.CrashFrom)
	case o.CrashUntil < 0:
		return fmt.Errorf("--crash-until %d: want a Unix time in ms, >= 0 (0: never disarmed)", o.CrashUntil)
	case o.Crash != nil && o.CrashUntil != 0 && o.CrashUntil <= o.CrashFrom:
		return fmt.Errorf("--crash-until %d is not after --crash-from %d: the crash point could never fire", o.CrashUntil, o.CrashFrom)
	case appIDSet && o.AppID == "":
		return errors.New("--app-id: must not be empty (leave it out for the default)")
	}
	if o.FetchOffset != nil {
		if err := kafkasource.CheckNumRetries(o.FetchOffset.NumRetries); err != nil {
			return fmt.Errorf("--fetch-offset-num-retries %d: %w", o.FetchOffset.NumRetries, err)
		}
		if err := kafkasource.CheckRetryIntervalMs(o.FetchOffset.RetryIntervalMs); err != nil {
			return fmt.Errorf("--fetch-offset-retry-interval-ms %d: %w", o.FetchOffset.RetryIntervalMs, err)
		}
	}
	for _, b := range o.Brokers {
		if strings.TrimSpace(b) == "" || strings.ContainsAny(b, " \t\n") {
			return fmt.Errorf("--bootstrap %q: want HOST:PORT[,HOST:PORT...] with no empty or spaced entry", bootstrap)
		}
	}
	for _, t := range o.InputTopics {
		if t == "" {
			return errors.New("--input-topic: a topic name must not be empty")
		}
	}
	return nil
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/analyze"
	"github.com/dedupsim/dedupsim/internal/exitcode"
	"github.com/dedupsim/dedupsim/sizing"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// sizeLong is size's --help text.
const sizeLong = `size applies seed 000's sizing rule: keys in state = arrival rate x retention, where retention
is about the delay for dropDuplicates with the event time in its keys and about twice the delay
for dropDuplicatesWithinWatermark; state = keys x bytes per key, spread over the state partitions
(spark.sql.shuffle.partitions).

With --executors and --executor-memory (Spark's notation: 512m, 8g, 1t; binary units; a bare
number is MiB) it checks the busiest executor: keys per partition x the partitions it holds
(ceil(partitions / executors)) x bytes per key, against --memory-fraction of its heap (default
0.25: Spark's unified memory takes spark.memory.fraction = 0.6 of the heap less 300 MiB, and the
HDFS-backed store's maps live in the rest, Spark's "user memory", about 38% of an 8g heap). That
check is for the HDFS-backed store, which keeps state as Java objects on the executor heap;
RocksDB keeps it on local disk and in native memory outside the heap. See docs/sizing.md.

Bytes per key, in this order: --bytes-per-key; --from-progress LOG, a real query's progress
(memoryUsedBytes / numRowsTotal, with its key rate, partitions and store, projected to --rate,
--delay and --executors); Spark's layout for --store hdfs|rocksdb of the key --keys with
--sample FILE (JSON Lines rows, as exec reads them) or --schema "id STRING(12), ts TIMESTAMP"
(UnsafeRows of key and value; on hdfs their Java objects and a map entry per version in memory,
--versions = spark.sql.streaming.maxBatchesToRetainInMemory, 2, plus the map a batch builds;
on rocksdb the SST bytes on disk); --measure, a scaled-down simulation on --store (memory or
hdfs: dedupsim's HDFS-backed analogue; pebble or rocksdb: its RocksDB); else seed 000's 100 B.
An on-disk figure is never checked against the heap: with RocksDB, size gives the disk per
executor and the native memory its confs allow instead. --skew is the busiest partition's keys
over the mean (Spark hash-partitions the key: distinct keys spread evenly, a hot key does not).
--json prints the figures, bytesPerKey with its source.`

// sizeOptions are size's flags.
type sizeOptions struct {
	rate, bytesPerKey, fraction, skew  float64
	delay, api, memory, store, execMem string
	keys, sample, schema, timeCol      string
	trigger, fromProgress, fromCkpt    string
	partitions, executors, versions    int
	eventTimeKey, measure, asJSON      bool
	seed                               uint64
}

func newSizeCmd() *cobra.Command {
	var o sizeOptions
	cmd := &cobra.Command{
		Use:   "size --rate R --delay D [--api API] [--partitions N] [--executors N --executor-memory 8g] [--measure]",
		Short: "Estimate dedup state: rate x retention x bytes per key, per partition and per executor",
		Long:  sizeLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSize(cmd.OutOrStdout(), cmd.Flags(), o)
		},
	}
	f := cmd.Flags()
	f.Var((*rateFlag)(&o.rate), "rate", "arrival rate of distinct keys (50000, 50k, 1.5M) "+sizing.RateRange)
	f.StringVar(&o.delay, "delay", "", `watermark delay ("2h", "2 hours") `+sizing.DelayRange)
	f.StringVar(&o.api, "api", "dropDuplicatesWithinWatermark", "dropDuplicatesWithinWatermark | dropDuplicates | batchDropDuplicates")
	f.IntVar(&o.partitions, "partitions", 200, "spark.sql.shuffle.partitions "+sizing.PartitionsRange)
	f.Float64Var(&o.bytesPerKey, "bytes-per-key", 100, "state bytes per key "+sizing.BytesPerKeyRange)
	f.IntVar(&o.executors, "executors", 1, "executors the state partitions are spread over (spark-submit --num-executors) "+sizing.ExecutorsRange)
	f.StringVar(&o.execMem, "executor-memory", "", `heap of each executor, in Spark's notation ("8g", "512m") `+sizing.ExecutorMemoryRange)
	f.Float64Var(&o.fraction, "memory-fraction", sizing.DefaultMemoryFraction, "share of each executor's heap state may take "+sizing.FractionRange)
	f.StringVar(&o.memory, "memory", "", `total memory for state across executors ("64GB", "512MiB"), instead of --executors and --executor-memory`)
	f.BoolVar(&o.eventTimeKey, "event-time-in-key", true, "dropDuplicates: the keys include the event-time column (state is evicted)")
	f.BoolVar(&o.measure, "measure", false, "measure bytes per key on a scaled-down simulation and size from them")
	f.StringVar(&o.store, "store", "", "Spark's state store: hdfs | rocksdb (--measure: memory | pebble, dedupsim's analogues; default pebble)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the --measure simulation")
	f.StringVar(&o.keys, "keys", "", "dedup key columns, comma-separated, for the layout (with --sample or --schema)")
	f.StringVar(&o.sample, "sample", "", "JSON Lines rows (as exec reads them) to measure the key's layout from")
	f.StringVar(&o.schema, "schema", "", `key columns in DDL with the mean width of variable ones: "id STRING(12), ts TIMESTAMP"`)
	f.StringVar(&o.timeCol, "time", "ts", "event-time column (dropDuplicates keeps it in the key as a timestamp)")
	f.StringVar(&o.trigger, "trigger", "1m", "trigger interval: the share of keys a batch evicts is trigger / retention (HDFS versions) "+analyze.TriggerRange)
	f.IntVar(&o.versions, "versions", sizing.DefaultVersionsInMemory, "spark.sql.streaming.maxBatchesToRetainInMemory: versions the HDFS-backed store keeps [1, 100]")
	f.StringVar(&o.fromProgress, "from-progress", "", "a real query's progress log (listener JSON Lines, recentProgress, driver or event log): bytes per key, key rate, partitions and store from it")
	f.StringVar(&o.fromCkpt, "from-checkpoint", "", "a query's checkpoint: --skew from its partitions' key counts (busiest / mean, as dedupsim inspect counts them), read only")
	f.Float64Var(&o.skew, "skew", 1, "busiest partition's keys over the mean partition's "+sizing.SkewRange)
	f.BoolVar(&o.asJSON, "json", false, "print the figures as JSON")
	return cmd
}

// runSize is size's RunE: it checks the flags (f says which were given),
// finds the bytes per key (given, from a progress log, from the layout,
// measured or assumed) and prints the estimate.
func runSize(w io.Writer, f *pflag.FlagSet, o sizeOptions) error {
	bad := func(err error) error { return exitcode.Bad(fmt.Errorf("size: %w", err)) }
	spark, sim, fp, ck, err := sizeInputs(f, &o)
	if err != nil {
		return err
	}
	p, err := o.params(f, fp)
	if err != nil {
		return bad(err)
	}
	cl, err := o.cluster(f)
	if err != nil {
		return bad(err)
	}
	if err := p.Check(); err != nil {
		return bad(err)
	}
	lay, err := o.layout(f, p, spark)
	if err != nil {
		return err
	}
	fig, m, err := sizing.FigureFor(p, sizing.FigureInput{Given: f.Changed("bytes-per-key"), Measure: o.measure, Seed: o.seed,
		Spark: spark, Sim: sim, Layout: lay, Progress: fp})
	if err != nil {
		return &exitcode.Error{Code: 1, Err: err}
	}
	p.BytesPerKey = fig.Value
	if err := sizing.CheckBytesPerKey("bytes-per-key", p.BytesPerKey); err != nil {
		return bad(err)
	}
	e, err := sizing.Compute(p)
	if err != nil {
		return bad(err)
	}
	if o.asJSON {
		out, err := sizing.ReportJSON(e, fig, lay, fp, cl, f.Changed("executors"))
		if err != nil {
			return bad(err)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	sizing.WriteText(w, e, fig, cl, f.Changed("executors"), fp, ck, m, o.bytesPerKey)
	return nil
}

// sizeInputs reads the store and the --from-progress and
// --from-checkpoint inputs, which may set the skew and the partitions in o.
func sizeInputs(f *pflag.FlagSet, o *sizeOptions) (spark, sim string, fp *sizing.FromProgress, ck *sizing.CheckpointSkew, err error) {
	bad := func(err error) error { return exitcode.Bad(fmt.Errorf("size: %w", err)) }
	spark, sim = "", "pebble"
	if f.Changed("store") {
		if spark, sim, err = sizing.ParseSparkStore(o.store); err != nil {
			return "", "", nil, nil, bad(err)
		}
	}
	if f.Changed("from-progress") {
		got, err := sizing.ReadProgress(o.fromProgress)
		if err != nil {
			return "", "", nil, nil, bad(fmt.Errorf("--from-progress %w", err))
		}
		fp = &got
		switch {
		case spark == "":
			spark = got.Store
		case got.Store != "" && got.Store != spark:
			return "", "", nil, nil, bad(fmt.Errorf("--store %s, but the progress in %s is of the %s store", o.store, o.fromProgress, got.Store))
		}
	}
	if f.Changed("from-checkpoint") {
		if f.Changed("skew") {
			return "", "", nil, nil, bad(errors.New("give --skew or --from-checkpoint, not both"))
		}
		got, err := sizing.ReadCheckpointSkew(o.fromCkpt)
		if err != nil {
			return "", "", nil, nil, bad(fmt.Errorf("--from-checkpoint %w", err))
		}
		ck, o.skew = &got, got.Skew
		if !f.Changed("partitions") && fp == nil {
			o.partitions = got.Partitions
			f.Set("partitions", strconv.Itoa(got.Partitions))
		}
	}
	return spark, sim, fp, ck, nil
}

// layout reads --keys with --sample or --schema into the store's layout
// (nil when neither is given).
func (o sizeOptions) layout(f *pflag.FlagSet, p sizing.Params, spark string) (*sizing.Layout, error) {
	bad := func(err error) error { return exitcode.Bad(fmt.Errorf("size: %w", err)) }
	hasSample, hasSchema := f.Changed("sample"), f.Changed("schema")
	switch {
	case !hasSample && !hasSchema:
		if f.Changed("keys") {
			return nil, bad(errors.New("--keys needs --sample FILE or --schema DDL: the widths of the key columns"))
		}
		return nil, nil
	case hasSample && hasSchema:
		return nil, bad(errors.New("give --sample or --schema, not both"))
	case spark == "":
		return nil, bad(errors.New("--sample and --schema need --store hdfs or rocksdb: a key costs a different number of bytes in each"))
	case f.Changed("bytes-per-key"):
		return nil, bad(errors.New("give --bytes-per-key or --sample/--schema, not both"))
	}
	if o.versions < 1 || o.versions > 100 {
		return nil, bad(sizing.RangeError("versions", strconv.Itoa(o.versions), "[1, 100]"))
	}
	trig, err := analyze.ParseDuration("trigger", o.trigger, analyze.MinTrigger, analyze.MaxTrigger, analyze.TriggerRange)
	if err != nil {
		return nil, bad(err)
	}
	var keys []string
	var schema []sizing.Column
	if hasSchema {
		if schema, err = sizing.ParseSchema(o.schema); err != nil {
			return nil, bad(err)
		}
	} else {
		if !f.Changed("keys") {
			return nil, bad(errors.New("--sample needs --keys: the dedup columns to read from each row"))
		}
		for _, k := range strings.Split(o.keys, ",") {
			if k = strings.TrimSpace(k); k == "" {
				return nil, bad(errors.New("--keys has an empty column name"))
			}
			keys = append(keys, k)
		}
	}
	l, err := sizing.LayoutFor(p, spark, schema, keys, o.sample, o.timeCol, trig, o.versions)
	if err != nil {
		return nil, bad(err)
	}
	return l, nil
}

// params parses and checks the flags of the rule itself (--rate, --delay,
// --api, --memory) and those of --measure; Params.Check then checks the
// numbers against their ranges.
func (o sizeOptions) params(f *pflag.FlagSet, fp *sizing.FromProgress) (sizing.Params, error) {
	if !f.Changed("rate") {
		if fp == nil || fp.KeyRatePerSec <= 0 {
			return sizing.Params{}, errors.New("--rate is required: the arrival rate of distinct keys, keys/s (dedupsim analyze measures it)")
		}
		o.rate = fp.Rate()
	}
	if fp != nil && !f.Changed("partitions") && fp.Partitions > 0 {
		o.partitions = int(fp.Partitions)
	}
	if !f.Changed("delay") {
		return sizing.Params{}, errors.New(`--delay is required: the watermark delay ("2h", "2 hours")`)
	}
	d, err := analyze.ParseDuration("delay", o.delay, 0, sizing.MaxDelay, sizing.DelayRange)
	if err != nil {
		return sizing.Params{}, err
	}
	a, err := sizing.ParseAPI(o.api)
	if err != nil {
		return sizing.Params{}, err
	}
	if o.measure {
		if ret, unbounded := sizing.Retention(a, d, o.eventTimeKey); unbounded || ret == 0 {
			return sizing.Params{}, fmt.Errorf("--measure: %s keeps no state with a plateau to measure (retention %s)", a, map[bool]string{true: "unbounded", false: "0"}[unbounded])
		}
	}
	mem := 0.0
	if f.Changed("memory") {
		if mem, err = sizing.ParseBytes(o.memory); err != nil {
			return sizing.Params{}, err
		}
	}
	return sizing.Params{RatePerSec: o.rate, Delay: d, API: a, Partitions: o.partitions,
		BytesPerKey: o.bytesPerKey, MemoryBytes: mem, EventTimeInKey: o.eventTimeKey}, nil
}

// cluster parses and checks the executor flags: --memory or --executors
// with --executor-memory, and --memory-fraction only with the latter.
func (o sizeOptions) cluster(f *pflag.FlagSet) (sizing.Cluster, error) {
	cl := sizing.Cluster{Executors: o.executors, MemoryFraction: o.fraction, Skew: o.skew}
	if err := sizing.CheckSkew("skew", o.skew); err != nil {
		return cl, err
	}
	switch {
	case f.Changed("memory") && (f.Changed("executor-memory") || f.Changed("executors")):
		return cl, errors.New("give --memory (the total for state) or --executors and --executor-memory (per executor), not both")
	case f.Changed("executor-memory") && !f.Changed("executors"):
		return cl, errors.New("--executor-memory needs --executors: the fit is per executor, for the partitions each one holds")
	case f.Changed("memory-fraction") && !f.Changed("executor-memory"):
		return cl, errors.New("--memory-fraction needs --executor-memory: it is the share of each executor's heap state may take")
	}
	if f.Changed("executor-memory") {
		var err error
		if cl.ExecutorMemory, err = sizing.ParseExecutorMemory(o.execMem); err != nil {
			return cl, err
		}
	}
	if f.Changed("executors") {
		if err := sizing.CheckExecutors("executors", o.executors); err != nil {
			return cl, err
		}
		if err := sizing.CheckFraction("memory-fraction", o.fraction); err != nil {
			return cl, err
		}
	}
	return cl, nil
}

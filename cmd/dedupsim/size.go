package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/analyze"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/inspect"
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

// bpkFigure is the bytes per key size uses and where they come from.
// Kind is "heap" (Java objects on the executor heap: the HDFS-backed
// store), "disk" (RocksDB's bytes on local disk, never checked against a
// heap) or "assumed" (seed 000's 100 B, whatever the store).
type bpkFigure struct {
	Value  float64 `json:"value"`
	Source string  `json:"source"`
	Kind   string  `json:"kind"`
	Store  string  `json:"store,omitempty"`
}

// runSize is size's RunE: it checks the flags (f says which were given),
// finds the bytes per key (given, from a progress log, from the layout,
// measured or assumed) and prints the estimate.
func runSize(w io.Writer, f *pflag.FlagSet, o sizeOptions) error {
	bad := func(err error) error { return badInput(fmt.Errorf("size: %w", err)) }
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
	fig, m, err := sizeFigure(f, o, p, spark, sim, lay, fp)
	if err != nil {
		return err
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
		return writeSizeJSON(w, e, fig, lay, fp, cl, f.Changed("executors"))
	}
	if e.Unbounded {
		fmt.Fprintf(w, "state: unbounded\n%s\n%s\n", e.Formula, e.StoreReason)
		return nil
	}
	if fp != nil {
		writeFromProgress(w, fp)
	}
	if ck != nil {
		fmt.Fprintf(w, "%-18s %s: %d partitions, busiest %d keys (partition %d), mean %s: skew %s\n", "from checkpoint", ck.Dir, ck.Partitions, ck.Busiest, ck.BusiestID, trimFloat(math.Round(ck.Mean*10)/10), trimFloat(math.Round(ck.Skew*100)/100))
	}
	writeSize(w, e, fig, cl, f.Changed("executors"))
	if m != nil {
		writeMeasurement(w, m, o.bytesPerKey)
	}
	return nil
}

// sizeInputs reads the store and the --from-progress and
// --from-checkpoint inputs, which may set the skew and the partitions in o.
func sizeInputs(f *pflag.FlagSet, o *sizeOptions) (spark, sim string, fp *sizing.FromProgress, ck *ckptSkew, err error) {
	bad := func(err error) error { return badInput(fmt.Errorf("size: %w", err)) }
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
		got, err := readCkptSkew(o.fromCkpt)
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

// eventTimeText is the RocksDB figure's share for an event time in the key.
func eventTimeText(lay *sizing.Layout) string {
	if !lay.EventTimeInKey {
		return ""
	}
	return fmt.Sprintf(" + %s B for the event time in the key", trimFloat(sizing.RocksEventTimeBytes))
}

// sizeFigure finds the bytes per key and says where they come from:
// given, from a progress log, from Spark's layout, measured or assumed.
// An on-disk figure is never labelled heap, so it never meets the heap
// check.
func sizeFigure(f *pflag.FlagSet, o sizeOptions, p sizing.Params, spark, sim string, lay *sizing.Layout, fp *sizing.FromProgress) (bpkFigure, *sizing.Measurement, error) {
	fig := bpkFigure{Value: p.BytesPerKey, Store: spark, Kind: "assumed",
		Source: "assumed (--bytes-per-key; seed 000's RocksDB figure: key, expiry and storage overhead)"}
	var m *sizing.Measurement
	switch {
	case f.Changed("bytes-per-key"):
		fig.Source, fig.Kind = "assumed (--bytes-per-key)", map[string]string{"hdfs": "heap", "rocksdb": "disk", "": "assumed"}[spark]
	case fp != nil && fp.Store == "hdfs":
		// memoryUsedBytes is after the commit; a batch also builds the map
		// of the next version: one more entry per key.
		fig.Value = fp.BytesPerKey + sizing.StoreLayout("hdfs", 0, 0, 1).EntryBytes
		fig.Kind = "heap"
		fig.Source = fmt.Sprintf("from %s: memoryUsedBytes / numRowsTotal = %s B over its %d largest batches (HDFS-backed store: the versions in memory), + %s B for the map entry of the version a batch builds",
			fp.Path, trimFloat(math.Round(fp.BytesPerKey*10)/10), fp.Plateau, trimFloat(sizing.StoreLayout("hdfs", 0, 0, 1).EntryBytes))
	case lay != nil && spark == "hdfs":
		fig.Value, fig.Kind = lay.HeapPerKey, "heap"
		fig.Source = fmt.Sprintf("Spark's layout on the HDFS-backed store: key UnsafeRow %s B + value %s B, as 2 UnsafeRow objects and 2 byte arrays (%s B, shared by the versions), and a map entry of %s B in each of the %d versions kept (spark.sql.streaming.maxBatchesToRetainInMemory) and in the map a batch builds, with %s of the keys evicted per batch (trigger / retention); memoryUsedBytes / numRowsTotal will show about %s B, and up to %s B on large maps, where Spark's SizeEstimator counts each version's rows (docs/sizing.md)",
			trimFloat(lay.KeyRowBytes), trimFloat(lay.ValueRow), trimFloat(lay.RowsBytes), trimFloat(lay.EntryBytes), lay.Versions, pct(lay.Churn), trimFloat(math.Round(lay.MemoryUsedPerKey)),
			trimFloat(math.Round(float64(lay.Versions)*(lay.RowsBytes+lay.EntryBytes))))
	case lay != nil:
		fig.Value, fig.Kind = lay.DiskPerKey, "disk"
		fig.Source = fmt.Sprintf("Spark's layout on RocksDB, calibrated on Spark 4.1.1's SST files: the key's values %s B x %s (lz4 cannot shrink random ids) + %s B per entry (internal key, lengths, bloom filter)%s: bytes on local disk for random ids (UUIDs, hashes); ids that count up or share prefixes compress to less (docs/sizing.md)",
			trimFloat(math.Round(lay.KeyValueBytes*10)/10), trimFloat(sizing.RocksLiteralFactor), trimFloat(sizing.RocksEntryBytes), eventTimeText(lay))
	case fp != nil && fp.Store == "rocksdb":
		fig.Kind = "disk"
		fig.Source = "assumed: seed 000's RocksDB figure; the progress's memoryUsedBytes is RocksDB's native memory (block cache, memtables), per instance, not per key: give --keys with --sample or --schema for the disk bytes"
	case o.measure:
		got, err := sizing.Measure(p, sim, o.seed)
		if err != nil {
			return bpkFigure{}, nil, &exitError{code: 1, err: err}
		}
		bpk, src := got.BytesPerKey()
		if err := sizing.CheckBytesPerKey("measure", bpk); err != nil {
			return bpkFigure{}, nil, &exitError{code: 1, err: fmt.Errorf("size: the measured bytes per key are out of range: %w", err)}
		}
		m, fig.Value, fig.Source = &got, bpk, src
		fig.Kind, fig.Store = "heap", "hdfs"
		if sim == "pebble" {
			fig.Kind, fig.Store = "disk", "rocksdb"
		}
	case spark == "rocksdb":
		fig.Kind = "disk"
	}
	return fig, m, nil
}

// ckptSkew is the spread of a checkpoint's state over its partitions.
type ckptSkew struct {
	Dir                string
	Partitions         int
	Busiest, BusiestID int
	Mean, Skew         float64
}

// readCkptSkew reads the per-partition key counts of the checkpoint's
// first stateful operator with inspect (read only) and returns the
// busiest partition over the mean.
func readCkptSkew(dir string) (ckptSkew, error) {
	r, err := inspect.Inspect(dir)
	if err != nil {
		return ckptSkew{}, err
	}
	if len(r.Operators) == 0 {
		return ckptSkew{}, fmt.Errorf("%s: no state operator", dir)
	}
	op := r.Operators[0]
	out := ckptSkew{Dir: dir, Partitions: op.NumPartitions}
	var total int64
	for _, pt := range op.Partitions {
		if pt.Keys < 0 {
			return out, fmt.Errorf("%s: partition %d's keys cannot be counted (%s); give --skew", dir, pt.ID, pt.From)
		}
		total += pt.Keys
		if int(pt.Keys) > out.Busiest {
			out.Busiest, out.BusiestID = int(pt.Keys), pt.ID
		}
	}
	if out.Partitions < 1 || total == 0 {
		return out, fmt.Errorf("%s: the state is empty: no spread to read; give --skew", dir)
	}
	out.Mean = float64(total) / float64(out.Partitions)
	out.Skew = math.Max(1, float64(out.Busiest)/out.Mean)
	return out, nil
}

// layout reads --keys with --sample or --schema into the store's layout
// (nil when neither is given).
func (o sizeOptions) layout(f *pflag.FlagSet, p sizing.Params, spark string) (*sizing.Layout, error) {
	bad := func(err error) error { return badInput(fmt.Errorf("size: %w", err)) }
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
	var keyRow float64
	var keyCols []sizing.Column
	if hasSchema {
		cols, err := sizing.ParseSchema(o.schema)
		if err != nil {
			return nil, bad(err)
		}
		keyCols = sizing.KeyColumns(p.API, cols, o.timeCol, p.EventTimeInKey)
		keyRow = sizing.RowBytes(keyCols)
	} else {
		if !f.Changed("keys") {
			return nil, bad(errors.New("--sample needs --keys: the dedup columns to read from each row"))
		}
		var keys []sizing.Column
		for _, k := range strings.Split(o.keys, ",") {
			if k = strings.TrimSpace(k); k == "" {
				return nil, bad(errors.New("--keys has an empty column name"))
			}
			keys = append(keys, sizing.Column{Name: k})
		}
		var names []string
		for _, c := range sizing.KeyColumns(p.API, keys, o.timeCol, p.EventTimeInKey) {
			names = append(names, c.Name)
		}
		in, err := os.Open(o.sample)
		if err != nil {
			return nil, bad(fmt.Errorf("--sample: %w", err))
		}
		defer in.Close()
		s, err := sizing.ReadSample(in, o.sample, names, o.timeCol)
		if err != nil {
			return nil, badInput(fmt.Errorf("size: --sample %w", err))
		}
		keyRow, keyCols = s.KeyRowBytes, s.Columns
	}
	churn := 0.0
	if ret, unbounded := sizing.Retention(p.API, p.Delay, p.EventTimeInKey); !unbounded && ret > 0 {
		churn = math.Min(1, trig.Seconds()/ret)
	}
	l := sizing.StoreLayout(spark, keyRow, churn, o.versions)
	l.SetKeyColumns(keyCols, o.timeCol)
	return &l, nil
}

// params parses and checks the flags of the rule itself (--rate, --delay,
// --api, --memory) and those of --measure; Params.Check then checks the
// numbers against their ranges.
func (o sizeOptions) params(f *pflag.FlagSet, fp *sizing.FromProgress) (sizing.Params, error) {
	if !f.Changed("rate") {
		if fp == nil || fp.KeyRatePerSec <= 0 {
			return sizing.Params{}, errors.New("--rate is required: the arrival rate of distinct keys, keys/s (dedupsim analyze measures it)")
		}
		o.rate = fp.KeyRatePerSec
		if o.rate < 1000 {
			o.rate = math.Max(math.Round(o.rate*100)/100, 0.01)
		} else {
			o.rate = math.Round(o.rate)
		}
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

// writeSize prints the estimate, each figure once with where it comes from.
func writeSize(w io.Writer, e sizing.Estimate, fig bpkFigure, cl sizing.Cluster, haveExecutors bool) {
	p := e.Params
	row := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-18s %s\n", label, fmt.Sprintf(format, args...))
	}
	ret := sizing.Seconds(e.RetentionSec)
	switch {
	case p.API == query.BatchDropDuplicates:
		row("retention", "none: batchDropDuplicates keeps no state across batches")
	case p.API == query.DropDuplicatesWithinWatermark:
		row("retention", "%s = 2 x delay (a key stays until the watermark, which trails the newest event time by the delay, passes its event time + delay)", ret)
	default:
		row("retention", "%s = the delay (a key stays until the watermark passes its event time)", ret)
	}
	if e.RetentionSec == 0 {
		row("keys in state", "0")
		return
	}
	row("keys in state", "%s = %s keys/s x %s", keyCount(e.Keys), rateText(p.RatePerSec), ret)
	row("bytes per key", "%s B, %s", trimFloat(math.Round(p.BytesPerKey*10)/10), fig.Source)
	row("total state", "%s", sizing.Bytes(e.TotalBytes))
	row("per partition", "%s keys, %s (%d partitions)", keyCount(e.Keys/float64(p.Partitions)), sizing.Bytes(e.PerPartition), p.Partitions)
	if p.MemoryBytes > 0 {
		row("store", "%s: %s", e.Store, e.StoreReason)
	}
	if !haveExecutors {
		return
	}
	fit, err := e.FitOn(cl)
	if err != nil {
		row("per executor", "%v", err)
		return
	}
	spread := "an even spread"
	if cl.Skew > 1 {
		spread = fmt.Sprintf("the busiest partition %s x the mean (--skew), %s keys", trimFloat(math.Round(cl.Skew*100)/100), keyCount(fit.BusiestPartitionKeys))
	}
	row("per executor", "%d of %d partitions on the busiest of %d executors (%s): %s keys, %s (%s)",
		fit.PartitionsPerExecutor, p.Partitions, cl.Executors, spread, keyCount(fit.KeysPerExecutor), sizing.Bytes(fit.BytesPerExecutor), sizing.BinaryBytes(fit.BytesPerExecutor))
	if fig.Kind == "disk" {
		writeRocks(w, row, fit, fig)
		return
	}
	if cl.ExecutorMemory == 0 {
		row("fits", "unknown: give --executor-memory to check the executor heap")
		return
	}
	row("heap budget", "%s = %s (--memory-fraction) x %s heap (--executor-memory %s); Spark's user memory, where the HDFS-backed store's maps live, is %s",
		sizing.BinaryBytes(fit.BudgetBytes), trimFloat(fit.MemoryFraction), sizing.BinaryBytes(float64(cl.ExecutorMemory)), sizing.MemoryString(cl.ExecutorMemory), sizing.BinaryBytes(fit.UserMemoryBytes))
	verdict := "yes"
	if !fit.Fits {
		verdict = "no"
	}
	row("fits", "%s: %s of state per executor is %s of the %s budget (HDFS-backed store: state as Java objects on the executor heap)",
		verdict, sizing.BinaryBytes(fit.BytesPerExecutor), pct(fit.Share), sizing.BinaryBytes(fit.BudgetBytes))
	if fig.Kind == "assumed" {
		row("", "on the heap a key costs more than RocksDB's 100 B: Java objects (UnsafeRow key and value, a map entry), and 2 versions kept in memory (spark.sql.streaming.maxBatchesToRetainInMemory); give --store hdfs with --keys and --sample or --schema, or --from-progress with a staging run's progress")
	}
	if !fit.Fits {
		var ways []string
		if fit.ExecutorsNeeded > 0 {
			ways = append(ways, fmt.Sprintf("%d executors", fit.ExecutorsNeeded))
		}
		if fit.MemoryNeeded > 0 {
			ways = append(ways, fmt.Sprintf("--executor-memory %s", sizing.MemoryString(fit.MemoryNeeded)))
		}
		ways = append(ways, "the RocksDB store (spark.sql.streaming.stateStore.providerClass = org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider)")
		row("", "it fits with %s", orJoin(ways))
	}
	if fig.Kind == "heap" {
		row("with RocksDB", "state moves to local disk and native memory, off the heap: size it with --store rocksdb")
		return
	}
	row("with RocksDB", "the %s per executor is on local disk and in native memory, not on the heap: the budget above does not bind it; bound its memory with spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage", sizing.BinaryBytes(fit.BytesPerExecutor))
}

// writeRocks is the executor check of RocksDB: disk, and the native memory
// its confs allow; an on-disk figure is never checked against the heap.
func writeRocks(w io.Writer, row func(string, string, ...any), fit sizing.Fit, fig bpkFigure) {
	perInstance := float64(sizing.RocksBlockCacheMB+sizing.RocksWriteBufferMB*sizing.RocksMaxWriteBuffers) * (1 << 20)
	row("local disk", "%s per executor (%s B/key on disk), in spark.local.dir", sizing.BinaryBytes(fit.BytesPerExecutor), trimFloat(math.Round(fig.Value*10)/10))
	row("heap", "not checked: %s B/key is RocksDB's bytes on disk, not the heap's; RocksDB keeps state off the heap", trimFloat(math.Round(fig.Value*10)/10))
	row("native memory", "up to %s per executor unbounded: %d state store instances x (blockCacheSizeMB %d + writeBufferSizeMB %d x maxWriteBufferNumber %d, RocksDB's defaults for -1); with spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage=true all instances share maxMemoryUsageMB (%d MiB, writeBufferCacheRatio 0.5 of it for memtables through the write buffer manager, highPriorityPoolRatio 0.1 for index and filter blocks); add it to spark.executor.memoryOverhead",
		sizing.BinaryBytes(perInstance*float64(fit.PartitionsPerExecutor)), fit.PartitionsPerExecutor, sizing.RocksBlockCacheMB, sizing.RocksWriteBufferMB, sizing.RocksMaxWriteBuffers, sizing.RocksMaxMemoryMB)
}

// writeFromProgress prints what the progress log said.
func writeFromProgress(w io.Writer, fp *sizing.FromProgress) {
	store := fp.Store
	if store == "" {
		store = "unknown (no store-specific custom metrics)"
	}
	fmt.Fprintf(w, "%-18s %s: query %s, %d batches with state, store %s, %d partitions, %s keys/s new (numRowsUpdated over %s); at batch %d numRowsTotal %s, memoryUsedBytes %s\n",
		"from progress", fp.Path, fp.QueryID, fp.Batches, store, fp.Partitions, rateText(math.Round(fp.KeyRatePerSec*100)/100), sizing.Seconds(fp.SpanSec),
		fp.LastBatchID, analyze.Group(fp.LastNumRowsTotal), sizing.Bytes(float64(fp.LastMemoryUsedBytes)))
}

// sizeJSON is size --json.
type sizeJSON struct {
	API          string               `json:"api"`
	RatePerSec   float64              `json:"ratePerSec"`
	DelayMs      int64                `json:"delayMs"`
	RetentionSec float64              `json:"retentionSec"`
	Unbounded    bool                 `json:"unbounded,omitempty"`
	KeysInState  float64              `json:"keysInState"`
	BytesPerKey  bpkFigure            `json:"bytesPerKey"`
	Layout       *sizing.Layout       `json:"layout,omitempty"`
	FromProgress *sizing.FromProgress `json:"fromProgress,omitempty"`
	TotalBytes   float64              `json:"totalBytes"`
	Partitions   int                  `json:"partitions"`
	PerPartition float64              `json:"perPartitionBytes"`
	Executor     *sizeExecutorJSON    `json:"executor,omitempty"`
}

type sizeExecutorJSON struct {
	Executors             int     `json:"executors"`
	PartitionsPerExecutor int     `json:"partitionsPerExecutor"`
	Skew                  float64 `json:"skew"`
	BusiestPartitionKeys  float64 `json:"busiestPartitionKeys"`
	KeysPerExecutor       float64 `json:"keysPerExecutor"`
	BytesPerExecutor      float64 `json:"bytesPerExecutor"`
	// HeapCheck says whether the bytes were checked against the heap:
	// "applied", "no --executor-memory", or why not (an on-disk figure).
	HeapCheck       string  `json:"heapCheck"`
	BudgetBytes     float64 `json:"budgetBytes,omitempty"`
	Fits            *bool   `json:"fits,omitempty"`
	ExecutorsNeeded int     `json:"executorsNeeded,omitempty"`
	NativeMaxBytes  float64 `json:"rocksdbNativeMaxBytes,omitempty"`
}

func writeSizeJSON(w io.Writer, e sizing.Estimate, fig bpkFigure, lay *sizing.Layout, fp *sizing.FromProgress, cl sizing.Cluster, haveExecutors bool) error {
	p := e.Params
	out := sizeJSON{API: string(p.API), RatePerSec: p.RatePerSec, DelayMs: p.Delay.Milliseconds(), RetentionSec: e.RetentionSec,
		Unbounded: e.Unbounded, KeysInState: e.Keys, BytesPerKey: fig, Layout: lay, FromProgress: fp,
		TotalBytes: e.TotalBytes, Partitions: p.Partitions, PerPartition: e.PerPartition}
	if haveExecutors && !e.Unbounded && e.RetentionSec > 0 {
		fit, err := e.FitOn(cl)
		if err != nil {
			return badInput(fmt.Errorf("size: %w", err))
		}
		x := &sizeExecutorJSON{Executors: cl.Executors, PartitionsPerExecutor: fit.PartitionsPerExecutor, Skew: math.Max(cl.Skew, 1),
			BusiestPartitionKeys: fit.BusiestPartitionKeys, KeysPerExecutor: fit.KeysPerExecutor, BytesPerExecutor: fit.BytesPerExecutor}
		switch {
		case fig.Kind == "disk":
			x.HeapCheck = "not applicable: the bytes per key are RocksDB's on disk, off the heap"
			x.NativeMaxBytes = float64(sizing.RocksBlockCacheMB+sizing.RocksWriteBufferMB*sizing.RocksMaxWriteBuffers) * (1 << 20) * float64(fit.PartitionsPerExecutor)
		case cl.ExecutorMemory == 0:
			x.HeapCheck = "no --executor-memory"
		default:
			x.HeapCheck, x.BudgetBytes, x.ExecutorsNeeded = "applied", fit.BudgetBytes, fit.ExecutorsNeeded
			fits := fit.Fits
			x.Fits = &fits
		}
		out.Executor = x
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeMeasurement prints the scaled-down simulation's check of the rule.
func writeMeasurement(w io.Writer, m *sizing.Measurement, assumed float64) {
	fmt.Fprintf(w, "\nmeasured on a simulation scaled by 1/%.0f (%s store, rate %.0f/s, delay %s):\n", m.Scale, m.Store, m.SimRatePerSec, m.SimDelay)
	fmt.Fprintf(w, "  %-28s %16s %16s\n", "", "rule", "measured")
	fmt.Fprintf(w, "  %-28s %16.0f %16.0f\n", "plateau numRowsTotal (sim)", m.PredictedPlateau, m.MeasuredPlateau)
	fmt.Fprintf(w, "  %-28s %16s %16.2f\n", "plateau / rate x retention", "1.00", m.Ratio)
	fmt.Fprintf(w, "  %-28s %16s %16.1f\n", "bytes per key in memory", trimFloat(assumed), m.MemoryPerKey)
	disk := "n/a"
	if m.DiskPerKey > 0 {
		disk = fmt.Sprintf("%.1f", m.DiskPerKey)
	}
	fmt.Fprintf(w, "  %-28s %16s %16s\n", "bytes per key on disk", "-", disk)
}

func keyCount(v float64) string {
	g := analyze.Group(int64(math.Round(v)))
	switch {
	case v >= 1e9:
		return g + " (" + trimFloat(math.Round(v/1e7)/100) + " billion)"
	case v >= 1e6:
		return g + " (" + trimFloat(math.Round(v/1e4)/100) + " million)"
	}
	return g
}

func rateText(v float64) string {
	if v >= 1000 && v == math.Trunc(v) {
		return analyze.Group(int64(v))
	}
	return trimFloat(v)
}

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func pct(f float64) string { return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) + "%" }

func orJoin(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := s[0]
	for _, x := range s[1 : len(s)-1] {
		out += ", " + x
	}
	return out + " or " + s[len(s)-1]
}

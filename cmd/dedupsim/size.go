package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/dedupsim/dedupsim/analyze"
	"github.com/dedupsim/dedupsim/engine/query"
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

--bytes-per-key defaults to seed 000's 100 B, a RocksDB figure. --measure runs a scaled-down
simulation with the same ratios on --store (memory: dedupsim's HDFS-backed analogue; pebble: its
RocksDB) and sizes from the bytes per key it measured instead, saying where the figure comes from.`

// sizeOptions are size's flags.
type sizeOptions struct {
	rate, bytesPerKey, fraction        float64
	delay, api, memory, store, execMem string
	partitions, executors              int
	eventTimeKey, measure              bool
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
	f.Float64Var(&o.rate, "rate", 0, "arrival rate of distinct keys "+sizing.RateRange)
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
	f.StringVar(&o.store, "store", "pebble", "state store for --measure: memory | pebble")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the --measure simulation")
	return cmd
}

// runSize is size's RunE: it checks the flags (f says which were given),
// measures the bytes per key with --measure, and prints the estimate.
func runSize(w io.Writer, f *pflag.FlagSet, o sizeOptions) error {
	bad := func(err error) error { return badInput(fmt.Errorf("size: %w", err)) }
	p, err := o.params(f)
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
	bpkSource := "assumed (--bytes-per-key; seed 000's RocksDB figure: key, expiry and storage overhead)"
	if f.Changed("bytes-per-key") {
		bpkSource = "assumed (--bytes-per-key)"
	}
	var m *sizing.Measurement
	if o.measure {
		got, err := sizing.Measure(p, o.store, o.seed)
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		bpk, src := got.BytesPerKey()
		if err := sizing.CheckBytesPerKey("measure", bpk); err != nil {
			return &exitError{code: 1, err: fmt.Errorf("size: the measured bytes per key are out of range: %w", err)}
		}
		m, p.BytesPerKey, bpkSource = &got, bpk, src
	}
	e, err := sizing.Compute(p)
	if err != nil {
		return bad(err)
	}
	if e.Unbounded {
		fmt.Fprintf(w, "state: unbounded\n%s\n%s\n", e.Formula, e.StoreReason)
		return nil
	}
	writeSize(w, e, bpkSource, m == nil && !f.Changed("bytes-per-key"), cl, f.Changed("executors"))
	if m != nil {
		writeMeasurement(w, m, o.bytesPerKey)
	}
	return nil
}

// params parses and checks the flags of the rule itself (--rate, --delay,
// --api, --memory) and those of --measure; Params.Check then checks the
// numbers against their ranges.
func (o sizeOptions) params(f *pflag.FlagSet) (sizing.Params, error) {
	if !f.Changed("rate") {
		return sizing.Params{}, errors.New("--rate is required: the arrival rate of distinct keys, keys/s (dedupsim analyze measures it)")
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
	if o.measure || f.Changed("store") {
		if _, err := sizing.ParseStore(o.store); err != nil {
			return sizing.Params{}, err
		}
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
	cl := sizing.Cluster{Executors: o.executors, MemoryFraction: o.fraction}
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
// assumedDefault says the bytes per key are seed 000's 100 B, neither given
// nor measured.
func writeSize(w io.Writer, e sizing.Estimate, bpkSource string, assumedDefault bool, cl sizing.Cluster, haveExecutors bool) {
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
	row("bytes per key", "%s B, %s", trimFloat(math.Round(p.BytesPerKey*10)/10), bpkSource)
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
	row("per executor", "%d of %d partitions on the busiest of %d executors (an even spread): %s keys, %s (%s)",
		fit.PartitionsPerExecutor, p.Partitions, cl.Executors, keyCount(fit.KeysPerExecutor), sizing.Bytes(fit.BytesPerExecutor), sizing.BinaryBytes(fit.BytesPerExecutor))
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
	if assumedDefault {
		row("", "on the heap a key costs more than RocksDB's 100 B: Java objects (UnsafeRow key and value, a map entry), and 2 versions kept in memory (spark.sql.streaming.maxBatchesToRetainInMemory); give --bytes-per-key from memoryUsedBytes / numRowsTotal of a staging run")
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
	row("with RocksDB", "the %s per executor is on local disk and in native memory, not on the heap: the budget above does not bind it; bound its memory with spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage", sizing.BinaryBytes(fit.BytesPerExecutor))
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

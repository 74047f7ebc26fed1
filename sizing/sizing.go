// Package sizing is step 4 of seed 000's checklist: estimate dedup state as
// arrival rate x retention x bytes per key, say which state store fits a
// memory budget, and check the estimate against a scaled-down simulation
// that measures the plateau of numRowsTotal and the bytes per key.
package sizing

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/internal/duration"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sim/history"
)

// Params are the user's assumptions.
type Params struct {
	RatePerSec  float64       // arrival rate of distinct keys (events/s)
	Delay       time.Duration // watermark delay
	API         query.API
	Partitions  int     // spark.sql.shuffle.partitions
	BytesPerKey float64 // state bytes per key
	MemoryBytes float64 // memory available for state (0: not asked)
	// EventTimeInKey: dropDuplicates whose keys include the event-time
	// column (state is evicted); false for dropDuplicates(id) with a
	// watermark, whose state is never evicted.
	EventTimeInKey bool
}

// Estimate is the analytic answer.
type Estimate struct {
	Params       Params
	RetentionSec float64 // how long a key stays in state
	Keys         float64 // keys in state at the plateau
	TotalBytes   float64
	PerPartition float64
	Unbounded    bool // no eviction: state grows forever
	Formula      string
	Store        string // which store fits the memory budget
	StoreReason  string
}

// Retention is how long a key lives in state: about the delay for
// dropDuplicates with the event time in the key (evicted once the
// watermark passes its event time), about twice the delay for
// dropDuplicatesWithinWatermark (evicted once the watermark passes the
// first copy's event time + delay, and the watermark itself trails the
// newest event by the delay).
func Retention(api query.API, delay time.Duration, eventTimeInKey bool) (sec float64, unbounded bool) {
	d := delay.Seconds()
	switch api {
	case query.DropDuplicatesWithinWatermark:
		return 2 * d, false
	case query.DropDuplicates:
		if eventTimeInKey {
			return d, false
		}
		return math.Inf(1), true
	}
	return 0, false // batchDropDuplicates keeps no state across batches
}

// Compute returns the analytic estimate.
func Compute(p Params) (Estimate, error) {
	if err := p.Check(); err != nil {
		return Estimate{}, err
	}
	e := Estimate{Params: p}
	e.RetentionSec, e.Unbounded = Retention(p.API, p.Delay, p.EventTimeInKey)
	if e.Unbounded {
		e.Formula = "dropDuplicates without the event time in its keys never evicts: keys in state = every distinct key ever seen (grows by rate x elapsed time)"
		e.Store, e.StoreReason = "none", "state grows without bound: add the event-time column to the keys or use dropDuplicatesWithinWatermark"
		return e, nil
	}
	e.Keys = p.RatePerSec * e.RetentionSec
	e.TotalBytes = e.Keys * p.BytesPerKey
	e.PerPartition = e.TotalBytes / float64(p.Partitions)
	ret := "delay"
	if p.API == query.DropDuplicatesWithinWatermark {
		ret = "2 x delay"
	}
	e.Formula = fmt.Sprintf("keys = rate x retention = %s/s x %s (%s) = %s; state = keys x %s B = %s; per partition = %s / %d = %s",
		num(p.RatePerSec), Seconds(e.RetentionSec), ret, num(e.Keys), num(p.BytesPerKey), Bytes(e.TotalBytes), Bytes(e.TotalBytes), p.Partitions, Bytes(e.PerPartition))
	switch {
	case p.MemoryBytes <= 0:
		e.Store, e.StoreReason = "", "give --memory to compare with a budget"
	case e.TotalBytes <= 0.5*p.MemoryBytes:
		e.Store, e.StoreReason = "memory", fmt.Sprintf("%s of state is at most half of the %s budget: the in-memory (HDFS-backed) store fits", Bytes(e.TotalBytes), Bytes(p.MemoryBytes))
	default:
		e.Store, e.StoreReason = "pebble", fmt.Sprintf("%s of state does not fit comfortably in %s of executor memory (keep it under half): use RocksDB (dedupsim: state_store: pebble)", Bytes(e.TotalBytes), Bytes(p.MemoryBytes))
	}
	return e, nil
}

// Stores are the state stores --measure runs on: dedupsim's memory store
// (Spark's HDFS-backed store) and Pebble (Spark's RocksDB store).
var Stores = []string{"memory", "pebble"}

// ParseStore reads --store, with a "did you mean".
func ParseStore(s string) (string, error) {
	for _, k := range Stores {
		if s == k {
			return s, nil
		}
	}
	hint := ""
	if m := Suggest(s, append([]string{"rocksdb", "hdfs"}, Stores...)); m != "" {
		switch m {
		case "rocksdb":
			m = "pebble, dedupsim's RocksDB"
		case "hdfs":
			m = "memory, dedupsim's HDFS-backed store"
		}
		hint = fmt.Sprintf(" (did you mean %s?)", m)
	}
	return "", fmt.Errorf("--store %q: unknown store%s; want memory or pebble", s, hint)
}

// Measurement is what a scaled-down simulation measured.
type Measurement struct {
	Scale            float64 // simulated time = real time / Scale
	SimRatePerSec    float64
	SimDelay         time.Duration
	PredictedPlateau float64 // sim rate x sim retention
	MeasuredPlateau  float64 // mean numRowsTotal over the last third of the run
	Ratio            float64 // measured / predicted
	MemoryPerKey     float64 // memoryUsedBytes / numRowsTotal at the plateau
	DiskPerKey       float64 // rocksdbSstFileSize / numRowsTotal at the plateau (pebble only)
	Store            string
	// Recomputed is the estimate with the measured ratio and bytes per key.
	RecomputedKeys        float64
	RecomputedMemoryBytes float64
	RecomputedDiskBytes   float64
}

// Measure runs a scaled-down simulation with the same ratios (the rate and
// the delay shrunk so that the run takes seconds) on the given store and
// measures the plateau of numRowsTotal and the bytes per key.
func Measure(p Params, store string, seed uint64) (Measurement, error) {
	e, err := Compute(p)
	if err != nil {
		return Measurement{}, err
	}
	if _, err := ParseStore(store); err != nil {
		return Measurement{}, err
	}
	if e.Unbounded {
		return Measurement{}, fmt.Errorf("size --measure: state has no plateau for this API")
	}
	if e.RetentionSec == 0 {
		return Measurement{}, fmt.Errorf("size --measure: no state is kept across batches (retention 0): nothing to measure")
	}
	// Scale so that the simulated retention is 60 s, and the simulated
	// plateau about 20,000 keys: seconds of work, enough keys to measure.
	m := Measurement{Store: store}
	m.Scale = math.Max(e.RetentionSec/60, 1)
	simDelay := time.Duration(float64(p.Delay) / m.Scale).Round(time.Millisecond)
	if simDelay < time.Second {
		simDelay = time.Second
	}
	m.SimDelay = simDelay
	simRet, _ := Retention(p.API, simDelay, p.EventTimeInKey)
	m.SimRatePerSec = math.Max(1, math.Round(20000/simRet))
	m.PredictedPlateau = m.SimRatePerSec * simRet

	keys := "[id]"
	if p.API == query.DropDuplicates {
		keys = "[id, ts]"
	}
	q := fmt.Sprintf("dedup: {api: %s, keys: %s}\nwatermark: {column: ts, delay: %dms}\nshuffle_partitions: %d\nstate_store: %s\nsink: {kind: foreachBatch}\n",
		p.API, keys, simDelay.Milliseconds(), min(p.Partitions, 16), store)
	cfg := sim.Defaults()
	cfg.Query = sim.QueryText(q)
	cfg.TriggerInterval = sim.Duration(time.Second)
	cfg.FaultPhase = sim.Duration(time.Duration(4*simRet) * time.Second)
	cfg.HealPhase = sim.Duration(time.Duration(simRet) * time.Second)
	src := sim.DefaultSource("default")
	src.Rate.PerSec = m.SimRatePerSec
	cfg.Sources = []sim.SourceConfig{src}
	h, err := sim.Run(cfg, seed)
	if err != nil {
		return m, err
	}
	total, mem, disk, n := 0.0, 0.0, 0.0, 0
	start := len(h.Batches) * 2 / 3
	for _, b := range h.Batches[start:] {
		fig := progressBytes(b)
		if b.NumRowsTotal == 0 {
			continue
		}
		total += float64(b.NumRowsTotal)
		mem += fig.memory / float64(b.NumRowsTotal)
		disk += fig.disk / float64(b.NumRowsTotal)
		n++
	}
	if n == 0 {
		return m, fmt.Errorf("size --measure: the simulation produced no state")
	}
	m.MeasuredPlateau = total / float64(n)
	m.MemoryPerKey, m.DiskPerKey = mem/float64(n), disk/float64(n)
	m.Ratio = m.MeasuredPlateau / m.PredictedPlateau
	m.RecomputedKeys = e.Keys * m.Ratio
	m.RecomputedMemoryBytes = m.RecomputedKeys * m.MemoryPerKey
	m.RecomputedDiskBytes = m.RecomputedKeys * m.DiskPerKey
	return m, nil
}

type byteFigures struct{ memory, disk float64 }

// progressBytes reads memoryUsedBytes and the state size on the current
// version from a batch's progress record.
func progressBytes(b history.Batch) byteFigures {
	var p struct {
		StateOperators []struct {
			MemoryUsedBytes int64            `json:"memoryUsedBytes"`
			CustomMetrics   map[string]int64 `json:"customMetrics"`
		} `json:"stateOperators"`
	}
	if json.Unmarshal(b.Progress, &p) != nil || len(p.StateOperators) == 0 {
		return byteFigures{}
	}
	op := p.StateOperators[0]
	// On disk: Pebble's sstables (the RocksDB analogue); the memory store
	// reports no disk figure.
	return byteFigures{memory: float64(op.MemoryUsedBytes), disk: float64(op.CustomMetrics["rocksdbSstFileSize"])}
}

// Bytes formats a byte count in decimal units (the seed article's 72 GB).
func Bytes(b float64) string {
	return scaled(b, 1000, []string{"B", "KB", "MB", "GB", "TB", "PB", "EB"})
}

// BinaryBytes formats a byte count in binary units, the units of Spark's
// memory strings (8g is 8 GiB).
func BinaryBytes(b float64) string {
	return scaled(b, 1024, []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"})
}

func scaled(b, step float64, units []string) string {
	i := 0
	for math.Abs(b) >= step && i < len(units)-1 {
		b /= step
		i++
	}
	// Round first, so 999.999 KB is "1 MB", not "1000 KB".
	if r := math.Round(b*100) / 100; math.Abs(r) >= step && i < len(units)-1 {
		b, i = r/step, i+1
	}
	s := strings.TrimRight(fmt.Sprintf("%.2f", b), "0")
	return strings.TrimSuffix(s, ".") + " " + units[i]
}

func num(v float64) string {
	switch {
	case v >= 1e9:
		return trimNum(v/1e9) + " billion"
	case v >= 1e6:
		return trimNum(v/1e6) + " million"
	}
	return trimNum(v)
}

func trimNum(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// Seconds writes an estimated span given in seconds for a reader, in the
// project's one style (internal/duration.About): "1.5 seconds", "2 hours
// 5 minutes".
func Seconds(s float64) string { return duration.About(s * 1e3) }

// BytesPerKey is the measured figure the recommendation uses, and where it
// comes from: on the memory store, memoryUsedBytes / numRowsTotal, which is
// dedupsim's estimate of a Go map entry (key + value + 64 B), not the JVM's;
// on Pebble (dedupsim's RocksDB), the sstable bytes on disk per key, the
// figure seed 000's 100 B stands for.
func (m Measurement) BytesPerKey() (float64, string) {
	if m.Store == "pebble" {
		return m.DiskPerKey, "measured on dedupsim's Pebble store (its RocksDB): sstable bytes on disk per key, the kind of figure seed 000's 100 B assumes"
	}
	return m.MemoryPerKey, "measured on dedupsim's memory store: key + value bytes + 64 B per entry, a Go estimate; Spark's HDFS-backed store holds each key as Java objects on the heap and keeps 2 versions (spark.sql.streaming.maxBatchesToRetainInMemory), so read memoryUsedBytes / numRowsTotal from a staging run"
}

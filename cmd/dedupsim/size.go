package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/sim/sizing"
	"github.com/spf13/cobra"
)

func newSizeCmd() *cobra.Command {
	var rate, bytesPerKey float64
	var delay, api, memory, store string
	var partitions int
	var eventTimeKey, measure bool
	var seed uint64
	cmd := &cobra.Command{
		Use:   "size --rate R --delay D --api API [--partitions N] [--bytes-per-key B] [--memory M] [--measure]",
		Short: "Estimate dedup state: rate x retention x bytes per key, and which store fits",
		Long: `size applies seed 000's sizing rule: keys in state = arrival rate x retention, where retention
is about the delay for dropDuplicates with the event time in its keys and about twice the delay
for dropDuplicatesWithinWatermark; state = keys x bytes per key, spread over the state partitions.
With --memory it says whether the in-memory store fits or RocksDB (Pebble here) is needed.

--measure runs a scaled-down simulation with the same ratios (the delay and the rate shrunk so it
takes seconds) on the chosen store, and prints the measured plateau of numRowsTotal and bytes per
key next to the assumption, with the estimate recomputed from them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := query.ParseDelay(delay)
			if err != nil {
				return badInput(fmt.Errorf("size: --delay: %v", err))
			}
			a := query.API(api)
			if a != query.DropDuplicates && a != query.DropDuplicatesWithinWatermark && a != query.BatchDropDuplicates {
				return badInput(fmt.Errorf("size: --api %q (want dropDuplicates, dropDuplicatesWithinWatermark or batchDropDuplicates)", api))
			}
			mem := 0.0
			if memory != "" {
				if mem, err = parseBytes(memory); err != nil {
					return badInput(fmt.Errorf("size: --memory: %v", err))
				}
			}
			p := sizing.Params{RatePerSec: rate, Delay: time.Duration(d) * time.Millisecond, API: a, Partitions: partitions,
				BytesPerKey: bytesPerKey, MemoryBytes: mem, EventTimeInKey: eventTimeKey}
			e, err := sizing.Compute(p)
			if err != nil {
				return badInput(err)
			}
			w := cmd.OutOrStdout()
			if e.Unbounded {
				fmt.Fprintf(w, "state: unbounded\n%s\n%s\n", e.Formula, e.StoreReason)
				return nil
			}
			fmt.Fprintf(w, "retention:         %s\n", (time.Duration(e.RetentionSec * float64(time.Second))).String())
			fmt.Fprintf(w, "keys in state:     %s\n", humanCount(e.Keys))
			fmt.Fprintf(w, "total state:       %s\n", sizing.Bytes(e.TotalBytes))
			fmt.Fprintf(w, "state / partition: %s (%d partitions)\n", sizing.Bytes(e.PerPartition), partitions)
			fmt.Fprintf(w, "formula:           %s\n", e.Formula)
			if e.Store != "" {
				fmt.Fprintf(w, "store:             %s: %s\n", e.Store, e.StoreReason)
			}
			if !measure {
				return nil
			}
			m, err := sizing.Measure(p, store, seed)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			fmt.Fprintf(w, "\nmeasured on a simulation scaled by 1/%.0f (%s store, rate %.0f/s, delay %s):\n", m.Scale, m.Store, m.SimRatePerSec, m.SimDelay)
			fmt.Fprintf(w, "  %-28s %16s %16s\n", "", "assumed", "measured")
			fmt.Fprintf(w, "  %-28s %16.0f %16.0f\n", "plateau numRowsTotal (sim)", m.PredictedPlateau, m.MeasuredPlateau)
			fmt.Fprintf(w, "  %-28s %16s %16.2f\n", "plateau / rate x retention", "1.00", m.Ratio)
			fmt.Fprintf(w, "  %-28s %16.0f %16.1f\n", "bytes per key in memory", bytesPerKey, m.MemoryPerKey)
			disk := "n/a"
			if m.DiskPerKey > 0 {
				disk = fmt.Sprintf("%.1f", m.DiskPerKey)
			}
			fmt.Fprintf(w, "  %-28s %16s %16s\n", "bytes per key on disk", "-", disk)
			fmt.Fprintf(w, "  %-28s %16s %16s\n", "keys in state", humanCount(e.Keys), humanCount(m.RecomputedKeys))
			fmt.Fprintf(w, "  %-28s %16s %16s\n", "state in memory", sizing.Bytes(e.TotalBytes), sizing.Bytes(m.RecomputedMemoryBytes))
			if m.DiskPerKey > 0 {
				fmt.Fprintf(w, "  %-28s %16s %16s\n", "state on disk", "-", sizing.Bytes(m.RecomputedDiskBytes))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Float64Var(&rate, "rate", 0, "arrival rate of distinct keys, events per second")
	f.StringVar(&delay, "delay", "", `watermark delay ("2h", "2 hours")`)
	f.StringVar(&api, "api", "dropDuplicatesWithinWatermark", "dropDuplicates | dropDuplicatesWithinWatermark")
	f.IntVar(&partitions, "partitions", 200, "spark.sql.shuffle.partitions")
	f.Float64Var(&bytesPerKey, "bytes-per-key", 100, "state bytes per key")
	f.StringVar(&memory, "memory", "", `memory available for state across executors ("64GB", "512MiB")`)
	f.BoolVar(&eventTimeKey, "event-time-in-key", true, "dropDuplicates: the keys include the event-time column (state is evicted)")
	f.BoolVar(&measure, "measure", false, "also measure on a scaled-down simulation")
	f.StringVar(&store, "store", "pebble", "state store for --measure: memory | pebble")
	f.Uint64Var(&seed, "seed", 1, "seed of the --measure simulation")
	return cmd
}

func humanCount(v float64) string {
	switch {
	case v >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', -1, 64) + " billion"
	case v >= 1e6:
		return strconv.FormatFloat(float64(int64(v/1e4))/100, 'f', -1, 64) + " million"
	}
	return strconv.FormatFloat(float64(int64(v)), 'f', -1, 64)
}

// parseBytes reads 64GB, 512MiB, 1e9.
func parseBytes(s string) (float64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("%q is not a size such as 64GB", s)
			}
			return v * u.mult, nil
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a size such as 64GB", s)
	}
	return v, nil
}

//go:build pprof

// The pprof build (go build -tags pprof ./cmd/dedupsim) writes a CPU
// profile and a heap profile of any verb, so that a user can profile a run
// of their own (docs/performance.md, "Profiling a run"):
//
//	dedupsim --cpuprofile cpu.out --memprofile heap.out --peakprofile peak.out run my.yaml
//	DEDUPSIM_CPUPROFILE=cpu.out DEDUPSIM_MEMPROFILE=heap.out DEDUPSIM_PEAKPROFILE=peak.out dedupsim run my.yaml
//
// A flag wins over its variable. The CPU profile covers the verb from the
// moment its flags are parsed to its end; the heap profile is written at
// the end, after a collection (in-use bytes at the end, and every
// allocation of the run under -sample_index=alloc_space); the peak profile
// is the heap profile as of the collection that found the largest live
// heap (checked every 100 ms by a goroutine of this build, rewritten each
// time the live heap grows by a tenth). All are written whatever the exit
// status. The default build has none of these flags.
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"
)

func init() { rootHooks = append(rootHooks, addProfileFlags) }

func addProfileFlags(root *cobra.Command) {
	cpu := root.PersistentFlags().String("cpuprofile", os.Getenv("DEDUPSIM_CPUPROFILE"), "write a CPU profile of the run to this file (pprof build; default $DEDUPSIM_CPUPROFILE)")
	mem := root.PersistentFlags().String("memprofile", os.Getenv("DEDUPSIM_MEMPROFILE"), "write a heap profile at the end of the run to this file (pprof build; default $DEDUPSIM_MEMPROFILE)")
	peak := root.PersistentFlags().String("peakprofile", os.Getenv("DEDUPSIM_PEAKPROFILE"), "write the heap profile as of the largest live heap of the run to this file (pprof build; default $DEDUPSIM_PEAKPROFILE)")
	started := false
	cobra.OnInitialize(func() {
		// OnInitialize runs once per verb, after its flags are parsed.
		if started {
			return
		}
		started = true
		if *cpu != "" {
			f, err := os.Create(*cpu)
			if err != nil {
				fmt.Fprintf(os.Stderr, "dedupsim: --cpuprofile: %v\n", err)
				os.Exit(2)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				fmt.Fprintf(os.Stderr, "dedupsim: --cpuprofile %s: %v\n", *cpu, err)
				os.Exit(2)
			}
			atExit = append(atExit, func() {
				pprof.StopCPUProfile()
				if err := f.Close(); err != nil {
					fmt.Fprintf(os.Stderr, "dedupsim: --cpuprofile %s: %v\n", *cpu, err)
				}
			})
		}
		if *mem != "" {
			path := *mem
			atExit = append(atExit, func() { writeHeapProfile(path, true) })
		}
		if *peak != "" {
			atExit = append(atExit, watchPeak(*peak))
		}
	})
}

// watchPeak writes the heap profile to path whenever the live heap of the
// last collection is a tenth above the largest one written so far; the
// returned stop ends the watch and writes it once more if it grew since.
func watchPeak(path string) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var written uint64
	check := func(final bool) {
		metrics.Read(live)
		if v := live[0].Value.Uint64(); v > written+written/10 || (final && v > written) {
			writeHeapProfile(path, false)
			written = v
		}
	}
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				check(false)
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		if written == 0 {
			writeHeapProfile(path, false)
		}
	}
}

// writeHeapProfile writes the heap profile to path (atomically: a temp file
// renamed over it), after a collection when gc is set.
func writeHeapProfile(path string, gc bool) {
	if gc {
		runtime.GC()
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err == nil {
		err = pprof.WriteHeapProfile(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dedupsim: --memprofile %s: %v\n", path, err)
	}
}

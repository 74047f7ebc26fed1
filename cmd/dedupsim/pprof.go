//go:build pprof

// The pprof build (go build -tags pprof ./cmd/dedupsim) writes a CPU
// profile and a heap profile of any verb, so that a user can profile a run
// of their own (docs/performance.md, "Profiling a run"):
//
//	dedupsim --cpuprofile cpu.out --memprofile heap.out run my.yaml
//	DEDUPSIM_CPUPROFILE=cpu.out DEDUPSIM_MEMPROFILE=heap.out dedupsim run my.yaml
//
// A flag wins over its variable. The CPU profile covers the verb from the
// moment its flags are parsed to its end; the heap profile is written at
// the end, after a collection (in-use bytes at the end, and every
// allocation of the run under -sample_index=alloc_space). Both are written
// whatever the exit status. The default build has neither flag.
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

func init() { rootHooks = append(rootHooks, addProfileFlags) }

func addProfileFlags(root *cobra.Command) {
	cpu := root.PersistentFlags().String("cpuprofile", os.Getenv("DEDUPSIM_CPUPROFILE"), "write a CPU profile of the run to this file (pprof build; default $DEDUPSIM_CPUPROFILE)")
	mem := root.PersistentFlags().String("memprofile", os.Getenv("DEDUPSIM_MEMPROFILE"), "write a heap profile at the end of the run to this file (pprof build; default $DEDUPSIM_MEMPROFILE)")
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
			atExit = append(atExit, func() { writeHeapProfile(path) })
		}
	})
}

func writeHeapProfile(path string) {
	runtime.GC()
	f, err := os.Create(path)
	if err == nil {
		err = pprof.WriteHeapProfile(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dedupsim: --memprofile %s: %v\n", path, err)
	}
}

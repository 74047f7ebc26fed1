//go:build ignore

// benchtable reads `go test -bench` output on standard input and prints the
// figures `make bench` promises as one table: rows/s per API and store with
// the ratio to the floor measured in the same run, restart time, bytes per
// key and bytes per simulated copy. Run: go run scripts/benchtable.go < bench.txt
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

var line = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)
var metric = regexp.MustCompile(`([0-9.e+]+) (\S+)`)

func main() {
	rows := map[string]map[string]string{}
	var names []string
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		m := line.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		name := strings.TrimPrefix(m[1], "Benchmark")
		if _, ok := rows[name]; !ok {
			rows[name] = map[string]string{}
			names = append(names, name)
		}
		for _, mm := range metric.FindAllStringSubmatch(m[3], -1) {
			rows[name][mm[2]] = mm[1]
		}
	}
	sort.Strings(names)
	// rows/s (events/s for the simulator) and floorRatio, its ratio to the
	// bare-map floor the benchmark ran in the same process: on a shared
	// machine only the ratio means much. sparkRatio appears when a Spark
	// comparison provides it.
	cols := []string{"rows/s", "events/s", "floorRatio", "ms/restart", "restartMs", "heapB/key", "memoryUsedB/key", "checkpointB/key", "sstB/key", "heapB/copy", "copies/s", "peakHeapMiB", "keys"}
	for _, n := range names {
		if rows[n]["sparkRatio"] != "" {
			cols = append(cols, "sparkRatio")
			break
		}
	}
	fmt.Printf("| benchmark |")
	for _, c := range cols {
		fmt.Printf(" %s |", c)
	}
	fmt.Printf("\n|---|")
	for range cols {
		fmt.Printf("---|")
	}
	fmt.Println()
	for _, n := range names {
		fmt.Printf("| %s |", n)
		for _, c := range cols {
			v := rows[n][c]
			if v == "" {
				v = "-"
			}
			fmt.Printf(" %s |", v)
		}
		fmt.Println()
	}
}

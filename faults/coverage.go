package faults

import "sort"

// Coverage counts how many times each fault fired in a run (FoundationDB's
// coverage probes). Keys are fault names; the simulator also marks a few
// situations worth proving a sweep reached under names with a "/" (for
// example "sim/replay"), which never collide with fault names.
type Coverage map[string]int

// Mark records that name fired once.
func (c Coverage) Mark(name string) { c[name]++ }

// Add records that name fired n times (n <= 0 records nothing).
func (c Coverage) Add(name string, n int) {
	if n > 0 {
		c[name] += n
	}
}

// Merge adds other's counts, for a sweep over several runs.
func (c Coverage) Merge(other map[string]int) {
	for k, v := range other {
		c.Add(k, v)
	}
}

// Missing returns, sorted, the requested names that never fired. A sweep
// fails when it is not empty: it requested a fault and never exercised it.
func Missing(requested []string, coverage map[string]int) []string {
	var out []string
	seen := map[string]bool{}
	for _, name := range requested {
		if coverage[name] <= 0 && !seen[name] {
			out = append(out, name)
			seen[name] = true
		}
	}
	sort.Strings(out)
	return out
}

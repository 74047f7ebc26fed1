package sweep

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Sharding: shard i of n runs the seeds FIRST+k for k = i, i+n, i+2n, ...
// below N (every scenario of the sweep with the same seeds), so n machines
// split a sweep without overlap and `dedupsim merge` can tell which seeds
// each one owed.

// The environment --shard auto reads. GitHub Actions passes its matrix
// position in (env: DEDUPSIM_SHARD_INDEX: ${{ strategy.job-index }},
// DEDUPSIM_SHARD_COUNT: ${{ strategy.job-total }}); a Kubernetes Indexed Job
// sets JOB_COMPLETION_INDEX itself and passes its completions count in
// DEDUPSIM_SHARD_COUNT.
const (
	envShardIndex      = "DEDUPSIM_SHARD_INDEX"
	envShardCount      = "DEDUPSIM_SHARD_COUNT"
	envJobCompletionIx = "JOB_COMPLETION_INDEX"
)

// maxShards bounds n (a GitHub Actions matrix has at most 256 jobs, an
// Indexed Job at most 100,000 completions).
const maxShards = 100_000

// ParseShard reads --shard: "i/n" (0 <= i < n) or "auto" (the environment,
// through getenv), and returns i and n.
func ParseShard(s string, getenv func(string) string) (int, int, error) {
	if s == "auto" {
		return shardFromEnv(getenv)
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > maxShards || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard %q: want i/n with 0 <= i < n <= %d (shard i of n, 0-based), or auto", s, maxShards)
	}
	return i, n, nil
}

func shardFromEnv(getenv func(string) string) (int, int, error) {
	num := func(name string, lo, hi int) (int, bool, error) {
		v := getenv(name)
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			return 0, true, fmt.Errorf("--shard auto: %s=%q: want a whole number in [%d, %d]", name, v, lo, hi)
		}
		return n, true, nil
	}
	n, haveN, err := num(envShardCount, 1, maxShards)
	if err != nil {
		return 0, 0, err
	}
	i, haveI, err := num(envShardIndex, 0, maxShards-1)
	if err != nil {
		return 0, 0, err
	}
	k, haveK, err := num(envJobCompletionIx, 0, maxShards-1)
	if err != nil {
		return 0, 0, err
	}
	switch {
	case haveI && haveK && i != k:
		return 0, 0, fmt.Errorf("--shard auto: %s=%d and %s=%d disagree", envShardIndex, i, envJobCompletionIx, k)
	case haveK:
		i, haveI = k, true
	}
	switch {
	case !haveI && !haveN:
		return 0, 0, fmt.Errorf("--shard auto: set %s and %s (GitHub Actions: ${{ strategy.job-index }} and ${{ strategy.job-total }}), or run in a Kubernetes Indexed Job (%s) with %s set to its completions", envShardIndex, envShardCount, envJobCompletionIx, envShardCount)
	case !haveN:
		return 0, 0, fmt.Errorf("--shard auto: the shard index is set but %s (the number of shards: the matrix size, or the Indexed Job's completions) is not", envShardCount)
	case !haveI:
		return 0, 0, fmt.Errorf("--shard auto: %s=%d is set but neither %s nor %s", envShardCount, n, envShardIndex, envJobCompletionIx)
	case i >= n:
		return 0, 0, fmt.Errorf("--shard auto: shard index %d is not below %s=%d", i, envShardCount, n)
	}
	return i, n, nil
}

// shardSeeds is how many of seeds seeds shard i of n runs.
func shardSeeds(seeds uint64, i, n int) uint64 {
	q, r := seeds/uint64(n), seeds%uint64(n)
	if uint64(i) < r {
		q++
	}
	return q
}

// seedCursor walks shard i of n's seeds without listing them: offsets
// i, i+n, ... below seeds, without overflow up to 2^64-1 seeds.
type seedCursor struct {
	first, seeds, k, step uint64
	started, done         bool
}

func newSeedCursor(first, seeds uint64, i, n int) *seedCursor {
	return &seedCursor{first: first, seeds: seeds, k: uint64(i), step: uint64(n), done: uint64(i) >= seeds}
}

// next returns the next seed of the shard.
func (c *seedCursor) next() (uint64, bool) {
	if c.done {
		return 0, false
	}
	if c.started {
		if c.seeds-c.k <= c.step { // k+step >= seeds, without computing k+step
			c.done = true
			return 0, false
		}
		c.k += c.step
	}
	c.started = true
	return c.first + c.k, true
}

// CheckSeedRange refuses a sweep of seeds seeds from first: none, or a
// last seed that would pass 2^64-1.
func CheckSeedRange(first, seeds uint64) error {
	if seeds == 0 {
		return fmt.Errorf("sweep: --seeds N (N >= 1) is required")
	}
	if seeds-1 > math.MaxUint64-first {
		return fmt.Errorf("sweep: --first-seed %d with --seeds %d would pass the largest seed, %d: want first-seed + seeds - 1 <= %d", first, seeds, uint64(math.MaxUint64), uint64(math.MaxUint64))
	}
	return nil
}

package scenarios

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/docker/go-units"
	"github.com/shirou/gopsutil/v4/mem"

	"github.com/dedupsim/dedupsim/internal/duration"
	"github.com/dedupsim/dedupsim/sim"
)

// A simulated run holds every copy and event in memory until it ends, so
// its size must fit the machine: the run's peak is predicted from its
// configuration (sim.Config.Predict: rate x duration x copy factor x
// measured bytes per copy) and a run predicted above the memory budget is
// refused before it starts. The budget is read here, not in sim, which
// does no I/O.

// Budget is the memory a run may use.
type Budget struct {
	Bytes int64
	// From says where the figure comes from ("--memory-budget 4g",
	// "GOMEMLIMIT", "3/4 of the 12GiB available").
	From string
}

// budgetShare is the share of the available memory a run may take by
// default: some is left for the page cache, the reports' writes and
// whatever else runs.
const budgetShare = 0.75

// sizeRE is a size as --memory-budget takes it: 4g, 512m, 1.5t, 2GiB,
// 1048576 (bytes).
var sizeRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)? ?([kKmMgGtTpP]([iI]?[bB])?|[bB])?$`)

// ParseSize reads a size in Spark's notation (binary multiples): 512m,
// 4g, 1.5t, 2GiB, or plain bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if !sizeRE.MatchString(t) {
		return 0, fmt.Errorf("%q: want a size such as 512m, 4g or 1.5t", s)
	}
	n, err := units.RAMInBytes(t)
	if err != nil || n <= 0 || n > 1<<60 {
		return 0, fmt.Errorf("%q: want a size in [1, 1024p] such as 512m, 4g or 1.5t", s)
	}
	return n, nil
}

// MemoryBudget resolves the budget: flag (the --memory-budget value) when
// given, else GOMEMLIMIT when set, else 3/4 of the memory available to
// this process (MemAvailable, or what is left of the cgroup's limit when
// that is lower).
func MemoryBudget(flag string) (Budget, error) {
	if flag != "" {
		n, err := ParseSize(flag)
		if err != nil {
			return Budget{}, fmt.Errorf("--memory-budget %w", err)
		}
		return Budget{Bytes: n, From: "--memory-budget " + flag}, nil
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		if lim := debug.SetMemoryLimit(-1); lim > 0 && lim < math.MaxInt64 {
			return Budget{Bytes: lim, From: "GOMEMLIMIT=" + os.Getenv("GOMEMLIMIT")}, nil
		}
	}
	avail, from, err := availableMemory()
	if err != nil {
		return Budget{}, fmt.Errorf("cannot tell how much memory is available (%v): give --memory-budget", err)
	}
	return Budget{Bytes: int64(budgetShare * float64(avail)), From: fmt.Sprintf("3/4 of %s %s; --memory-budget sets it", from, size(float64(avail)))}, nil
}

// availableMemory is the machine's MemAvailable, or what the process's
// cgroup still allows when that is less.
func availableMemory() (uint64, string, error) {
	vm, err := mem.VirtualMemory()
	if err != nil {
		return 0, "", err
	}
	avail, from := vm.Available, "MemAvailable"
	if left, ok := cgroupLeft(); ok && left < avail {
		avail, from = left, "what the cgroup's memory limit leaves,"
	}
	if avail == 0 {
		return 0, "", errors.New("no memory available")
	}
	return avail, from, nil
}

// cgroupLeft is the cgroup memory limit less the cgroup's usage, for
// cgroup v2 and v1; false when there is no limit (or no cgroup).
func cgroupLeft() (uint64, bool) {
	read := func(p string) (uint64, bool) {
		b, err := os.ReadFile(p)
		if err != nil {
			return 0, false
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, false
		}
		n, err := strconv.ParseUint(s, 10, 64)
		return n, err == nil && n < 1<<62
	}
	var dirs []string
	if f, err := os.Open("/proc/self/cgroup"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
				dirs = append(dirs, filepath.Join("/sys/fs/cgroup", rest))
			}
		}
		f.Close()
	}
	dirs = append(dirs, "/sys/fs/cgroup")
	for _, d := range dirs {
		if limit, ok := read(filepath.Join(d, "memory.max")); ok {
			used, _ := read(filepath.Join(d, "memory.current"))
			return limit - min(used, limit), true
		}
	}
	if limit, ok := read("/sys/fs/cgroup/memory/memory.limit_in_bytes"); ok {
		used, _ := read("/sys/fs/cgroup/memory/memory.usage_in_bytes")
		return limit - min(used, limit), true
	}
	return 0, false
}

// ErrMemoryBudget is wrapped by a refusal of a run predicted above the
// memory budget (bad input: exit 2).
var ErrMemoryBudget = errors.New("above the memory budget")

// MemoryError is a run predicted above the memory budget.
type MemoryError struct {
	Scenario *Scenario
	Predict  sim.Prediction
	Budget   Budget
}

func (e *MemoryError) Unwrap() error { return ErrMemoryBudget }

func (e *MemoryError) Error() string {
	p := e.Predict
	ref := e.Scenario.File
	if strings.HasPrefix(ref, "catalogue:") || ref == "" {
		ref = e.Scenario.Name
	}
	return fmt.Sprintf("%s: the run would need about %s, above the memory budget of %s (%s): %s copies predicted "+
		"(%s events/s x %s x copy factor %.2f) at about %s per copy, plus %s fixed; shorten fault_phase/heal_phase, lower the rate, or raise the budget",
		ref, size(p.PeakBytes), size(float64(e.Budget.Bytes)), e.Budget.From, count(p.Copies),
		rate(p.RatePerSec), duration.Format(p.Duration.Truncate(time.Millisecond)), p.CopyFactor,
		size(p.BytesPerCopy), size(p.FixedBytes))
}

// CheckMemory refuses, before anything runs, a scenario whose predicted
// peak is above the budget (a zero budget checks nothing). atOnce is how
// many of the runs go at once in this process (b is each one's share):
// they share one soft limit, so the heap the collector may grow under its
// floor is shared too (sim.Prediction.AtOnce).
func CheckMemory(list []*Scenario, b Budget, opt Options, atOnce int) error {
	if b.Bytes <= 0 {
		return nil
	}
	ps, err := predictAll(list, opt, atOnce)
	if err != nil {
		return err
	}
	for i, s := range list {
		if ps[i].PeakBytes > float64(b.Bytes) {
			return &MemoryError{Scenario: s, Predict: ps[i], Budget: b}
		}
	}
	return nil
}

// Largest is the scenario of list predicted to need the most memory and
// its prediction as one of atOnce runs at once (nil for an empty list).
func Largest(list []*Scenario, opt Options, atOnce int) (*Scenario, sim.Prediction, error) {
	ps, err := predictAll(list, opt, atOnce)
	if err != nil {
		return nil, sim.Prediction{}, err
	}
	var top *Scenario
	var best sim.Prediction
	for i, s := range list {
		if top == nil || ps[i].PeakBytes > best.PeakBytes {
			top, best = s, ps[i]
		}
	}
	return top, best, nil
}

// predictAll is the predictions of list, each as one of atOnce runs at
// once beside the one that grows most (the soft limit is set for it).
func predictAll(list []*Scenario, opt Options, atOnce int) ([]sim.Prediction, error) {
	ps := make([]sim.Prediction, len(list))
	grown := 0.0
	for i, s := range list {
		p, err := predict(s, opt)
		if err != nil {
			return nil, err
		}
		ps[i], grown = p, max(grown, p.GrownBytes)
	}
	for i := range ps {
		ps[i] = ps[i].AtOnce(atOnce, grown)
	}
	return ps, nil
}

// predict is s's prediction as opt runs it.
func predict(s *Scenario, opt Options) (sim.Prediction, error) {
	p, err := s.config(opt).Predict()
	if err != nil {
		return sim.Prediction{}, fmt.Errorf("%s: %w", s.Name, err)
	}
	return p, nil
}

// PredictionLine states, before a batch starts, what its largest run is
// predicted to use against the budget each run may use.
func PredictionLine(s *Scenario, p sim.Prediction, b Budget) string {
	return fmt.Sprintf("predicted peak memory %s for the largest run (%s: %s copies at about %s each, plus %s fixed); budget %s a run (%s)",
		size(p.PeakBytes), s.Name, count(p.Copies), size(p.BytesPerCopy), size(p.FixedBytes), size(float64(b.Bytes)), b.From)
}

func size(b float64) string {
	if b >= 1<<60 {
		return "more than 1EiB"
	}
	// Three significant digits in the largest unit that leaves fewer than
	// four before the point: 1010 MiB is 0.986 GiB, where %.3g of 1010
	// would write 1.01e+03.
	names := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for b >= 1000 && i < len(names)-1 {
		b /= 1024
		i++
	}
	return fmt.Sprintf("%.3g %s", b, names[i])
}

// rate writes events per second: 1000, 0.5, 1e-14.
func rate(x float64) string {
	if x >= 0.01 && x < 1e9 {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// count writes a copy count as people read it: 1.2 M, 830 k, 512.
func count(x float64) string {
	switch {
	case x >= 1e9:
		return strconv.FormatFloat(x/1e9, 'f', 1, 64) + " G"
	case x >= 1e6:
		return strconv.FormatFloat(x/1e6, 'f', 1, 64) + " M"
	case x >= 1e4:
		return strconv.FormatFloat(x/1e3, 'f', 0, 64) + " k"
	}
	return strconv.FormatFloat(x, 'f', 0, 64)
}

// SoftLimit is the Go collector's soft memory limit (debug.SetMemoryLimit)
// for jobs runs at once, each at most p (its LimitBytes, which the model's
// figures were measured under). Left alone, the collector lets the heap
// grow to twice what was live at its last cycle, about 2.2 times the live
// peak of a run; under the limit it collects more often as the heap nears
// it (a 1 M-copy run, before a copy shrank to 56 bytes: 550 MB RSS
// without, 352 MB with, in the same time; now 290 MB, 276 MiB, with).
// A live heap above the limit is not refused: the collector then runs
// more, and the run is slower, not failed.
//
// The limit is never under sim.MinLimitBytes: it counts all of the process's
// memory, and for a small run the part the model prices as fixed is
// mostly the runtime's and the engine's own, which a limit of a few tens
// of MiB made the collector chase (the catalogue at -j 2 took 7 s instead
// of 2, with 937 collections instead of 59; at the floor of 128 MiB it
// collects 57 to 60 times).
func SoftLimit(p sim.Prediction, jobs int) int64 {
	l := float64(max(jobs, 1)) * p.LimitBytes
	if !(l > 0) || l >= math.MaxInt64/2 {
		return math.MaxInt64
	}
	return max(int64(l), sim.MinLimitBytes)
}

// PlanMemory refuses, up front, a scenario of list predicted above the
// budget (MemoryBudget of flag), shared by atOnce runs at once: each may
// use its share. It returns the line that states the largest run's
// prediction and the soft memory limit for atOnce runs of it (SoftLimit);
// "" and 0 when there is no run to predict.
func PlanMemory(list []*Scenario, flag string, opt Options, atOnce int) (line string, softLimit int64, err error) {
	b, err := MemoryBudget(flag)
	if err != nil {
		return "", 0, err
	}
	if atOnce > 1 {
		b.Bytes /= int64(atOnce)
		b.From += fmt.Sprintf(", shared by -j %d runs at once", atOnce)
	}
	if err := CheckMemory(list, b, opt, atOnce); err != nil {
		return "", 0, err
	}
	s, p, err := Largest(list, opt, atOnce)
	if err != nil || s == nil {
		return "", 0, err
	}
	return PredictionLine(s, p, b), SoftLimit(p, atOnce), nil
}

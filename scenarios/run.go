package scenarios

import (
	"fmt"
	"sort"
	"strings"

	"al.essio.dev/pkg/shellescape"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/scenarios/result"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sim/check"
	"github.com/dedupsim/dedupsim/sim/history"
)

// Options change how a scenario runs.
type Options struct {
	// Swarm turns on swarm mode over the scenario's faults (or the whole
	// catalogue when it lists none).
	Swarm bool
	// Strict adds the expectation StrictExpectation: the table holds every
	// event at most once and misses none that was not dropped as late or
	// filtered (check.Table.Clean), whatever the API promises and whatever
	// the scenario expects.
	Strict bool
	// MemoryBudget, when set, refuses a run predicted above it (a
	// *MemoryError) before it starts; see MemoryBudget and CheckMemory.
	MemoryBudget Budget
}

// StrictExpectation names the expectation --strict adds; its count is the
// events in the table more than once plus the events lost.
const StrictExpectation = "table-clean"

// Run simulates s with seed, checks the history and evaluates the
// scenario's expectations.
func Run(s *Scenario, seed uint64, opt Options) (*result.Run, error) {
	if err := CheckMemory([]*Scenario{s}, opt.MemoryBudget, opt, 1); err != nil {
		return nil, err
	}
	h, err := sim.Run(s.config(opt), seed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	return Evaluate(s, h, seed, opt), nil
}

// config is s's simulator configuration as opt runs it (swarm mode draws
// every knob the plan does not pin).
func (s *Scenario) config(opt Options) sim.Config {
	cfg := s.Config
	if opt.Swarm {
		cfg.Plan.Swarm = true
	}
	return cfg
}

// Runnable is the error Run returns for s before it simulates anything (a
// fault that needs a real broker), worded as Run words it.
func Runnable(s *Scenario, opt Options) error {
	cfg := s.config(opt)
	if err := cfg.CheckRunnable(); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	return nil
}

// Evaluate checks a history against the scenario's expectations.
func Evaluate(s *Scenario, h *history.History, seed uint64, opt Options) *result.Run {
	rep := check.Check(h, s.Check)
	r := &result.Run{Scenario: s.Name, File: s.File, Description: s.Description, Seed: seed, History: h, Report: rep,
		Replay: ReplayCommand(s, seed, opt)}
	r.Expect = expectations(s, rep, h, opt)
	r.Passed = true
	for _, e := range r.Expect {
		r.Passed = r.Passed && e.OK
	}
	return r
}

// ReplayCommand is the one line that reproduces a run exactly, quoted for
// a POSIX shell so that pasting it runs dedupsim and nothing else, whatever
// the file is called.
func ReplayCommand(s *Scenario, seed uint64, opt Options) string {
	swarm := ""
	if opt.Swarm {
		swarm = " --swarm"
	}
	if opt.Strict {
		swarm += " --strict"
	}
	if s.SparkVersionFlag != "" {
		swarm += " --spark-version " + QuoteArg(s.SparkVersionFlag)
	}
	return fmt.Sprintf("dedupsim replay --seed %d%s %s", seed, swarm, QuoteArg(Ref(s)))
}

// Ref is how a command line names s: its file, or its catalogue name.
func Ref(s *Scenario) string {
	if strings.HasPrefix(s.File, "catalogue:") || s.File == "" {
		return s.Name
	}
	return s.File
}

// QuoteArg quotes one positional argument for a POSIX shell (sh, bash,
// zsh): unchanged when it holds only letters, digits and @%+=:,./_- and
// does not start with - (a flag), = or ~ (expansions in zsh and bash),
// else in single quotes. An argument that starts with - is preceded by --
// so that the CLI does not take it for a flag.
func QuoteArg(arg string) string {
	q := shellescape.Quote(arg)
	if q == arg && arg != "" && strings.ContainsRune("=~", rune(arg[0])) {
		q = "'" + arg + "'"
	}
	if strings.HasPrefix(arg, "-") {
		q = "-- " + q
	}
	return q
}

func expectations(s *Scenario, rep check.Report, h *history.History, opt Options) []result.Expectation {
	var out []result.Expectation
	if e := s.Expect.ExactlyOnce; e != nil {
		want, got := "false", 0
		if *e {
			want = "true"
		}
		if rep.Verdict.ExactlyOnce {
			got = 1
		}
		out = append(out, result.Expectation{Finding: "exactly-once", Want: want, Got: got, OK: rep.Verdict.ExactlyOnce == *e})
	}
	for _, kind := range s.Expect.order {
		cond := s.Expect.Findings[kind]
		op, bound, _ := parseCond(cond)
		got := 0
		if f := rep.Find(check.Kind(kind)); f != nil {
			got = f.Count
		}
		out = append(out, result.Expectation{Finding: kind, Want: cond, Got: got, OK: holds(op, bound, got)})
	}
	// Every fault the scenario asks for must have fired: a fault that never
	// fired proves nothing. Swarm runs switch faults off on purpose; a sweep
	// checks coverage over all its seeds instead.
	requested := s.Expect.FaultsFired
	if requested == nil && !opt.Swarm && !s.Config.Plan.Swarm {
		for name := range s.Config.Plan.Faults {
			requested = append(requested, name)
		}
		sort.Strings(requested)
	}
	if opt.Strict {
		tb := rep.Table
		out = append(out, result.Expectation{Finding: StrictExpectation, Want: "0 (--strict: no event more than once, none lost)",
			Got: tb.MoreThanOnce + tb.NeverLost, OK: tb.Clean()})
	}
	if missing := faults.Missing(requested, coverage(h)); len(missing) > 0 {
		for _, m := range missing {
			out = append(out, result.Expectation{Finding: "fault-fired:" + m, Want: "present", Got: 0, OK: false})
		}
	}
	return out
}

func coverage(h *history.History) faults.Coverage {
	c := faults.Coverage{}
	for k, v := range h.Coverage {
		c[k] = v
	}
	return c
}

package faults

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dedupsim/dedupsim/internal/duration"
)

// Knobs pins knob values of one fault by knob name. A value is a number
// (milliseconds for a duration), a duration string ("30s", "2h", "1d",
// "10 minutes": package duration's grammar), a choice's name, or a bool, as
// the knob's kind wants. Knobs not given take their default (or, in swarm
// mode, a drawn value).
type Knobs map[string]any

// Plan says which faults a run wants.
type Plan struct {
	// Faults maps fault names to pinned knobs (nil or empty: defaults).
	// In swarm mode an empty map means the whole catalogue.
	Faults map[string]Knobs `yaml:"faults,omitempty" json:"faults,omitempty"`
	// Swarm: per seed, switch faults off at random and draw the knobs that
	// Faults does not pin.
	Swarm bool `yaml:"swarm,omitempty" json:"swarm,omitempty"`
}

// Settings is a resolved plan: the faults that are on and a value for every
// one of their knobs. The zero Settings has every fault off.
type Settings struct {
	on []active // catalogue order
}

type active struct {
	f      *Fault
	values []float64 // by knob index
}

// Resolve checks an explicit plan against the catalogue and fills in
// default knob values. It refuses unknown faults and knobs, values out of
// range, and a fault whose required faults are off.
func (p Plan) Resolve() (Settings, error) {
	var s Settings
	for _, name := range sortedKeys(p.Faults) {
		i := index(name)
		if i < 0 {
			return Settings{}, unknownFault(name)
		}
		f := &catalogue[i]
		vals, _, err := values(f, p.Faults[name])
		if err != nil {
			return Settings{}, err
		}
		s.on = append(s.on, active{f: f, values: vals})
	}
	s.sort()
	for _, a := range s.on {
		for _, r := range a.f.Requires {
			if !s.On(r) {
				return Settings{}, fmt.Errorf("fault %s requires %s, which is off", a.f.Name, r)
			}
		}
	}
	return s, nil
}

// Draw is swarm mode. The candidates are the plan's faults, or the whole
// catalogue when the plan names none, kept to those applicable says can
// fire in this run (nil: all). Each candidate is on with probability 1/2
// (at least one is on), a fault that is on turns on what it requires, and
// every knob the plan does not pin is drawn from its range (log-uniformly
// for LogScale knobs; Fixed knobs keep their default). Knobs are drawn for
// every candidate, on or off, so switching one fault does not change the
// others' values. The same r state gives the same Settings.
func (p Plan) Draw(r *rand.Rand, applicable func(name string) bool) (Settings, error) {
	if r == nil {
		return Settings{}, fmt.Errorf("faults: swarm needs a random source")
	}
	var cands []int
	if len(p.Faults) == 0 {
		for i := range catalogue {
			cands = append(cands, i)
		}
	} else {
		for _, name := range sortedKeys(p.Faults) {
			i := index(name)
			if i < 0 {
				return Settings{}, unknownFault(name)
			}
			cands = append(cands, i)
		}
		slices.Sort(cands)
	}
	if applicable != nil {
		cands = slices.DeleteFunc(cands, func(i int) bool { return !applicable(catalogue[i].Name) })
	}
	// A fault whose requirement is not a candidate cannot fire.
	for removed := true; removed; {
		n := len(cands)
		cands = slices.DeleteFunc(cands, func(i int) bool {
			for _, req := range catalogue[i].Requires {
				if !slices.Contains(cands, index(req)) {
					return true
				}
			}
			return false
		})
		removed = len(cands) != n
	}
	if len(cands) == 0 {
		return Settings{}, nil
	}
	// The same draws whatever the candidates: a coin per catalogue fault,
	// then a value per knob of every catalogue fault, then the pick used
	// when every coin came up off. So excluding one fault changes nothing
	// else.
	coins := make([]bool, len(catalogue))
	for i := range catalogue {
		coins[i] = r.IntN(2) == 0
	}
	drawn := make([][]float64, len(catalogue))
	for i := range catalogue {
		f := &catalogue[i]
		drawn[i] = make([]float64, len(f.Knobs))
		for k := range f.Knobs {
			drawn[i][k] = draw(r, &f.Knobs[k])
		}
	}
	pick := r.Uint64()
	on := make([]bool, len(cands))
	anyOn := false
	for j, i := range cands {
		on[j] = coins[i]
		anyOn = anyOn || on[j]
	}
	if !anyOn {
		on[pick%uint64(len(cands))] = true
	}
	vals := make([][]float64, len(cands))
	for j, i := range cands {
		f := &catalogue[i]
		v, pinned, err := values(f, p.Faults[f.Name])
		if err != nil {
			return Settings{}, err
		}
		for k := range f.Knobs {
			if !pinned[k] && !f.Knobs[k].Fixed {
				v[k] = drawn[i][k]
			}
		}
		vals[j] = v
	}
	// Turn on what an active fault requires (all candidates, see above).
	// Only ever switching on, this ends.
	for changed := true; changed; {
		changed = false
		for j, i := range cands {
			if !on[j] {
				continue
			}
			for _, req := range catalogue[i].Requires {
				if k := slices.Index(cands, index(req)); !on[k] {
					on[k], changed = true, true
				}
			}
		}
	}
	var s Settings
	for j, i := range cands {
		if on[j] {
			s.on = append(s.on, active{f: &catalogue[i], values: vals[j]})
		}
	}
	return s, nil
}

func draw(r *rand.Rand, k *Knob) float64 {
	u := r.Float64()
	switch k.Kind {
	case Choice:
		return float64(int(u * float64(len(k.Choices))))
	case Bool:
		if u < 0.5 {
			return 0
		}
		return 1
	case Int:
		return math.Min(k.Max, math.Floor(k.Min+u*(k.Max-k.Min+1)))
	}
	hi := k.Max
	if k.SwarmMax > k.Min && k.SwarmMax < hi {
		hi = k.SwarmMax
	}
	x := k.Min + u*(hi-k.Min)
	if k.LogScale && k.Min > 0 {
		x = math.Exp(math.Log(k.Min) + u*(math.Log(hi)-math.Log(k.Min)))
	}
	return math.Max(k.Min, math.Min(hi, x)) // rounding must not leave the range
}

// values returns f's knob values with the pinned ones from given and the
// defaults elsewhere, and which were pinned.
func values(f *Fault, given Knobs) ([]float64, []bool, error) {
	vals := make([]float64, len(f.Knobs))
	pinned := make([]bool, len(f.Knobs))
	for i, k := range f.Knobs {
		vals[i] = k.Default
	}
	for _, name := range sortedKeys(given) {
		i := slices.IndexFunc(f.Knobs, func(k Knob) bool { return k.Name == name })
		if i < 0 {
			var names []string
			for _, k := range f.Knobs {
				names = append(names, k.Name)
			}
			return nil, nil, fmt.Errorf("fault %s has no knob %q (knobs: %s)", f.Name, name, strings.Join(names, ", "))
		}
		v, err := parseValue(&f.Knobs[i], given[name])
		if err != nil {
			return nil, nil, fmt.Errorf("fault %s knob %s: %w", f.Name, name, err)
		}
		vals[i], pinned[i] = v, true
	}
	return vals, pinned, nil
}

// ParseValue converts a knob value as written (see Knobs) and checks its
// range.
func ParseValue(fault, knob string, v any) (float64, error) {
	i := index(fault)
	if i < 0 {
		return 0, unknownFault(fault)
	}
	k, ok := catalogue[i].Knob(knob)
	if !ok {
		return 0, fmt.Errorf("fault %s has no knob %q", fault, knob)
	}
	return parseValue(k, v)
}

func parseValue(k *Knob, v any) (float64, error) {
	var x float64
	switch k.Kind {
	case Choice:
		s, ok := v.(string)
		if !ok {
			return 0, fmt.Errorf("want one of %s, got %v", strings.Join(k.Choices, ", "), v)
		}
		i := slices.Index(k.Choices, s)
		if i < 0 {
			return 0, fmt.Errorf("want one of %s, got %q", strings.Join(k.Choices, ", "), s)
		}
		return float64(i), nil
	case Bool:
		switch b := v.(type) {
		case bool:
			if b {
				return 1, nil
			}
			return 0, nil
		case string:
			p, err := strconv.ParseBool(b)
			if err != nil {
				return 0, fmt.Errorf("want true or false, got %q", b)
			}
			if p {
				return 1, nil
			}
			return 0, nil
		}
		n, ok := number(v)
		if !ok || (n != 0 && n != 1) {
			return 0, fmt.Errorf("want true or false, got %v", v)
		}
		return n, nil
	case DurationMs:
		switch d := v.(type) {
		case time.Duration:
			x = float64(d) / float64(time.Millisecond)
		case string:
			dur, err := duration.Parse(d)
			if err != nil {
				return 0, err
			}
			x = float64(dur / time.Millisecond)
		default:
			n, ok := number(v)
			if !ok {
				return 0, fmt.Errorf("want a duration (\"30s\") or milliseconds, got %v", v)
			}
			x = n
		}
	default:
		n, ok := number(v)
		if !ok {
			if s, isStr := v.(string); isStr {
				f, err := strconv.ParseFloat(s, 64)
				if err != nil {
					return 0, fmt.Errorf("want a number, got %q", s)
				}
				n = f
			} else {
				return 0, fmt.Errorf("want a number, got %v", v)
			}
		}
		x = n
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("want a finite number, got %v", v)
	}
	if k.Kind == Int && x != math.Trunc(x) {
		return 0, fmt.Errorf("want an integer, got %v", v)
	}
	if x < k.Min || x > k.Max {
		return 0, fmt.Errorf("%v is out of range [%v, %v]", v, k.Min, k.Max)
	}
	return x, nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return float64(n), true
	}
	return 0, false
}

func unknownFault(name string) error {
	return fmt.Errorf("unknown fault %q (faults: %s)", name, strings.Join(Names(), ", "))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (s *Settings) sort() {
	slices.SortFunc(s.on, func(a, b active) int { return index(a.f.Name) - index(b.f.Name) })
}

// On reports whether a fault is on.
func (s Settings) On(name string) bool { return s.find(name) != nil }

func (s Settings) find(name string) *active {
	for i := range s.on {
		if s.on[i].f.Name == name {
			return &s.on[i]
		}
	}
	return nil
}

// Names lists the faults that are on, sorted by name.
func (s Settings) Names() []string {
	out := make([]string, len(s.on))
	for i, a := range s.on {
		out[i] = a.f.Name
	}
	sort.Strings(out)
	return out
}

// Value is a knob's value. It panics on a fault that is off or a knob that
// does not exist: both are programming errors in the simulator.
func (s Settings) Value(fault, knob string) float64 {
	a := s.find(fault)
	if a == nil {
		panic("faults: " + fault + " is off")
	}
	for i, k := range a.f.Knobs {
		if k.Name == knob {
			return a.values[i]
		}
	}
	panic("faults: " + fault + " has no knob " + knob)
}

// Int is Value rounded to an int.
func (s Settings) Int(fault, knob string) int { return int(math.Round(s.Value(fault, knob))) }

// Ms is a duration knob in milliseconds.
func (s Settings) Ms(fault, knob string) int64 { return int64(math.Round(s.Value(fault, knob))) }

// Bool is a Bool knob.
func (s Settings) Bool(fault, knob string) bool { return s.Value(fault, knob) != 0 }

// Choice is a Choice knob's name.
func (s Settings) Choice(fault, knob string) string {
	a := s.find(fault)
	if a == nil {
		panic("faults: " + fault + " is off")
	}
	k, ok := a.f.Knob(knob)
	if !ok || k.Kind != Choice {
		panic("faults: " + fault + " has no choice knob " + knob)
	}
	return k.Choices[s.Int(fault, knob)]
}

// Knobs returns every active fault's knob values, as they would be written
// in a Plan (choices by name, bools as bool, numbers as float64), so a run
// drawn in swarm mode can be replayed as an explicit plan.
func (s Settings) Knobs() map[string]Knobs {
	out := make(map[string]Knobs, len(s.on))
	for _, a := range s.on {
		m := make(Knobs, len(a.values))
		for i, k := range a.f.Knobs {
			v := a.values[i]
			switch k.Kind {
			case Choice:
				m[k.Name] = k.Choices[int(v)]
			case Bool:
				m[k.Name] = v != 0
			default:
				m[k.Name] = v
			}
		}
		out[a.f.Name] = m
	}
	return out
}

// Plan returns the explicit plan that resolves to s.
func (s Settings) Plan() Plan { return Plan{Faults: s.Knobs()} }

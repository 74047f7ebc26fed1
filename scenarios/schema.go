package scenarios

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/internal/duration"
	"github.com/dedupsim/dedupsim/internal/suggest"
	"github.com/dedupsim/dedupsim/internal/yamlstrict"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sim/check"
)

// The scenario file's schema is the Go types it decodes into (file,
// sim.Config and its parts, faults.Plan), read by reflection from their
// yaml tags, so a field added to sim.Config is checked as strictly as the
// others without a second list to keep in step. The walker runs on the
// YAML node tree before decoding and refuses, with file, line and field:
// tags (!!int, !foo), anchors and aliases, unknown fields (with a "did you
// mean"), a field given twice, a value of the wrong kind (a list for a
// number, "yes" for a boolean, NaN or infinity, a number for a duration),
// durations that are not whole milliseconds, and unknown faults and knobs
// or knob values out of range (in human units). Domains of values are
// sim's (sim.FieldError) and the fault catalogue's; the walker only places
// them.

// walker checks one file's node tree.
type walker struct {
	file string
}

func (w *walker) errAt(n *yaml.Node, field, format string, a ...any) *yamlstrict.Error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &yamlstrict.Error{File: w.file, Line: line, Field: field, Msg: fmt.Sprintf(format, a...)}
}

// plain refuses what the scenario format does not use anywhere: tags,
// anchors and aliases, and keys that are not plain scalars.
func (w *walker) plain(n *yaml.Node, path string) error {
	switch {
	case n.Kind == yaml.AliasNode:
		return w.errAt(n, path, "aliases (*%s) are not supported: write the value out", n.Value)
	case n.Anchor != "":
		return w.errAt(n, path, "anchors (&%s) are not supported: write each value out", n.Anchor)
	case n.Style&yaml.TaggedStyle != 0:
		return w.errAt(n, path, "YAML tags such as %s are not supported: write the value plainly (a number, a string, true or false)", n.Tag)
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kp := yamlstrict.Join(path, k.Value)
			if k.Kind != yaml.ScalarNode {
				return w.errAt(k, path, "a key must be a plain name, not a %s", yamlstrict.KindName(k))
			}
			if err := w.plain(k, kp); err != nil {
				return err
			}
			if err := w.plain(v, kp); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := w.plain(c, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

var (
	durationType  = reflect.TypeOf(sim.Duration(0))
	queryType     = reflect.TypeOf(sim.QueryText(""))
	nodeType      = reflect.TypeOf(yaml.Node{})
	faultsMapType = reflect.TypeOf(map[string]faults.Knobs{})
)

// value checks node n against Go type t (the field at path).
func (w *walker) value(n *yaml.Node, t reflect.Type, path string) error {
	switch t {
	case durationType:
		s, err := w.scalar(n, path, "a duration such as 30s")
		if err != nil {
			return err
		}
		if _, err := duration.Parse(s.Value); err != nil {
			return w.errAt(s, path, "%v", err)
		}
		return nil
	case queryType:
		if n.Kind == yaml.MappingNode || n.Kind == yaml.ScalarNode && !yamlstrict.IsNull(n) && n.ShortTag() == "!!str" {
			return nil // query.Parse checks it, with lines
		}
		return w.errAt(n, path, "want the query as a mapping (dedup: ..., watermark: ...) or a block string, got %s", yamlstrict.Plain(n))
	case nodeType:
		return nil // expect.findings: parseExpect
	case faultsMapType:
		return w.faults(n, path)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return w.value(n, t.Elem(), path)
	case reflect.Struct:
		return w.mapping(n, t, path)
	case reflect.Slice:
		if yamlstrict.IsNull(n) {
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return w.errAt(n, path, "want a list (- item, or [a, b]), got %s", yamlstrict.Plain(n))
		}
		for i, c := range n.Content {
			ip := fmt.Sprintf("%s[%d]", path, i)
			if yamlstrict.IsNull(c) {
				return w.errAt(c, ip, "an empty list item: write the item or remove the dash")
			}
			if err := w.value(c, t.Elem(), ip); err != nil {
				return err
			}
		}
		return nil
	case reflect.Bool:
		s, err := w.scalar(n, path, "true or false")
		if err != nil {
			return err
		}
		if s.ShortTag() != "!!bool" || (s.Value != "true" && s.Value != "false") {
			return w.errAt(s, path, "want true or false, got %s", yamlstrict.Plain(s))
		}
		return nil
	case reflect.Int, reflect.Int64:
		s, err := w.scalar(n, path, "a whole number")
		if err != nil {
			return err
		}
		var v int64
		if s.ShortTag() != "!!int" || s.Decode(&v) != nil {
			return w.errAt(s, path, "want a whole number, got %s", yamlstrict.Plain(s))
		}
		return nil
	case reflect.Float64:
		s, err := w.scalar(n, path, "a number")
		if err != nil {
			return err
		}
		var v float64
		if (s.ShortTag() != "!!int" && s.ShortTag() != "!!float") || s.Decode(&v) != nil {
			return w.errAt(s, path, "want a number, got %s", yamlstrict.Plain(s))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return w.errAt(s, path, "want a finite number, got %s", s.Value)
		}
		return nil
	case reflect.String:
		_, err := w.scalar(n, path, "a string")
		return err
	}
	return nil
}

// scalar is n when it is a scalar with a value.
func (w *walker) scalar(n *yaml.Node, path, want string) (*yaml.Node, error) {
	if n.Kind != yaml.ScalarNode {
		return nil, w.errAt(n, path, "want %s, got %s", want, yamlstrict.Plain(n))
	}
	if yamlstrict.IsNull(n) {
		return nil, w.errAt(n, path, "no value: want %s (or leave the field out for its default)", want)
	}
	return n, nil
}

// fieldsOf lists the yaml fields of struct type t (inline fields
// flattened), with the type of each.
func fieldsOf(t reflect.Type) ([]string, map[string]reflect.Type) {
	var names []string
	types := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if strings.Contains(","+opts+",", ",inline,") {
			n, ts := fieldsOf(sf.Type)
			names = append(names, n...)
			for k, v := range ts {
				types[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		names = append(names, name)
		types[name] = sf.Type
	}
	return names, types
}

// mapping checks a mapping against struct type t.
func (w *walker) mapping(n *yaml.Node, t reflect.Type, path string) error {
	if yamlstrict.IsNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return w.errAt(n, path, "want a mapping (field: value), got %s", yamlstrict.Plain(n))
	}
	names, types := fieldsOf(t)
	keys := yamlstrict.NewKeys(names)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := yamlstrict.Join(path, k.Value)
		problem, first := keys.Check(k.Value, k.Line)
		if problem == yamlstrict.Twice {
			return w.errAt(k, kp, "given twice (first at line %d)", first)
		}
		ft := types[k.Value]
		if problem == yamlstrict.Unknown {
			msg := fmt.Sprintf("field %s not found", kp)
			if s := keys.Suggest(k.Value); s != "" {
				msg += ": did you mean " + s + "?"
			} else {
				msg += " (fields here: " + strings.Join(names, ", ") + ")"
			}
			return w.errAt(k, "", "%s", msg)
		}
		if err := w.value(v, ft, kp); err != nil {
			return err
		}
	}
	return nil
}

// faults checks `faults:`: known faults, known knobs, values in range.
func (w *walker) faults(n *yaml.Node, path string) error {
	if yamlstrict.IsNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return w.errAt(n, path, "want a mapping of fault name to knobs (crash-random: {rate: 0.05}), got %s", yamlstrict.Plain(n))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		fp := yamlstrict.Join(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			return w.errAt(k, fp, "given twice (first at line %d)", first)
		}
		seen[k.Value] = k.Line
		f, ok := faults.Lookup(k.Value)
		if !ok {
			return w.errAt(k, fp, "%s", unknownMsg("fault", "", k.Value, faults.Names()))
		}
		if yamlstrict.IsNull(v) {
			continue
		}
		if v.Kind != yaml.MappingNode {
			return w.errAt(v, fp, "want a mapping of knob to value ({} for the defaults), got %s", yamlstrict.Plain(v))
		}
		var knobNames []string
		for _, kn := range f.Knobs {
			knobNames = append(knobNames, kn.Name)
		}
		kseen := map[string]int{}
		for j := 0; j+1 < len(v.Content); j += 2 {
			kk, kv := v.Content[j], v.Content[j+1]
			kp := yamlstrict.Join(fp, kk.Value)
			if first, dup := kseen[kk.Value]; dup {
				return w.errAt(kk, kp, "given twice (first at line %d)", first)
			}
			kseen[kk.Value] = kk.Line
			knob, ok := f.Knob(kk.Value)
			if !ok {
				if len(knobNames) == 0 {
					return w.errAt(kk, kp, "unknown knob: %s has none (write %s: {})", f.Name, f.Name)
				}
				return w.errAt(kk, kp, "%s", unknownMsg("knob", "", kk.Value, knobNames))
			}
			if err := w.knob(f.Name, knob, kv, kp); err != nil {
				return err
			}
		}
	}
	return nil
}

// knob checks one knob value with the fault catalogue's rules and says
// what is accepted in the knob's own units.
func (w *walker) knob(fault string, k *faults.Knob, n *yaml.Node, path string) error {
	want := knobDomain(k)
	if n.Kind != yaml.ScalarNode || yamlstrict.IsNull(n) {
		return w.errAt(n, path, "want %s, got %s", want, yamlstrict.Plain(n))
	}
	var v any
	switch k.Kind {
	case faults.Bool:
		if n.ShortTag() != "!!bool" {
			return w.errAt(n, path, "want true or false, got %s", yamlstrict.Plain(n))
		}
		v = n.Value == "true"
	case faults.Choice:
		if !slices.Contains(k.Choices, n.Value) {
			msg := fmt.Sprintf("%q: want %s", n.Value, suggest.OrList(k.Choices))
			if s := suggest.Best(n.Value, k.Choices); s != "" {
				msg += " (did you mean " + s + "?)"
			}
			return w.errAt(n, path, "%s", msg)
		}
		v = n.Value
	case faults.DurationMs:
		switch n.ShortTag() {
		case "!!int", "!!float":
			var x float64
			if n.Decode(&x) != nil {
				return w.errAt(n, path, "want %s, got %s", want, yamlstrict.Plain(n))
			}
			v = x
		case "!!str":
			d, err := duration.Parse(n.Value)
			if err != nil {
				return w.errAt(n, path, "%v", err)
			}
			v = float64(d / time.Millisecond)
		default:
			return w.errAt(n, path, "want %s, got %s", want, yamlstrict.Plain(n))
		}
	default:
		var x float64
		if (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || n.Decode(&x) != nil {
			return w.errAt(n, path, "want %s, got %s", want, yamlstrict.Plain(n))
		}
		v = x
	}
	if _, err := faults.ParseValue(fault, k.Name, v); err != nil {
		return w.errAt(n, path, "%s: want %s", n.Value, want)
	}
	// The catalogue's own reading must agree (it also reads the string
	// form of a duration): the two parsers must never disagree silently.
	var raw any
	if err := n.Decode(&raw); err == nil {
		if x, err := faults.ParseValue(fault, k.Name, raw); err != nil || fmt.Sprint(x) != fmt.Sprint(mustValue(fault, k.Name, v)) {
			return w.errAt(n, path, "%s: want %s", n.Value, want)
		}
	}
	return nil
}

func mustValue(fault, knob string, v any) float64 {
	x, _ := faults.ParseValue(fault, knob, v)
	return x
}

// knobDomain is a knob's accepted values in its own units.
func knobDomain(k *faults.Knob) string {
	switch k.Kind {
	case faults.Bool:
		return "true or false"
	case faults.Choice:
		return suggest.OrList(k.Choices)
	case faults.DurationMs:
		ms := func(x float64) string { return duration.Format(time.Duration(x) * time.Millisecond) }
		return fmt.Sprintf("[%s, %s] (a duration such as 30s, or milliseconds)", ms(k.Min), ms(k.Max))
	case faults.Int:
		return fmt.Sprintf("a whole number in [%s, %s]", num(k.Min), num(k.Max))
	}
	return fmt.Sprintf("a number in [%s, %s]", num(k.Min), num(k.Max))
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// defaulted refuses a value written explicitly that equals the "unset"
// zero of a field whose zero means its default: `downtime: 0s` must not
// silently run with 10s, nor `per_sec: 0` with 100 events per second.
func (w *walker) defaulted(doc *yaml.Node, f *file) error {
	cfg := f.Config
	def := cfg.WithDefaults()
	zero := func(n *yaml.Node, got, filled reflect.Value, path string) error {
		if !got.IsZero() || filled.IsZero() {
			return nil
		}
		shown := n.Value
		if n.ShortTag() == "!!str" && (shown == "" || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0) {
			shown = strconv.Quote(shown)
		}
		msg := fmt.Sprintf("%s leaves the field unset, which means the default %s", shown, fmtDefault(filled))
		if d := sim.Domain(path); d != "" {
			msg += "; want " + d
		}
		return w.errAt(n, path, "%s", msg)
	}
	top := reflect.ValueOf(cfg)
	topDef := reflect.ValueOf(def)
	names, _ := fieldsOf(reflect.TypeOf(cfg))
	for _, name := range names {
		n := valueNode(doc, name)
		if n == nil || n.Kind != yaml.ScalarNode {
			continue
		}
		if err := zero(n, fieldByTag(top, name), fieldByTag(topDef, name), name); err != nil {
			return err
		}
	}
	srcs := valueNode(doc, "sources")
	for i, sc := range cfg.Sources {
		if srcs == nil || i >= len(srcs.Content) {
			break
		}
		filled := reflect.ValueOf(sc.WithDefaults())
		got := reflect.ValueOf(sc)
		var walk func(n *yaml.Node, got, filled reflect.Value, path string) error
		walk = func(n *yaml.Node, got, filled reflect.Value, path string) error {
			if n == nil || n.Kind != yaml.MappingNode {
				return nil
			}
			for j := 0; j+1 < len(n.Content); j += 2 {
				k, v := n.Content[j], n.Content[j+1]
				g, d := fieldByTag(got, k.Value), fieldByTag(filled, k.Value)
				if !g.IsValid() {
					continue
				}
				p := path + "." + k.Value
				if v.Kind == yaml.MappingNode && g.Kind() == reflect.Struct {
					if err := walk(v, g, d, p); err != nil {
						return err
					}
					continue
				}
				if v.Kind == yaml.ScalarNode {
					if err := zero(v, g, d, p); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if err := walk(srcs.Content[i], got, filled, fmt.Sprintf("sources[%d]", i)); err != nil {
			return err
		}
	}
	// Payload columns: bytes 0 would mean the default length.
	if cols := valueNode(doc, "columns"); cols != nil && cols.Kind == yaml.SequenceNode {
		for i, c := range cols.Content {
			if b := valueNode(c, "bytes"); b != nil && i < len(cfg.Columns) && cfg.Columns[i].Bytes == 0 && !yamlstrict.IsNull(b) {
				p := fmt.Sprintf("columns[%d].bytes", i)
				return w.errAt(b, p, "%s leaves the field unset, which means the default 16; want %s", b.Value, sim.Domain(p))
			}
		}
	}
	// The check section: zero means the checker's default.
	if c := valueNode(doc, "check"); c != nil && c.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(c.Content); j += 2 {
			k, v := c.Content[j], c.Content[j+1]
			p := "check." + k.Value
			switch k.Value {
			case "state_margin":
				if x := f.Check.StateMargin; !(x > 0 && x <= 1e6) {
					return w.errAt(v, p, "%s: want (0, 1000000] (a fraction of rate x retention; 0 would mean the default %v: for no margin write a tiny value such as 0.001)", v.Value, check.DefaultStateMargin)
				}
			case "growth_fraction":
				if x := f.Check.GrowthFraction; !(x > 0 && x <= 1e6) {
					return w.errAt(v, p, "%s: want (0, 1000000] (0 would mean the default %v)", v.Value, check.DefaultGrowthFraction)
				}
			case "max_examples":
				if x := f.Check.MaxExamples; x < 1 || x > 1000 {
					return w.errAt(v, p, "%s: want [1, 1000] (0 would mean the default %d)", v.Value, check.DefaultMaxExamples)
				}
			case "stall_span":
				if d := time.Duration(f.Check.StallSpan); d < time.Millisecond || d > 366*24*time.Hour {
					return w.errAt(v, p, "%s: want [1ms, 366d] (0 would mean the default, 3 x max(delay, trigger_interval, 1s))", v.Value)
				}
			}
		}
	}
	return nil
}

func fmtDefault(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case sim.QueryText:
		return "query (dropDuplicatesWithinWatermark on [id], watermark ts 1 minute, a table sink)"
	case sim.Duration:
		return duration.Format(time.Duration(x))
	case string:
		return strconv.Quote(x)
	case float64:
		return num(x)
	}
	return fmt.Sprint(v.Interface())
}

// fieldByTag is struct v's field with yaml name name (inline fields
// searched); the zero Value when there is none.
func fieldByTag(v reflect.Value, name string) reflect.Value {
	if v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if strings.Contains(","+opts+",", ",inline,") {
			if f := fieldByTag(v.Field(i), name); f.IsValid() {
				return f
			}
			continue
		}
		if tag == name {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

// applicable refuses a field the run would ignore: a diurnal knob under
// another rate profile, a bounded key space's size for fresh keys, a
// send-delay parameter its kind does not use. Written, it says the author
// expects it to matter.
func (w *walker) applicable(doc *yaml.Node, f *file) error {
	srcs := valueNode(doc, "sources")
	for i, sc := range f.Config.Sources {
		if srcs == nil || i >= len(srcs.Content) {
			break
		}
		n := srcs.Content[i]
		at := func(sec, field string) *yaml.Node {
			s := valueNode(n, sec)
			if s == nil {
				return nil
			}
			if field == "" {
				return keyNode(n, sec)
			}
			return keyNode(s, field)
		}
		p := fmt.Sprintf("sources[%d]", i)
		profile := sc.Rate.Profile
		if profile == "" {
			profile = sim.RateConstant
		}
		for _, r := range []struct{ field, profile string }{
			{"amplitude", sim.RateDiurnal}, {"period", sim.RateDiurnal},
			{"burst_factor", sim.RateBursts}, {"burst_every", sim.RateBursts}, {"burst_length", sim.RateBursts},
		} {
			if k := at("rate", r.field); k != nil && profile != r.profile {
				return w.errAt(k, p+".rate."+r.field, "applies to rate.profile %s only (the profile is %s)", r.profile, profile)
			}
		}
		if k := at("keys", "size"); k != nil && sc.Keys.Kind != sim.KeysBounded {
			return w.errAt(k, p+".keys.size", "applies to keys.kind bounded only (fresh keys never repeat)")
		}
		if sd := valueNode(n, "send_delay"); sd != nil && sd.Kind == yaml.MappingNode {
			if sc.SendDelay.Kind == "" {
				return w.errAt(keyNode(n, "send_delay"), p+".send_delay.kind", "required when send_delay is given: fixed, exponential, lognormal or uniform")
			}
			if k := keyNode(sd, "sigma"); k != nil && sc.SendDelay.Kind != sim.DistLogNormal {
				return w.errAt(k, p+".send_delay.sigma", "applies to kind lognormal only (the kind is %s)", sc.SendDelay.Kind)
			}
			if k := keyNode(sd, "max"); k != nil && sc.SendDelay.Kind != sim.DistUniform {
				return w.errAt(k, p+".send_delay.max", "applies to kind uniform only (the kind is %s)", sc.SendDelay.Kind)
			}
		}
	}
	// expect.faults_fired: names the coverage can hold.
	if e := valueNode(doc, "expect"); e != nil {
		if ff := valueNode(e, "faults_fired"); ff != nil && ff.Kind == yaml.SequenceNode {
			seen := map[string]bool{}
			for i, item := range ff.Content {
				p := fmt.Sprintf("expect.faults_fired[%d]", i)
				if !coverageName(item.Value) {
					return w.errAt(item, p, "%s", unknownMsg("fault", item.Value, item.Value, faults.Names()))
				}
				if seen[item.Value] {
					return w.errAt(item, p, "%q listed twice", item.Value)
				}
				seen[item.Value] = true
			}
		}
	}
	return nil
}

// coverageName reports whether name is a coverage mark a run can set: a
// fault, a fault's variant ("producer-retry/offline"), or a situation
// mark ("sim/replay").
func coverageName(name string) bool {
	if _, ok := faults.Lookup(name); ok {
		return true
	}
	if f, variant, ok := strings.Cut(name, "/"); ok {
		if _, isFault := faults.Lookup(f); isFault && variant == "offline" {
			return true
		}
	}
	return slices.Contains([]string{sim.MarkReplay, sim.MarkLateDrop, sim.MarkDupDrop, sim.MarkEviction, sim.MarkNoDataBatch, sim.MarkSinkSkipped}, name)
}

// unknownMsg says a name (got, shown as show: "" when the field path
// already names it) is not one of known, with a "did you mean" when it is
// close to one, else the list.
func unknownMsg(what, show, got string, known []string) string {
	if show != "" {
		what += " " + strconv.Quote(show)
	}
	if s := suggest.Best(got, known); s != "" {
		return fmt.Sprintf("unknown %s: did you mean %s?", what, s)
	}
	return fmt.Sprintf("unknown %s (want %s)", what, suggest.OrList(known))
}

// lineText is line n (1-based) of data.
func lineText(data []byte, n int) string {
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return lines[n-1]
}

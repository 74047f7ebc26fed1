package scenarios

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dedupsim/dedupsim/internal/filekind"
	"github.com/dedupsim/dedupsim/internal/suggest"
	"github.com/dedupsim/dedupsim/internal/yamlstrict"
)

// Discover resolves the scenario arguments of run and sweep, in order:
// a scenario file; a folder, standing for every *.yaml and *.yml file
// below it (recursively, in sorted path order, skipping names that start
// with a dot, such as .github); or a catalogue name. A folder without a
// scenario file, a name that is neither a file nor a catalogue scenario
// (with a "did you mean"), and two scenarios of one name (their report
// folders would collide) are errors.
func Discover(args []string) ([]*Scenario, error) { return DiscoverNoting(args, nil) }

// DiscoverNoting is Discover, and inside a folder it skips the YAML files
// that are no scenario, telling note (nil: nobody) in one line each: a
// file whose top level is no mapping, or a mapping with none of a
// scenario's keys (an exec pair's query.yaml, a CI workflow, a compose
// file). A file with a scenario key is a scenario, and its errors are
// errors; a file named as an argument is always read as a scenario.
func DiscoverNoting(args []string, note func(string)) ([]*Scenario, error) {
	var out []*Scenario
	from := map[string]string{} // scenario name -> where it came from
	add := func(s *Scenario) error {
		where := Ref(s)
		if prev, ok := from[s.Name]; ok {
			if prev == where {
				return fmt.Errorf("%s: given twice", where)
			}
			return fmt.Errorf("%s: scenario name %q is also the name of %s; report folders are named after scenarios, so rename one", where, s.Name, prev)
		}
		from[s.Name] = where
		out = append(out, s)
		return nil
	}
	for _, a := range args {
		files, err := expand(a)
		if err != nil {
			return nil, err
		}
		folder := false
		if st, err := os.Stat(a); err == nil && st.IsDir() {
			folder = true
		}
		n := 0
		for _, f := range files {
			if folder {
				if why := notScenario(f); why != "" {
					if note != nil {
						note(fmt.Sprintf("%s: skipped, not a scenario (%s)", f, why))
					}
					continue
				}
			}
			n++
			s, err := Load(f)
			if err != nil {
				return nil, err
			}
			if err := add(s); err != nil {
				return nil, err
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("%s: no scenario file in this folder or below it (%d YAML files, none a scenario: a scenario has query:, sources:, faults:, expect: ...)", a, len(files))
		}
	}
	return out, nil
}

// scenarioKeys are the top-level keys of a scenario file.
var scenarioKeys = func() map[string]bool {
	keys := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if strings.Contains(opts, "inline") {
				walk(f.Type)
				continue
			}
			if name != "" && name != "-" {
				keys[name] = true
			}
		}
	}
	walk(reflect.TypeOf(file{}))
	return keys
}()

// notScenario says why the YAML file at path is no scenario ("" when it
// may be one): its top level is not a mapping, or has none of a
// scenario's keys. A file that cannot be read or parsed is left to Load,
// which says what is wrong.
func notScenario(path string) string {
	data, err := readFile(path)
	if err != nil || len(data) > maxFileBytes {
		return ""
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil || len(root.Content) == 0 {
		return ""
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return "its top level is not a mapping"
	}
	var keys []string
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k := doc.Content[i].Value
		if scenarioKeys[k] {
			return ""
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return ""
	}
	what := ""
	if slices.Contains(keys, "dedup") || slices.Contains(keys, "sink") {
		what = ": an exec query file"
	}
	if len(keys) > 4 {
		keys = append(keys[:4], "...")
	}
	return "top-level keys " + strings.Join(keys, ", ") + what
}

// expand turns one argument into the scenario files or catalogue names it
// stands for.
func expand(arg string) ([]string, error) {
	if arg == "" {
		return nil, errors.New(`"": an empty scenario argument (want a file, a folder or a catalogue name)`)
	}
	info, err := os.Stat(arg)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return []string{arg}, knownName(arg)
	case err != nil:
		return nil, err
	case !info.IsDir():
		return []string{arg}, nil
	}
	var files []string
	err = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != arg && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		ext := strings.ToLower(filepath.Ext(p))
		if d.IsDir() || (ext != ".yaml" && ext != ".yml") {
			return nil
		}
		mode := d.Type()
		if mode&fs.ModeSymlink != 0 { // a link to a scenario file counts; to a folder, not
			st, err := os.Stat(p)
			if err != nil {
				return &yamlstrict.Error{File: p, Msg: "a symbolic link that cannot be followed: " + err.Error()}
			}
			if st.IsDir() {
				return nil
			}
			mode = st.Mode().Type()
		}
		if !mode.IsRegular() {
			// A named pipe, a device or a socket named *.yaml in a folder
			// would block the run or read without end: refused, never
			// opened (a pipe given by name, as <(cat s.yaml), is read).
			return &yamlstrict.Error{File: p, Msg: "not a regular file (" + filekind.Name(mode) + "): a scenario file in a folder must be one"}
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no scenario files (*.yaml, *.yml) in this folder or below it", arg)
	}
	sort.Strings(files)
	return files, nil
}

// knownName returns nil when arg, which is not a file, names a catalogue
// scenario, and otherwise an error with the nearest names.
func knownName(arg string) error {
	all, err := Catalogue()
	if err != nil {
		return fmt.Errorf("catalogue: %w", err)
	}
	name := strings.TrimSuffix(arg, ".yaml")
	var names []string
	for _, s := range all {
		if s.Name == name {
			return nil
		}
		names = append(names, s.Name)
	}
	var near []string
	if !strings.ContainsAny(arg, `/\`) {
		near = suggest.Closest(name, names)
	}
	// A misspelt path: the entries of the folder it names, when there is one.
	if dir := filepath.Dir(arg); dir != "." || strings.ContainsAny(arg, `/\`) {
		if entries, err := os.ReadDir(dir); err == nil {
			var siblings []string
			for _, e := range entries {
				siblings = append(siblings, e.Name())
			}
			for _, n := range suggest.Closest(filepath.Base(arg), siblings) {
				near = append(near, filepath.Join(dir, n))
			}
		}
	}
	return &yamlstrict.Error{File: arg, Msg: "no such file or folder, and no catalogue scenario of that name" + suggest.Phrase(near, strconv.Quote) + "; `dedupsim list` lists the catalogue"}
}

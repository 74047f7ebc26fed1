package conform

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

// shrinkCase makes a disagreeing case smaller while it still disagrees:
// rounds of candidates with one steps line dropped, then with one row
// dropped, each round run on Spark at once (the runner's workers run them
// side by side) and the first candidate that still disagrees kept. Spark
// runs are slow, so at most budget candidates are run in all.
func shrinkCase(ctx context.Context, sp *Spark, dir string, c *Case, budget int) (*Case, error) {
	cur := c
	round := 0
	for budget > 0 {
		found := false
		for _, gen := range []func(*Case) []*Case{dropLines, dropRows} {
			cands := gen(cur)
			// Only candidates dedupsim accepts: a repro must run on both.
			var ok []*Case
			for _, k := range cands {
				k.Engine = RunEngine(k, map[string]*fsys.Mem{})
				if !k.Engine.BadInput {
					ok = append(ok, k)
				}
			}
			if len(ok) > budget {
				ok = ok[:budget]
			}
			if len(ok) == 0 {
				continue
			}
			budget -= len(ok)
			round++
			if err := sp.Run(ctx, filepath.Join(dir, fmt.Sprint(round)), ok); err != nil {
				return cur, err
			}
			for _, k := range ok {
				if judge(k).Verdict == Disagree {
					cur, found = k, true
					break
				}
			}
			if found {
				break
			}
		}
		if !found {
			break
		}
	}
	return cur, nil
}

// dropLines returns the case without each one of its steps lines.
func dropLines(c *Case) []*Case {
	lines := stepLines(c.Steps)
	var out []*Case
	for i := range lines {
		rest := append(append([]string{}, lines[:i]...), lines[i+1:]...)
		out = append(out, &Case{Name: c.Name, Query: c.Query, Steps: []byte(joinLines(rest)), engineVersion: c.engineVersion})
	}
	return out
}

// dropRows returns the case without each one of its rows.
func dropRows(c *Case) []*Case {
	lines := stepLines(c.Steps)
	var out []*Case
	for i, line := range lines {
		var st map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &st) != nil {
			continue
		}
		if raw, ok := st["rows"]; ok {
			var rows []json.RawMessage
			if json.Unmarshal(raw, &rows) != nil {
				continue
			}
			for j := range rows {
				st2 := map[string]any{"rows": without(rows, j)}
				out = append(out, withLine(c, lines, i, st2))
			}
			continue
		}
		if raw, ok := st["sources"]; ok {
			var srcs map[string][]json.RawMessage
			if json.Unmarshal(raw, &srcs) != nil {
				continue
			}
			for name, rows := range srcs {
				for j := range rows {
					cp := map[string][]json.RawMessage{}
					for k, v := range srcs {
						cp[k] = v
					}
					cp[name] = without(rows, j)
					out = append(out, withLine(c, lines, i, map[string]any{"sources": cp}))
				}
			}
		}
	}
	return out
}

func without(rows []json.RawMessage, j int) []json.RawMessage {
	return append(append([]json.RawMessage{}, rows[:j]...), rows[j+1:]...)
}

func withLine(c *Case, lines []string, i int, st map[string]any) *Case {
	b, _ := json.Marshal(st)
	cp := append([]string{}, lines...)
	cp[i] = string(b)
	return &Case{Name: c.Name, Query: c.Query, Steps: []byte(joinLines(cp)), engineVersion: c.engineVersion}
}

// stepLines lists a steps file's lines that are steps (not blank, not
// comments).
func stepLines(s []byte) []string {
	var out []string
	for _, l := range strings.Split(string(s), "\n") {
		if t := strings.TrimSpace(l); t != "" && t[0] != '#' {
			out = append(out, l)
		}
	}
	return out
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

package conform

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// GoldenCases extracts the query + steps pair of every `exec` command of
// the engine's datadriven golden files (engine/testdata/*.txt, format in
// engine/golden_test.go). An exec with ckpt=NAME shares its checkpoint with
// the file's other execs of that name, in file order.
func GoldenCases(dir string) ([]*Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var out []*Case
	for _, f := range files {
		// A named pipe or device named *.txt would block or never end.
		if st, err := os.Stat(f); err != nil {
			return nil, err
		} else if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file", f)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		cs, err := goldenFile(filepath.Base(f), data)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

func goldenFile(name string, data []byte) ([]*Case, error) {
	var out []*Case
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != "exec" {
			continue
		}
		start := lineNo
		var ckpt string
		for _, a := range fields[1:] {
			if v, ok := strings.CutPrefix(a, "ckpt="); ok {
				ckpt = name + ":" + v
			}
		}
		var input []string
		closed := false
		for sc.Scan() {
			lineNo++
			if sc.Text() == "----" {
				closed = true
				break
			}
			input = append(input, sc.Text())
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: exec without ----", name, start)
		}
		i := slices.Index(input, "===")
		if i < 0 {
			return nil, fmt.Errorf("%s:%d: exec input without === between query and steps", name, start)
		}
		q := strings.Join(input[:i], "\n") + "\n"
		st := ""
		if rest := input[i+1:]; len(rest) > 0 {
			st = strings.Join(rest, "\n") + "\n"
		}
		out = append(out, &Case{Name: fmt.Sprintf("golden %s:%d", name, start), Query: []byte(q), Steps: []byte(st), Checkpoint: ckpt})
	}
	return out, sc.Err()
}

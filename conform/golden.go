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
	// skipCkpt holds, per checkpoint, why its later execs are not compared
	// on Spark: the file changed the checkpoint behind the engine's back
	// (rm), or an earlier exec on it was left out.
	skipCkpt := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 || (fields[0] != "exec" && fields[0] != "rm") {
			continue
		}
		start := lineNo
		var ckpt string
		for _, a := range fields[1:] {
			if v, ok := strings.CutPrefix(a, "ckpt="); ok {
				ckpt = name + ":" + v
			}
		}
		if fields[0] == "rm" {
			if ckpt != "" && skipCkpt[ckpt] == "" {
				skipCkpt[ckpt] = fmt.Sprintf("%s:%d removes a file of the checkpoint (rm), which the runner does not do to Spark's", name, start)
			}
			continue
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
		c := &Case{Name: fmt.Sprintf("golden %s:%d", name, start), Query: []byte(q), Steps: []byte(st), Checkpoint: ckpt}
		if ckpt != "" {
			c.skip = skipCkpt[ckpt]
		}
		if c.skip == "" && pinsVersion(input[:i]) {
			// Its pinned confs and key order are compared with real
			// Spark's own files in engine/sparkver's tests.
			c.skip = "the query names a Spark version or confs (spark_version:, spark_conf:), which the runner does not set: the pins are compared with real Spark's files by engine/sparkver's tests"
		}
		if c.skip != "" && ckpt != "" && skipCkpt[ckpt] == "" {
			skipCkpt[ckpt] = fmt.Sprintf("an earlier exec on the checkpoint (%s) is not compared", c.Name)
		}
		out = append(out, c)
	}
	return out, sc.Err()
}

// pinsVersion reports whether a golden query names a Spark version or
// confs at its top level.
func pinsVersion(query []string) bool {
	for _, l := range query {
		if strings.HasPrefix(l, "spark_version:") || strings.HasPrefix(l, "spark_conf:") {
			return true
		}
	}
	return false
}

package reports

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dedupsim/dedupsim/internal/atomicfile"
	"github.com/dedupsim/dedupsim/sim"
	"github.com/dedupsim/dedupsim/sim/history"
)

// ExportRun writes h as exec pairs (sim.ExportTraceWith, with the rows
// rendered as the simulator rendered them): checkpoint 0 in dir, checkpoint
// K of a run that restarted on fresh checkpoints in dir/checkpoint-K. Each
// file is written atomically, none through a link; pairs of an earlier
// export with more checkpoints are removed so that dir holds this run
// only. Both files start with the replay command that made them (the way
// back from the pair to the seed). It returns the pairs written, those
// before an error too. An error of a file written is ErrUnsafePath's or
// the file system's as is; any other is prefixed with "replay: --export: ".
func ExportRun(dir string, cfg sim.Config, h *history.History, replay string) (pairs []ExportedPair, err error) {
	opt, err := sim.ExportOptionsFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("replay: --export: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("replay: --export: %w", err)
	}
	n := sim.ExportCheckpoints(h)
	for k := range n {
		opt.Checkpoint = k
		qy, st, err := sim.ExportTraceWith(h, opt)
		if err != nil {
			return pairs, fmt.Errorf("replay: --export: %w", err)
		}
		sub := dir
		if k > 0 {
			sub = filepath.Join(dir, "checkpoint-"+strconv.Itoa(k))
			root, err := atomicfile.OpenDir(sub)
			if err != nil {
				return pairs, err
			}
			root.Close()
		}
		q, s := filepath.Join(sub, "query.yaml"), filepath.Join(sub, "steps.jsonl")
		from := []byte("# Exported from: " + replay + " (add --export DIR to write this pair again)\n")
		for _, f := range []struct {
			path string
			data []byte
		}{{q, qy}, {s, st}} {
			if err := atomicfile.WriteFile(f.path, append(from[:len(from):len(from)], f.data...)); err != nil {
				return pairs, err
			}
		}
		pairs = append(pairs, ExportedPair{Query: q, Steps: s, Checkpoint: k, Of: n})
	}
	return pairs, removeStaleCheckpoints(dir, n)
}

// ExportedPair is an exec pair ExportRun wrote: the query and steps files
// of checkpoint Checkpoint of Of.
type ExportedPair struct {
	Query, Steps   string
	Checkpoint, Of int
}

// removeStaleCheckpoints removes dir/checkpoint-K for K >= n, left by an
// earlier export of a run with more checkpoints (a link there is removed,
// not followed).
func removeStaleCheckpoints(dir string, n int) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("replay: --export: %w", err)
	}
	defer root.Close()
	for k := max(n, 1); ; k++ {
		name := "checkpoint-" + strconv.Itoa(k)
		if _, err := root.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return fmt.Errorf("replay: --export: %w", err)
		}
		if err := root.RemoveAll(name); err != nil {
			return fmt.Errorf("replay: --export: %w", err)
		}
	}
}

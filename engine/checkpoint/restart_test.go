package checkpoint

import (
	"errors"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

// TestNext: the restart rule (§9) over the names in both logs, with the
// log's checks on names.
func TestNext(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   []string
		batch   int64
		replay  bool
		corrupt string // the file a *CorruptError names
	}{
		{name: "empty checkpoint: a new query", batch: 0},
		{name: "a commit but no offsets: still a new query (§9.1)", files: []string{"commits/0"}, batch: 0},
		{name: "offsets/0 planned, not committed: batch 0 again", files: []string{"offsets/0"}, batch: 0, replay: true},
		{name: "batch 0 complete", files: []string{"offsets/0", "commits/0"}, batch: 1},
		{name: "batch 3 complete", files: []string{"offsets/2", "offsets/3", "commits/2", "commits/3"}, batch: 4},
		{name: "batch 3 planned after commit 2", files: []string{"offsets/2", "offsets/3", "commits/2"}, batch: 3, replay: true},
		{name: "commit log far behind (§9.4)", files: []string{"offsets/7", "commits/2"}, batch: 7, replay: true},
		{name: "temp and crc files are not batches", files: []string{"offsets/4", "commits/4", "offsets/.5.tmp", "commits/.4.crc", "commits/notes"}, batch: 5},
		{name: "a commit ahead of the offset log", files: []string{"offsets/3", "commits/3", "commits/4"}, corrupt: "commits/4"},
		{name: "a name Spark reads as another batch id", files: []string{"offsets/007"}, corrupt: "offsets/007"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := fsys.NewMem()
			for _, f := range tc.files {
				dir, _, _ := strings.Cut(f, "/")
				if err := fs.MkdirAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := fsys.WriteAtomic(fs, f, []byte("x")); err != nil {
					t.Fatal(err)
				}
			}
			batch, replay, err := Next(fs)
			if tc.corrupt != "" {
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.File != tc.corrupt {
					t.Fatalf("Next = %d, %v, %v; want a *CorruptError naming %s", batch, replay, err, tc.corrupt)
				}
				return
			}
			if err != nil || batch != tc.batch || replay != tc.replay {
				t.Fatalf("Next = %d, %v, %v; want %d, %v", batch, replay, err, tc.batch, tc.replay)
			}
		})
	}
}

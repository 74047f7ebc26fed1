package engine_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/state/stores"
	"github.com/dedupsim/dedupsim/engine/steps"
	"github.com/dedupsim/dedupsim/engine/trace"
)

const v2Query = "dedup: {api: dropDuplicates, keys: [id, ts]}\nwatermark: {column: ts, delay: 10 seconds}\nshuffle_partitions: 2\nstate_store: pebble\n"

var v2Input = []string{
	`{"rows": [{"id":"a","ts":1},{"id":"b","ts":2},{"id":"a","ts":1}]}`,
	`{"rows": [{"id":"c","ts":3},{"id":"a","ts":4}]}`,
	`{"crash": "after-state-commit"}`,
	`{"rows": [{"id":"d","ts":30},{"id":"b","ts":5}]}`,
	`{"restart": true}`,
	`{"rows": [{"id":"e","ts":31},{"id":"d","ts":30}]}`,
}

func runOn(t *testing.T, ckpt fsys.FS, yaml string, lines []string, seed uint64) (*trace.Result, error) {
	t.Helper()
	q, err := query.Parse("q.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	st, err := steps.Parse("steps.jsonl", []byte(strings.Join(lines, "\n")), q)
	if err != nil {
		t.Fatal(err)
	}
	return trace.Run(q, st, trace.Options{Checkpoint: ckpt, Seed: seed, NewStateProvider: stores.Open})
}

var v2FileRe = regexp.MustCompile(`^([0-9]+)_([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})\.(changelog|zip)$`)

// A query with checkpoint_format_version 2 writes Spark's format-v2
// layout: commits "v2" naming each partition's checkpoint id, state files
// <V>_<id>.changelog; a batch run again after a crash after its state
// commit leaves the first attempt's file under another id, which the
// restart does not read; rows and table equal the format-v1 run's, and the
// same seed gives the same ids.
func TestFormatV2Layout(t *testing.T) {
	ck := fsys.NewMem()
	got, err := runOn(t, ck, v2Query+"checkpoint_format_version: 2\n", v2Input, 7)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := runOn(t, fsys.NewMem(), v2Query, v2Input, 7)
	if err != nil {
		t.Fatal(err)
	}
	if got.Crashes != 1 || !slices.Equal(lastEmitted(got), lastEmitted(ref)) || !slices.Equal(sorted(got.Table), sorted(ref.Table)) {
		t.Fatalf("format v2 run differs from v1:\n got %v %v\nwant %v %v", lastEmitted(got), sorted(got.Table), lastEmitted(ref), sorted(ref.Table))
	}
	log := checkpoint.New(ck)
	last, err := log.Latest("commits")
	if err != nil || last < 3 {
		t.Fatalf("last commit %d %v", last, err)
	}
	named := map[string]bool{}
	for n := int64(0); n <= last; n++ {
		b, _ := ck.ReadFile(fmt.Sprintf("commits/%d", n))
		if !strings.HasPrefix(string(b), "v2\n{\"nextBatchWatermarkMs\":") || !strings.Contains(string(b), `"stateUniqueIds":{"0":[["`) {
			t.Fatalf("commits/%d: %q", n, b)
		}
		c, err := log.ReadCommit(n)
		if err != nil {
			t.Fatal(err)
		}
		for p, ids := range c.StateUniqueIDs["0"] {
			named[fmt.Sprintf("state/0/%d/%d_%s.changelog", p, n+1, ids[0])] = true
		}
	}
	orphans := 0
	for p := 0; p < 2; p++ {
		names, err := ck.ReadDir(fmt.Sprintf("state/0/%d", p))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if n == "_metadata" {
				continue
			}
			m := v2FileRe.FindStringSubmatch(n)
			if m == nil {
				t.Fatalf("state/0/%d/%s: not a format-v2 name", p, n)
			}
			if m[3] == "changelog" && !named[fmt.Sprintf("state/0/%d/%s", p, n)] {
				orphans++
			}
		}
	}
	for f := range named {
		if _, err := ck.ReadFile(f); err != nil {
			t.Errorf("%s, named by the commit log: %v", f, err)
		}
	}
	// The crash after the state commit of one batch: one file per partition
	// that no commit names.
	if orphans != 2 {
		t.Errorf("%d changelogs no commit names, want 2 (the crashed attempt's)", orphans)
	}
	// The same seed, the same ids.
	again := fsys.NewMem()
	if _, err := runOn(t, again, v2Query+"checkpoint_format_version: 2\n", v2Input, 7); err != nil {
		t.Fatal(err)
	}
	a, _ := ck.ReadFile(fmt.Sprintf("commits/%d", last))
	b, _ := again.ReadFile(fmt.Sprintf("commits/%d", last))
	if string(a) != string(b) {
		t.Errorf("same seed, other ids:\n%s\n%s", a, b)
	}
}

// A checkpoint keeps its format: a v1 checkpoint restarted with
// checkpoint_format_version 2, or a v2 one without, is refused naming the
// commit.
func TestFormatV2RefusesFormatChange(t *testing.T) {
	for _, tc := range []struct{ first, then, want string }{
		{v2Query, v2Query + "checkpoint_format_version: 2\n", "written in state checkpoint format v1, but the query sets checkpoint_format_version: 2"},
		{v2Query + "checkpoint_format_version: 2\n", v2Query, "written in state checkpoint format v2"},
	} {
		ck := fsys.NewMem()
		if _, err := runOn(t, ck, tc.first, v2Input[:2], 1); err != nil {
			t.Fatal(err)
		}
		_, err := runOn(t, ck, tc.then, v2Input[3:4], 1)
		var ce *checkpoint.CorruptError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !asCorrupt(err, &ce) || ce.File != "commits/1" {
			t.Errorf("got %v, want a checkpoint error on commits/1 with %q", err, tc.want)
		}
	}
}

func asCorrupt(err error, ce **checkpoint.CorruptError) bool {
	for e := err; e != nil; {
		if c, ok := e.(*checkpoint.CorruptError); ok {
			*ce = c
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

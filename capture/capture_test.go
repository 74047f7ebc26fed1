package capture_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/capture"
	"github.com/dedupsim/dedupsim/capture/capturetest"
	"github.com/dedupsim/dedupsim/live"
	"github.com/twmb/franz-go/pkg/kgo"
)

// cluster starts kfake with the workload's topic and produces it.
func cluster(t *testing.T) ([]string, capturetest.Produced) {
	t.Helper()
	k, err := live.StartKfake(t.Context(), map[string]int32{capturetest.Topic: capturetest.Partitions})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	p, err := capturetest.Produce(ctx, k.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	return k.Addrs(), p
}

func run(t *testing.T, opt capture.Options) (capture.Result, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := capture.Run(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(opt.Out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(capture.PartialPath(opt.Out)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("partial file left after a complete capture: %v", err)
	}
	return res, data
}

func src(addrs []string) capture.Source {
	return capture.Source{Brokers: addrs, Topic: capturetest.Topic, Start: capture.Bound{Kind: capture.Earliest}, End: capture.Bound{Kind: capture.Latest}}
}

type line struct {
	Partition int32  `json:"_partition"`
	Offset    int64  `json:"_offset"`
	Timestamp string `json:"_timestamp"`
	ID        string `json:"id"`
	TS        int64  `json:"ts"`
}

// The JSON Lines capture holds every committed record once, with its
// partition, offset and arrival timestamp beside its value, partitions in
// offset order, and none of the aborted transaction (read_committed);
// read_uncommitted has those too.
func TestCaptureLines(t *testing.T) {
	addrs, p := cluster(t)
	out := filepath.Join(t.TempDir(), "events.jsonl")
	res, data := run(t, capture.Options{Source: src(addrs), Out: out})
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if want := "# dedupsim capture: topic payments, read_committed, value-format json"; lines[0] != want {
		t.Fatalf("header %q, want %q", lines[0], want)
	}
	if res.Records != int64(len(p.Events)) || len(lines)-1 != len(p.Events) {
		t.Fatalf("captured %d records (%d lines), produced %d", res.Records, len(lines)-1, len(p.Events))
	}
	byID := map[string][]capturetest.Event{}
	for _, e := range p.Events {
		byID[e.ID] = append(byID[e.ID], e)
	}
	next := map[int32]int64{}
	for _, ln := range lines[1:] {
		var l line
		if err := json.Unmarshal([]byte(ln), &l); err != nil {
			t.Fatalf("%q: %v", ln, err)
		}
		if l.Offset < next[l.Partition] {
			t.Fatalf("partition %d offset %d after %d", l.Partition, l.Offset, next[l.Partition])
		}
		next[l.Partition] = l.Offset + 1
		evs := byID[l.ID]
		if len(evs) == 0 {
			t.Fatalf("line %q: not produced (or captured twice)", ln)
		}
		e := evs[0]
		byID[l.ID] = evs[1:]
		if e.EventTime != l.TS || e.Partition != l.Partition || e.Arrival.Format(capture.TimestampLayout) != l.Timestamp {
			t.Fatalf("line %q, produced %+v", ln, e)
		}
	}

	s := src(addrs)
	s.ReadUncommitted = true
	res, _ = run(t, capture.Options{Source: s, Out: filepath.Join(t.TempDir(), "u.jsonl")})
	if res.Records != int64(len(p.Events)+p.Aborted) {
		t.Fatalf("read_uncommitted captured %d, want %d", res.Records, len(p.Events)+p.Aborted)
	}
}

// A capture cut short (a finished one with an earlier --end, or a partial
// file torn by a kill) and resumed gives the bytes of one capture.
func TestCaptureResume(t *testing.T) {
	addrs, _ := cluster(t)
	for _, mode := range []capture.Options{{}, {Trigger: 30 * time.Second}, {MaxOffsets: 7}} {
		t.Run(fmt.Sprintf("trigger=%v,max-offsets=%d", mode.Trigger, mode.MaxOffsets), func(t *testing.T) {
			dir := t.TempDir()
			opt := mode
			opt.Source, opt.Out = src(addrs), filepath.Join(dir, "full")
			_, full := run(t, opt)

			// A finished capture up to offset 5 of each partition, extended
			// (JSON Lines: steps batches would be cut at the first end, as a
			// query stopped there and restarted plans from its last batch).
			opt.Out = filepath.Join(dir, "extended")
			opt.Source.End = capture.Bound{Kind: capture.AtOffset, Offset: 5}
			run(t, opt)
			opt.Source.End, opt.Resume = capture.Bound{Kind: capture.Latest}, true
			res, got := run(t, opt)
			if !res.Resumed || (!opt.Steps() && !sameLines(got, full)) {
				t.Fatalf("extended capture (resumed %v) differs:\n%s\nwant:\n%s", res.Resumed, got, full)
			}

			// Every torn partial file resumes to the same bytes.
			for _, cut := range []int{len(full) / 3, len(full) / 2, len(full) - 3} {
				opt.Out = filepath.Join(dir, fmt.Sprintf("torn-%d", cut))
				if err := os.WriteFile(capture.PartialPath(opt.Out), full[:cut], 0o644); err != nil {
					t.Fatal(err)
				}
				if _, got := run(t, opt); !sameLines(got, full) || (opt.Steps() && !bytes.Equal(got, full)) {
					t.Fatalf("cut at %d: resumed capture differs:\n%s\nwant:\n%s", cut, got, full)
				}
			}

			// Without --resume a partial file is refused, and so is one of
			// other settings with it.
			opt.Out, opt.Resume = filepath.Join(dir, "refused"), false
			os.WriteFile(capture.PartialPath(opt.Out), full[:10], 0o644)
			_, err := capture.Run(t.Context(), opt)
			var ie *capture.InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), "give --resume to continue it") {
				t.Fatalf("partial without --resume: %v", err)
			}
			opt.Resume = true
			os.WriteFile(capture.PartialPath(opt.Out), []byte("# dedupsim capture: topic other\n"), 0o644)
			if _, err := capture.Run(t.Context(), opt); !errors.As(err, &ie) || !strings.Contains(err.Error(), "made with other settings") {
				t.Fatalf("partial of another topic: %v", err)
			}
		})
	}
}

// sameLines compares two captures line for line, in any order: JSON
// Lines hold each partition in offset order, the partitions interleaved
// as they were fetched. (Steps files are compared byte for byte.)
func sameLines(a, b []byte) bool {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	slices.Sort(la)
	slices.Sort(lb)
	return slices.Equal(la, lb)
}

type stepLine struct {
	Rows []line `json:"rows"`
	Once bool   `json:"once"`
	Tick bool   `json:"tick"`
}

func readSteps(t *testing.T, data []byte) []stepLine {
	t.Helper()
	var out []stepLine
	for _, ln := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.HasPrefix(ln, "#") {
			continue
		}
		var s stepLine
		if err := json.Unmarshal([]byte(ln), &s); err != nil {
			t.Fatalf("%q: %v", ln, err)
		}
		out = append(out, s)
	}
	return out
}

// --trigger 30s cuts a batch at every multiple of 30 s of arrival time,
// partitions in order within it; the quiet stretch after the 30th event
// gives one tick and no more.
func TestCaptureTrigger(t *testing.T) {
	addrs, p := cluster(t)
	_, data := run(t, capture.Options{Source: src(addrs), Out: filepath.Join(t.TempDir(), "steps.jsonl"), Trigger: 30 * time.Second})
	var want []string
	window, prev := int64(-1), int64(-1)
	var batch []capturetest.Event
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if prev >= 0 && window > prev+1 {
			want = append(want, "tick")
		}
		var ids []string
		for part := int32(0); part < capturetest.Partitions; part++ {
			for _, e := range batch {
				if e.Partition == part {
					ids = append(ids, e.ID)
				}
			}
		}
		want = append(want, strings.Join(ids, ","))
		prev, batch = window, nil
	}
	for _, e := range p.Events {
		if w := e.Arrival.UnixMilli() / 30000; w != window {
			flush()
			window = w
		}
		batch = append(batch, e)
	}
	flush()
	var got []string
	for _, s := range readSteps(t, data) {
		if s.Tick {
			got = append(got, "tick")
			continue
		}
		if !s.Once {
			t.Fatalf("batch line without once: %+v", s)
		}
		var ids []string
		for _, r := range s.Rows {
			ids = append(ids, r.ID)
		}
		got = append(got, strings.Join(ids, ","))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("batches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(strings.Join(got, " "), "tick") {
		t.Fatal("the quiet stretch gave no tick")
	}
}

// --max-offsets N reads the backlog N offsets a batch, split over the
// partitions by their lag (Spark's rateLimit); the aborted transaction's
// offsets count towards a batch but give no rows.
func TestCaptureMaxOffsets(t *testing.T) {
	addrs, p := cluster(t)
	res, data := run(t, capture.Options{Source: src(addrs), Out: filepath.Join(t.TempDir(), "steps.jsonl"), MaxOffsets: 10})
	steps := readSteps(t, data)
	rows := 0
	for i, s := range steps {
		if len(s.Rows) > 10+capturetest.Partitions {
			t.Fatalf("batch %d has %d rows for max-offsets 10", i, len(s.Rows))
		}
		rows += len(s.Rows)
	}
	// 43 data offsets + 3 of the aborted transaction (2 records, 1 marker).
	if rows != len(p.Events) || res.Batches != int64(len(steps)) || len(steps) != 5 {
		t.Fatalf("%d rows in %d batches (result %d), want %d rows in 5", rows, len(steps), res.Batches, len(p.Events))
	}
}

// A capture stopped part way (ctx ends, as on SIGINT) keeps its partial
// file, synced, and --resume finishes it as one capture.
func TestCaptureInterrupted(t *testing.T) {
	addrs, _ := cluster(t)
	for _, mode := range []capture.Options{{}, {Trigger: 30 * time.Second}, {MaxOffsets: 7}} {
		dir := t.TempDir()
		opt := mode
		opt.Source, opt.Out = src(addrs), filepath.Join(dir, "full")
		_, full := run(t, opt)
		name := fmt.Sprintf("trigger=%v max-offsets=%d", mode.Trigger, mode.MaxOffsets)

		opt.Out = filepath.Join(dir, "stopped")
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		opt.Progress = func(done, total int64) {
			if calls++; calls == 1 {
				cancel()
			}
		}
		_, err := capture.Run(ctx, opt)
		cancel()
		if err == nil && opt.MaxOffsets == 0 {
			// The whole slice came in the first fetch, before ctx ended:
			// nothing to stop (--max-offsets reads batch by batch).
			t.Logf("%s: complete before the stop", name)
			continue
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: stopped capture: %v", name, err)
		}
		if _, err := os.Stat(opt.Out); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("--out written by a stopped capture: %v", err)
		}
		partial, err := os.ReadFile(capture.PartialPath(opt.Out))
		if err != nil || len(partial) == 0 {
			t.Fatalf("no partial file: %v", err)
		}
		opt.Progress, opt.Resume = nil, true
		res, got := run(t, opt)
		if !sameLines(got, full) || (opt.Steps() && !bytes.Equal(got, full)) {
			t.Fatalf("%s: resumed (%v) capture differs:\n%s\nwant:\n%s", name, res.Resumed, got, full)
		}
	}
}

// A record whose value is not a JSON object stops the capture with its
// place, and --value-format raw captures it.
func TestCaptureBadValue(t *testing.T) {
	k, err := live.StartKfake(t.Context(), map[string]int32{"t": 1})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range []string{`{"id":1}`, `not json`} {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "t", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	s := capture.Source{Brokers: k.Addrs(), Topic: "t", Start: capture.Bound{Kind: capture.Earliest}, End: capture.Bound{Kind: capture.Latest}}
	out := filepath.Join(t.TempDir(), "e.jsonl")
	_, err = capture.Run(t.Context(), capture.Options{Source: s, Out: out})
	var re *capture.RecordError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "topic t partition 0 offset 1: value: not JSON; give --value-format raw") {
		t.Fatalf("bad value: %v", err)
	}
	os.Remove(capture.PartialPath(out))
	_, data := run(t, capture.Options{Source: s, Out: out, ValueFormat: capture.RawValues})
	if !strings.Contains(string(data), `"_offset":1,`) || !strings.Contains(string(data), `"value":"not json"}`) {
		t.Fatalf("raw capture:\n%s", data)
	}
}

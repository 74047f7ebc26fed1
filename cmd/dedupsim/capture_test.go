package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/capture/capturetest"
	"github.com/dedupsim/dedupsim/live"
)

// TestCaptureIncidentKfake is issue 17's path on kfake: a topic with known
// duplicates and gaps is captured, analyzed (the figures are what was
// produced), captured as steps and replayed through exec against a
// recorded expectation (met), and a changed delay fails with a diff.
func TestCaptureIncidentKfake(t *testing.T) {
	k, err := live.StartKfake(t.Context(), map[string]int32{capturetest.Topic: capturetest.Partitions})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	incident(t, k.Addrs())
}

// TestCaptureIncidentLocal is the same on the real broker
// (DEDUPSIM_KAFKA=local, make test-kafka).
func TestCaptureIncidentLocal(t *testing.T) {
	if os.Getenv("DEDUPSIM_KAFKA") != "local" {
		t.Skip("real-Kafka test: set DEDUPSIM_KAFKA=local to run it (make test-kafka)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	l, err := live.StartLocal(ctx, live.LocalOptions{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.CreateTopic(ctx, capturetest.Topic, capturetest.Partitions); err != nil {
		t.Fatal(err)
	}
	incident(t, l.Addrs())
}

func incident(t *testing.T, addrs []string) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	p, err := capturetest.Produce(ctx, addrs)
	if err != nil {
		t.Fatal(err)
	}
	bin, dir := binary(t), t.TempDir()
	kafka := []string{"--bootstrap", strings.Join(addrs, ","), "--topic", capturetest.Topic}
	must := func(args ...string) string {
		t.Helper()
		began := time.Now()
		out, errOut, code := run(bin, args...)
		t.Logf("dedupsim %s: %v", args[0], time.Since(began).Round(time.Millisecond))
		if code != 0 {
			t.Fatalf("dedupsim %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
		}
		return out
	}
	events := filepath.Join(dir, "events.jsonl")
	if out := must(append([]string{"capture", "--out", events}, kafka...)...); !strings.Contains(out, "captured 43 records of topic payments") {
		t.Fatalf("capture: %s", out)
	}
	// analyze on the file and straight from the topic: what was produced.
	for _, args := range [][]string{
		{"analyze", events, "--arrival", "_timestamp"},
		append([]string{"analyze", "--from-kafka"}, kafka...),
	} {
		var rep struct {
			Events       int64 `json:"events"`
			DistinctKeys int64 `json:"distinct_keys"`
			ExtraCopies  int64 `json:"extra_copies"`
			Gap          struct {
				Count int64   `json:"count"`
				Max   float64 `json:"max"`
			} `json:"event_time_gap_ms"`
		}
		out := must(append(args, "--key", "id", "--time", "ts", "--json", "--quiet")...)
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if rep.Events != int64(len(p.Events)) || rep.DistinctKeys != int64(p.Keys) || rep.ExtraCopies != int64(p.Duplicates) ||
			rep.Gap.Count != int64(p.Duplicates) || rep.Gap.Max != float64(p.MaxGap*1000) {
			t.Fatalf("%s: %+v, produced %d events, %d keys, %d duplicates, largest gap %d s", args[1], rep, len(p.Events), p.Keys, p.Duplicates, p.MaxGap)
		}
	}
	steps := filepath.Join(dir, "steps.jsonl")
	must(append([]string{"capture", "--as-steps", "--trigger", "30s", "--out", steps}, kafka...)...)
	query := func(delay string) string {
		return write(t, dir, "query-"+delay+".yaml", "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: "+delay+"}\nsink: {kind: table}\n")
	}
	exp := filepath.Join(dir, "expected.jsonl")
	out := must("exec", "--query", query("20s"), "--input", steps, "--record", exp)
	// 20 s keeps a key about 40 s of event time: the copy 90 s later
	// reaches the table.
	if n := strings.Count(lastLine(out), `"id":"e20"`); n != 2 {
		t.Fatalf("table holds e20 %d times, want 2 (the 90 s copy passes a 20 s delay):\n%s", n, lastLine(out))
	}
	must("exec", "--query", query("20s"), "--input", steps, "--check", exp)
	_, errOut, code := run(bin, "exec", "--query", query("2m"), "--input", steps, "--check", exp)
	if code != 1 {
		t.Fatalf("a changed delay: exit %d, want 1\n%s", code, errOut)
	}
	for _, w := range []string{"expectations of " + exp + " not met:", `emitted keys: missing "e20"`, "numDroppedDuplicateRows 3, want 2", `table (` + exp} {
		if !strings.Contains(errOut, w) {
			t.Errorf("the diff lacks %q:\n%s", w, errOut)
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}

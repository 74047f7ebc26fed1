package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/live"
)

func TestParseCrashAt(t *testing.T) {
	for _, tc := range []struct {
		in    string
		point string
		batch int64
		bad   bool
	}{
		{in: "after-sink-write", point: "after-sink-write", batch: -1},
		{in: "after-commit:3", point: "after-commit", batch: 3},
		{in: "after-sink", bad: true},
		{in: "after-commit:x", bad: true},
		{in: "after-commit:-1", bad: true},
	} {
		c, err := parseCrashAt(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: no error", tc.in)
			}
			continue
		}
		if err != nil || string(c.point) != tc.point || c.batch != tc.batch {
			t.Errorf("%q: %+v, %v", tc.in, c, err)
		}
	}
}

// TestEngineProcessCrashLocalKafka runs `dedupsim engine` as a child
// process against a real broker (DEDUPSIM_KAFKA=local, make test-kafka),
// lets it kill itself with SIGKILL at after-sink-write of batch 0 (armed
// through DEDUPSIM_CRASH_AT), restarts it on the same checkpoint, and reads
// the output topic with read_committed: the transactional sink holds every
// key once, the plain sink holds batch 0 twice.
func TestEngineProcessCrashLocalKafka(t *testing.T) {
	if os.Getenv("DEDUPSIM_KAFKA") != "local" {
		t.Skip("real-Kafka test: set DEDUPSIM_KAFKA=local to run it (make test-kafka)")
	}
	bin := binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	l, err := live.StartLocal(ctx, live.LocalOptions{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dir := t.TempDir()
	qpath := write(t, dir, "query.yaml", "dedup: {api: dropDuplicates, keys: [id]}\n")

	for _, kind := range []string{"transactional", "plain"} {
		t.Run(kind, func(t *testing.T) {
			in, out := "in-"+kind, "out-"+kind
			for _, topic := range []string{in, out} {
				if err := l.CreateTopic(ctx, topic, 2); err != nil {
					t.Fatal(err)
				}
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(l.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			produce := func(part int32, keys ...string) {
				t.Helper()
				var recs []*kgo.Record
				for _, k := range keys {
					recs = append(recs, &kgo.Record{Topic: in, Partition: part, Value: fmt.Appendf(nil, `{"id":%q}`, k)})
				}
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			ckpt := filepath.Join(dir, "ckpt-"+kind)
			engineRun := func(crashAt string) (string, error) {
				t.Helper()
				cmd := exec.CommandContext(ctx, bin, "engine", "--query", qpath, "--checkpoint", ckpt,
					"--bootstrap", strings.Join(l.Addrs(), ","), "--input-topic", in, "--output-topic", out,
					"--sink", kind, "--until-idle")
				cmd.Env = append(os.Environ(), "DEDUPSIM_CRASH_AT="+crashAt)
				var o, e strings.Builder
				cmd.Stdout, cmd.Stderr = &o, &e
				err := cmd.Run()
				t.Logf("engine (crash-at %q): %v\nstdout:\n%sstderr:\n%s", crashAt, err, o.String(), e.String())
				return o.String(), err
			}

			produce(0, "k1", "k2")
			produce(1, "k3", "k1")
			_, err = engineRun("after-sink-write:0")
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("first run ended with %v, want killed by SIGKILL", err)
			}
			produce(0, "k4", "k2")
			stdout, err := engineRun("")
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, ln := range strings.Split(strings.TrimSpace(stdout), "\n") {
				var v engineLine
				if err := json.Unmarshal([]byte(ln), &v); err != nil {
					t.Fatalf("line %q: %v", ln, err)
				}
				lines = append(lines, fmt.Sprintf("%d replay=%v in=%d out=%d", v.BatchID, v.Replay, v.Input, v.Output))
			}
			if want := []string{"0 replay=true in=4 out=3", "1 replay=false in=2 out=1"}; !slices.Equal(lines, want) {
				t.Fatalf("second run batches %q, want %q", lines, want)
			}

			recs, err := kafkasource.ReadAll(ctx, []kgo.Opt{kgo.SeedBrokers(l.Addrs()...)}, out, true)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				var v struct{ ID string }
				if err := json.Unmarshal(r.Value, &v); err != nil {
					t.Fatal(err)
				}
				got = append(got, v.ID)
			}
			slices.Sort(got)
			want := []string{"k1", "k2", "k3", "k4"}
			if kind == "plain" {
				want = []string{"k1", "k1", "k2", "k2", "k3", "k3", "k4"}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("output (read_committed) = %v, want %v", got, want)
			}
		})
	}
}

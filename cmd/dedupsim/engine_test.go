package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine/checkpoint"
	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/sink/pebblesink"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/live"
	"github.com/dedupsim/dedupsim/live/driver"
)

// engineEnv makes the test binary run as the CLI (TestMain): the kill
// suites re-exec it as `dedupsim engine` instead of building the CLI.
const engineEnv = "DEDUPSIM_TEST_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(engineEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// cliCmd is `dedupsim args...` run by the test binary as the CLI, with
// env added to this process's environment.
func cliCmd(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), engineEnv+"=1"), env...)
	return cmd
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
				cmd := cliCmd(ctx, []string{"DEDUPSIM_CRASH_AT=" + crashAt}, "engine", "--query", qpath, "--checkpoint", ckpt,
					"--bootstrap", strings.Join(l.Addrs(), ","), "--input-topic", in, "--output-topic", out,
					"--sink", kind, "--until-idle")
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
				var v driver.Line
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

// killSuiteSeed is the suite's seed: DEDUPSIM_KILL_SEED when set (to re-run
// a failure), else a fresh one.
func killSuiteSeed(t *testing.T) int64 {
	t.Helper()
	if s := os.Getenv("DEDUPSIM_KILL_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("DEDUPSIM_KILL_SEED=%q: %v", s, err)
		}
		return n
	}
	return time.Now().UnixNano() % 1_000_000_000
}

// TestKillSuiteLocal is the kill -9 suite against a real Kafka 4 broker
// (DEDUPSIM_KAFKA=local, make test-kafka): 20 SIGKILLs of `dedupsim engine`
// per sink, half at armed crash points, half at random moments.
func TestKillSuiteLocal(t *testing.T) {
	if os.Getenv("DEDUPSIM_KAFKA") != "local" {
		t.Skip("real-Kafka test: set DEDUPSIM_KAFKA=local to run it (make test-kafka)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	l, err := live.StartLocal(ctx, live.LocalOptions{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	seed := killSuiteSeed(t)
	for _, kind := range []string{"transactional", "table", "plain"} {
		t.Run(kind, func(t *testing.T) {
			runKillSuite(t, strings.Join(l.Addrs(), ","), kind, 20, seed)
		})
	}
}

// TestKillSuiteContainer is the kill -9 suite against Kafka in a Docker
// container (DEDUPSIM_KAFKA=testcontainers, make test-containers): 20
// SIGKILLs of `dedupsim engine` per sink.
func TestKillSuiteContainer(t *testing.T) {
	if os.Getenv("DEDUPSIM_KAFKA") != "testcontainers" {
		t.Skip("container test: set DEDUPSIM_KAFKA=testcontainers to run it (make test-containers)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c, err := live.StartContainer(ctx, live.ContainerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seed := killSuiteSeed(t)
	for _, kind := range []string{"transactional", "table", "plain"} {
		t.Run(kind, func(t *testing.T) {
			runKillSuite(t, strings.Join(c.Addrs(), ","), kind, 20, seed)
		})
	}
}

// TestKillSuiteKfake is the kill -9 suite against kfake running in the test
// process (the child engine connects to it over 127.0.0.1 TCP).
func TestKillSuiteKfake(t *testing.T) {
	if testing.Short() {
		t.Skip("kill suite: skipped with -short")
	}
	// By default a short suite (~10 s); DEDUPSIM_KAFKA=kfake runs the full
	// 20 kills per sink.
	kills := 6
	if os.Getenv("DEDUPSIM_KAFKA") == "kfake" {
		kills = 20
	}
	k, err := live.StartKfake(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	seed := killSuiteSeed(t)
	for _, kind := range []string{"transactional", "table", "plain"} {
		t.Run(kind, func(t *testing.T) {
			runKillSuite(t, strings.Join(k.Addrs(), ","), kind, kills, seed)
		})
	}
}

// killSuiteQuery is the suite's query: dropDuplicatesWithinWatermark on id
// with a watermark far wider than the run, so no row is late and no key's
// state expires during it.
const killSuiteQuery = `dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}
watermark: {column: ts, delay: 1 hour}
shuffle_partitions: 2
`

// runKillSuite is the kill -9 suite: it produces 2000 events (~1% of them
// copies of an earlier id) to a fresh input topic while running `dedupsim
// engine` as a child process (own process group) that is killed with
// SIGKILL kills times, alternately at an armed crash point (the process
// kills itself; after-sink-write half of the time) and by the test after a
// random 100-800 ms, each restart on the same checkpoint. A last run with
// --until-idle drains the input and exits cleanly. The output topic is then
// read with read_committed: the transactional sink must hold every distinct
// input id exactly once; the plain sink must lose no id, and holds the
// replay duplicates, at least the rows of every batch killed at
// after-sink-write and none at all if no batch with output was replayed.
func runKillSuite(t *testing.T, bootstrap, sinkKind string, kills int, seed int64) {
	t.Helper()
	began := time.Now()
	t.Logf("kill suite: sink %s, %d kills, seed %d", sinkKind, kills, seed)
	t.Cleanup(func() {
		if t.Failed() {
			env := ""
			if k := os.Getenv("DEDUPSIM_KAFKA"); k != "" {
				env = "DEDUPSIM_KAFKA=" + k + " "
			}
			t.Logf("kill suite failed with seed %d; re-run: %sDEDUPSIM_KILL_SEED=%d go test ./cmd/dedupsim/ -run '^%s$' -v",
				seed, env, seed, strings.ReplaceAll(t.Name(), "/", "$/^"))
		}
	})
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(len(sinkKind))))
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	const (
		numEvents  = 2000
		partitions = 3
	)
	suffix := fmt.Sprintf("%s-%d-%d", sinkKind, seed, time.Now().UnixNano())
	in, out := "kill-in-"+suffix, "kill-out-"+suffix
	brokers := strings.Split(bootstrap, ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, -1, nil, in, out)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("create topics: %v", err)
	}

	// The events: unique ids, ~1% of them sent again later (same id and
	// event time, any partition), the copy at least one event later.
	type event struct {
		id   string
		part int32
		val  []byte
	}
	var events []event
	var ids []string
	ts := map[string]string{}
	for i := 0; len(events) < numEvents; i++ {
		id := fmt.Sprintf("e%05d", i)
		if len(ids) > 0 && rng.IntN(100) == 0 {
			id = ids[rng.IntN(len(ids))]
		} else {
			ids = append(ids, id)
			ts[id] = fmt.Sprintf("%d.%03d", 1_700_000_000+i/1000, i%1000)
		}
		p := rng.Int32N(partitions)
		events = append(events, event{id, p, fmt.Appendf(nil, `{"id":%q,"ts":%s}`, id, ts[id])})
	}
	t.Logf("input: %d events, %d distinct ids, %d copies", len(events), len(ids), len(events)-len(ids))

	// Each killed run gets one chunk of the events, produced in the
	// background in a few slices while it runs; the final run gets none.
	var prodWG sync.WaitGroup
	var prodErr error
	var prodMu sync.Mutex
	produceChunk := func(chunk []event) {
		prodWG.Add(1)
		go func() {
			defer prodWG.Done()
			for len(chunk) > 0 {
				n := min(len(chunk), max(1, len(chunk)/4+1))
				var recs []*kgo.Record
				for _, e := range chunk[:n] {
					recs = append(recs, &kgo.Record{Topic: in, Partition: e.part, Value: e.val})
				}
				chunk = chunk[n:]
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					prodMu.Lock()
					prodErr = err
					prodMu.Unlock()
					return
				}
				time.Sleep(40 * time.Millisecond)
			}
		}()
	}

	dir := t.TempDir()
	qpath := write(t, dir, "query.yaml", killSuiteQuery)
	ckpt := filepath.Join(dir, "ckpt")
	tableDir := filepath.Join(dir, "table")
	args := []string{"engine", "--query", qpath, "--checkpoint", ckpt, "--bootstrap", bootstrap,
		"--input-topic", in, "--sink", sinkKind, "--trigger-interval", "50ms", "--kafka-timeout", "20s"}
	if sinkKind == "table" {
		args = append(args, "--table", tableDir)
	} else {
		args = append(args, "--output-topic", out)
	}

	var (
		batches       []driver.Line      // every batch line printed, all runs
		afterSinkKill = map[int64]bool{} // batches killed at after-sink-write
		armedKills    int
		randomKills   int
	)
	parseLines := func(stdout string) {
		for _, ln := range strings.Split(stdout, "\n") {
			var v driver.Line
			if strings.TrimSpace(ln) == "" || json.Unmarshal([]byte(ln), &v) != nil {
				continue // a killed run may end mid-line
			}
			batches = append(batches, v)
		}
	}
	crashRe := regexp.MustCompile(`crash at (\S+) of batch (\d+)`)
	otherPoints := []string{"after-offsets-write", "after-state-commit", "after-commit"}

	for i := range kills {
		chunk := events[i*len(events)/kills : (i+1)*len(events)/kills]
		armed := i%2 == 0
		crashAt := ""
		if armed {
			point := "after-sink-write"
			if rng.IntN(2) == 1 {
				point = otherPoints[rng.IntN(len(otherPoints))]
			}
			next, replay, err := checkpoint.Next(fsys.NewOS(ckpt))
			if err != nil {
				t.Fatal(err)
			}
			if replay && point == "after-offsets-write" {
				next++ // a replay reuses its offsets file: it never passes the point
			}
			crashAt = fmt.Sprintf("%s:%d", point, next)
		}
		delay := time.Duration(100+rng.IntN(701)) * time.Millisecond
		produceChunk(chunk)

		cmd := cliCmd(ctx, []string{"DEDUPSIM_CRASH_AT=" + crashAt}, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		runStart := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		killGroup := func() { syscall.Kill(-pid, syscall.SIGKILL) }

		var werr error
		how := ""
		if armed {
			select {
			case werr = <-done:
				how = "armed " + crashAt
			case <-time.After(30 * time.Second):
				killGroup()
				<-done
				t.Fatalf("run %d: armed crash %s did not fire within 30s\nstdout:\n%sstderr:\n%s", i, crashAt, o.String(), e.String())
			}
		} else {
			select {
			case werr = <-done:
				t.Fatalf("run %d: engine exited before the random kill: %v\nstdout:\n%sstderr:\n%s", i, werr, o.String(), e.String())
			case <-time.After(delay):
				killGroup()
				werr = <-done
				how = fmt.Sprintf("random after %v", delay)
			}
		}
		killGroup() // anything left in the group
		var ee *exec.ExitError
		if !errors.As(werr, &ee) || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("run %d (%s) ended with %v, want killed by SIGKILL\nstdout:\n%sstderr:\n%s", i, how, werr, o.String(), e.String())
		}
		if armed {
			m := crashRe.FindStringSubmatch(e.String())
			if m == nil {
				t.Fatalf("run %d (%s): killed without reaching its crash point\nstderr:\n%s", i, how, e.String())
			}
			armedKills++
			if m[1] == "after-sink-write" {
				id, _ := strconv.ParseInt(m[2], 10, 64)
				afterSinkKill[id] = true
			}
		} else {
			randomKills++
		}
		before := len(batches)
		parseLines(o.String())
		t.Logf("run %d: killed (%s) after %v, %d batch lines", i, how, time.Since(runStart).Round(time.Millisecond), len(batches)-before)
	}

	prodWG.Wait()
	if prodErr != nil {
		t.Fatalf("produce: %v", prodErr)
	}
	cmd := cliCmd(ctx, nil, append(args, "--until-idle")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	finalStart := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("final run: %v\nstdout:\n%sstderr:\n%s", err, o.String(), e.String())
	}
	before := len(batches)
	parseLines(o.String())
	t.Logf("final run: exited cleanly after %v, %d batch lines", time.Since(finalStart).Round(time.Millisecond), len(batches)-before)

	readStart := time.Now()
	var outRows [][]byte
	if sinkKind == "table" {
		rows, err := pebblesink.ReadTable(tableDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			outRows = append(outRows, r)
		}
	} else {
		recs, err := kafkasource.ReadAll(ctx, []kgo.Opt{kgo.SeedBrokers(brokers...)}, out, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			outRows = append(outRows, r.Value)
		}
	}
	t.Logf("read %d output rows (%s) in %v", len(outRows), map[bool]string{true: "Pebble table", false: "read_committed"}[sinkKind == "table"], time.Since(readStart).Round(time.Millisecond))
	count := map[string]int{}
	for _, r := range outRows {
		var v struct{ ID string }
		if err := json.Unmarshal(r, &v); err != nil {
			t.Fatalf("output row %q: %v", r, err)
		}
		if _, ok := ts[v.ID]; !ok {
			t.Errorf("output id %q is no input id", v.ID)
		}
		count[v.ID]++
	}
	var lost []string
	dups := 0
	for _, id := range ids {
		switch n := count[id]; {
		case n == 0:
			lost = append(lost, id)
		case n > 1:
			dups += n - 1
		}
	}
	// Rows a plain sink must hold twice: each batch killed after its sink
	// write is replayed with the same output (the first completed line for
	// it, in a later run, gives the count).
	minDups, replayedOut := 0, 0
	seen := map[int64]bool{}
	for _, b := range batches {
		if b.Replay {
			replayedOut += b.Output
		}
		if afterSinkKill[b.BatchID] && !seen[b.BatchID] {
			seen[b.BatchID] = true
			minDups += b.Output
		}
	}
	t.Logf("kill suite %s: %d kills (%d armed, %d random), %d batch executions logged, %d output records, %d distinct ids of %d, %d lost, %d duplicates (%d rows were in batches killed at after-sink-write; %d replayed output rows), %v",
		sinkKind, armedKills+randomKills, armedKills, randomKills, len(batches), len(outRows), len(count), len(ids), len(lost), dups, minDups, replayedOut, time.Since(began).Round(time.Millisecond))
	if len(lost) > 0 {
		t.Errorf("%d ids lost, e.g. %v", len(lost), lost[:min(len(lost), 10)])
	}
	switch sinkKind {
	case "transactional", "table":
		if dups > 0 {
			t.Errorf("%s sink: %d duplicates, want 0", sinkKind, dups)
		}
	case "plain":
		if dups < minDups {
			t.Errorf("plain sink: %d duplicates, want at least %d (the output of the batches killed at after-sink-write)", dups, minDups)
		}
		if dups > 0 && replayedOut == 0 {
			t.Errorf("plain sink: %d duplicates though no batch with output was replayed", dups)
		}
	}
}

// TestEngineBadInput: the engine process refuses bad settings with exit 2
// and a message naming what is wrong, before it touches Kafka.
func TestEngineBadInput(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	q1 := write(t, dir, "q1.yaml", "dedup: {api: dropDuplicates, keys: [id]}\n")
	base := []string{"engine", "--query", q1, "--checkpoint", filepath.Join(dir, "ckpt"), "--bootstrap", "127.0.0.1:1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--input-topic", "in", "--sink", "table"}, "needs --table DIR"},
		{[]string{"--input-topic", "in", "--sink", "plain"}, "needs --output-topic"},
		{[]string{"--input-topic", "in", "--sink", "delta", "--output-topic", "o"}, "want plain, transactional, table or merge"},
		{[]string{"--input-topic", "a", "--input-topic", "b", "--output-topic", "o"}, "1 sources and 2 --input-topic"},
		{[]string{"--input-topic", "in", "--output-topic", "o", "--clock", "1:2"}, "VIRT0_MS:WALL0_MS:SCALE"},
		{[]string{"--input-topic", "in", "--output-topic", "o", "--clock", "1:2:-3"}, "positive scale"},
		{[]string{"--input-topic", "in", "--output-topic", "o", "--crash-at", "after-lunch"}, "crash point"},
	} {
		_, errOut, code := run(bin, append(base, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("engine %v: exit %d, want 2 with %q:\n%s", tc.args, code, tc.want, errOut)
		}
	}
}

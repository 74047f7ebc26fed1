package live_test

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/live"
)

// The tests named *Local* run against a real Apache Kafka broker started by
// live.StartLocal from the jars of scripts/kafka-fetch.sh. They run only
// with DEDUPSIM_KAFKA=local (make test-kafka), so that go test ./... stays
// fast and needs neither Java nor the jars.

// needLocalKafka skips the test unless DEDUPSIM_KAFKA=local.
func needLocalKafka(t *testing.T) {
	t.Helper()
	if os.Getenv("DEDUPSIM_KAFKA") != "local" {
		t.Skip("real-Kafka test: set DEDUPSIM_KAFKA=local to run it (make test-kafka fetches the jars and does)")
	}
}

// startLocal starts a broker on a fresh data dir with the given topics,
// closed (and its log printed on failure) at the end of the test.
func startLocal(t *testing.T, topics map[string]int32) *live.Local {
	t.Helper()
	needLocalKafka(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	began := time.Now()
	l, err := live.StartLocal(ctx, live.LocalOptions{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("broker %s (pid %d) ready in %v", l.Addrs()[0], l.Pid(), time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", l.LogPath(), l.LogTail(40))
		}
		l.Close()
	})
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		if err := l.CreateTopic(ctx, name, topics[name]); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// TestLocalEngineCrashAfterSinkWrite is TestEngineCrashAfterSinkWrite on
// the real broker: a crash at after-sink-write of batch 1 and a restart;
// the transactional sink writes every key exactly once (read_committed),
// the plain sink writes batch 1 twice.
func TestLocalEngineCrashAfterSinkWrite(t *testing.T) {
	for _, kind := range []string{"transactional", "plain"} {
		t.Run(kind, func(t *testing.T) {
			l := startLocal(t, map[string]int32{"in": 2, "out": 2})
			runCrashAfterSinkWrite(t, l, kind)
		})
	}
}

// TestLocalBrokerRestart kills the broker with SIGKILL and restarts it on
// the same data dir: acknowledged records, a committed transaction and the
// topic survive, an aborted transaction stays invisible to
// read_committed, and the broker takes writes again on the same address.
func TestLocalBrokerRestart(t *testing.T) {
	l := startLocal(t, map[string]int32{"in": 2})
	runBrokerRestart(t, l, func() {
		if l.Pid() != 0 {
			t.Fatal("broker still has a pid after Kill")
		}
	})
}

// runBrokerRestart is TestLocalBrokerRestart on l, which holds the topic
// "in" with 2 partitions; killed checks l after the kill.
func runBrokerRestart(t *testing.T, l live.Restartable, killed func()) {
	p := producer(t, l)
	produce(t, p, 0, "k1", "k2")
	produce(t, p, 1, "k3")

	txn := func(commit bool, keys ...string) {
		t.Helper()
		cl := producer(t, l, kgo.TransactionalID("restart-test"))
		ctx := ctxT(t)
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		produce(t, cl, 1, keys...)
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		cl.Close()
	}
	txn(true, "t1")
	txn(false, "aborted")

	if err := l.Kill(); err != nil {
		t.Fatal(err)
	}
	killed()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	began := time.Now()
	if err := l.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted in %v", time.Since(began).Round(time.Millisecond))

	readKeys := func() []string {
		t.Helper()
		recs, err := kafkasource.ReadAll(ctxT(t), []kgo.Opt{kgo.SeedBrokers(l.Addrs()...)}, "in", true)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, r := range recs {
			keys = append(keys, string(r.Value))
		}
		slices.Sort(keys)
		return keys
	}
	want := []string{`{"id":"k1"}`, `{"id":"k2"}`, `{"id":"k3"}`, `{"id":"t1"}`}
	if got := readKeys(); !slices.Equal(got, want) {
		t.Fatalf("after restart (read_committed): %v, want %v", got, want)
	}

	p2 := producer(t, l)
	produce(t, p2, 0, "k4")
	want = append(want, `{"id":"k4"}`)
	slices.Sort(want)
	if got := readKeys(); !slices.Equal(got, want) {
		t.Fatalf("after a write to the restarted broker: %v, want %v", got, want)
	}
}

// TestLocalStartNeedsJars: without the jars StartLocal fails at once,
// naming the fetch script (no JVM is started, so it needs no env var).
func TestLocalStartNeedsJars(t *testing.T) {
	_, err := live.StartLocal(t.Context(), live.LocalOptions{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), live.FetchScript) {
		t.Fatalf("StartLocal without jars: %v, want an error naming %s", err, live.FetchScript)
	}
	// DEDUPSIM_KAFKA_DIR sets the default folder (a binary run outside the
	// repository).
	dir := t.TempDir()
	t.Setenv(live.DirEnv, dir)
	_, err = live.StartLocal(t.Context(), live.LocalOptions{})
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), live.DirEnv) {
		t.Fatalf("StartLocal with %s=%s: %v, want an error naming that folder", live.DirEnv, dir, err)
	}
}

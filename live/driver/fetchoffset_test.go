package driver_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/live"
	"github.com/dedupsim/dedupsim/live/driver"
	"github.com/dedupsim/dedupsim/live/driver/drivertest"
)

// TestEngineFetchOffsetFlags: --fetch-offset-num-retries and
// --fetch-offset-retry-interval-ms reach the engine's Kafka source. With
// 2 attempts and no wait, a partition whose latest offset stays behind
// the last batch's end is asked exactly twice, then the run fails (exit
// 1, for a supervisor to restart) with Spark's data-loss error naming
// both options as given.
func TestEngineFetchOffsetFlags(t *testing.T) {
	k, err := live.StartKfake(t.Context(), map[string]int32{"in": 1, "out": 1})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "in", Value: fmt.Appendf(nil, `{"id":%q}`, id)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := t.TempDir()
	q := filepath.Join(dir, "q.yaml")
	if err := os.WriteFile(q, []byte("dedup: {api: dropDuplicates, keys: [id]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"engine", "--query", q, "--checkpoint", filepath.Join(dir, "ck"), "--bootstrap", strings.Join(k.Addrs(), ","),
		"--input-topic", "in", "--sink", "plain", "--output-topic", "out", "--until-idle", "--kafka-timeout", "15s",
		"--fetch-offset-num-retries", "2", "--fetch-offset-retry-interval-ms", "0"}

	produce("k1", "k2", "k3")
	var out, errOut bytes.Buffer
	if code := drivertest.Run(args, &out, &errOut); code != 0 {
		t.Fatalf("first run exited %d: %s", code, errOut.String())
	}
	produce("k4")
	se, err := k.StaleEnds("in", map[int32]int64{0: 1}, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Stop()
	errOut.Reset()
	code := drivertest.Run(args, &out, &errOut)
	if code != driver.ExitFailed {
		t.Fatalf("run with a stale end exited %d, want %d: %s", code, driver.ExitFailed, errOut.String())
	}
	want := "Reason: Partition in-0 offset was changed from 3 to 1. The latest offset was still 1 after 2 attempts (fetchOffset.numRetries 2, fetchOffset.retryIntervalMs 0)."
	if !strings.Contains(errOut.String(), want) {
		t.Fatalf("stderr %q does not say %q", errOut.String(), want)
	}
	if n := se.Answers(); n != 2 {
		t.Fatalf("latest offsets asked %d times, want exactly 2", n)
	}
}

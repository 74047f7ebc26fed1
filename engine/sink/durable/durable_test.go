package durable

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/sink"
)

func parse(t *testing.T, yaml string) *query.Query {
	t.Helper()
	q, err := query.Parse("q.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func batch(id int64, rows ...string) sink.Batch {
	b := sink.Batch{ID: id, QueryID: "query-1", RunID: "run-1"}
	for _, r := range rows {
		b.Rows = append(b.Rows, row.Row{Data: json.RawMessage(r), EventTime: 1000})
	}
	return b
}

// write adds b and returns how many rows the sink says it kept.
func write(t *testing.T, s *Sink, b sink.Batch) int {
	t.Helper()
	if err := s.AddBatch(b); err != nil {
		t.Fatal(err)
	}
	return s.Kept(len(b.Rows))
}

const tableQuery = "dedup: {api: dropDuplicates, keys: [id]}\nwatermark: {column: ts, delay: 1s}\nsink: {kind: table}\n"

// TestPebble: table and merge are Pebble tables; the flag's kind wins over
// the query's (the process may keep a table query's output as a MERGE).
func TestPebble(t *testing.T) {
	for _, tc := range []struct {
		flag, desc string
		kept       [3]int // of batch 0, its replay, batch 1 (a copy of batch 0's row)
		skipped    int    // batches skipped as committed (MERGE skips none: it matches rows)
	}{
		{"table", "TableSink[txnAppId=app]", [3]int{1, 0, 1}, 1},
		{"merge", "MergeSink", [3]int{1, 0, 0}, 0},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			s, err := Open(tc.flag, parse(t, tableQuery), Config{TableDir: t.TempDir(), AppID: "app"})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := s.Close(); err != nil {
					t.Error(err)
				}
			}()
			if s.Description() != tc.desc {
				t.Errorf("description %q, want %q", s.Description(), tc.desc)
			}
			r := `{"id":"a","ts":1}`
			got := [3]int{write(t, s, batch(0, r)), write(t, s, batch(0, r)), write(t, s, batch(1, r))}
			if got != tc.kept {
				t.Errorf("kept %v, want %v", got, tc.kept)
			}
			if s.Skipped() != tc.skipped {
				t.Errorf("skipped %d, want %d", s.Skipped(), tc.skipped)
			}
		})
	}
}

// TestKafka: transactional skips a replay (kept 0), plain writes it again.
func TestKafka(t *testing.T) {
	c, err := kfake.NewCluster(kfake.SeedTopics(1, "out-plain", "out-txn"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		flag, topic string
		kept        [2]int
	}{
		{"plain", "out-plain", [2]int{1, 1}},
		{"transactional", "out-txn", [2]int{1, 0}},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			s, err := Open(tc.flag, parse(t, tableQuery), Config{Brokers: c.ListenAddrs(), Topic: tc.topic, Timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			r := `{"id":"a","ts":1}`
			if got := [2]int{write(t, s, batch(0, r)), write(t, s, batch(0, r))}; got != tc.kept {
				t.Errorf("kept %v, want %v", got, tc.kept)
			}
			if want := 1 - tc.kept[1]; s.Skipped() != want {
				t.Errorf("skipped %d, want %d", s.Skipped(), want)
			}
		})
	}
}

func TestOpenRefuses(t *testing.T) {
	_, err := Open("delta", parse(t, tableQuery), Config{})
	if err == nil || err.Error() != `sink "delta": want plain, transactional, table or merge` {
		t.Fatalf("err = %v", err)
	}
	// Every flag the descriptors list is one Open knows.
	for _, f := range sink.Flags() {
		if _, x, ok := sink.LookupFlag(f); !ok || (x.Store != sink.Pebble && x.Store != sink.Kafka) {
			t.Errorf("flag %s: store %q", f, x.Store)
		}
	}
}

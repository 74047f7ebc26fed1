package kafkasource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/engine/source"
	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/live"
)

var _ source.Source = (*kafkasource.Source)(nil)

func startKfake(t *testing.T, topics map[string]int32) *live.Kfake {
	t.Helper()
	k, err := live.StartKfake(t.Context(), topics)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// producer writes values to explicit partitions.
func producer(t *testing.T, k *live.Kfake, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produce(t *testing.T, cl *kgo.Client, topic string, part int32, values ...string) {
	t.Helper()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func newSource(t *testing.T, k *live.Kfake, cfg kafkasource.Config) *kafkasource.Source {
	t.Helper()
	cfg.Brokers = k.Addrs()
	cfg.Timeout = 15 * time.Second
	s, err := kafkasource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func latest(t *testing.T, s *kafkasource.Source) json.RawMessage {
	t.Helper()
	o, err := s.LatestOffset()
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func rows(t *testing.T, s *kafkasource.Source, start, end json.RawMessage) []string {
	t.Helper()
	rs, err := s.Rows(start, end)
	if err != nil {
		t.Fatal(err)
	}
	return values(rs)
}

func values(rs []row.Row) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, string(r.Data))
	}
	return out
}

func v(n int) string { return fmt.Sprintf(`{"id":"k%d"}`, n) }

func vs(ns ...int) []string {
	var out []string
	for _, n := range ns {
		out = append(out, v(n))
	}
	return out
}

func TestOffsetsJSON(t *testing.T) {
	o := kafkasource.Offsets{10: 1, 2: 5, 0: 7}
	if got, want := string(o.JSON("t")), `{"t":{"0":7,"2":5,"10":1}}`; got != want {
		t.Fatalf("JSON = %s, want %s", got, want)
	}
	back, err := kafkasource.ParseOffsets("t", o.JSON("t"))
	if err != nil || len(back) != 3 || back[10] != 1 || back[2] != 5 || back[0] != 7 {
		t.Fatalf("ParseOffsets = %v, %v", back, err)
	}
	if got := string(kafkasource.Offsets{}.JSON(`a"b`)); got != `{"a\"b":{}}` {
		t.Fatalf("escaped topic: %s", got)
	}
	for _, bad := range []string{`{"u":{"0":1}}`, `{"t":{"x":1}}`, `{"t":{"-1":1}}`, `{"t":{"01":1}}`, `{"t":{"0":-3}}`, `{"t":{},"u":{}}`, `[1]`} {
		if _, err := kafkasource.ParseOffsets("t", json.RawMessage(bad)); err == nil {
			t.Errorf("ParseOffsets(%s) accepted", bad)
		}
	}
}

// Offsets name the next offset to read; Rows(start, end) returns exactly
// [start, end) of every partition in partition then offset order, the same
// rows when asked again (a replay), and a fresh instance agrees.
func TestRowsRangesAndReplay(t *testing.T) {
	k := startKfake(t, map[string]int32{"in": 3})
	p := producer(t, k)
	produce(t, p, "in", 1, vs(10, 11)...)
	produce(t, p, "in", 0, vs(0, 1, 2)...)
	ckpt := fsys.NewMem()
	s := newSource(t, k, kafkasource.Config{Topic: "in", StartingOffsets: "earliest", InitialOffsetsFS: ckpt})

	end0 := latest(t, s)
	if got, want := string(end0), `{"in":{"0":3,"1":2,"2":0}}`; got != want {
		t.Fatalf("latest = %s, want %s", got, want)
	}
	want0 := vs(0, 1, 2, 10, 11)
	if got := rows(t, s, nil, end0); !slices.Equal(got, want0) {
		t.Fatalf("rows(nil, %s) = %v, want %v", end0, got, want0)
	}
	if got := rows(t, s, nil, end0); !slices.Equal(got, want0) {
		t.Fatalf("replayed rows differ: %v", got)
	}
	if got := latest(t, s); string(got) != string(end0) {
		t.Fatalf("latest with no new data = %s, want %s", got, end0)
	}

	produce(t, p, "in", 2, vs(20)...)
	produce(t, p, "in", 0, vs(3)...)
	end1 := latest(t, s)
	if got, want := string(end1), `{"in":{"0":4,"1":2,"2":1}}`; got != want {
		t.Fatalf("latest = %s, want %s", got, want)
	}
	if got, want := rows(t, s, end0, end1), vs(3, 20); !slices.Equal(got, want) {
		t.Fatalf("rows(%s, %s) = %v, want %v", end0, end1, got, want)
	}
	if got := rows(t, s, end1, end1); len(got) != 0 {
		t.Fatalf("empty range gave %v", got)
	}
	// A sub-range in the middle of a partition.
	mid := json.RawMessage(`{"in":{"0":1,"1":1,"2":0}}`)
	if got, want := rows(t, s, mid, end0), vs(1, 2, 11); !slices.Equal(got, want) {
		t.Fatalf("rows(%s, %s) = %v, want %v", mid, end0, got, want)
	}

	// A new instance on the same checkpoint (a restarted driver) replays
	// batch 0 from the recorded initial offsets.
	data, err := ckpt.ReadFile(kafkasource.DefaultInitialOffsetsPath)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), "\x00v1\n"+`{"in":{"0":0,"1":0,"2":0}}`; got != want {
		t.Fatalf("initial offsets file = %q, want %q", got, want)
	}
	s2 := newSource(t, k, kafkasource.Config{Topic: "in", StartingOffsets: "earliest", InitialOffsetsFS: ckpt})
	if got := rows(t, s2, nil, end0); !slices.Equal(got, want0) {
		t.Fatalf("new instance replay = %v, want %v", got, want0)
	}

	// Ranges the broker cannot serve are errors, not short reads.
	for _, c := range []struct{ start, end, msg string }{
		{`{"in":{"0":2,"1":0,"2":0}}`, `{"in":{"0":1,"1":0,"2":0}}`, "offset was changed from 2 to 1"},
		{`{"in":{"0":0,"1":0,"2":0}}`, `{"in":{"0":9,"1":0,"2":0}}`, "last stable offset is 4"},
		{`{"in":{"0":0,"1":0,"2":0}}`, `{"in":{"0":1,"1":0}}`, "partition 2 is in the start offset"},
		{`{"in":{"0":0}}`, `{"in":{"0":0,"7":1}}`, "partition 7 does not exist"},
	} {
		_, err := s.Rows(json.RawMessage(c.start), json.RawMessage(c.end))
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Rows(%s, %s) error = %v, want %q", c.start, c.end, err, c.msg)
		}
	}
}

// "latest" starts after what the topic holds; nothing is reported until
// new data arrives, and the recorded initial offsets keep a restarted
// driver's replay of batch 0 on the same range.
func TestStartingOffsets(t *testing.T) {
	k := startKfake(t, map[string]int32{"in": 2})
	p := producer(t, k)
	produce(t, p, "in", 0, vs(0, 1)...)
	produce(t, p, "in", 1, vs(10)...)

	ckpt := fsys.NewMem()
	s := newSource(t, k, kafkasource.Config{Topic: "in", InitialOffsetsFS: ckpt}) // default: latest
	if got := latest(t, s); got != nil {
		t.Fatalf("latest before new data = %s, want nil", got)
	}
	produce(t, p, "in", 1, vs(11)...)
	end := latest(t, s)
	if got, want := rows(t, s, nil, end), vs(11); !slices.Equal(got, want) {
		t.Fatalf("rows = %v, want %v", got, want)
	}
	produce(t, p, "in", 0, vs(2)...)
	s2 := newSource(t, k, kafkasource.Config{Topic: "in", InitialOffsetsFS: ckpt})
	if got, want := rows(t, s2, nil, end), vs(11); !slices.Equal(got, want) {
		t.Fatalf("restarted replay = %v, want %v", got, want)
	}

	// JSON starting offsets: -2 earliest, -1 latest, or an offset.
	s3 := newSource(t, k, kafkasource.Config{Topic: "in", StartingOffsets: `{"in":{"0":1,"1":-2}}`})
	if got, want := rows(t, s3, nil, latest(t, s3)), vs(1, 2, 10, 11); !slices.Equal(got, want) {
		t.Fatalf("JSON start rows = %v, want %v", got, want)
	}
	s4 := newSource(t, k, kafkasource.Config{Topic: "in", StartingOffsets: `{"in":{"0":-2,"1":-1}}`})
	if got, want := rows(t, s4, nil, latest(t, s4)), vs(0, 1, 2); !slices.Equal(got, want) {
		t.Fatalf("JSON start rows = %v, want %v", got, want)
	}
	s5 := newSource(t, k, kafkasource.Config{Topic: "in", StartingOffsets: `{"in":{"0":0}}`})
	if _, err := s5.LatestOffset(); err == nil || !strings.Contains(err.Error(), "does not name partitions 1") {
		t.Fatalf("partial JSON start: %v", err)
	}
}

func TestRateLimitSplit(t *testing.T) {
	for _, c := range []struct {
		limit                int64
		from, until, earlier kafkasource.Offsets
		want                 kafkasource.Offsets
	}{
		// lags 30, 10, 0: 7.5 -> 7, 2.5 -> 2, idle partition keeps its end.
		{10, kafkasource.Offsets{0: 0, 1: 5, 2: 3}, kafkasource.Offsets{0: 30, 1: 15, 2: 3}, nil, kafkasource.Offsets{0: 7, 1: 7, 2: 3}},
		// a share below one is rounded up: the small partition is not starved.
		{10, kafkasource.Offsets{0: 0, 1: 0}, kafkasource.Offsets{0: 1000, 1: 1}, nil, kafkasource.Offsets{0: 9, 1: 1}},
		// never past until.
		{100, kafkasource.Offsets{0: 0, 1: 0}, kafkasource.Offsets{0: 3, 1: 4}, nil, kafkasource.Offsets{0: 3, 1: 4}},
		// a new partition starts at earliest.
		{4, kafkasource.Offsets{0: 0}, kafkasource.Offsets{0: 4, 1: 14}, kafkasource.Offsets{1: 10}, kafkasource.Offsets{0: 2, 1: 12}},
		// nothing to read: until as is.
		{4, kafkasource.Offsets{0: 5}, kafkasource.Offsets{0: 5}, nil, kafkasource.Offsets{0: 5}},
	} {
		got := kafkasource.RateLimit(c.limit, c.from, c.until, c.earlier)
		if string(got.JSON("t")) != string(c.want.JSON("t")) {
			t.Errorf("RateLimit(%d, %v, %v) = %v, want %v", c.limit, c.from, c.until, got, c.want)
		}
	}
}

// MaxOffsetsPerTrigger caps each planned batch relative to the previous
// planned end, split by lag; Resume moves that base for a restart.
func TestMaxOffsetsPerTrigger(t *testing.T) {
	k := startKfake(t, map[string]int32{"in": 2})
	p := producer(t, k)
	produce(t, p, "in", 0, vs(0, 1, 2, 3, 4, 5)...)
	produce(t, p, "in", 1, vs(10, 11)...)
	cfg := kafkasource.Config{Topic: "in", StartingOffsets: "earliest", MaxOffsetsPerTrigger: 4}
	s := newSource(t, k, cfg)
	var ends []string
	var got []string
	var prev json.RawMessage
	for range 4 {
		end := latest(t, s)
		ends = append(ends, string(end))
		got = append(got, rows(t, s, prev, end)...)
		prev = end
	}
	want := []string{`{"in":{"0":3,"1":1}}`, `{"in":{"0":6,"1":2}}`, `{"in":{"0":6,"1":2}}`, `{"in":{"0":6,"1":2}}`}
	if !slices.Equal(ends, want) {
		t.Fatalf("planned ends = %v, want %v", ends, want)
	}
	if w := vs(0, 1, 2, 10, 3, 4, 5, 11); !slices.Equal(got, w) {
		t.Fatalf("rows = %v, want %v", got, w)
	}

	// A restarted driver: a fresh instance would cap relative to the
	// initial offsets ({"in":{"0":2,"1":2}}); Resume(position) caps
	// relative to the checkpoint.
	produce(t, p, "in", 1, vs(12, 13, 14, 15, 16, 17)...)
	s2 := newSource(t, k, cfg)
	if err := s2.Resume(json.RawMessage(`{"in":{"0":6,"1":2}}`)); err != nil {
		t.Fatal(err)
	}
	if got, want := string(latest(t, s2)), `{"in":{"0":6,"1":6}}`; got != want {
		t.Fatalf("after Resume latest = %s, want %s", got, want)
	}
}

// read_committed: aborted transactional records are skipped (a range may
// hold fewer records than its width, even end on aborted data), an open
// transaction holds the latest offset at the LSO, and read_uncommitted
// sees everything.
func TestReadCommitted(t *testing.T) {
	k := startKfake(t, map[string]int32{"in": 1})
	txn := producer(t, k, kgo.TransactionalID("test-producer"))
	inTxn := func(commit bool, vals ...string) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		produce(t, txn, "in", 0, vals...)
		how := kgo.TryAbort
		if commit {
			how = kgo.TryCommit
		}
		if err := txn.EndTransaction(ctxT(t), how); err != nil {
			t.Fatal(err)
		}
	}
	// Offsets: c1=0 marker=1 | a1=2 a2=3 marker=4 | c2=5 c3=6 marker=7
	inTxn(true, v(1))
	inTxn(false, v(91), v(92))
	inTxn(true, v(2), v(3))

	s := newSource(t, k, kafkasource.Config{Topic: "in", StartingOffsets: "earliest"})
	end := latest(t, s)
	if got, want := string(end), `{"in":{"0":8}}`; got != want {
		t.Fatalf("latest = %s, want %s", got, want)
	}
	if got, want := rows(t, s, nil, end), vs(1, 2, 3); !slices.Equal(got, want) {
		t.Fatalf("read_committed rows = %v, want %v", got, want)
	}
	// Ranges ending on aborted data, on the abort marker, and holding
	// only aborted data.
	for _, c := range []struct {
		start, end string
		want       []string
	}{
		{`{"in":{"0":0}}`, `{"in":{"0":4}}`, vs(1)},
		{`{"in":{"0":0}}`, `{"in":{"0":5}}`, vs(1)},
		{`{"in":{"0":2}}`, `{"in":{"0":4}}`, []string{}},
		{`{"in":{"0":3}}`, `{"in":{"0":6}}`, vs(2)},
	} {
		if got := rows(t, s, json.RawMessage(c.start), json.RawMessage(c.end)); !slices.Equal(got, c.want) {
			t.Errorf("rows(%s, %s) = %v, want %v", c.start, c.end, got, c.want)
		}
	}

	unc := newSource(t, k, kafkasource.Config{Topic: "in", StartingOffsets: "earliest", ReadUncommitted: true})
	if got, want := rows(t, unc, nil, latest(t, unc)), vs(1, 91, 92, 2, 3); !slices.Equal(got, want) {
		t.Fatalf("read_uncommitted rows = %v, want %v", got, want)
	}

	// An open transaction: its first offset is the LSO.
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(t, txn, "in", 0, v(4))
	if got, want := string(latest(t, s)), `{"in":{"0":8}}`; got != want {
		t.Fatalf("latest with an open transaction = %s, want %s", got, want)
	}
	if got, want := string(latest(t, unc)), `{"in":{"0":9}}`; got != want {
		t.Fatalf("read_uncommitted latest with an open transaction = %s, want %s", got, want)
	}
	if _, err := s.Rows(end, json.RawMessage(`{"in":{"0":9}}`)); err == nil || !strings.Contains(err.Error(), "last stable offset is 8") {
		t.Fatalf("rows past the LSO: %v", err)
	}
	if err := txn.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	end2 := latest(t, s)
	if got, want := string(end2), `{"in":{"0":10}}`; got != want {
		t.Fatalf("latest after commit = %s, want %s", got, want)
	}
	if got, want := rows(t, s, end, end2), vs(4); !slices.Equal(got, want) {
		t.Fatalf("rows after commit = %v, want %v", got, want)
	}
}

func TestNewRejects(t *testing.T) {
	for _, cfg := range []kafkasource.Config{
		{Topic: "t"},
		{Brokers: []string{"x:1"}},
		{Brokers: []string{"x:1"}, Topic: "t", StartingOffsets: "newest"},
		{Brokers: []string{"x:1"}, Topic: "t", StartingOffsets: `{"u":{"0":1}}`},
		{Brokers: []string{"x:1"}, Topic: "t", MaxOffsetsPerTrigger: -1},
	} {
		if s, err := kafkasource.New(cfg); err == nil {
			s.Close()
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

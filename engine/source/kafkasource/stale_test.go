package kafkasource_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
	"github.com/dedupsim/dedupsim/live"
)

// armStale makes k answer the next n requests for the latest offsets of
// topic with ends, but stale's values for stale's partitions (n < 0: all
// requests, until Stop).
func armStale(t *testing.T, k *live.Kfake, topic string, ends, stale map[int32]int64, n int) *live.StaleEnds {
	t.Helper()
	answer := maps.Clone(ends)
	maps.Copy(answer, stale)
	se, err := k.StaleEnds(topic, answer, n)
	if err != nil {
		t.Fatal(err)
	}
	return se
}

// sleeps records the waits between attempts and returns at once.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return nil
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.d)
}

// firstBatch produces p0: 0..4 and p1: 10, 11, plans and reads the first
// batch, then produces p0: 5, 6 and p1: 12. It returns the first batch's
// end ({"0":5,"1":2}) and the topic's ends now.
func firstBatch(t *testing.T, k *live.Kfake, s *kafkasource.Source) (string, map[int32]int64) {
	t.Helper()
	p := producer(t, k)
	produce(t, p, "in", 0, vs(0, 1, 2, 3, 4)...)
	produce(t, p, "in", 1, vs(10, 11)...)
	end := latest(t, s)
	if got, want := string(end), `{"in":{"0":5,"1":2}}`; got != want {
		t.Fatalf("first latest = %s, want %s", got, want)
	}
	if got, want := rows(t, s, nil, end), vs(0, 1, 2, 3, 4, 10, 11); !slices.Equal(got, want) {
		t.Fatalf("first rows = %v, want %v", got, want)
	}
	produce(t, p, "in", 0, vs(5, 6)...)
	produce(t, p, "in", 1, vs(12)...)
	return string(end), map[int32]int64{0: 7, 1: 3}
}

// A latest offset that went backwards (partition 0 answers 3 after the
// source planned up to 5) is asked again after fetchOffset.retryIntervalMs
// (Spark's KafkaOffsetReaderAdmin.fetchLatestOffsets); the fresh answer is
// taken and the next batch reads exactly the new records, none lost, none
// twice. A stale answer that comes back fresh on the last attempt is
// fine too.
func TestLatestOffsetStaleAnswerRetried(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fetch      *kafkasource.FetchOffset
		staleTimes int
		wantSleeps []time.Duration
	}{
		{"defaults, stale once", nil, 1, []time.Duration{time.Second}},
		{"fresh on the last of 3", &kafkasource.FetchOffset{NumRetries: 3, RetryIntervalMs: 10}, 2, []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}},
		{"no wait", &kafkasource.FetchOffset{NumRetries: 2, RetryIntervalMs: 0}, 1, []time.Duration{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := startKfake(t, map[string]int32{"in": 2})
			var sl sleeps
			s := newSource(t, k, kafkasource.Config{Topic: "in", StartingOffsets: "earliest", FetchOffset: tc.fetch, Sleep: sl.sleep})
			end, ends := firstBatch(t, k, s)
			se := armStale(t, k, "in", ends, map[int32]int64{0: 3}, tc.staleTimes)
			end2 := latest(t, s)
			if got, want := string(end2), `{"in":{"0":7,"1":3}}`; got != want {
				t.Fatalf("latest after a stale answer = %s, want %s", got, want)
			}
			if n := se.Answers(); n != tc.staleTimes {
				t.Fatalf("%d stale answers given, want %d", n, tc.staleTimes)
			}
			if got := sl.got(); !slices.Equal(got, tc.wantSleeps) {
				t.Fatalf("waits between attempts = %v, want %v", got, tc.wantSleeps)
			}
			if got, want := rows(t, s, []byte(end), end2), vs(5, 6, 12); !slices.Equal(got, want) {
				t.Fatalf("rows of the next batch = %v, want %v", got, want)
			}
		})
	}
}

// A latest offset that stays behind is asked exactly fetchOffset.numRetries
// times, retryIntervalMs apart, and then returned as it is; the batch's
// range goes backwards and Rows fails with Spark's data-loss error
// (failOnDataLoss=true). Without numRetries set, Spark's 3 attempts.
func TestLatestOffsetStaysBehindFails(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fetch     *kafkasource.FetchOffset
		attempts  int
		wantSleep time.Duration
	}{
		{"defaults", nil, 3, time.Second},
		{"one attempt", &kafkasource.FetchOffset{NumRetries: 1, RetryIntervalMs: 10}, 1, 0},
		{"five attempts", &kafkasource.FetchOffset{NumRetries: 5, RetryIntervalMs: 25}, 5, 25 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := startKfake(t, map[string]int32{"in": 2})
			var sl sleeps
			s := newSource(t, k, kafkasource.Config{Topic: "in", StartingOffsets: "earliest", FetchOffset: tc.fetch, Sleep: sl.sleep})
			end, ends := firstBatch(t, k, s)
			se := armStale(t, k, "in", ends, map[int32]int64{0: 3}, -1)
			defer se.Stop()
			end2 := latest(t, s)
			if got, want := string(end2), `{"in":{"0":3,"1":3}}`; got != want {
				t.Fatalf("latest after stale answers = %s, want the last answer %s", got, want)
			}
			if n := se.Answers(); n != tc.attempts {
				t.Fatalf("asked %d times, want exactly %d (fetchOffset.numRetries)", n, tc.attempts)
			}
			var want []time.Duration
			for range tc.attempts - 1 {
				want = append(want, tc.wantSleep)
			}
			if got := sl.got(); !slices.Equal(got, want) {
				t.Fatalf("waits = %v, want %v", got, want)
			}
			_, err := s.Rows([]byte(end), end2)
			if err == nil {
				t.Fatal("Rows of a backwards range succeeded; want Spark's data-loss failure")
			}
			for _, frag := range []string{
				"[KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED] Some data may have been lost",
				"Reason: Partition in-0 offset was changed from 5 to 3.",
				"The latest offset was still 3 after " + itoa(tc.attempts) + " attempts (fetchOffset.numRetries " + itoa(tc.attempts),
			} {
				if !strings.Contains(err.Error(), frag) {
					t.Errorf("error %q does not say %q", err, frag)
				}
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A wait between attempts that ends the call (the Kafka timeout expired)
// is an error naming the known offsets, not a stale answer passed on.
func TestLatestOffsetStaleNoTimeLeft(t *testing.T) {
	k := startKfake(t, map[string]int32{"in": 2})
	var armed bool
	s := newSource(t, k, kafkasource.Config{Topic: "in", StartingOffsets: "earliest", Sleep: func(ctx context.Context, d time.Duration) error {
		if armed {
			return context.DeadlineExceeded
		}
		return nil
	}})
	_, ends := firstBatch(t, k, s)
	armed = true
	se := armStale(t, k, "in", ends, map[int32]int64{0: 3}, -1)
	defer se.Stop()
	_, err := s.LatestOffset()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `behind the known ones {"in":{"0":5,"1":2}} after 1 attempts`) {
		t.Fatalf("LatestOffset = %v, want the deadline and the known offsets", err)
	}
}

func TestFetchOffsetOptions(t *testing.T) {
	for _, tc := range []struct {
		f    kafkasource.FetchOffset
		want string // "" accepted
	}{
		{kafkasource.DefaultFetchOffset(), ""},
		{kafkasource.FetchOffset{NumRetries: 1, RetryIntervalMs: 0}, ""},
		{kafkasource.FetchOffset{NumRetries: 1000, RetryIntervalMs: 3_600_000}, ""},
		{kafkasource.FetchOffset{NumRetries: 0, RetryIntervalMs: 10}, "fetchOffset.numRetries 0: want an attempt count in [1, 1000] (Spark's default 3)"},
		{kafkasource.FetchOffset{NumRetries: -3, RetryIntervalMs: 10}, "fetchOffset.numRetries -3: want"},
		{kafkasource.FetchOffset{NumRetries: 1001, RetryIntervalMs: 10}, "fetchOffset.numRetries 1001: want"},
		{kafkasource.FetchOffset{NumRetries: 3, RetryIntervalMs: -1}, "fetchOffset.retryIntervalMs -1: want milliseconds in [0, 3600000] (Spark's default 1000)"},
		{kafkasource.FetchOffset{NumRetries: 3, RetryIntervalMs: 3_600_001}, "fetchOffset.retryIntervalMs 3600001: want"},
	} {
		f := tc.f
		s, err := kafkasource.New(kafkasource.Config{Brokers: []string{"127.0.0.1:1"}, Topic: "t", FetchOffset: &f})
		if s != nil {
			s.Close()
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v refused: %v", tc.f, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want %q", tc.f, err, tc.want)
		}
	}
	if d := kafkasource.DefaultFetchOffset(); d.NumRetries != 3 || d.RetryIntervalMs != 1000 {
		t.Fatalf("defaults %+v, want Spark's 3 attempts, 1000 ms", d)
	}
}

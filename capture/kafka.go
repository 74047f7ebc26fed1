package capture

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine/source/kafkasource"
)

// Source says which records of which topic a capture reads.
type Source struct {
	Brokers []string
	Topic   string
	// Partitions to read, ascending; nil: every partition of the topic.
	Partitions []int32
	Start, End Bound
	// ReadUncommitted reads with read_uncommitted isolation (records of
	// aborted and open transactions included); the default is Spark's
	// Kafka source default, read_committed.
	ReadUncommitted bool
	// ClientOpts are added to every franz-go client (TLS, SASL).
	ClientOpts []kgo.Opt
	// Timeout bounds one metadata or offset request (default 30 s).
	Timeout time.Duration
}

func (s *Source) clientOpts() []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(s.Brokers...)}, s.ClientOpts...)
}

func (s *Source) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return 30 * time.Second
}

// isolation names the isolation level for headers and messages.
func (s *Source) isolation() string {
	if s.ReadUncommitted {
		return "read_uncommitted"
	}
	return "read_committed"
}

// Plan resolves the source's bounds into one offset range per partition:
// [start, end) where the end is never past the partition's end as the
// capture begins (the last stable offset with read_committed). next, when
// set, moves a partition's start forward to where an earlier capture
// stopped. A start before the log start offset (records deleted by
// retention) is refused, as Spark's failOnDataLoss refuses it.
func (s *Source) Plan(ctx context.Context, next map[int32]int64) ([]kafkasource.Range, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	cl, err := kgo.NewClient(s.clientOpts()...)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := list(adm.ListStartOffsets(ctx, s.Topic))
	if err != nil {
		return nil, s.listError("log start offsets", err)
	}
	endList := adm.ListCommittedOffsets
	if s.ReadUncommitted {
		endList = adm.ListEndOffsets
	}
	ends, err := list(endList(ctx, s.Topic))
	if err != nil {
		return nil, s.listError("end offsets", err)
	}
	parts := s.Partitions
	if parts == nil {
		parts = slices.Sorted(maps.Keys(ends))
	}
	for _, p := range parts {
		if _, ok := ends[p]; !ok {
			return nil, inputErrorf("--topic-partitions: topic %s has no partition %d (it has %d: 0 to %d)", s.Topic, p, len(ends), len(ends)-1)
		}
	}
	from, err := s.resolve(ctx, adm, s.Start, starts, ends, true)
	if err != nil {
		return nil, err
	}
	to, err := s.resolve(ctx, adm, s.End, starts, ends, false)
	if err != nil {
		return nil, err
	}
	var out []kafkasource.Range
	for _, p := range parts {
		f, t := from[p], min(to[p], ends[p])
		if f < starts[p] {
			return nil, inputErrorf("--start: partition %d offset %d is before the log start offset %d: the records were deleted (retention or compaction)", p, f, starts[p])
		}
		if n, ok := next[p]; ok && n > f {
			f = n
		}
		out = append(out, kafkasource.Range{Partition: p, From: f, To: max(f, t)})
	}
	return out, nil
}

func (s *Source) listError(what string, err error) error {
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return inputErrorf("--topic %s: no such topic at %s", s.Topic, strings.Join(s.Brokers, ","))
	}
	return fmt.Errorf("kafka: list the %s of topic %s at %s: %w", what, s.Topic, strings.Join(s.Brokers, ","), err)
}

// resolve gives a bound's offset for every partition.
func (s *Source) resolve(ctx context.Context, adm *kadm.Client, b Bound, starts, ends kafkasource.Offsets, start bool) (kafkasource.Offsets, error) {
	flag, dflt := "end", ends
	if start {
		flag, dflt = "start", starts
	}
	out := kafkasource.Offsets{}
	switch b.Kind {
	case Earliest, Latest:
		return dflt, nil
	case AtOffset:
		for p := range ends {
			out[p] = b.Offset
			if b.PerPartition != nil {
				o, ok := b.PerPartition[p]
				if !ok {
					o = dflt[p]
				}
				out[p] = o
			}
		}
		for p := range b.PerPartition {
			if _, ok := ends[p]; !ok {
				return nil, inputErrorf("--%s: topic %s has no partition %d", flag, s.Topic, p)
			}
		}
		return out, nil
	case AtTime:
		l, err := adm.ListOffsetsAfterMilli(ctx, b.TimeMs, s.Topic)
		if err != nil {
			return nil, s.listError("offsets at --"+flag, err)
		}
		got, err := list(l, nil)
		if err != nil {
			return nil, s.listError("offsets at --"+flag, err)
		}
		for p := range ends {
			o, ok := got[p]
			if !ok || o < 0 {
				o = ends[p]
			}
			out[p] = o
		}
		return out, nil
	}
	return nil, fmt.Errorf("--%s: no bound given", flag)
}

// list turns a kadm listing of one topic into offsets.
func list(l kadm.ListedOffsets, err error) (kafkasource.Offsets, error) {
	if err != nil {
		return nil, err
	}
	out := kafkasource.Offsets{}
	for _, ps := range l {
		for p, o := range ps {
			if o.Err != nil {
				if p < 0 {
					return nil, fmt.Errorf("%w (does the topic exist?)", o.Err)
				}
				return nil, fmt.Errorf("partition %d: %w", p, o.Err)
			}
			if o.Offset < 0 {
				return nil, fmt.Errorf("partition %d: the broker gave offset %d (not available yet?)", p, o.Offset)
			}
			out[p] = o.Offset
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the topic has no partitions (does it exist?)")
	}
	return out, nil
}

// reader consumes offset ranges with one assign-mode client, partition by
// partition in offset order, and says when each range is complete (a data
// or control record at or past its last offset was seen, as
// kafkasource.ReadRanges decides). Partitions can be paused, which bounds
// what it buffers while a slower partition catches up.
type reader struct {
	topic  string
	cl     *kgo.Client
	ranges map[int32]kafkasource.Range
	next   map[int32]int64
	open   map[int32]bool
}

// fetchBytes bounds one fetch (kgo FetchMaxBytes) and partBytes one
// partition's share (FetchMaxPartitionBytes); with at most two fetches in
// flight or buffered, the client holds about 2 x 4 MiB of records as fetched (times the compression ratio once decompressed). A poll
// takes at most pollRecords of them.
const (
	fetchBytes  = 4 << 20
	partBytes   = 1 << 20
	pollRecords = 10_000
)

func newReader(s *Source, ranges []kafkasource.Range) (*reader, error) {
	r := &reader{topic: s.Topic, ranges: map[int32]kafkasource.Range{}, next: map[int32]int64{}, open: map[int32]bool{}}
	start := map[int32]kgo.Offset{}
	for _, g := range ranges {
		r.ranges[g.Partition] = g
		r.next[g.Partition] = g.From
		if g.From < g.To {
			start[g.Partition] = kgo.NewOffset().At(g.From)
			r.open[g.Partition] = true
		}
	}
	if len(start) == 0 {
		return r, nil
	}
	iso := kgo.ReadCommitted()
	if s.ReadUncommitted {
		iso = kgo.ReadUncommitted()
	}
	opts := append(s.clientOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.Topic: start}),
		kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.FetchMaxBytes(fetchBytes), kgo.FetchMaxPartitionBytes(partBytes), kgo.MaxConcurrentFetches(2),
		kgo.FetchMaxWait(250*time.Millisecond))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	r.cl = cl
	return r, nil
}

func (r *reader) close() {
	if r.cl != nil {
		r.cl.Close()
	}
}

// done reports whether every range is complete.
func (r *reader) done() bool { return len(r.open) == 0 }

// poll returns the next data records of the open ranges, in offset order
// per partition. ctx ending stops it with an error naming how far each
// partition got.
func (r *reader) poll(ctx context.Context) ([]*kgo.Record, error) {
	if r.done() {
		return nil, nil
	}
	fs := r.cl.PollRecords(ctx, pollRecords)
	if err := ctx.Err(); err != nil {
		return nil, r.incomplete(err)
	}
	if errs := fs.Errors(); len(errs) > 0 {
		fe := errs[0] // the first error stops the read
		if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) {
			return nil, r.incomplete(fe.Err)
		}
		return nil, fmt.Errorf("kafka: read %s partition %d: %w", fe.Topic, fe.Partition, fe.Err)
	}
	var out []*kgo.Record
	fs.EachRecord(func(rec *kgo.Record) {
		g, ok := r.ranges[rec.Partition]
		if !ok || rec.Topic != r.topic || !r.open[rec.Partition] || rec.Offset < r.next[rec.Partition] {
			return
		}
		if rec.Offset < g.To && !rec.Attrs.IsControl() {
			out = append(out, rec)
		}
		r.next[rec.Partition] = rec.Offset + 1
		if rec.Offset >= g.To-1 {
			delete(r.open, rec.Partition)
			r.cl.PauseFetchPartitions(map[string][]int32{r.topic: {rec.Partition}})
		}
	})
	return out, nil
}

// pause and resume stop and restart fetching a partition.
func (r *reader) pause(p int32) {
	r.cl.PauseFetchPartitions(map[string][]int32{r.topic: {p}})
}

func (r *reader) resume(p int32) {
	if r.open[p] {
		r.cl.ResumeFetchPartitions(map[string][]int32{r.topic: {p}})
	}
}

func (r *reader) incomplete(cause error) error {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(r.open)) {
		g := r.ranges[p]
		parts = append(parts, fmt.Sprintf("partition %d at offset %d of [%d, %d)", p, r.next[p], g.From, g.To))
	}
	return fmt.Errorf("kafka: read %s stopped before the end (%s): %w", r.topic, strings.Join(parts, ", "), cause)
}

package kafkasource

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Range is the half-open offset range [From, To) of one partition.
type Range struct {
	Partition int32
	From, To  int64
}

// ReadRanges reads the data records of topic in each range with a fresh
// direct (assign-mode, group-less) consumer, and returns them per range in
// offset order. clientOpts must at least name the seed brokers.
//
// With readCommitted, records of aborted transactions are skipped, so a
// range can hold fewer records than To-From. Control records (transaction
// markers) are never returned but are fetched, which is how the read knows
// where it is: a range is complete once a record (data or marker) at
// offset To-1 or later has been seen. That always happens for a range that
// ends at or below the partition's last stable offset (read_committed) or
// high watermark (read_uncommitted): offset To-1 is a visible record, a
// marker, or aborted data whose abort marker lies at or after To.
// Callers check that bound first; a range past it, or one whose tail was
// compacted away, is reported when ctx expires, with how far each
// partition got.
func ReadRanges(ctx context.Context, clientOpts []kgo.Opt, topic string, ranges []Range, readCommitted bool) ([][]*kgo.Record, error) {
	out := make([][]*kgo.Record, len(ranges))
	idx := map[int32]int{}
	start := map[int32]kgo.Offset{}
	next := map[int32]int64{} // next offset expected per partition, for the error
	for i, r := range ranges {
		if _, dup := idx[r.Partition]; dup {
			return nil, fmt.Errorf("kafka read %s: partition %d given twice", topic, r.Partition)
		}
		if r.From < 0 || r.To < r.From {
			return nil, fmt.Errorf("kafka read %s: partition %d: bad range [%d, %d)", topic, r.Partition, r.From, r.To)
		}
		idx[r.Partition] = i
		if r.From < r.To {
			start[r.Partition] = kgo.NewOffset().At(r.From)
			next[r.Partition] = r.From
		}
	}
	if len(start) == 0 {
		return out, nil
	}
	iso := kgo.ReadUncommitted()
	if readCommitted {
		iso = kgo.ReadCommitted()
	}
	opts := append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}),
		kgo.FetchIsolationLevel(iso),
		kgo.KeepControlRecords(),
		// An offset before the log start must fail, not silently skip data.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.FetchMaxWait(250 * time.Millisecond),
	}, clientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka read %s: %w", topic, err)
	}
	defer cl.Close()

	open := len(start)
	done := map[int32]bool{}
	for open > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, incompleteError(topic, ranges, next, done, err)
		}
		for _, fe := range fs.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				return nil, incompleteError(topic, ranges, next, done, fe.Err)
			}
			return nil, fmt.Errorf("kafka read %s partition %d: %w", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			i, ok := idx[rec.Partition]
			if !ok || rec.Topic != topic || done[rec.Partition] {
				return
			}
			r := ranges[i]
			if rec.Offset >= r.From && rec.Offset < r.To && !rec.Attrs.IsControl() {
				out[i] = append(out[i], rec)
			}
			next[rec.Partition] = rec.Offset + 1
			if rec.Offset >= r.To-1 {
				done[rec.Partition] = true
				open--
			}
		})
	}
	return out, nil
}

func incompleteError(topic string, ranges []Range, next map[int32]int64, done map[int32]bool, cause error) error {
	var parts []string
	for _, r := range ranges {
		if r.From < r.To && !done[r.Partition] {
			parts = append(parts, fmt.Sprintf("partition %d at offset %d of [%d, %d)", r.Partition, next[r.Partition], r.From, r.To))
		}
	}
	return fmt.Errorf("kafka read %s did not reach the end of the range (%s): %w", topic, strings.Join(parts, ", "), cause)
}

// ReadAll reads every data record of topic from each partition's log start
// up to its last stable offset (readCommitted) or high watermark, as of
// now, partitions in numeric order. Tests use it to read what a sink
// wrote.
func ReadAll(ctx context.Context, clientOpts []kgo.Opt, topic string, readCommitted bool) ([]*kgo.Record, error) {
	end := listHighWatermark
	if readCommitted {
		end = listStable
	}
	return readAll(ctx, clientOpts, topic, readCommitted, end)
}

// ReadAllSettled reads every committed data record of topic up to each
// partition's high watermark as of the call, waiting (until ctx expires)
// for the transactions open at that moment to end. Reading only up to the
// last stable offset would miss committed records that follow another
// producer's still-open transaction; the transactional sink reads its
// commit markers this way.
func ReadAllSettled(ctx context.Context, clientOpts []kgo.Opt, topic string) ([]*kgo.Record, error) {
	return readAll(ctx, clientOpts, topic, true, listHighWatermark)
}

func readAll(ctx context.Context, clientOpts []kgo.Opt, topic string, readCommitted bool, end listKind) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(clientOpts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := listOffsets(ctx, adm, topic, listStart)
	if err != nil {
		return nil, err
	}
	ends, err := listOffsets(ctx, adm, topic, end)
	if err != nil {
		return nil, err
	}
	var ranges []Range
	for _, p := range ends.Partitions() {
		ranges = append(ranges, Range{Partition: p, From: starts[p], To: ends[p]})
	}
	per, err := ReadRanges(ctx, clientOpts, topic, ranges, readCommitted)
	if err != nil {
		return nil, err
	}
	return slices.Concat(per...), nil
}

type listKind int

const (
	listStart         listKind = iota // log start offset
	listHighWatermark                 // end offset for read_uncommitted
	listStable                        // last stable offset, the end for read_committed
)

func (k listKind) String() string {
	return [...]string{"log start offset", "high watermark", "last stable offset"}[k]
}

// listOffsets lists one kind of offset for every partition of topic.
func listOffsets(ctx context.Context, adm *kadm.Client, topic string, kind listKind) (Offsets, error) {
	var (
		l   kadm.ListedOffsets
		err error
	)
	switch kind {
	case listStart:
		l, err = adm.ListStartOffsets(ctx, topic)
	case listHighWatermark:
		l, err = adm.ListEndOffsets(ctx, topic)
	default:
		l, err = adm.ListCommittedOffsets(ctx, topic)
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: list %s of %s: %w", kind, topic, err)
	}
	out := Offsets{}
	for p, o := range l[topic] {
		if o.Err != nil {
			if p < 0 {
				return nil, fmt.Errorf("kafka: topic %s: %w", topic, o.Err)
			}
			return nil, fmt.Errorf("kafka: list %s of %s partition %d: %w", kind, topic, p, o.Err)
		}
		out[p] = o.Offset
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("kafka: topic %s has no partitions (does it exist?)", topic)
	}
	return out, nil
}

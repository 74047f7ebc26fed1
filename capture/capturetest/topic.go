// Package capturetest produces the topic the capture tests read, on kfake
// or a real broker: known events, known duplicates with known gaps between
// their copies, a quiet stretch with no traffic, and an aborted
// transaction that read_committed must skip, so that what capture, analyze
// and exec report can be checked against what was produced.
package capturetest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Topic is the workload's topic, Partitions its partition count.
const (
	Topic      = "payments"
	Partitions = 2
)

// Event is one produced record.
type Event struct {
	ID        string
	EventTime int64 // Unix seconds: the value's "ts"
	Arrival   time.Time
	Partition int32
}

// Produced is what Produce wrote, for the assertions.
type Produced struct {
	// Events are the committed records, in arrival order.
	Events []Event
	// Keys is the number of distinct ids; Duplicates the extra copies.
	Keys, Duplicates int
	// Gaps are the event-time gaps between the copies of each duplicated
	// id, seconds; MaxGap the largest.
	Gaps   map[string]int64
	MaxGap int64
	// Aborted counts the records of the aborted transaction.
	Aborted int
}

// Workload is the events: 40 ids five seconds apart, with a quiet
// stretch of two minutes after the 30th, and three ids sent again by a
// retrying producer that stamped the copy anew, 10 s, 40 s and 90 s later.
// Each record arrives half a second after its event time. The first
// event time is base, a whole minute.
func Workload(base time.Time) Produced {
	p := Produced{Gaps: map[string]int64{"e03": 10, "e07": 40, "e20": 90}, MaxGap: 90, Aborted: 2}
	t := base.Truncate(time.Minute).Unix()
	for i := range 40 {
		if i == 30 {
			t += 120
		}
		id := fmt.Sprintf("e%02d", i)
		p.Events = append(p.Events, Event{ID: id, EventTime: t, Partition: int32(i % 2)})
		if g, ok := p.Gaps[id]; ok {
			p.Events = append(p.Events, Event{ID: id, EventTime: t + g, Partition: int32(i % 2)})
		}
		t += 5
	}
	for i := range p.Events {
		p.Events[i].Arrival = time.UnixMilli(p.Events[i].EventTime*1000 + 500).UTC()
	}
	slices.SortStableFunc(p.Events, func(a, b Event) int { return a.Arrival.Compare(b.Arrival) })
	p.Keys, p.Duplicates = 40, len(p.Gaps)
	return p
}

// Value is an event's record value.
func (e Event) Value() []byte { return fmt.Appendf(nil, `{"id":%q,"ts":%d}`, e.ID, e.EventTime) }

// Produce writes the workload to Topic (which must exist with Partitions
// partitions) at addrs: every event with its arrival as the record
// timestamp, then a transaction of Aborted records that is aborted. The
// workload starts an hour ago, so that a real broker's retention (7 days
// of record timestamps) keeps it.
func Produce(ctx context.Context, addrs []string, opts ...kgo.Opt) (Produced, error) {
	p := Workload(time.Now().Add(-time.Hour))
	base := append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)
	cl, err := kgo.NewClient(base...)
	if err != nil {
		return p, err
	}
	defer cl.Close()
	for _, e := range p.Events {
		r := &kgo.Record{Topic: Topic, Partition: e.Partition, Value: e.Value(), Timestamp: e.Arrival}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return p, fmt.Errorf("produce %s: %w", e.ID, err)
		}
	}
	tx, err := kgo.NewClient(append(base, kgo.TransactionalID("capturetest-aborted"))...)
	if err != nil {
		return p, err
	}
	defer tx.Close()
	if err := tx.BeginTransaction(); err != nil {
		return p, err
	}
	last := p.Events[len(p.Events)-1]
	for i := range p.Aborted {
		r := &kgo.Record{Topic: Topic, Partition: 0, Value: fmt.Appendf(nil, `{"id":"aborted-%d","ts":%d}`, i, last.EventTime), Timestamp: last.Arrival}
		if err := tx.ProduceSync(ctx, r).FirstErr(); err != nil {
			return p, fmt.Errorf("produce in the transaction: %w", err)
		}
	}
	if err := tx.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return p, fmt.Errorf("abort: %w", err)
	}
	return p, settle(ctx, kadm.NewClient(cl))
}

// settle waits until the abort marker is written: the broker writes it
// after EndTransaction returns, and until then the last stable offset of
// partition 0 stays at the transaction's first record.
func settle(ctx context.Context, adm *kadm.Client) error {
	for {
		lso, err := adm.ListCommittedOffsets(ctx, Topic)
		if err != nil {
			return err
		}
		hwm, err := adm.ListEndOffsets(ctx, Topic)
		if err != nil {
			return err
		}
		settled := len(hwm[Topic]) == Partitions
		for part, o := range hwm[Topic] {
			if l, ok := lso.Lookup(Topic, part); !ok || o.Err != nil || l.Err != nil || l.Offset != o.Offset {
				settled = false
			}
		}
		if settled {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the aborted transaction never settled: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

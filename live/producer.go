package live

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/live/faultproxy"
)

// createTopic creates a topic with the cluster's default replication
// factor (-1: default.replication.factor, 1 on one broker, 3 on three,
// with min.insync.replicas 2; see kraftSettings).
func createTopic(ctx context.Context, adm *kadm.Client, name string, parts int32) error {
	resp, err := adm.CreateTopic(ctx, parts, -1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("live: create topic %s: %w", name, err)
	}
	return nil
}

// createTopicReady creates a topic at the cluster at addrs with the
// default replication factor and waits until every partition has a leader.
func createTopicReady(ctx context.Context, addrs []string, name string, partitions int32) error {
	if name == "" || partitions < 1 {
		return fmt.Errorf("live: topic %q with %d partitions", name, partitions)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := createTopic(ctx, adm, name, partitions); err != nil {
		return err
	}
	for {
		md, err := adm.Metadata(ctx, name)
		if err == nil {
			if td, ok := md.Topics[name]; ok && td.Err == nil && len(td.Partitions) == int(partitions) {
				ready := true
				for _, p := range td.Partitions {
					ready = ready && p.Err == nil && p.Leader >= 0
				}
				if ready {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("live: topic %s has no leaders yet: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// produce appends the workload's copies in order as the scaled clock
// reaches their append times; a copy's recorded append time is when its
// send began.
//
// A duplicate-append is what it stands for: the original is sent alone by
// a non-idempotent producer while the acknowledgement of that produce
// request is lost after the broker wrote it, so the client retries and the
// log keeps the same bytes twice at adjacent offsets. kfake loses the ack
// itself (DropProduceAck); against a real broker the producer talks
// through the embedded fault proxy (live/faultproxy), which drops the
// response with its connection.
func (p *procRun) produce(cl *kgo.Client) {
	defer close(p.prodDone)
	lost, err := p.newLostAcks()
	if err != nil {
		p.prodErr = err
		return
	}
	defer lost.close()
	cs := p.wl.Copies
	isDup := func(j int) bool {
		return j+1 < len(cs) && cs[j+1].Fault.String() == faults.DuplicateAppend && cs[j+1].Event == cs[j].Event &&
			cs[j+1].Source == cs[j].Source && cs[j+1].Partition == cs[j].Partition
	}
	for i := 0; i < len(cs); {
		if d := time.Until(p.real(cs[i].AppendedAtMs)); d > 0 {
			select {
			case <-p.ctx.Done():
				p.prodErr = p.ctx.Err()
				return
			case <-time.After(d):
			}
		}
		nowV := p.virt(time.Now())
		if isDup(i) {
			if p.prodErr = p.produceLostAck(lost, i, nowV); p.prodErr != nil {
				return
			}
			i += 2
			continue
		}
		j := i
		var recs []*kgo.Record
		for j < len(cs) && cs[j].AppendedAtMs <= nowV && (j == i || !isDup(j)) {
			recs = append(recs, p.recordOf(j))
			j++
		}
		if p.prodErr = p.send(cl, recs); p.prodErr != nil {
			return
		}
		for k, r := range recs {
			p.appended(i+k, r.Offset, nowV)
		}
		i = j
	}
}

// lostAcks is a non-idempotent producer (one request in flight) and a way
// to lose the acknowledgement of its next produce request.
type lostAcks struct {
	raw   *kgo.Client
	kf    *Kfake            // kfake: the broker drops the ack
	proxy *faultproxy.Proxy // a real broker: the fault proxy does
	ids   map[string][16]byte
}

func (p *procRun) newLostAcks() (*lostAcks, error) {
	l := &lostAcks{ids: map[string][16]byte{}}
	opts := append(producerOpts(p.cluster), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(1),
		// the retry of a lost ack goes out at once
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	if kf, ok := p.cluster.(*Kfake); ok {
		l.kf = kf
	} else {
		l.proxy = faultproxy.New()
		opts = append(opts, kgo.Dialer(l.proxy.Dial))
	}
	raw, err := kgo.NewClient(opts...)
	if err != nil {
		l.close()
		return nil, fmt.Errorf("live: %w", err)
	}
	l.raw = raw
	return l, nil
}

func (l *lostAcks) close() {
	if l.raw != nil {
		l.raw.Close()
	}
	if l.proxy != nil {
		l.proxy.Close()
	}
}

// produceLostAck appends copy i and its duplicate-append i+1: the original
// alone, by the non-idempotent client, while its ack is lost, so that the
// client's retry appends it again. Against a real broker the fault proxy
// drops the produce response; should it miss (the log shows one copy),
// the duplicate is sent again explicitly and not counted as a dropped ack.
func (p *procRun) produceLostAck(l *lostAcks, i int, nowV int64) error {
	rec := p.recordOf(i)
	if l.kf != nil {
		h, err := l.kf.DropProduceAck(rec.Topic, 1)
		if err == nil {
			err = p.send(l.raw, []*kgo.Record{rec})
		}
		if err == nil && h.Hits() != 1 {
			err = fmt.Errorf("live: the produce ack of copy %d was not dropped", i)
		}
		if err != nil {
			return err
		}
		p.lostAckAppended(i, rec.Offset, nowV)
		return nil
	}
	ctx, cancel := context.WithTimeout(p.ctx, runTimeout)
	adm := kadm.NewClient(l.raw)
	id, known := l.ids[rec.Topic]
	if !known {
		md, err := adm.Metadata(ctx, rec.Topic)
		if err == nil {
			err = md.Topics.Error()
		}
		if err != nil {
			cancel()
			return fmt.Errorf("live: duplicate-append of copy %d: metadata of %s: %w", i, rec.Topic, err)
		}
		id = md.Topics[rec.Topic].ID
		l.ids[rec.Topic] = id
	}
	ends, err := adm.ListEndOffsets(ctx, rec.Topic)
	cancel()
	end, ok := ends.Lookup(rec.Topic, rec.Partition)
	if err == nil && !ok {
		err = fmt.Errorf("no end offset for partition %d", rec.Partition)
	}
	if err == nil {
		err = end.Err
	}
	if err != nil {
		return fmt.Errorf("live: duplicate-append of copy %d: end offset of %s: %w", i, rec.Topic, err)
	}
	disarm, err := l.proxy.DropNext(rec.Topic, id)
	if err != nil {
		return err
	}
	err = p.send(l.raw, []*kgo.Record{rec})
	hits := disarm()
	if err != nil {
		return err
	}
	// Nothing else writes the input partitions meanwhile: the lost-ack
	// write is at the end offset, the retry just after it.
	if hits == 0 || rec.Offset != end.Offset+1 {
		p.opt.Logf("duplicate-append of copy %d: the fault proxy dropped %d responses but the log holds one copy (offset %d, end was %d); sending it again", i, hits, rec.Offset, end.Offset)
		p.appended(i, rec.Offset, nowV)
		return p.sendOne(l.raw, i+1, nowV)
	}
	p.lostAckAppended(i, rec.Offset, nowV)
	return nil
}

// lostAckAppended records copy i and its duplicate i+1 as appended by a
// lost ack: the acked append (at off) is the retry; the lost-ack write is
// just before it.
func (p *procRun) lostAckAppended(i int, off, nowV int64) {
	p.appended(i, off-1, nowV)
	p.appended(i+1, off, nowV)
	p.droppedAcks++
}

// sendOne sends copy i alone.
func (p *procRun) sendOne(c *kgo.Client, i int, nowV int64) error {
	rec := p.recordOf(i)
	if err := p.send(c, []*kgo.Record{rec}); err != nil {
		return err
	}
	p.appended(i, rec.Offset, nowV)
	return nil
}

// recordOf is the Kafka record of workload copy i.
func (p *procRun) recordOf(i int) *kgo.Record {
	c := &p.wl.Copies[i]
	return &kgo.Record{Topic: p.inTopics[c.Source], Partition: int32(c.Partition), Value: p.wl.Rows[i]}
}

// appended records workload copy i as produced at offset off, its append
// time the scaled time its send began (nowV) when that is later than
// planned.
func (p *procRun) appended(i int, off, nowV int64) {
	c := p.wl.Copies[i]
	c.Offset = off
	c.AppendedAtMs = max(c.AppendedAtMs, nowV)
	p.produced = append(p.produced, c)
}

// send produces recs with c and waits for their acks.
func (p *procRun) send(c *kgo.Client, recs []*kgo.Record) error {
	ctx, cancel := context.WithTimeout(p.ctx, 3*time.Minute) // outlives a broker restart
	defer cancel()
	if err := c.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("live: produce %d records to %s (first partition %d): %w", len(recs), recs[0].Topic, recs[0].Partition, err)
	}
	return nil
}

func (p *procRun) restartBroker() {
	defer p.brokerWG.Done()
	at := p.wl.StartMs + int64(p.settings.Value(faults.BrokerRestart, "at_frac")*float64(p.wl.HealMs-p.wl.StartMs))
	select {
	case <-p.ctx.Done():
		return
	case <-time.After(time.Until(p.real(at))):
	}
	p.opt.Logf("broker restart (SIGKILL) at %dms", at-p.wl.StartMs)
	ctx, cancel := context.WithTimeout(p.ctx, 2*time.Minute)
	defer cancel()
	if err := p.broker.Kill(); err != nil {
		p.brokerErr = fmt.Errorf("live: broker kill: %w", err)
		return
	}
	if err := p.broker.Restart(ctx); err != nil {
		p.brokerErr = fmt.Errorf("live: broker restart: %w", err)
		return
	}
	p.brokerRestarts++ // read only after brokerWG.Wait
	p.opt.Logf("broker back after %v", time.Since(p.real(at)).Round(time.Millisecond))
}

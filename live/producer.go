package live

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/faults"
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
// On kfake a duplicate-append is what it stands for: the original is sent
// alone by a non-idempotent producer while the broker loses the ack of
// that produce request, so the client retries and the log keeps the same
// bytes twice at adjacent offsets. Elsewhere it is sent again explicitly.
func (p *procRun) produce(cl *kgo.Client) {
	defer close(p.prodDone)
	kf, _ := p.cluster.(*Kfake)
	var raw *kgo.Client
	if kf != nil {
		var err error
		raw, err = kgo.NewClient(append(producerOpts(p.cluster), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(1))...)
		if err != nil {
			p.prodErr = fmt.Errorf("live: %w", err)
			return
		}
		defer raw.Close()
	}
	cs := p.wl.Copies
	isDup := func(j int) bool {
		return kf != nil && j+1 < len(cs) && cs[j+1].Fault == faults.DuplicateAppend && cs[j+1].Event == cs[j].Event &&
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
			if p.prodErr = p.produceLostAck(kf, raw, i, nowV); p.prodErr != nil {
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

// produceLostAck appends copy i and its duplicate-append i+1 on kfake: the
// original alone, by the non-idempotent client raw, while kfake drops the
// ack of that produce request, so that the client's retry appends it again.
func (p *procRun) produceLostAck(kf *Kfake, raw *kgo.Client, i int, nowV int64) error {
	rec := p.recordOf(i)
	h, err := kf.DropProduceAck(rec.Topic, 1)
	if err == nil {
		err = p.send(raw, []*kgo.Record{rec})
	}
	if err == nil && h.Hits() != 1 {
		err = fmt.Errorf("live: the produce ack of copy %d was not dropped", i)
	}
	if err != nil {
		return err
	}
	// The acked append is the retry; the lost-ack write is just before it.
	p.appended(i, rec.Offset-1, nowV)
	p.appended(i+1, rec.Offset, nowV)
	p.droppedAcks++
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

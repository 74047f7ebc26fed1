package live

// The broker faults of a cluster of several brokers (--brokers 3):
// leader-kill, broker-pause and broker-partition, each aimed at the
// leader of a partition the run uses, found in the cluster's metadata at
// the moment the fault fires.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/faults"
)

// Nodes is a cluster whose brokers can be faulted one at a time (Local
// and Container).
type Nodes interface {
	Restartable
	// NodeIDs are the brokers' node ids.
	NodeIDs() []int32
	// KillNode kills one broker with SIGKILL; RestartNode starts it again
	// on its data and waits until it has registered.
	KillNode(id int32) error
	RestartNode(ctx context.Context, id int32) error
	// PauseNode freezes one broker (SIGSTOP, docker pause): its
	// connections stay open and unanswered; ResumeNode thaws it.
	PauseNode(id int32) error
	ResumeNode(id int32) error
}

// Partitionable is a cluster one of whose brokers can be cut off from the
// network (Container: docker network disconnect; Local with Netns: its
// namespace's interface down) and reconnected.
type Partitionable interface {
	Nodes
	// CanPartition says why this cluster cannot cut a broker off (a
	// local cluster without network namespaces), or nil.
	CanPartition() error
	IsolateNode(id int32) error
	ReconnectNode(ctx context.Context, id int32) error
}

// brokerFault is one broker fault of a run: when it fires (virtual ms),
// for how long, and at which partition's leader.
type brokerFault struct {
	name   string
	atMs   int64
	forDur time.Duration // real time
	target string        // faults.TargetInput, TargetOutput or TargetCoordinator
}

// nodeFaultsFor reads the run's broker faults from its settings and
// checks that the cluster can do them.
func (p *procRun) nodeFaultsFor(names []string) error {
	for _, name := range names {
		nodes, ok := p.cluster.(Nodes)
		if !ok || len(nodes.NodeIDs()) < 3 {
			return fmt.Errorf("live: --kafka does not support %s on this cluster (it needs --kafka local or testcontainers with --brokers 3) (%w)", name, ErrUnsupported)
		}
		if name == faults.BrokerPartition {
			pc, ok := p.cluster.(Partitionable)
			if !ok {
				return fmt.Errorf("live: --kafka does not support %s on this cluster (it needs --kafka local or testcontainers with --brokers 3) (%w)", name, ErrUnsupported)
			}
			if err := pc.CanPartition(); err != nil {
				return fmt.Errorf("live: --kafka %s cannot do %s here: %v (%w)", ClusterName(p.cluster), name, err, ErrUnsupported)
			}
		}
		at := p.wl.StartMs + int64(p.settings.Value(name, "at_frac")*float64(p.wl.HealMs-p.wl.StartMs))
		d := time.Duration(p.settings.Value(name, "for") * float64(time.Millisecond))
		target := faults.BrokerTargets[int(p.settings.Value(name, "target"))]
		kafkaSink := p.dur.Store == sink.Kafka
		if target == faults.TargetOutput && !kafkaSink || target == faults.TargetCoordinator && !(kafkaSink && p.versioned) {
			return fmt.Errorf("live: %s with target %s needs a sink on Kafka (the transactional sink for the coordinator: --table-sink kafka) (%w)", name, target, ErrUnsupported)
		}
		p.nodeFaults = append(p.nodeFaults, brokerFault{name: name, atMs: at, forDur: d, target: target})
		p.nodes = nodes
	}
	return nil
}

// runNodeFaults fires the run's broker faults in time order; it runs
// beside the producer and the engine processes.
func (p *procRun) runNodeFaults() {
	defer p.brokerWG.Done()
	for _, f := range p.nodeFaults {
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(time.Until(p.real(f.atMs))):
		}
		if err := p.nodeFault(f); err != nil {
			p.brokerErr = fmt.Errorf("live: %s: %w", f.name, err)
			return
		}
		p.h.Coverage[f.name]++ // read only after brokerWG.Wait
	}
}

// nodeFault fires one broker fault and undoes it after its duration.
func (p *procRun) nodeFault(f brokerFault) error {
	ctx, cancel := context.WithTimeout(p.ctx, 3*time.Minute)
	defer cancel()
	id, err := p.leaderOf(ctx, f.target)
	if err != nil {
		return err
	}
	p.opt.Logf("%s: broker %d (leader of the %s) for %v", f.name, id, f.target, f.forDur)
	began := time.Now()
	wait := func() {
		select {
		case <-ctx.Done():
		case <-time.After(f.forDur):
		}
	}
	switch f.name {
	case faults.LeaderKill:
		if err := p.nodes.KillNode(id); err != nil {
			return err
		}
		wait()
		err = p.nodes.RestartNode(ctx, id)
	case faults.BrokerPause:
		if err := p.nodes.PauseNode(id); err != nil {
			return err
		}
		wait()
		err = p.nodes.ResumeNode(id)
	case faults.BrokerPartition:
		pn := p.nodes.(Partitionable)
		if err := pn.IsolateNode(id); err != nil {
			return err
		}
		wait()
		err = pn.ReconnectNode(ctx, id)
	default:
		err = errors.New("not a broker fault")
	}
	if err == nil {
		p.opt.Logf("%s: broker %d back after %v", f.name, id, time.Since(began).Round(time.Millisecond))
	}
	return err
}

// leaderOf is the node id of the leader of partition 0 of the run's first
// input topic, of its output topic, or of the transaction state log (one
// partition: the coordinator of every transactional id).
func (p *procRun) leaderOf(ctx context.Context, target string) (int32, error) {
	topic := p.inTopics[0]
	switch target {
	case faults.TargetOutput:
		topic = p.outTopic
	case faults.TargetCoordinator:
		topic = "__transaction_state"
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.cluster.Addrs()...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil {
				if pd, ok := td.Partitions[0]; ok && pd.Err == nil && pd.Leader >= 0 {
					return pd.Leader, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("no leader for %s partition 0 (%v)", topic, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

package live

import (
	"strconv"
	"strings"
)

// kraftSettings are the broker settings every provider that starts Kafka
// shares (the local broker's server.properties, the containers'
// KAFKA_* variables), for a cluster of n combined broker+controller
// nodes: no topic auto-creation, one partition for the internal topics,
// and, with three nodes, replication factor 3 with min.insync.replicas 2
// for the topics, the consumer offsets and the transaction state log (an
// acks=all write survives the loss of one broker).
func kraftSettings(n int) [][2]string {
	rf, isr := strconv.Itoa(n), strconv.Itoa(min(n, 2))
	return [][2]string{
		{"num.partitions", "1"},
		{"default.replication.factor", rf},
		{"min.insync.replicas", isr},
		{"auto.create.topics.enable", "false"},
		{"offsets.topic.replication.factor", rf},
		{"offsets.topic.num.partitions", "1"},
		{"transaction.state.log.replication.factor", rf},
		{"transaction.state.log.min.isr", isr},
		{"transaction.state.log.num.partitions", "1"},
		{"share.coordinator.state.topic.replication.factor", rf},
		{"share.coordinator.state.topic.min.isr", isr},
		{"group.initial.rebalance.delay.ms", "0"},
		{"transaction.abort.timed.out.transaction.cleanup.interval.ms", "1000"},
		// After a SIGKILL the controller refuses the restarted broker's
		// registration until the old incarnation's session times out
		// (default 9 s); 3 s keeps a restart quick.
		{"broker.heartbeat.interval.ms", "500"},
		{"broker.session.timeout.ms", "3000"},
		{"num.network.threads", "2"},
		{"num.io.threads", "2"},
	}
}

// kafkaEnvName is the KAFKA_* variable of a broker property in the
// apache/kafka image's convention: "." -> "_", "_" -> "__", "-" -> "___",
// upper case (node.id -> KAFKA_NODE_ID).
func kafkaEnvName(prop string) string {
	r := strings.NewReplacer("-", "___", "_", "__", ".", "_")
	return "KAFKA_" + strings.ToUpper(r.Replace(prop))
}

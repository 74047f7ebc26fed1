package live

import (
	"context"
	"fmt"
	"strings"
)

// StartOptions say which Kafka cluster Start gives a live run.
type StartOptions struct {
	// Kind is local, external, testcontainers or, for anything else,
	// kfake.
	Kind string
	// Bootstrap is the external cluster's addresses, comma-separated.
	Bootstrap string
	// Brokers is the number of brokers of local and testcontainers.
	Brokers int
	// Netns: local gives each broker a network namespace
	// (broker-partition).
	Netns bool
	// Logf takes the notes of the cluster's start.
	Logf func(string, ...any)
}

// Start starts (or, for external, connects to) the Kafka cluster of a
// live run.
func Start(ctx context.Context, o StartOptions) (Cluster, error) {
	switch o.Kind {
	case "local":
		c, err := StartLocal(ctx, LocalOptions{Brokers: o.Brokers, Netns: o.Netns, Logf: o.Logf})
		if err != nil {
			return nil, fmt.Errorf("--kafka local needs a local Kafka broker from the jars that %s fetches (make kafka-fetch): %w", FetchScript, err)
		}
		return c, nil
	case "external":
		return External(ctx, strings.Split(o.Bootstrap, ","))
	case "testcontainers":
		return StartContainer(ctx, ContainerOptions{Brokers: o.Brokers, Logf: o.Logf})
	}
	return StartKfake(ctx, nil)
}

package live

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// external is a cluster dedupsim did not start: only its bootstrap
// addresses are known. Close releases nothing; runs create their own
// uniquely named topics and leave them (a shared cluster's retention
// cleans them up).
type external struct{ addrs []string }

func (e *external) Addrs() []string { return e.addrs }
func (e *external) Close() error    { return nil }

// External connects to a running cluster at addrs and checks that it
// answers a metadata request, so a wrong address fails before a run
// starts rather than as a produce timeout in the middle of it.
func External(ctx context.Context, addrs []string) (Cluster, error) {
	var clean []string
	for _, a := range addrs {
		if a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("live: bootstrap address %q: want HOST:PORT", a)
		}
		clean = append(clean, a)
	}
	if len(clean) == 0 {
		return nil, errors.New("live: external cluster: no bootstrap address")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(clean...))
	if err != nil {
		return nil, fmt.Errorf("live: external cluster: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).BrokerMetadata(ctx); err != nil {
		return nil, fmt.Errorf("live: external cluster at %v does not answer: %w", clean, err)
	}
	return &external{addrs: clean}, nil
}

// dockerSocket is where a Docker engine listens unless DOCKER_HOST says
// otherwise.
const dockerSocket = "/var/run/docker.sock"

// dockerAvailable says whether a Docker engine looks reachable, and why
// not.
func dockerAvailable() error {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return nil
	}
	if _, err := os.Stat(dockerSocket); err != nil {
		return fmt.Errorf("no Docker engine: DOCKER_HOST is unset and %s does not exist", dockerSocket)
	}
	return nil
}

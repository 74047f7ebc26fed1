package live

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// ContainerImage is the image StartContainer runs: Apache Kafka 4.1.1, the
// version the local provider runs from Maven Central jars.
const ContainerImage = "apache/kafka:4.1.1"

// Container is a Kafka broker in a Docker container started with
// testcontainers-go (single KRaft node, listeners as the local provider's).
type Container struct {
	c     *testcontainers.DockerContainer
	addrs []string
}

var _ Cluster = (*Container)(nil)

// Addrs are the bootstrap addresses (the mapped port on the Docker host).
func (c *Container) Addrs() []string { return c.addrs }

// Close stops and removes the container.
func (c *Container) Close() error { return testcontainers.TerminateContainer(c.c) }

// The container's listeners: 9093 is published and advertised with the
// host's mapped port, which is only known once the container runs, so the
// entrypoint waits for a start script the post-start hook copies in (the
// pattern of testcontainers' own Kafka module, for the apache/kafka image).
const (
	containerPort   = "9093/tcp"
	containerScript = "/tmp/dedupsim_start.sh"
)

// StartContainer starts Kafka in a container. It needs a healthy Docker
// engine (DOCKER_HOST or /var/run/docker.sock); without one it fails at
// once and says so.
func StartContainer(ctx context.Context) (*Container, error) {
	if err := dockerAvailable(); err != nil {
		return nil, fmt.Errorf("live: --kafka testcontainers: %w (use --kafka local, which runs the broker from Maven Central jars, or kfake)", err)
	}
	prov, err := testcontainers.NewDockerProvider()
	if err != nil {
		return nil, fmt.Errorf("live: --kafka testcontainers: %w", err)
	}
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = prov.Health(hctx)
	cancel()
	prov.Close()
	if err != nil {
		return nil, fmt.Errorf("live: --kafka testcontainers: the Docker engine is not healthy: %w", err)
	}
	ctr, err := testcontainers.Run(ctx, ContainerImage,
		testcontainers.WithExposedPorts(containerPort),
		testcontainers.WithEnv(map[string]string{
			"KAFKA_NODE_ID":                                  "1",
			"KAFKA_PROCESS_ROLES":                            "broker,controller",
			"KAFKA_LISTENERS":                                "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092,CONTROLLER://0.0.0.0:9094",
			"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":           "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"KAFKA_INTER_BROKER_LISTENER_NAME":               "BROKER",
			"KAFKA_CONTROLLER_LISTENER_NAMES":                "CONTROLLER",
			"KAFKA_CONTROLLER_QUORUM_VOTERS":                 "1@localhost:9094",
			"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":         "1",
			"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
			"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR":            "1",
			"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":         "0",
		}),
		testcontainers.WithEntrypoint("sh"),
		testcontainers.WithCmd("-c", "while [ ! -f "+containerScript+" ]; do sleep 0.1; done; exec bash "+containerScript),
		testcontainers.WithLifecycleHooks(testcontainers.ContainerLifecycleHooks{
			PostStarts: []testcontainers.ContainerHook{func(ctx context.Context, c testcontainers.Container) error {
				if err := wait.ForMappedPort(containerPort).WaitUntilReady(ctx, c); err != nil {
					return err
				}
				ep, err := c.PortEndpoint(ctx, containerPort, "")
				if err != nil {
					return err
				}
				script := "#!/bin/bash\nexport KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://" + ep + ",BROKER://localhost:9092\nexec /etc/kafka/docker/run\n"
				if err := c.CopyToContainer(ctx, []byte(script), containerScript, 0o755); err != nil {
					return err
				}
				return wait.ForLog("Kafka Server started").WithStartupTimeout(2*time.Minute).WaitUntilReady(ctx, c)
			}},
		}),
	)
	if err != nil {
		if ctr != nil {
			testcontainers.TerminateContainer(ctr)
		}
		return nil, fmt.Errorf("live: --kafka testcontainers: start %s: %w", ContainerImage, err)
	}
	ep, err := ctr.PortEndpoint(ctx, containerPort, "")
	if err != nil {
		testcontainers.TerminateContainer(ctr)
		return nil, fmt.Errorf("live: --kafka testcontainers: %w", err)
	}
	return &Container{c: ctr, addrs: []string{strings.TrimPrefix(ep, "tcp://")}}, nil
}

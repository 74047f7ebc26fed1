package live

// This file holds the testcontainers provider: Kafka brokers in Docker
// containers started with testcontainers-go, one combined
// broker+controller KRaft node per container on a network of their own,
// with the local provider's settings (kraftSettings). The image is
// apache/kafka:4.1.1 unless DEDUPSIM_KAFKA_IMAGE names another with the
// same interface, such as the one scripts/kafka-image.sh builds from the
// Maven Central jars where no registry is reachable. Every container,
// network and volume carries ContainerLabel, so that whatever a killed
// run leaves behind can be removed by label (testcontainers' reaper
// container, Ryuk, may be unavailable for want of a registry:
// TESTCONTAINERS_RYUK_DISABLED=true).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultContainerImage is the image StartContainer runs unless
// DEDUPSIM_KAFKA_IMAGE is set: Apache Kafka 4.1.1, the version the local
// provider runs from Maven Central jars.
const DefaultContainerImage = "apache/kafka:4.1.1"

// ImageEnv names the environment variable that replaces
// DefaultContainerImage (make kafka-image builds dedupsim/kafka:4.1.1).
const ImageEnv = "DEDUPSIM_KAFKA_IMAGE"

// ContainerLabel marks every container, network and volume
// StartContainer creates; its value is the cluster's run id.
const ContainerLabel = "org.dedupsim.live"

// ContainerOptions configure StartContainer.
type ContainerOptions struct {
	// Image is the Kafka image (default $DEDUPSIM_KAFKA_IMAGE, else
	// DefaultContainerImage). It must read the apache/kafka image's
	// KAFKA_* variables and CLUSTER_ID and run /etc/kafka/docker/run.
	Image string
	// Brokers is the number of combined broker+controller nodes: 1
	// (default) or 3.
	Brokers int
	// ReadyTimeout bounds the wait for every broker to register after a
	// start or restart (default 2 min, 4 min for three brokers).
	ReadyTimeout time.Duration
	// Logf, when set, is told why the Docker host was chosen when
	// testcontainers guessed another one.
	Logf func(format string, args ...any)
}

// ContainerImage is the image StartContainer runs by default.
func ContainerImage() string {
	if img := os.Getenv(ImageEnv); img != "" {
		return img
	}
	return DefaultContainerImage
}

// Container is a Kafka cluster of one or three brokers in Docker
// containers.
type Container struct {
	opts      ContainerOptions
	run       string // the ContainerLabel value
	clusterID string
	host      string // the Docker host as seen from here
	remote    bool   // host is another machine the user named (no loopback check)
	net       *testcontainers.DockerNetwork
	nodes     []*containerNode
	cli       *testcontainers.DockerClient // pause, kill, network (dis)connect

	mu sync.Mutex
}

// containerNode is one broker: its container, its volume (the log dirs,
// kept across a stop and start) and the host port its PLAINTEXT listener
// is published and advertised on.
type containerNode struct {
	id     int
	alias  string
	port   int
	volume string
	c      *testcontainers.DockerContainer
}

var _ Partitionable = (*Container)(nil)

// The container's listeners, those of testcontainers' Kafka module:
// PLAINTEXT on 9093 is published and advertised with the host's address;
// BROKER on 9092 (between brokers) and CONTROLLER on 9094 are advertised
// with the node's network alias. The advertised host port must be known
// before Kafka starts, so the entrypoint waits for a start script that
// the post-start hook copies in once the port is mapped (the module's
// pattern). The host port is picked here rather than by Docker so that a
// stopped and restarted container keeps it, and with it its advertised
// address.
const (
	containerPort   = "9093/tcp"
	containerScript = "/tmp/dedupsim_start.sh"
	containerData   = "/var/lib/kafka/data"
)

// StartContainer starts a Kafka cluster in containers and waits until
// every broker has registered. It needs a healthy Docker engine
// (DOCKER_HOST or /var/run/docker.sock); without one it fails at once and
// says so. The caller must Close it, which removes every container,
// volume and network it made.
func StartContainer(ctx context.Context, opts ContainerOptions) (_ *Container, err error) {
	if opts.Image == "" {
		opts.Image = ContainerImage()
	}
	if opts.Brokers == 0 {
		opts.Brokers = 1
	}
	if opts.Brokers != 1 && opts.Brokers != 3 {
		return nil, fmt.Errorf("live: --brokers %d: want 1 or 3", opts.Brokers)
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = time.Duration(1+opts.Brokers) * time.Minute
	}
	fail := func(err error) error {
		return fmt.Errorf("live: --kafka testcontainers (image %s): %w", opts.Image, err)
	}
	if err := dockerAvailable(); err != nil {
		return nil, fmt.Errorf("live: --kafka testcontainers: %w (use --kafka local, which runs the broker from Maven Central jars, or kfake)", err)
	}
	prov, err := testcontainers.NewDockerProvider()
	if err != nil {
		return nil, fail(err)
	}
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = prov.Health(hctx)
	var guessed, daemon string
	if err == nil {
		// testcontainers' guess is only reported (dockerhost.go); the
		// client's daemon URL decides.
		guessed, _ = prov.DaemonHost(hctx)
		daemon = prov.Client().DaemonHost()
	}
	cancel()
	prov.Close()
	if err != nil {
		return nil, fmt.Errorf("live: --kafka testcontainers: the Docker engine is not healthy: %w", err)
	}
	override, overrideSet := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE")
	dh, err := publishedHost(daemon, override, overrideSet, guessed)
	if err != nil {
		return nil, fmt.Errorf("live: --kafka testcontainers: %w", err)
	}
	if dh.Note != "" && opts.Logf != nil {
		opts.Logf("live: %s", dh.Note)
	}
	host := dh.Host
	id, err := newClusterID()
	if err != nil {
		return nil, err
	}
	var rb [6]byte
	rand.Read(rb[:])
	c := &Container{opts: opts, run: hex.EncodeToString(rb[:]), clusterID: id, host: host, remote: dh.Remote}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if c.cli, err = testcontainers.NewDockerClientWithOpts(ctx); err != nil {
		return nil, fail(err)
	}
	c.net, err = tcnetwork.New(ctx, tcnetwork.WithLabels(c.labels()))
	if err != nil {
		return nil, fail(fmt.Errorf("create network: %w", err))
	}
	ports, err := freePorts(opts.Brokers)
	if err != nil {
		return nil, err
	}
	var voters []string
	for i := range opts.Brokers {
		n := &containerNode{id: i + 1, alias: fmt.Sprintf("kafka-%d", i+1), port: ports[i],
			volume: fmt.Sprintf("dedupsim-kafka-%s-%d", c.run, i+1)}
		c.nodes = append(c.nodes, n)
		voters = append(voters, fmt.Sprintf("%d@%s:9094", n.id, n.alias))
	}
	for _, n := range c.nodes {
		if n.c, err = c.startNode(ctx, n, strings.Join(voters, ",")); err != nil {
			return nil, fail(fmt.Errorf("broker %d: %w", n.id, err))
		}
	}
	if err := c.waitReady(ctx); err != nil {
		return nil, fail(err)
	}
	return c, nil
}

func (c *Container) labels() map[string]string { return map[string]string{ContainerLabel: c.run} }

// startNode creates and starts node n's container.
func (c *Container) startNode(ctx context.Context, n *containerNode, voters string) (*testcontainers.DockerContainer, error) {
	env := map[string]string{
		"CLUSTER_ID":                           c.clusterID,
		"KAFKA_NODE_ID":                        strconv.Itoa(n.id),
		"KAFKA_PROCESS_ROLES":                  "broker,controller",
		"KAFKA_LISTENERS":                      "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092,CONTROLLER://0.0.0.0:9094",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"KAFKA_INTER_BROKER_LISTENER_NAME":     "BROKER",
		"KAFKA_CONTROLLER_LISTENER_NAMES":      "CONTROLLER",
		"KAFKA_CONTROLLER_QUORUM_VOTERS":       voters,
		"KAFKA_LOG_DIRS":                       containerData,
		"KAFKA_HEAP_OPTS":                      "-Xms128m -Xmx768m",
	}
	for _, kv := range kraftSettings(len(c.nodes)) {
		env[kafkaEnvName(kv[0])] = kv[1]
	}
	port := network.MustParsePort(containerPort)
	binding := network.PortBinding{HostPort: strconv.Itoa(n.port)}
	if ip, err := netip.ParseAddr(c.host); err == nil && ip.IsLoopback() {
		binding.HostIP = ip
	}
	return testcontainers.Run(ctx, c.opts.Image,
		testcontainers.WithName(fmt.Sprintf("dedupsim-kafka-%s-%d", c.run, n.id)),
		testcontainers.WithLabels(c.labels()),
		testcontainers.WithExposedPorts(containerPort),
		testcontainers.WithEnv(env),
		tcnetwork.WithNetwork([]string{n.alias}, c.net),
		testcontainers.WithMounts(testcontainers.ContainerMount{
			Source: testcontainers.DockerVolumeMountSource{Name: n.volume, VolumeOptions: &mount.VolumeOptions{Labels: c.labels()}},
			Target: containerData,
		}),
		// apache/kafka runs as appuser, who cannot write to a new volume.
		testcontainers.WithConfigModifier(func(cfg *container.Config) { cfg.User = "0" }),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{port: {binding}}
		}),
		testcontainers.WithEntrypoint("sh"),
		testcontainers.WithCmd("-c", "while [ ! -f "+containerScript+" ]; do sleep 0.1; done; exec bash "+containerScript),
		testcontainers.WithLifecycleHooks(testcontainers.ContainerLifecycleHooks{
			PostStarts: []testcontainers.ContainerHook{func(ctx context.Context, ctr testcontainers.Container) error {
				return c.copyStartScript(ctx, ctr, n)
			}},
		}),
	)
}

// copyStartScript writes the start script once the port is mapped: the
// advertised listeners, then the image's own entry script. A restarted
// container finds it already there (the same host port, the same
// script).
func (c *Container) copyStartScript(ctx context.Context, ctr testcontainers.Container, n *containerNode) error {
	if err := wait.ForMappedPort(containerPort).WaitUntilReady(ctx, ctr); err != nil {
		return err
	}
	script := fmt.Sprintf("#!/bin/bash\nexport KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://%s:%d,BROKER://%s:9092\nexec /etc/kafka/docker/run\n",
		c.host, n.port, n.alias)
	return ctr.CopyToContainer(ctx, []byte(script), containerScript, 0o755)
}

// Addrs are the bootstrap addresses (the published ports on the Docker
// host).
func (c *Container) Addrs() []string {
	var addrs []string
	for _, n := range c.nodes {
		addrs = append(addrs, c.host+":"+strconv.Itoa(n.port))
	}
	return addrs
}

// CreateTopic creates a topic with the default replication factor (one per
// broker) and waits until every partition has a leader.
func (c *Container) CreateTopic(ctx context.Context, name string, partitions int32) error {
	return createTopicReady(ctx, c.Addrs(), name, partitions)
}

// Brokers is the number of brokers.
func (c *Container) Brokers() int { return len(c.nodes) }

// waitReady polls ListBrokers until every broker has registered.
func (c *Container) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	check := func(bs kadm.BrokerDetails) error {
		if c.remote {
			return nil // the user named a remote engine
		}
		return checkBrokersLocal(c.Addrs(), bs, nil)
	}
	return waitBrokers(ctx, c.Addrs(), len(c.nodes), check, func() string { return c.LogTail(30) })
}

// waitBrokers polls ListBrokers at addrs until n brokers are listed or ctx
// ends, then holds them to check (the loopback rule); logs gives the
// brokers' last log lines for the error.
func waitBrokers(ctx context.Context, addrs []string, n int, check func(kadm.BrokerDetails) error, logs func() string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DialTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var last error
	for {
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		bs, err := adm.ListBrokers(rctx)
		rcancel()
		if err == nil && len(bs) >= n {
			return check(bs)
		}
		if err == nil {
			err = fmt.Errorf("%d of %d brokers registered", len(bs), n)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafka not ready (%v); last log lines:\n%s", last, logs())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// LogTail returns the last n lines of every broker's log.
func (c *Container) LogTail(n int) string {
	var b strings.Builder
	for _, node := range c.nodes {
		if node.c == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		rc, err := node.c.Logs(ctx)
		var data []byte
		if err == nil {
			data, err = io.ReadAll(rc)
			rc.Close()
		}
		cancel()
		if err != nil {
			fmt.Fprintf(&b, "broker %d: %v\n", node.id, err)
			continue
		}
		fmt.Fprintf(&b, "--- broker %d (%s)\n%s\n", node.id, node.c.GetContainerID()[:12], lastLines(string(data), n))
	}
	return b.String()
}

// Kill stops every broker's container at once (docker stop with no grace
// period: SIGKILL after SIGTERM, no controlled shutdown: the broker-crash
// fault). The volumes stay; Restart starts the same containers on them.
func (c *Container) Kill() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, n := range c.nodes {
		errs = append(errs, c.stopNode(n))
	}
	return errors.Join(errs...)
}

func (c *Container) stopNode(n *containerNode) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zero := time.Duration(0)
	if err := n.c.Stop(ctx, &zero); err != nil {
		return fmt.Errorf("live: stop broker %d: %w", n.id, err)
	}
	return nil
}

// Restart starts the stopped containers again (same volumes, same ports,
// same advertised addresses) and waits until every broker has registered.
func (c *Container) Restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if err := n.c.Start(ctx); err != nil {
			return fmt.Errorf("live: start broker %d: %w", n.id, err)
		}
	}
	return c.waitReady(ctx)
}

// Close removes every container with its volume, then the network. It is
// safe to call more than once.
func (c *Container) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, n := range c.nodes {
		if n.c != nil {
			errs = append(errs, testcontainers.TerminateContainer(n.c, testcontainers.StopTimeout(0), testcontainers.RemoveVolumes(n.volume)))
			n.c = nil
		}
	}
	if c.net != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs = append(errs, c.net.Remove(ctx))
		cancel()
		c.net = nil
	}
	if c.cli != nil {
		errs = append(errs, c.cli.Close())
		c.cli = nil
	}
	return errors.Join(errs...)
}

// NodeIDs are the brokers' node ids (1..n).
func (c *Container) NodeIDs() []int32 {
	var ids []int32
	for _, n := range c.nodes {
		ids = append(ids, int32(n.id))
	}
	return ids
}

func (c *Container) node(id int32) (*containerNode, error) {
	for _, n := range c.nodes {
		if int32(n.id) == id && n.c != nil {
			return n, nil
		}
	}
	return nil, fmt.Errorf("live: no broker %d", id)
}

// nodeOp runs op on broker id's container with a 30 s deadline.
func (c *Container) nodeOp(id int32, what string, op func(ctx context.Context, n *containerNode) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.node(id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := op(ctx, n); err != nil {
		return fmt.Errorf("live: %s broker %d: %w", what, id, err)
	}
	return nil
}

// KillNode kills broker id's container with SIGKILL (docker kill); its
// volume stays.
func (c *Container) KillNode(id int32) error {
	return c.nodeOp(id, "kill", func(ctx context.Context, n *containerNode) error {
		_, err := c.cli.ContainerKill(ctx, n.c.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"})
		return err
	})
}

// RestartNode starts broker id's container again (docker start, same
// volume and port) and waits until every broker has registered.
func (c *Container) RestartNode(ctx context.Context, id int32) error {
	err := c.nodeOp(id, "start", func(ctx context.Context, n *containerNode) error { return n.c.Start(ctx) })
	if err != nil {
		return err
	}
	return c.waitReady(ctx)
}

// PauseNode freezes broker id's container (docker pause: the cgroup
// freezer, every process stopped, connections open).
func (c *Container) PauseNode(id int32) error {
	return c.nodeOp(id, "pause", func(ctx context.Context, n *containerNode) error {
		_, err := c.cli.ContainerPause(ctx, n.c.GetContainerID(), client.ContainerPauseOptions{})
		return err
	})
}

// ResumeNode thaws a paused broker (docker unpause).
func (c *Container) ResumeNode(id int32) error {
	return c.nodeOp(id, "unpause", func(ctx context.Context, n *containerNode) error {
		_, err := c.cli.ContainerUnpause(ctx, n.c.GetContainerID(), client.ContainerUnpauseOptions{})
		return err
	})
}

// CanPartition is nil: a container can always be disconnected.
func (c *Container) CanPartition() error { return nil }

// IsolateNode cuts broker id off from the cluster's network (docker
// network disconnect): from the other brokers, and from clients, whose
// published port goes with the network.
func (c *Container) IsolateNode(id int32) error {
	return c.nodeOp(id, "disconnect", func(ctx context.Context, n *containerNode) error {
		_, err := c.cli.NetworkDisconnect(ctx, c.net.ID, client.NetworkDisconnectOptions{Container: n.c.GetContainerID(), Force: true})
		return err
	})
}

// ReconnectNode connects broker id to the network again, under its alias,
// and waits until every broker has registered.
func (c *Container) ReconnectNode(ctx context.Context, id int32) error {
	err := c.nodeOp(id, "connect", func(ctx context.Context, n *containerNode) error {
		_, err := c.cli.NetworkConnect(ctx, c.net.ID, client.NetworkConnectOptions{Container: n.c.GetContainerID(),
			EndpointConfig: &network.EndpointSettings{Aliases: []string{n.alias}}})
		return err
	})
	if err != nil {
		return err
	}
	return c.waitReady(ctx)
}

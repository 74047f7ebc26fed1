package live

// This file holds the local provider: a real Apache Kafka 4.x broker run as
// a child JVM process from the jars that scripts/kafka-fetch.sh (make
// kafka-fetch) copies from Maven Central into .cache/kafka/lib. One
// combined broker+controller KRaft node listens on free 127.0.0.1 ports;
// its storage is formatted with --standalone (dynamic quorum) and a
// cluster id generated here. With Brokers 3, three such nodes form a
// static controller quorum (controller.quorum.voters), each in its own
// folder and process. Kill and Restart give the broker-crash fault
// (SIGKILL, then a new process on the same data dir and ports); KillNode,
// PauseNode (SIGSTOP) and their inverses fault one node. With Netns each
// broker runs in a network namespace of its own (live/netns), on an address
// of its own instead of 127.0.0.1, and IsolateNode cuts one off.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dedupsim/dedupsim/live/netns"
)

// FetchScript is the script that fetches the broker's jars.
const FetchScript = "scripts/kafka-fetch.sh"

// DefaultLocalDir is the cache directory, relative to the module root, that
// holds the jars (lib/) and, by default, the broker's data (data/).
const DefaultLocalDir = ".cache/kafka"

// DirEnv names the environment variable that sets LocalOptions.Dir's
// default, for a dedupsim binary run outside the repository.
const DirEnv = "DEDUPSIM_KAFKA_DIR"

// LocalOptions configure StartLocal.
type LocalOptions struct {
	// Dir holds the jars in Dir/lib. The default is $DEDUPSIM_KAFKA_DIR,
	// else .cache/kafka under the module root (the nearest parent of the
	// working directory holding go.mod), or under the working directory
	// when there is none.
	Dir string
	// DataDir holds the broker's state: server.properties, cluster-id,
	// ports.json, broker.log and the log dirs (kraft/); with three
	// brokers, ports.json and a node-N folder per broker. The default is
	// Dir/data (Dir/data-3 for three brokers), kept between runs; tests
	// pass a temporary directory. A
	// data dir is bound to its cluster id and ports: a later StartLocal on
	// it reuses both.
	DataDir string
	// Java is the java binary (default: "java" on PATH). Kafka 4.x needs
	// Java 17 or newer.
	Java string
	// JVMOpts replace the default JVM options (small heap, SerialGC, C1
	// only: quick to start on a small machine).
	JVMOpts []string
	// Properties are added to (or override) the generated
	// server.properties.
	Properties map[string]string
	// LogLevel is the broker's log4j2 root level in broker.log (default
	// INFO).
	LogLevel string
	// ReadyTimeout bounds the wait for the brokers to answer ListBrokers
	// after a start or restart (default 60 s per broker).
	ReadyTimeout time.Duration
	// StopTimeout is how long Close waits after SIGTERM before SIGKILL
	// (default 20 s).
	StopTimeout time.Duration
	// Brokers is the number of combined broker+controller nodes: 1
	// (default) or 3. Three nodes keep their state in DataDir/node-N.
	Brokers int
	// Netns runs each broker in a network namespace of its own, so that
	// IsolateNode can cut it off (broker-partition). It needs root and
	// iproute2's ip; without them, or when the namespaces cannot be made,
	// the cluster starts on 127.0.0.1 as without Netns and CanPartition
	// says why.
	Netns bool
	// Logf, when set, receives a line for what the start did besides
	// starting brokers (leftover namespaces removed, why Netns fell back).
	Logf func(format string, args ...any)
}

// DefaultJVMOpts are the JVM options used when LocalOptions.JVMOpts is nil.
var DefaultJVMOpts = []string{
	"-Xms128m", "-Xmx768m",
	"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
	"-Djava.awt.headless=true",
}

// Local is a cluster started by StartLocal.
type Local struct {
	opts      LocalOptions
	lib       string
	dataDir   string
	clusterID string
	nodes     []*localNode
	net       *netns.Net // with Netns: the brokers' namespaces
	netErr    error      // with Netns: why there are none

	mu     sync.Mutex
	closed bool
}

// localNode is one broker process and its folder.
type localNode struct {
	id         int
	host       string // the listeners' address: 127.0.0.1, or its namespace's
	dir        string // server.properties, log4j2.properties, broker.log, kraft/
	props      string
	logPath    string
	brokerPort int
	ctrlPort   int
	proc       *process
}

var _ Partitionable = (*Local)(nil)

// process is one run of the broker JVM.
type process struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed once the process has been waited for
	err  error         // its exit status, set before done closes
}

// StartLocal formats the data dir (when new), starts the broker and waits
// until it answers. The caller must Close it; on an error StartLocal has
// already stopped the brokers and removed the namespaces.
func StartLocal(ctx context.Context, opts LocalOptions) (_ *Local, err error) {
	if opts.Dir == "" {
		opts.Dir = os.Getenv(DirEnv)
	}
	if opts.Dir == "" {
		opts.Dir = filepath.Join(moduleRoot(), DefaultLocalDir)
	}
	if opts.Brokers == 0 {
		opts.Brokers = 1
	}
	if opts.DataDir == "" {
		// A data dir is bound to its number of brokers.
		opts.DataDir = filepath.Join(opts.Dir, "data")
		if opts.Brokers > 1 {
			opts.DataDir += "-" + strconv.Itoa(opts.Brokers)
		}
	}
	if opts.Java == "" {
		opts.Java = "java"
	}
	if opts.JVMOpts == nil {
		opts.JVMOpts = DefaultJVMOpts
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "INFO"
	}
	if opts.ReadyTimeout <= 0 {
		// three JVMs starting at once on a small, busy machine take long
		opts.ReadyTimeout = time.Duration(opts.Brokers) * time.Minute
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 20 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Brokers != 1 && opts.Brokers != 3 {
		return nil, fmt.Errorf("live: --brokers %d: want 1 or 3", opts.Brokers)
	}
	lib, err := filepath.Abs(filepath.Join(opts.Dir, "lib"))
	if err != nil {
		return nil, err
	}
	if jars, _ := filepath.Glob(filepath.Join(lib, "kafka_2.13-*.jar")); len(jars) == 0 {
		return nil, fmt.Errorf("live: no Kafka jars in %s: run %s (make kafka-fetch) first, or point %s at the folder holding lib/", lib, FetchScript, DirEnv)
	}
	if _, err := exec.LookPath(opts.Java); err != nil {
		return nil, fmt.Errorf("live: the local Kafka broker needs Java 17+: %w", err)
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	l := &Local{opts: opts, lib: lib, dataDir: dataDir}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	if opts.Netns {
		began := time.Now()
		l.net, l.netErr = netns.Setup(ctx, opts.Brokers, opts.Logf)
		if l.netErr != nil {
			opts.Logf("the brokers run on 127.0.0.1, broker-partition is not possible: %v", l.netErr)
		} else {
			opts.Logf("brokers in the network namespaces %s..%s on %s (made in %v)",
				l.net.Broker(1), l.net.Broker(opts.Brokers), l.net.Subnet, time.Since(began).Round(time.Millisecond))
		}
	}
	if err := l.prepare(); err != nil {
		return nil, err
	}
	for _, n := range l.nodes {
		if err := l.format(ctx, n); err != nil {
			return nil, err
		}
	}
	if err := l.start(ctx, l.nodes...); err != nil {
		return nil, err
	}
	return l, nil
}

// moduleRoot is the nearest parent of the working directory holding go.mod,
// or "." when there is none.
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
}

// Addrs returns the brokers' bootstrap addresses.
func (l *Local) Addrs() []string {
	var addrs []string
	for _, n := range l.nodes {
		addrs = append(addrs, net.JoinHostPort(n.host, strconv.Itoa(n.brokerPort)))
	}
	return addrs
}

// ClusterID is the id the data dir was formatted with.
func (l *Local) ClusterID() string { return l.clusterID }

// DataDir is the broker's data directory.
func (l *Local) DataDir() string { return l.dataDir }

// LogPath is the first broker's log file (stdout and stderr of every run).
func (l *Local) LogPath() string { return l.nodes[0].logPath }

// Pid is the first broker's process id, or 0 when it is not running.
func (l *Local) Pid() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.nodes[0].proc; p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// LogTail returns the last n lines of every broker's log.
func (l *Local) LogTail(n int) string {
	var b strings.Builder
	for _, node := range l.nodes {
		if len(l.nodes) > 1 {
			fmt.Fprintf(&b, "--- broker %d (%s)\n", node.id, node.logPath)
		}
		data, err := os.ReadFile(node.logPath)
		if err != nil {
			b.WriteString(err.Error() + "\n")
			continue
		}
		lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		b.Write(bytes.Join(lines, []byte("\n")))
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// CreateTopic creates a topic with the default replication factor and
// waits until every partition has a leader.
func (l *Local) CreateTopic(ctx context.Context, name string, partitions int32) error {
	return createTopicReady(ctx, l.Addrs(), name, partitions)
}

// Kill kills every broker with SIGKILL (no controlled shutdown, the
// broker-crash fault) and waits for them to exit. The data dirs stay;
// Restart starts new brokers on them.
func (l *Local) Kill() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	running := false
	for _, n := range l.nodes {
		running = running || n.proc != nil
		l.killLocked(n, syscall.SIGKILL)
	}
	if !running {
		return errors.New("live: local broker not running")
	}
	return nil
}

// killLocked signals node n's process group and waits for the process.
func (l *Local) killLocked(n *localNode, sig syscall.Signal) {
	p := n.proc
	if p == nil {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, sig)
	if sig == syscall.SIGSTOP {
		// a stopped process would not die of what follows
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT)
	}
	<-p.done
	n.proc = nil
}

// Restart starts new broker processes on the same data dirs and ports
// (after Kill) and waits until every broker answers.
func (l *Local) Restart(ctx context.Context) error {
	return l.start(ctx, l.nodes...)
}

// NodeIDs are the brokers' node ids (1..n).
func (l *Local) NodeIDs() []int32 {
	var ids []int32
	for _, n := range l.nodes {
		ids = append(ids, int32(n.id))
	}
	return ids
}

func (l *Local) node(id int32) (*localNode, error) {
	for _, n := range l.nodes {
		if int32(n.id) == id {
			return n, nil
		}
	}
	return nil, fmt.Errorf("live: no broker %d", id)
}

// KillNode kills broker id with SIGKILL and waits for it to exit.
func (l *Local) KillNode(id int32) error {
	return l.signalNode(id, syscall.SIGKILL)
}

// RestartNode starts broker id again on its data dir and ports and waits
// until every broker answers.
func (l *Local) RestartNode(ctx context.Context, id int32) error {
	n, err := l.node(id)
	if err != nil {
		return err
	}
	return l.start(ctx, n)
}

// PauseNode freezes broker id (SIGSTOP to its process group): its sockets
// stay open, nothing answers.
func (l *Local) PauseNode(id int32) error { return l.signalNode(id, syscall.SIGSTOP) }

// ResumeNode thaws broker id (SIGCONT).
func (l *Local) ResumeNode(id int32) error { return l.signalNode(id, syscall.SIGCONT) }

func (l *Local) signalNode(id int32, sig syscall.Signal) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.node(id)
	if err != nil {
		return err
	}
	if n.proc == nil {
		return fmt.Errorf("live: broker %d not running", id)
	}
	if sig == syscall.SIGKILL {
		l.killLocked(n, sig)
		return nil
	}
	return syscall.Kill(-n.proc.cmd.Process.Pid, sig)
}

// CanPartition says why IsolateNode cannot work on this cluster (it was
// started without Netns, or its namespaces could not be made), or nil.
func (l *Local) CanPartition() error {
	switch {
	case l.net != nil:
		return nil
	case l.netErr != nil:
		return l.netErr
	}
	return errors.New("the cluster was started without a network namespace per broker (LocalOptions.Netns)")
}

// IsolateNode cuts broker id off from the other brokers and from the
// clients: its interface goes down inside its namespace.
func (l *Local) IsolateNode(id int32) error {
	n, err := l.netNode(id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.net.SetLink(ctx, n.id, false); err != nil {
		return fmt.Errorf("live: cut off broker %d: %w", id, err)
	}
	return nil
}

// ReconnectNode brings broker id's interface up again and waits until
// every broker answers.
func (l *Local) ReconnectNode(ctx context.Context, id int32) error {
	n, err := l.netNode(id)
	if err != nil {
		return err
	}
	if err := l.net.SetLink(ctx, n.id, true); err != nil {
		return fmt.Errorf("live: reconnect broker %d: %w", id, err)
	}
	l.mu.Lock()
	var procs []*process
	for _, n := range l.nodes {
		if n.proc != nil {
			procs = append(procs, n.proc)
		}
	}
	l.mu.Unlock()
	return l.waitReady(ctx, procs)
}

func (l *Local) netNode(id int32) (*localNode, error) {
	if err := l.CanPartition(); err != nil {
		return nil, fmt.Errorf("live: broker-partition: %w", err)
	}
	return l.node(id)
}

// Close stops the brokers: SIGTERM (a controlled shutdown), then SIGKILL
// after StopTimeout, and removes their namespaces. It is safe to call
// more than once.
func (l *Local) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, n := range l.nodes {
		if p := n.proc; p != nil {
			pgid := p.cmd.Process.Pid
			syscall.Kill(-pgid, syscall.SIGCONT) // a paused broker
			syscall.Kill(-pgid, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(l.opts.StopTimeout)
	for _, n := range l.nodes {
		p := n.proc
		if p == nil {
			continue
		}
		select {
		case <-p.done:
		case <-time.After(time.Until(deadline)):
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		n.proc = nil
		os.Remove(filepath.Join(n.dir, "broker.pid"))
	}
	if l.net != nil {
		return l.net.Close()
	}
	return nil
}

package live

// This file holds the local provider: a real Apache Kafka 4.x broker run as
// a child JVM process from the jars that scripts/kafka-fetch.sh (make
// kafka-fetch) copies from Maven Central into .cache/kafka/lib. One
// combined broker+controller KRaft node listens on free 127.0.0.1 ports;
// its storage is formatted with --standalone (dynamic quorum) and a
// cluster id generated here. Kill and Restart give the broker-crash fault
// (SIGKILL, then a new process on the same data dir and ports).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
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
	// ports.json, broker.log and the log dirs (kraft/). The default is
	// Dir/data, kept between runs; tests pass a temporary directory. A
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
	// ReadyTimeout bounds the wait for the broker to answer ListBrokers
	// after a start or restart (default 60 s).
	ReadyTimeout time.Duration
	// StopTimeout is how long Close waits after SIGTERM before SIGKILL
	// (default 20 s).
	StopTimeout time.Duration
}

// DefaultJVMOpts are the JVM options used when LocalOptions.JVMOpts is nil.
var DefaultJVMOpts = []string{
	"-Xms128m", "-Xmx768m",
	"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
	"-Djava.awt.headless=true",
}

// Local is a broker started by StartLocal.
type Local struct {
	opts       LocalOptions
	lib        string
	dataDir    string
	props      string
	logPath    string
	clusterID  string
	brokerPort int
	ctrlPort   int

	mu     sync.Mutex
	proc   *process
	closed bool
}

var _ Cluster = (*Local)(nil)

// process is one run of the broker JVM.
type process struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed once the process has been waited for
	err  error         // its exit status, set before done closes
}

// StartLocal formats the data dir (when new), starts the broker and waits
// until it answers. The caller must Close it.
func StartLocal(ctx context.Context, opts LocalOptions) (*Local, error) {
	if opts.Dir == "" {
		opts.Dir = os.Getenv(DirEnv)
	}
	if opts.Dir == "" {
		opts.Dir = filepath.Join(moduleRoot(), DefaultLocalDir)
	}
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(opts.Dir, "data")
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
		opts.ReadyTimeout = 60 * time.Second
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 20 * time.Second
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
	l := &Local{
		opts:    opts,
		lib:     lib,
		dataDir: dataDir,
		props:   filepath.Join(dataDir, "server.properties"),
		logPath: filepath.Join(dataDir, "broker.log"),
	}
	if err := l.prepare(); err != nil {
		return nil, err
	}
	if err := l.format(ctx); err != nil {
		return nil, err
	}
	if err := l.start(ctx); err != nil {
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

// Addrs returns the broker's bootstrap address.
func (l *Local) Addrs() []string { return []string{"127.0.0.1:" + strconv.Itoa(l.brokerPort)} }

// ClusterID is the id the data dir was formatted with.
func (l *Local) ClusterID() string { return l.clusterID }

// DataDir is the broker's data directory.
func (l *Local) DataDir() string { return l.dataDir }

// LogPath is the broker's log file (stdout and stderr of every run).
func (l *Local) LogPath() string { return l.logPath }

// Pid is the broker's process id, or 0 when it is not running.
func (l *Local) Pid() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.proc == nil {
		return 0
	}
	return l.proc.cmd.Process.Pid
}

// LogTail returns the last n lines of the broker's log.
func (l *Local) LogTail(n int) string {
	data, err := os.ReadFile(l.logPath)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// CreateTopic creates a topic with the default replication factor and
// waits until every partition has a leader.
func (l *Local) CreateTopic(ctx context.Context, name string, partitions int32) error {
	return createTopicReady(ctx, l.Addrs(), name, partitions)
}

// Kill kills the broker with SIGKILL (no controlled shutdown, the
// broker-crash fault) and waits for it to exit. The data dir stays; Restart
// starts a new broker on it.
func (l *Local) Kill() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.proc == nil {
		return errors.New("live: local broker not running")
	}
	l.killLocked(syscall.SIGKILL)
	return nil
}

// killLocked signals the broker's process group and waits for the process.
func (l *Local) killLocked(sig syscall.Signal) {
	p := l.proc
	if p == nil {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, sig)
	<-p.done
	l.proc = nil
}

// Restart starts a new broker process on the same data dir and ports (after
// Kill) and waits until it answers.
func (l *Local) Restart(ctx context.Context) error {
	return l.start(ctx)
}

// Close stops the broker: SIGTERM (a controlled shutdown), then SIGKILL
// after StopTimeout. It is safe to call more than once.
func (l *Local) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	p := l.proc
	if p == nil {
		return nil
	}
	pgid := p.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(l.opts.StopTimeout):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	l.proc = nil
	os.Remove(filepath.Join(l.dataDir, "broker.pid"))
	return nil
}

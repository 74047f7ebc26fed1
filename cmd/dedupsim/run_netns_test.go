package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/live"
	"github.com/dedupsim/dedupsim/live/netns"
)

// The tests named *PartitionLocal* run `dedupsim run --kafka local
// --brokers 3` with broker-partition (DEDUPSIM_KAFKA=local, make
// test-kafka): each broker in a network namespace of its own.

// localKafkaDir is a fresh DEDUPSIM_KAFKA_DIR whose lib/ is the cached
// jars, so that the run's data dir (data-3) is the test's own.
func localKafkaDir(t *testing.T) string {
	t.Helper()
	if os.Getenv("DEDUPSIM_KAFKA") != "local" {
		t.Skip("real-Kafka test: set DEDUPSIM_KAFKA=local to run it (make test-kafka)")
	}
	lib, err := filepath.Abs(filepath.Join("..", "..", live.DefaultLocalDir, "lib"))
	if err != nil {
		t.Fatal(err)
	}
	if d := os.Getenv(live.DirEnv); d != "" {
		lib = filepath.Join(d, "lib")
	}
	dir := t.TempDir()
	if err := os.Symlink(lib, filepath.Join(dir, "lib")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// syncBuffer is a bytes.Buffer a child writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var netnsRunRe = regexp.MustCompile(`network namespaces dsim-([0-9a-f]{6})-b1\.\.`)

// TestRunPartitionLocalInterrupt: SIGINT in the middle of a
// broker-partition run stops it (exit 1), stops the three brokers and
// removes their namespaces and lock file.
func TestRunPartitionLocalInterrupt(t *testing.T) {
	kdir := localKafkaDir(t)
	if err := netns.Support(); err != nil {
		t.Skipf("!!! SKIPPING: %v", err)
	}
	bin := binary(t)
	cmd := exec.Command(bin, "run", "--kafka", "local", "--brokers", "3", "-v", "--out", t.TempDir(), "../../scenarios/live/broker-partition.yaml")
	cmd.Env = append(os.Environ(), live.DirEnv+"="+kdir)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	deadline := time.After(5 * time.Minute)
	for !strings.Contains(stderr.String(), "engine 0 started") {
		select {
		case err := <-exited:
			t.Fatalf("run ended before its engine started (%v):\n%s", err, stderr.String())
		case <-deadline:
			t.Fatalf("no engine started after 5 minutes:\n%s", stderr.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	m := netnsRunRe.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no namespaces named on stderr:\n%s", stderr.String())
	}
	run := m[1]
	var pids []int
	for i := 1; i <= 3; i++ {
		data, err := os.ReadFile(filepath.Join(kdir, "data-3", "node-"+strconv.Itoa(i), "broker.pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("exit %v, want 1 (an interrupted run)", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("run still running 2 minutes after SIGINT:\n%s", stderr.String())
	}
	t.Logf("stderr:\n%s", stderr.String())
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "dsim-"+run+"-") {
		t.Errorf("namespaces of run %s left after SIGINT:\n%s", run, out)
	}
	if _, err := os.Stat(filepath.Join(netns.LockDir, run+".lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file of run %s: %v, want removed", run, err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("broker pid %d after SIGINT: %v, want gone", pid, err)
		}
	}
}

// TestRunPartitionLocalRefused: where ip cannot be found, broker-partition
// on local is refused (exit 2) with what it needs; among several
// scenarios it is skipped and the others run on the same brokers.
func TestRunPartitionLocalRefused(t *testing.T) {
	kdir := localKafkaDir(t)
	// A PATH that holds java and nothing else (ip often sits beside it in
	// /usr/bin).
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatal(err)
	}
	if java, err = filepath.EvalSymlinks(java); err != nil {
		t.Fatal(err)
	}
	path := t.TempDir()
	if err := os.Symlink(java, filepath.Join(path, "java")); err != nil {
		t.Fatal(err)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	env = append(env, "PATH="+path, live.DirEnv+"="+kdir)
	runEnv := func(args ...string) (string, string, int) {
		cmd := exec.Command(binary(t), args...)
		cmd.Env = env
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	partition, pause := "../../scenarios/live/broker-partition.yaml", "../../scenarios/live/broker-pause.yaml"

	binary(t) // built before the clock starts
	began := time.Now()
	_, stderr, code := runEnv("run", "--kafka", "local", "--brokers", "3", "--out", t.TempDir(), partition)
	if code != 2 || !strings.Contains(stderr, "broker-partition") || !strings.Contains(stderr, "iproute2's ip on PATH") {
		t.Fatalf("exit %d, want 2 and a refusal naming ip:\n%s", code, stderr)
	}
	if strings.Contains(stderr, "127.0.0.1") {
		t.Errorf("brokers started for a run that is refused:\n%s", stderr)
	}
	t.Logf("refused in %v", time.Since(began).Round(time.Millisecond))
	t.Logf("refused: %s", strings.TrimSpace(stderr))

	stdout, stderr, code := runEnv("run", "--kafka", "local", "--brokers", "3", "--live-trigger", "100ms", "--out", t.TempDir(), partition, pause)
	if code != 0 || !strings.Contains(stdout, "skipped 1 scenario(s) this mode cannot run: broker-partition") || !strings.Contains(stdout, "broker-pause") {
		t.Fatalf("exit %d, want 0 with broker-partition skipped and broker-pause run:\n%s\n%s", code, stdout, stderr)
	}
	t.Logf("%s", stdout)
}

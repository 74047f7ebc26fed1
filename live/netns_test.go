package live

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/scenarios"
)

// TestNetnsNames: every name a run uses carries its run id and the
// prefix, the root link fits IFNAMSIZ, and the cleanup recognises exactly
// those names (never another tool's namespace or link).
func TestNetnsNames(t *testing.T) {
	n := netnsNames{"0a1b2c"}
	got := []string{n.Switch(), n.Broker(1), n.Broker(3), n.HostLink(), filepath.Base(n.Lock())}
	want := []string{"dsim-0a1b2c-sw", "dsim-0a1b2c-b1", "dsim-0a1b2c-b3", "dsim0a1b2ch", "0a1b2c.lock"}
	if !slices.Equal(got, want) {
		t.Fatalf("names %q, want %q", got, want)
	}
	if l := len(n.HostLink()); l > 15 {
		t.Fatalf("root link %q is %d bytes, more than IFNAMSIZ-1", n.HostLink(), l)
	}
	for _, name := range want {
		if run, ok := netnsRun(name); !ok || run != "0a1b2c" {
			t.Errorf("netnsRun(%q) = %q, %v; want 0a1b2c", name, run, ok)
		}
	}
	for _, name := range []string{"docker0", "eth0", "lo", "dsim", "dsim-0a1b2c", "dsim-0a1b2c-b0", "dsim-0a1b2c-b10", "dsim-0a1b2c-x1",
		"dsim-0A1B2C-sw", "dsim-0a1b2-sw", "dsim-0a1b2cc-sw", "dsim0a1b2cx", "dsim0a1b2c", "dsimzzzzzzh", "dsim0a1b2chh", "cni-0a1b2c", "0a1b2c", "x.lock", "0a1b2g.lock"} {
		if run, ok := netnsRun(name); ok {
			t.Errorf("netnsRun(%q) = %q: not one of our names", name, run)
		}
	}
}

// TestNetnsSupport: without root or ip the reason names what is missing.
func TestNetnsSupport(t *testing.T) {
	found := func(string) (string, error) { return "/usr/sbin/ip", nil }
	missing := func(string) (string, error) { return "", exec.ErrNotFound }
	for _, tc := range []struct {
		euid int
		look func(string) (string, error)
		want []string // nil: supported
	}{
		{0, found, nil},
		{1000, found, []string{"needs root (this process runs as uid 1000)"}},
		{0, missing, []string{"needs iproute2's ip on PATH"}},
		{1000, missing, []string{"root (this process runs as uid 1000) and iproute2's ip"}},
	} {
		err := netnsSupport(tc.euid, tc.look)
		if tc.want == nil {
			if err != nil {
				t.Errorf("uid %d: %v, want supported", tc.euid, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("uid %d: supported, want %q", tc.euid, tc.want)
			continue
		}
		for _, w := range append(tc.want, "network namespace") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("uid %d: %q does not say %q", tc.euid, err, w)
			}
		}
	}
}

// TestRunProcessRefusesPartitionLocal: broker-partition on a local
// cluster without namespaces is refused before anything runs, with the
// reason (ErrUnsupported: exit 2 in the CLI, a skip among several
// scenarios); leader-kill on the same cluster is not refused for it.
func TestRunProcessRefusesPartitionLocal(t *testing.T) {
	s, err := scenarios.Load("../scenarios/live/broker-partition.yaml")
	if err != nil {
		t.Fatal(err)
	}
	three := []*localNode{{id: 1, host: "127.0.0.1"}, {id: 2, host: "127.0.0.1"}, {id: 3, host: "127.0.0.1"}}
	for _, tc := range []struct {
		l    *Local
		want string
	}{
		{&Local{nodes: three, netErr: netnsSupport(1000, exec.LookPath)}, "needs root (this process runs as uid 1000)"},
		{&Local{nodes: three}, "started without a network namespace per broker"},
		{&Local{nodes: three[:1]}, "--brokers 3"},
	} {
		_, err := RunProcess(t.Context(), tc.l, s.Config, 1, ProcessOptions{Binary: "/nonexistent/dedupsim", Dir: filepath.Join(t.TempDir(), "run")})
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "broker-partition") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want a refusal of broker-partition naming %q", err, tc.want)
		}
	}
}

// needNetns skips a test that makes namespaces unless this process can
// (root, ip); under CI=true that is a failure.
func needNetns(t *testing.T) {
	t.Helper()
	if err := NetnsSupport(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must be able to make network namespaces: %v", err)
		}
		t.Skipf("!!! SKIPPING: %v", err)
	}
}

func netnsOf(t *testing.T, run string) []string {
	t.Helper()
	all, err := netnsList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, ns := range all {
		if r, ok := netnsRun(ns); ok && r == run {
			mine = append(mine, ns)
		}
	}
	slices.Sort(mine)
	return mine
}

// TestNetnsCleanup: a start removes the namespaces, root link, lock file
// and processes of a run whose owner is gone (its lock released without a
// teardown, as after a SIGKILL) and leaves a live run's alone; a teardown
// removes everything of its own run.
func TestNetnsCleanup(t *testing.T) {
	needNetns(t)
	ctx := t.Context()
	alive, err := setupNetns(ctx, 2, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer alive.close()
	stale, err := setupNetns(ctx, 2, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	// A process left in the dead run's broker namespace, as a broker JVM
	// outlives a killed dedupsim (its own process group).
	sleeper := exec.Command("ip", stale.netnsCmd(1, []string{"sleep", "600"})[1:]...)
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sleeper.Wait() }()
	defer sleeper.Process.Kill()
	want := []string{stale.names.Broker(1), stale.names.Broker(2), stale.names.Switch()}
	if got := netnsOf(t, stale.names.run); !slices.Equal(got, want) {
		t.Fatalf("namespaces %q, want %q", got, want)
	}
	if _, err := net.InterfaceByName(stale.names.HostLink()); err != nil {
		t.Fatalf("root link: %v", err)
	}
	stale.lock.Close() // the owner dies: the lock is released, nothing removed

	removed, err := cleanStaleNetns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, stale.names.run) || slices.Contains(removed, alive.names.run) {
		t.Fatalf("removed %q: want %s and not %s", removed, stale.names.run, alive.names.run)
	}
	if got := netnsOf(t, stale.names.run); len(got) > 0 {
		t.Errorf("namespaces %q left", got)
	}
	if _, err := net.InterfaceByName(stale.names.HostLink()); err == nil {
		t.Errorf("root link %s left", stale.names.HostLink())
	}
	if _, err := os.Stat(stale.names.Lock()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file: %v, want removed", err)
	}
	select {
	case err := <-exited:
		t.Logf("the leftover process ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Errorf("the process in the dead run's namespace still runs")
	}
	if got := netnsOf(t, alive.names.run); len(got) != 3 {
		t.Errorf("the live run's namespaces %q: want its 3", got)
	}

	if err := alive.close(); err != nil {
		t.Fatal(err)
	}
	if got := netnsOf(t, alive.names.run); len(got) > 0 {
		t.Errorf("namespaces %q left after the teardown", got)
	}
	if _, err := net.InterfaceByName(alive.names.HostLink()); err == nil {
		t.Errorf("root link %s left after the teardown", alive.names.HostLink())
	}
	if _, err := os.Stat(alive.names.Lock()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file after the teardown: %v, want removed", err)
	}
}

// dialFrom tries a TCP connection to addr from broker i's namespace (0:
// the root namespace, as a client) and says how it went: "refused" (the
// host answered: reachable, nothing listens), "unreachable" (no route:
// the namespace's own link is down) or "timeout" (frames dropped).
func dialFrom(t *testing.T, b *brokerNet, i int, addr string) string {
	t.Helper()
	if i == 0 {
		c, err := net.DialTimeout("tcp", addr, 1500*time.Millisecond)
		switch {
		case err == nil:
			c.Close()
			return "connected"
		case errors.Is(err, syscall.ECONNREFUSED):
			return "refused"
		case errors.Is(err, syscall.ENETUNREACH):
			return "unreachable"
		case os.IsTimeout(err):
			return "timeout"
		}
		return err.Error()
	}
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	argv := b.netnsCmd(i, []string{"timeout", "1.5", "bash", "-c", "exec 3<>/dev/tcp/" + host + "/" + port})
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	switch s := string(out); {
	case err == nil:
		return "connected"
	case strings.Contains(s, "Connection refused"):
		return "refused"
	case strings.Contains(s, "Network is unreachable"):
		return "unreachable"
	case strings.Contains(s, "No route to host"):
		return "no route"
	default:
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 124 {
			return "timeout"
		}
		return strings.TrimSpace(s)
	}
}

// TestNetnsIsolate: the brokers reach each other and the clients reach
// every broker by its address; an isolated broker reaches nobody and
// nobody reaches it, the others still reach each other; reconnected, all
// is as before. Port 9 has no listener: "refused" proves the host is
// reachable.
func TestNetnsIsolate(t *testing.T) {
	needNetns(t)
	b, err := setupNetns(t.Context(), 3, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	addr := func(i int) string { return net.JoinHostPort(b.brokerIP(i), "9") }
	check := func(when string, from, to int, want string) {
		t.Helper()
		if got := dialFrom(t, b, from, addr(to)); got != want {
			t.Errorf("%s: %d -> broker %d: %s, want %s", when, from, to, got, want)
		}
	}
	for _, p := range [][2]int{{0, 1}, {0, 2}, {1, 2}, {2, 1}, {3, 1}} {
		check("before", p[0], p[1], "refused")
	}
	if err := b.setLink(t.Context(), 1, false); err != nil {
		t.Fatal(err)
	}
	check("isolated", 0, 1, "timeout")
	check("isolated", 2, 1, "timeout")
	check("isolated", 1, 2, "unreachable")
	check("isolated", 2, 3, "refused")
	check("isolated", 0, 3, "refused")
	if err := b.setLink(t.Context(), 1, true); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]int{{0, 1}, {2, 1}, {1, 2}, {1, 3}} {
		check("reconnected", p[0], p[1], "refused")
	}
}

// TestStartLocalNetnsFailure: a local cluster that fails to start (here a
// fake java whose broker never answers) stops its brokers, which ran in
// namespaces of their own, and removes the namespaces before StartLocal
// returns.
func TestStartLocalNetnsFailure(t *testing.T) {
	needNetns(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lib", "kafka_2.13-4.1.1.jar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	nsFile := filepath.Join(dir, "netns")
	java := filepath.Join(dir, "java")
	script := "#!/bin/sh\ncase \"$*\" in *kafka.tools.StorageTool*) exit 0;; esac\n" +
		"readlink /proc/self/ns/net >> " + nsFile + "\nexec sleep 600\n"
	if err := os.WriteFile(java, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	before, err := netnsList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, err = StartLocal(t.Context(), LocalOptions{Dir: dir, DataDir: filepath.Join(dir, "data"), Java: java, Brokers: 3,
		Netns: true, ReadyTimeout: 3 * time.Second, Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("err = %v, want the brokers not ready", err)
	}
	data, _ := os.ReadFile(nsFile)
	own, _ := os.Readlink("/proc/self/ns/net")
	seen := strings.Fields(string(data))
	if slices.Sort(seen); len(slices.Compact(seen)) != 3 || slices.Contains(seen, own) {
		t.Errorf("the brokers ran in the namespaces %q, want 3 of their own (this process: %s)", seen, own)
	}
	after, err := netnsList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range after {
		if _, ok := netnsRun(ns); ok && !slices.Contains(before, ns) {
			t.Errorf("namespace %s left after the failed start", ns)
		}
	}
}

package netns

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
)

// TestNames: every name a run uses carries its run id and the
// prefix, the root link fits IFNAMSIZ, and the cleanup recognises exactly
// those names (never another tool's namespace or link).
func TestNames(t *testing.T) {
	n := Names{Run: "0a1b2c"}
	got := []string{n.Switch(), n.Broker(1), n.Broker(3), n.HostLink(), filepath.Base(n.Lock())}
	want := []string{"dsim-0a1b2c-sw", "dsim-0a1b2c-b1", "dsim-0a1b2c-b3", "dsim0a1b2ch", "0a1b2c.lock"}
	if !slices.Equal(got, want) {
		t.Fatalf("names %q, want %q", got, want)
	}
	if l := len(n.HostLink()); l > 15 {
		t.Fatalf("root link %q is %d bytes, more than IFNAMSIZ-1", n.HostLink(), l)
	}
	for _, name := range want {
		if run, ok := RunOf(name); !ok || run != "0a1b2c" {
			t.Errorf("RunOf(%q) = %q, %v; want 0a1b2c", name, run, ok)
		}
	}
	for _, name := range []string{"docker0", "eth0", "lo", "dsim", "dsim-0a1b2c", "dsim-0a1b2c-b0", "dsim-0a1b2c-b10", "dsim-0a1b2c-x1",
		"dsim-0A1B2C-sw", "dsim-0a1b2-sw", "dsim-0a1b2cc-sw", "dsim0a1b2cx", "dsim0a1b2c", "dsimzzzzzzh", "dsim0a1b2chh", "cni-0a1b2c", "0a1b2c", "x.lock", "0a1b2g.lock"} {
		if run, ok := RunOf(name); ok {
			t.Errorf("RunOf(%q) = %q: not one of our names", name, run)
		}
	}
}

// TestSupport: without root or ip the reason names what is missing.
func TestSupport(t *testing.T) {
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
		err := support(tc.euid, tc.look)
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

// needNetns skips a test that makes namespaces unless this process can
// (root, ip); under CI=true that is a failure.
func needNetns(t *testing.T) {
	t.Helper()
	if err := Support(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must be able to make network namespaces: %v", err)
		}
		t.Skipf("!!! SKIPPING: %v", err)
	}
}

func netnsOf(t *testing.T, run string) []string {
	t.Helper()
	all, err := List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, ns := range all {
		if r, ok := RunOf(ns); ok && r == run {
			mine = append(mine, ns)
		}
	}
	slices.Sort(mine)
	return mine
}

// TestCleanup: a start removes the namespaces, root link, lock file
// and processes of a run whose owner is gone (its lock released without a
// teardown, as after a SIGKILL) and leaves a live run's alone; a teardown
// removes everything of its own run.
func TestCleanup(t *testing.T) {
	needNetns(t)
	ctx := t.Context()
	alive, err := Setup(ctx, 2, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer alive.Close()
	stale, err := Setup(ctx, 2, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	// A process left in the dead run's broker namespace, as a broker JVM
	// outlives a killed dedupsim (its own process group).
	sleeper := exec.Command("ip", stale.Command(1, []string{"sleep", "600"})[1:]...)
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sleeper.Wait() }()
	defer sleeper.Process.Kill()
	want := []string{stale.Broker(1), stale.Broker(2), stale.Switch()}
	if got := netnsOf(t, stale.Run); !slices.Equal(got, want) {
		t.Fatalf("namespaces %q, want %q", got, want)
	}
	if _, err := net.InterfaceByName(stale.HostLink()); err != nil {
		t.Fatalf("root link: %v", err)
	}
	stale.lock.Close() // the owner dies: the lock is released, nothing removed

	removed, err := CleanStale(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(removed, alive.Run) {
		t.Fatalf("removed %q: the live run %s among them", removed, alive.Run)
	}
	if !slices.Contains(removed, stale.Run) {
		// go test runs packages at once: live's tests start clusters,
		// whose setup cleans up too. What follows checks it was done.
		t.Logf("removed %q: %s not among them, removed by a concurrent cleanup", removed, stale.Run)
	}
	if got := netnsOf(t, stale.Run); len(got) > 0 {
		t.Errorf("namespaces %q left", got)
	}
	if _, err := net.InterfaceByName(stale.HostLink()); err == nil {
		t.Errorf("root link %s left", stale.HostLink())
	}
	if _, err := os.Stat(stale.Lock()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file: %v, want removed", err)
	}
	select {
	case err := <-exited:
		t.Logf("the leftover process ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Errorf("the process in the dead run's namespace still runs")
	}
	if got := netnsOf(t, alive.Run); len(got) != 3 {
		t.Errorf("the live run's namespaces %q: want its 3", got)
	}

	if err := alive.Close(); err != nil {
		t.Fatal(err)
	}
	if got := netnsOf(t, alive.Run); len(got) > 0 {
		t.Errorf("namespaces %q left after the teardown", got)
	}
	if _, err := net.InterfaceByName(alive.HostLink()); err == nil {
		t.Errorf("root link %s left after the teardown", alive.HostLink())
	}
	if _, err := os.Stat(alive.Lock()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file after the teardown: %v, want removed", err)
	}
}

// dialFrom tries a TCP connection to addr from broker i's namespace (0:
// the root namespace, as a client) and says how it went: "refused" (the
// host answered: reachable, nothing listens), "unreachable" (no route:
// the namespace's own link is down) or "timeout" (frames dropped).
func dialFrom(t *testing.T, b *Net, i int, addr string) string {
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
	argv := b.Command(i, []string{"timeout", "1.5", "bash", "-c", "exec 3<>/dev/tcp/" + host + "/" + port})
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

// TestIsolate: the brokers reach each other and the clients reach
// every broker by its address; an isolated broker reaches nobody and
// nobody reaches it, the others still reach each other; reconnected, all
// is as before. Port 9 has no listener: "refused" proves the host is
// reachable.
func TestIsolate(t *testing.T) {
	needNetns(t)
	b, err := Setup(t.Context(), 3, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addr := func(i int) string { return net.JoinHostPort(b.BrokerIP(i), "9") }
	check := func(when string, from, to int, want string) {
		t.Helper()
		if got := dialFrom(t, b, from, addr(to)); got != want {
			t.Errorf("%s: %d -> broker %d: %s, want %s", when, from, to, got, want)
		}
	}
	for _, p := range [][2]int{{0, 1}, {0, 2}, {1, 2}, {2, 1}, {3, 1}} {
		check("before", p[0], p[1], "refused")
	}
	if err := b.SetLink(t.Context(), 1, false); err != nil {
		t.Fatal(err)
	}
	check("isolated", 0, 1, "timeout")
	check("isolated", 2, 1, "timeout")
	check("isolated", 1, 2, "unreachable")
	check("isolated", 2, 3, "refused")
	check("isolated", 0, 3, "refused")
	if err := b.SetLink(t.Context(), 1, true); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]int{{0, 1}, {2, 1}, {1, 2}, {1, 3}} {
		check("reconnected", p[0], p[1], "refused")
	}
}

// FuzzRunOf: a name RunOf accepts is exactly one of the names its
// run uses, so that the cleanup never touches another tool's namespace,
// link or file.
func FuzzRunOf(f *testing.F) {
	for _, s := range []string{"dsim-0a1b2c-sw", "dsim-0a1b2c-b3", "dsim0a1b2ch", "0a1b2c.lock", "dsim-0a1b2c-b10", "docker0", "dsim-0a1b2c-b+1", "dsim-0a1b2c-b01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		run, ok := RunOf(name)
		if !ok {
			return
		}
		if !validRun(run) {
			t.Fatalf("RunOf(%q) = %q: not a run id", name, run)
		}
		n := Names{Run: run}
		ours := []string{n.Switch(), n.HostLink(), filepath.Base(n.Lock())}
		for i := 1; i <= 9; i++ {
			ours = append(ours, n.Broker(i))
		}
		if !slices.Contains(ours, name) {
			t.Fatalf("RunOf(%q) = %q, but the name is none of that run's", name, run)
		}
	})
}

// Package netns gives each broker JVM of a local Kafka cluster
// (live.LocalOptions.Netns) a network namespace of its own, so that
// broker-partition can cut one broker off from the others and from the
// clients, as `docker network disconnect` does to a container.
package netns

//
// The layout of run R (six hex digits, random):
//
//	netns dsim-R-sw     the cluster's switch: a bridge br0 and nothing else.
//	                    The bridge lives here rather than in the root
//	                    namespace so that the root namespace's firewall
//	                    never sees the brokers' traffic to each other
//	                    (Docker sets the FORWARD policy to DROP, and
//	                    br_netfilter sends bridged frames through it).
//	netns dsim-R-bN     broker N's JVM: lo, and eth0 at 10.A.B.(10+N)/24,
//	                    whose veth peer pN is a port of br0.
//	link dsimRh         in the root namespace, 10.A.B.1/24, its veth peer a
//	                    port of br0: the way of every client (the
//	                    producers, the engine process, the fault proxy, the
//	                    admin client) to every broker's advertised address.
//	/run/dedupsim/netns/R.lock
//	                    flock'ed by the process that owns the cluster for as
//	                    long as it runs: a run whose lock nobody holds is a
//	                    leftover (its owner was killed), which the next
//	                    setup removes, its broker processes included.
//
// SetLink(N, false) (live.Local.IsolateNode) sets broker N's eth0 down
// inside its namespace: its address stops routing there (its own connects
// fail at once with "network is unreachable"), frames sent to it are
// dropped, and established connections hang until their timeouts, in both
// directions; the other brokers and the clients see it gone. SetLink(N,
// true) sets it up again; the address and routes come back with the link,
// and TCP retransmits resume.
//
// Everything is done with iproute2's ip (the tool that also runs a command
// in a namespace, `ip netns exec`, and with which a user inspects what is
// left: `ip netns list`), as root. Deleting the switch namespace removes
// the bridge and every veth pair with an end in it, the root link
// included. (`ip netns exec` also gives the command a mount namespace with
// a fresh /sys, without the cgroup mounts; the broker's heap is set
// explicitly, so the JVM's container detection does not matter.)

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Prefix starts the name of every network namespace and link the
// local provider creates.
const Prefix = "dsim"

// LockDir holds the lock file of every run's namespaces.
const LockDir = "/run/dedupsim/netns"

// Names are the names of run's namespaces, links and lock file.
type Names struct{ Run string }

// Switch is the namespace of the bridge.
func (n Names) Switch() string { return Prefix + "-" + n.Run + "-sw" }

// Broker is broker i's namespace (i from 1 to 9).
func (n Names) Broker(i int) string { return fmt.Sprintf("%s-%s-b%d", Prefix, n.Run, i) }

// HostLink is the root namespace's link: at most 15 bytes (IFNAMSIZ).
func (n Names) HostLink() string { return Prefix + n.Run + "h" }

// Lock is the run's lock file.
func (n Names) Lock() string { return filepath.Join(LockDir, n.Run+".lock") }

// validRun reports whether s is a run id: six lower-case hex digits.
func validRun(s string) bool {
	if len(s) != 6 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// RunOf is the run id in the name of one of our namespaces
// (dsim-R-sw, dsim-R-bN), root links (dsimRh) or lock files (R.lock).
func RunOf(name string) (string, bool) {
	switch {
	case strings.HasPrefix(name, Prefix+"-"):
		rest := name[len(Prefix)+1:]
		run, role, ok := strings.Cut(rest, "-")
		if !ok || !validRun(run) {
			return "", false
		}
		if role == "sw" {
			return run, true
		}
		if len(role) == 2 && role[0] == 'b' && '1' <= role[1] && role[1] <= '9' {
			return run, true
		}
	case strings.HasSuffix(name, ".lock"):
		if run := strings.TrimSuffix(name, ".lock"); validRun(run) {
			return run, true
		}
	case strings.HasPrefix(name, Prefix) && len(name) == len(Prefix)+7 && strings.HasSuffix(name, "h"):
		if run := name[len(Prefix) : len(Prefix)+6]; validRun(run) {
			return run, true
		}
	}
	return "", false
}

// Support says why this process cannot put brokers in network
// namespaces, or nil when it can (root, and ip on PATH).
func Support() error { return support(os.Geteuid(), exec.LookPath) }

func support(euid int, lookPath func(string) (string, error)) error {
	var need []string
	if euid != 0 {
		need = append(need, fmt.Sprintf("root (this process runs as uid %d)", euid))
	}
	if _, err := lookPath("ip"); err != nil {
		need = append(need, "iproute2's ip on PATH (apt-get install iproute2)")
	}
	if len(need) > 0 {
		return fmt.Errorf("each local broker runs in a network namespace of its own, which needs %s", strings.Join(need, " and "))
	}
	return nil
}

// Net is the namespaces of one local cluster, made by Setup; the caller
// must Close it.
type Net struct {
	Names
	Subnet netip.Prefix // a /24: .1 the root link, .10+N broker N
	lock   *os.File     // flock'ed while the cluster runs
}

// HostIP is the root namespace's address on the cluster's bridge.
func (b *Net) HostIP() netip.Addr { return b.Subnet.Addr().Next() }

// BrokerIP is broker i's address (i from 1).
func (b *Net) BrokerIP(i int) string {
	a := b.Subnet.Addr().As4()
	a[3] = byte(10 + i)
	return netip.AddrFrom4(a).String()
}

// Command wraps argv to run in broker i's namespace (ip netns exec
// execs argv in its place: the same pid).
func (b *Net) Command(i int, argv []string) []string {
	return append([]string{"ip", "netns", "exec", b.Names.Broker(i)}, argv...)
}

// ipRun runs ip with args; the error names the command and its output.
func ipRun(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// Setup removes the leftovers of earlier runs, then creates a switch
// and n broker namespaces on a fresh /24 subnet, each broker's interface
// up. logf receives a line per removed leftover.
func Setup(ctx context.Context, n int, logf func(string, ...any)) (_ *Net, err error) {
	if n < 1 || n > 9 {
		return nil, fmt.Errorf("netns: %d brokers: want 1 to 9", n)
	}
	if err := Support(); err != nil {
		return nil, err
	}
	if removed, err := CleanStale(ctx); err != nil {
		return nil, fmt.Errorf("remove the network namespaces of earlier runs: %w", err)
	} else if len(removed) > 0 {
		logf("removed the network namespaces of %d earlier run(s) whose process is gone: %s", len(removed), strings.Join(removed, ", "))
	}
	if err := os.MkdirAll(LockDir, 0o755); err != nil {
		return nil, err
	}
	b := &Net{}
	// The lock comes first: from then on a concurrent cleanup sees the
	// run as alive.
	for tries := 0; b.lock == nil; tries++ {
		var rb [3]byte
		rand.Read(rb[:])
		b.Names = Names{hex.EncodeToString(rb[:])}
		f, err := os.OpenFile(b.Names.Lock(), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) && tries < 10 {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			os.Remove(b.Names.Lock())
			return nil, fmt.Errorf("lock %s: %w", b.Names.Lock(), err)
		}
		fmt.Fprintf(f, "pid %d\n", os.Getpid())
		b.lock = f
	}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	if b.Subnet, err = pickSubnet(); err != nil {
		return nil, err
	}
	sw, host := b.Names.Switch(), b.Names.HostLink()
	plen := "/" + strconv.Itoa(b.Subnet.Bits())
	steps := [][]string{
		{"netns", "add", sw},
		{"-n", sw, "link", "set", "lo", "up"},
		{"-n", sw, "link", "add", "br0", "type", "bridge"},
		{"-n", sw, "link", "set", "br0", "up"},
		{"link", "add", host, "type", "veth", "peer", "name", "host", "netns", sw},
		{"addr", "add", b.HostIP().String() + plen, "dev", host},
		{"link", "set", host, "up"},
		{"-n", sw, "link", "set", "host", "master", "br0", "up"},
	}
	for i := 1; i <= n; i++ {
		ns, port := b.Names.Broker(i), "p"+strconv.Itoa(i)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"-n", sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"-n", sw, "link", "set", port, "master", "br0", "up"},
			[]string{"-n", ns, "addr", "add", b.BrokerIP(i) + plen, "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"})
	}
	for _, s := range steps {
		if err := ipRun(ctx, s...); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// pickSubnet picks a random 10.A.B.0/24 (A in 128..255) that overlaps no
// address of the root namespace (another run's included).
func pickSubnet() (netip.Prefix, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Prefix{}, err
	}
	var used []netip.Prefix
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if p, err := netip.ParsePrefix(ipn.String()); err == nil {
				used = append(used, p.Masked())
			}
		}
	}
	for range 100 {
		var rb [2]byte
		rand.Read(rb[:])
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 128 | rb[0], rb[1], 0}), 24)
		if !slices.ContainsFunc(used, p.Overlaps) {
			return p, nil
		}
	}
	return netip.Prefix{}, errors.New("no free 10.x.y.0/24 subnet for the brokers' network")
}

// SetLink sets broker i's eth0 down (isolated) or up.
func (b *Net) SetLink(ctx context.Context, i int, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return ipRun(ctx, "-n", b.Names.Broker(i), "link", "set", "eth0", state)
}

// Close removes the namespaces (killing any process left in them), the
// root link and the lock file. It is safe to call more than once.
func (b *Net) Close() error {
	if b.lock == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := removeRun(ctx, b.Names)
	os.Remove(b.Names.Lock())
	b.lock.Close() // releases the flock
	b.lock = nil
	return err
}

// removeRun kills the processes in the namespaces of a run, deletes
// the namespaces (the switch last: the bridge and every veth with an end
// in it go with it) and the root link if it is still there.
func removeRun(ctx context.Context, names Names) error {
	all, err := List(ctx)
	if err != nil {
		return err
	}
	var errs []error
	var mine []string
	for _, ns := range all {
		if run, ok := RunOf(ns); ok && run == names.Run {
			mine = append(mine, ns)
		}
	}
	// dsim-R-b1 < dsim-R-b9 < dsim-R-sw: the brokers first.
	slices.Sort(mine)
	for _, ns := range mine {
		if out, err := exec.CommandContext(ctx, "ip", "netns", "pids", ns).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if err := ipRun(ctx, "netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := net.InterfaceByName(names.HostLink()); err == nil {
		if err := ipRun(ctx, "link", "del", names.HostLink()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// List lists the named network namespaces (ip netns list).
func List(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns list: %w", err)
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// "name" or "name (id: 3)"
		if f := strings.Fields(sc.Text()); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names, sc.Err()
}

// CleanStale removes the namespaces, root links and lock files of
// every run whose lock nobody holds (its process is gone: killed, or it
// crashed before its teardown), and returns their run ids. A run that is
// alive, in this process or another, holds its lock and is left alone.
func CleanStale(ctx context.Context) ([]string, error) {
	runs := map[string]bool{}
	all, err := List(ctx)
	if err != nil {
		return nil, err
	}
	for _, ns := range all {
		if run, ok := RunOf(ns); ok {
			runs[run] = true
		}
	}
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			if run, ok := RunOf(i.Name); ok && !strings.HasPrefix(i.Name, Prefix+"-") {
				runs[run] = true
			}
		}
	}
	if ents, err := os.ReadDir(LockDir); err == nil {
		for _, e := range ents {
			if run, ok := RunOf(e.Name()); ok && strings.HasSuffix(e.Name(), ".lock") {
				runs[run] = true
			}
		}
	}
	var removed []string
	var errs []error
	for _, run := range slices.Sorted(maps.Keys(runs)) {
		names := Names{run}
		if err := os.MkdirAll(LockDir, 0o755); err != nil {
			return removed, err
		}
		f, err := os.OpenFile(names.Lock(), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close() // held: the run is alive
			continue
		}
		if err := removeRun(ctx, names); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, run)
		}
		os.Remove(names.Lock())
		f.Close()
	}
	return removed, errors.Join(errs...)
}

package live

// This file holds the rule that a cluster dedupsim starts itself is
// reached only on this machine: its bootstrap and advertised addresses
// are on the loopback range (127.0.0.0/8, ::1) or inside the network
// namespaces the run made (the local provider's broker-partition
// subnet), unless the user named a remote Docker engine. A wrong guess of
// the Docker host (see dockerhost.go) would otherwise send a test's
// traffic to an address that is not on this machine, and fail late as a
// dial timeout instead of at once.

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
)

// localHost says whether host (an IP literal or "localhost") is on the
// loopback range or inside one of own.
func localHost(host string, own []netip.Prefix) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false // a name other than localhost may resolve anywhere
	}
	ip = ip.Unmap()
	if ip.IsLoopback() {
		return true
	}
	for _, p := range own {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// checkLocalAddrs refuses the first address of addrs ("host:port") whose
// host is neither loopback nor inside own; what names the addresses in
// the error ("bootstrap", "advertised").
func checkLocalAddrs(what string, addrs []string, own []netip.Prefix) error {
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return fmt.Errorf("live: %s address %q: want HOST:PORT", what, a)
		}
		if !localHost(host, own) {
			return fmt.Errorf("live: %s address %s is not on this machine (want 127.0.0.0/8, ::1%s); a cluster this run started must be reached on loopback",
				what, a, ownText(own))
		}
	}
	return nil
}

func ownText(own []netip.Prefix) string {
	s := ""
	for _, p := range own {
		s += " or the run's namespace subnet " + p.String()
	}
	return s
}

// checkBrokersLocal checks the bootstrap addresses and every listed
// broker's advertised address (the ones clients go on to dial) against
// the loopback rule. The providers call it each time the brokers are
// ready (after a start, a restart or a reconnect), so a cluster that
// fails it is never handed out.
func checkBrokersLocal(addrs []string, bs kadm.BrokerDetails, own []netip.Prefix) error {
	if err := checkLocalAddrs("bootstrap", addrs, own); err != nil {
		return err
	}
	var adv []string
	for _, b := range bs {
		adv = append(adv, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	return checkLocalAddrs("advertised", adv, own)
}

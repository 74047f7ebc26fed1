package live

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestPublishedHost: the Docker host the container provider dials. The
// first case is the machine image with a /.dockerenv file: testcontainers
// answers the default gateway (a TEST-NET address here, never dialled),
// and a local socket must still give 127.0.0.1.
func TestPublishedHost(t *testing.T) {
	cases := []struct {
		name        string
		daemon      string
		override    string
		overrideSet bool
		guessed     string
		host        string
		remote      bool
		note        string // a fragment of Note, "" for none
		err         string
	}{
		{name: "dockerenv gateway guess, local socket", daemon: "unix:///var/run/docker.sock", guessed: "192.0.2.1",
			host: "127.0.0.1", note: "testcontainers guessed the Docker host 192.0.2.1"},
		{name: "local socket, localhost guess", daemon: "unix:///var/run/docker.sock", guessed: "localhost", host: "127.0.0.1"},
		{name: "rootless socket", daemon: "unix:///run/user/1000/docker.sock", guessed: "", host: "127.0.0.1"},
		{name: "windows pipe", daemon: "npipe:////./pipe/docker_engine", guessed: "192.0.2.1", host: "127.0.0.1", note: "guessed"},
		{name: "override wins over the socket", daemon: "unix:///var/run/docker.sock", override: "127.0.0.2", overrideSet: true,
			guessed: "192.0.2.1", host: "127.0.0.2"},
		{name: "override names a remote host", daemon: "unix:///var/run/docker.sock", override: "198.51.100.7", overrideSet: true,
			host: "198.51.100.7", remote: true},
		{name: "override localhost", daemon: "tcp://198.51.100.7:2376", override: "localhost", overrideSet: true, host: "127.0.0.1"},
		{name: "empty override", daemon: "unix:///var/run/docker.sock", overrideSet: true, err: "TESTCONTAINERS_HOST_OVERRIDE is set but empty"},
		{name: "tcp on loopback", daemon: "tcp://127.0.0.1:2375", guessed: "127.0.0.1", host: "127.0.0.1"},
		{name: "tcp localhost", daemon: "tcp://localhost:2375", host: "127.0.0.1"},
		{name: "tcp remote engine", daemon: "tcp://198.51.100.7:2376", guessed: "198.51.100.7", host: "198.51.100.7", remote: true},
		{name: "https remote engine by name", daemon: "https://docker.example:2376", host: "docker.example", remote: true},
		{name: "tcp without host", daemon: "tcp://:2375", err: "names no host"},
		{name: "no daemon", daemon: "", err: "want unix:///path"},
		{name: "ssh", daemon: "ssh://user@box", err: `scheme "ssh"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := publishedHost(tc.daemon, tc.override, tc.overrideSet, tc.guessed)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Host != tc.host || d.Remote != tc.remote {
				t.Errorf("got host %q remote %v, want %q %v", d.Host, d.Remote, tc.host, tc.remote)
			}
			if (tc.note == "") != (d.Note == "") || !strings.Contains(d.Note, tc.note) {
				t.Errorf("note %q, want one holding %q", d.Note, tc.note)
			}
		})
	}
}

// TestLoopbackRule: addresses a started cluster may be reached on.
func TestLoopbackRule(t *testing.T) {
	own := []netip.Prefix{netip.MustParsePrefix("10.200.7.0/24")}
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:9092", true},
		{"127.5.6.7:9092", true},
		{"localhost:9092", true},
		{"[::1]:9092", true},
		{"[::ffff:127.0.0.1]:9092", true},
		{"10.200.7.11:9092", true}, // the run's own namespace subnet
		{"10.200.8.11:9092", false},
		{"192.0.2.1:33061", false}, // a guessed gateway
		{"[2001:db8::1]:9092", false},
		{"kafka-1:9092", false}, // a container alias: not resolvable from here
		{"0.0.0.0:9092", false},
		{"no-port", false},
	} {
		err := checkLocalAddrs("bootstrap", []string{tc.addr}, own)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", tc.addr, err, tc.ok)
		}
	}
	err := checkLocalAddrs("bootstrap", []string{"10.200.7.11:9092"}, nil)
	if err == nil || !strings.Contains(err.Error(), "not on this machine") {
		t.Errorf("namespace address without the run's subnet: %v", err)
	}
	// The advertised addresses are checked too: a broker reached on
	// loopback that advertises its container alias or a gateway fails.
	bs := kadm.BrokerDetails{{NodeID: 1, Host: "127.0.0.1", Port: 9093}, {NodeID: 2, Host: "192.0.2.1", Port: 9093}}
	err = checkBrokersLocal([]string{"127.0.0.1:9093"}, bs, nil)
	if err == nil || !strings.Contains(err.Error(), "advertised address 192.0.2.1:9093") {
		t.Errorf("advertised gateway address: %v", err)
	}
	if err := checkBrokersLocal([]string{"127.0.0.1:9093"}, bs[:1], nil); err != nil {
		t.Errorf("loopback cluster: %v", err)
	}
}

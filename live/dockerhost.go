package live

// Where the testcontainers provider reaches the ports a Docker engine
// publishes. testcontainers-go's own answer (DockerProvider.DaemonHost)
// is not used for a local engine: when the file /.dockerenv exists it
// believes the tests run inside a container and returns the default
// gateway's address, which on a machine image that merely carries that
// file is an address off this machine (connections refused, or worse,
// traffic sent elsewhere). The rule here:
//
//   - TESTCONTAINERS_HOST_OVERRIDE, when set, wins (testcontainers' own
//     variable; the way to say "the ports are published on that host",
//     for instance when the tests really run in a container beside the
//     engine, Docker-outside-of-Docker);
//   - a local engine (unix:// or npipe:// socket): 127.0.0.1, whatever
//     testcontainers guesses, since the published ports are bound on this
//     machine's loopback;
//   - tcp://, http://, https:// (DOCKER_HOST or the Docker context naming
//     an engine elsewhere): that engine's host, the one case where the
//     brokers are not on this machine (remote is true).

import (
	"fmt"
	"net/netip"
	"net/url"
)

// dockerHost is the decision publishedHost makes.
type dockerHost struct {
	Host   string // where published ports are dialled
	Remote bool   // the user named an engine or host that is not this machine
	Note   string // why, when testcontainers guessed otherwise
}

// publishedHost decides where published ports are reached. daemon is the
// Docker client's daemon URL (DOCKER_HOST, the Docker context or
// testcontainers' properties: "unix:///var/run/docker.sock",
// "tcp://10.1.2.3:2376"); override and overrideSet are
// TESTCONTAINERS_HOST_OVERRIDE; guessed is testcontainers' own answer,
// reported in Note when it is set aside.
func publishedHost(daemon, override string, overrideSet bool, guessed string) (dockerHost, error) {
	loopback := func(h string) bool {
		if h == "localhost" {
			return true
		}
		ip, err := netip.ParseAddr(h)
		return err == nil && ip.Unmap().IsLoopback()
	}
	norm := func(h string) string {
		if h == "localhost" {
			return "127.0.0.1" // the published port is bound there; avoid ::1
		}
		return h
	}
	if overrideSet {
		if override == "" {
			return dockerHost{}, fmt.Errorf("TESTCONTAINERS_HOST_OVERRIDE is set but empty: unset it, or name the host the published ports are reached on")
		}
		return dockerHost{Host: norm(override), Remote: !loopback(override)}, nil
	}
	u, err := url.Parse(daemon)
	if err != nil || daemon == "" {
		//lint:ignore ST1005 Docker is a proper noun, and the message is a user-visible output kept byte for byte
		return dockerHost{}, fmt.Errorf("Docker daemon address %q: want unix:///path, npipe:// or tcp://HOST:PORT", daemon)
	}
	switch u.Scheme {
	case "unix", "npipe":
		d := dockerHost{Host: "127.0.0.1"}
		if guessed != "" && !loopback(guessed) {
			d.Note = fmt.Sprintf("testcontainers guessed the Docker host %s (it believes it runs inside a container: /.dockerenv); the engine is local (%s), so its published ports are reached on 127.0.0.1 (set TESTCONTAINERS_HOST_OVERRIDE to choose another)", guessed, daemon)
		}
		return d, nil
	case "tcp", "http", "https":
		h := u.Hostname()
		if h == "" {
			//lint:ignore ST1005 Docker is a proper noun, and the message is a user-visible output kept byte for byte
			return dockerHost{}, fmt.Errorf("Docker daemon address %q names no host", daemon)
		}
		return dockerHost{Host: norm(h), Remote: !loopback(h)}, nil
	}
	//lint:ignore ST1005 Docker is a proper noun, and the message is a user-visible output kept byte for byte
	return dockerHost{}, fmt.Errorf("Docker daemon address %q: scheme %q is not unix, npipe, tcp, http or https", daemon, u.Scheme)
}

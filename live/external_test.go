package live_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/live"
)

// TestExternal: an external cluster is checked before a run: a running one
// answers, a wrong address or a closed port fails at once with the reason.
func TestExternal(t *testing.T) {
	k := startKfake(t, nil)
	c, err := live.External(t.Context(), k.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Addrs(), ","); got != strings.Join(k.Addrs(), ",") {
		t.Fatalf("addrs %q", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addrs []string
		want  string
	}{
		{[]string{"localhost"}, "want HOST:PORT"},
		{[]string{""}, "no bootstrap address"},
		{[]string{"127.0.0.1:1"}, "does not answer"},
	} {
		if _, err := live.External(t.Context(), tc.addrs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("External(%q) = %v, want an error with %q", tc.addrs, err, tc.want)
		}
	}
}

// TestContainerNeedsDocker: without a Docker engine the testcontainers
// provider fails at once and names the alternatives. With
// DEDUPSIM_KAFKA=testcontainers (a machine with Docker) it runs the kill
// scenario against the container instead.
func TestContainerNeedsDocker(t *testing.T) {
	if os.Getenv("DEDUPSIM_KAFKA") == "testcontainers" {
		c, err := live.StartContainer(t.Context(), live.ContainerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		runProcessCase(t, c, liveKfakeCases[0], 100*time.Millisecond)
		return
	}
	if os.Getenv("DOCKER_HOST") != "" {
		t.Skip("DOCKER_HOST is set: set DEDUPSIM_KAFKA=testcontainers to run against the container")
	}
	if _, err := os.Stat("/var/run/docker.sock"); err == nil {
		t.Skip("a Docker socket exists: set DEDUPSIM_KAFKA=testcontainers to run against the container")
	}
	_, err := live.StartContainer(t.Context(), live.ContainerOptions{})
	if err == nil || !strings.Contains(err.Error(), "no Docker engine") || !strings.Contains(err.Error(), "--kafka local") {
		t.Fatalf("StartContainer without Docker: %v", err)
	}
}

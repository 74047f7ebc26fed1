package live_test

import (
	"context"
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
// DEDUPSIM_KAFKA=testcontainers (a machine with Docker) the kill scenarios
// run against the container in TestRunProcessContainer instead.
func TestContainerNeedsDocker(t *testing.T) {
	if os.Getenv("DEDUPSIM_KAFKA") == "testcontainers" {
		t.Skip("Docker is there: TestRunProcessContainer runs the kill scenarios against the container")
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

// needContainers skips the test unless DEDUPSIM_KAFKA=testcontainers.
func needContainers(t *testing.T) {
	t.Helper()
	if os.Getenv("DEDUPSIM_KAFKA") != "testcontainers" {
		t.Skip("container test: set DEDUPSIM_KAFKA=testcontainers to run it (make test-containers starts Docker, builds the image and does)")
	}
}

// startContainer starts a cluster of brokers in containers, removed (its
// logs printed on failure) at the end of the test.
func startContainer(t *testing.T, brokers int) *live.Container {
	t.Helper()
	needContainers(t)
	began := time.Now()
	c, err := live.StartContainer(t.Context(), live.ContainerOptions{Brokers: brokers, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d broker(s) %v (image %s) ready in %v", brokers, c.Addrs(), live.ContainerImage(), time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker logs:\n%s", c.LogTail(40))
		}
		if err := c.Close(); err != nil {
			t.Errorf("remove the containers: %v", err)
		}
	})
	return c
}

// TestContainerBrokerRestart is TestLocalBrokerRestart the container way:
// the container is stopped without a grace period and started again on
// its volume; what was acknowledged or committed survives.
func TestContainerBrokerRestart(t *testing.T) {
	c := startContainer(t, 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := c.CreateTopic(ctx, "in", 2); err != nil {
		t.Fatal(err)
	}
	runBrokerRestart(t, c, func() {
		if _, err := live.External(ctx, c.Addrs()); err == nil {
			t.Fatal("the broker still answers after Kill")
		}
	})
}

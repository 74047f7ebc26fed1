package live

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/live/netns"
	"github.com/dedupsim/dedupsim/scenarios"
)

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
		{&Local{nodes: three, netErr: errors.New("each local broker runs in a network namespace of its own, which needs root (this process runs as uid 1000)")}, "needs root (this process runs as uid 1000)"},
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
	if err := netns.Support(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must be able to make network namespaces: %v", err)
		}
		t.Skipf("!!! SKIPPING: %v", err)
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
	nsFile, pidFile := filepath.Join(dir, "netns"), filepath.Join(dir, "pids")
	java := filepath.Join(dir, "java")
	script := "#!/bin/sh\ncase \"$*\" in *kafka.tools.StorageTool*) exit 0;; esac\n" +
		"readlink /proc/self/ns/net >> " + nsFile + "\necho $$ >> " + pidFile + "\nexec sleep 600\n"
	if err := os.WriteFile(java, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var run string // the namespaces' run id, from the start's note
	runRe := regexp.MustCompile(`network namespaces dsim-([0-9a-f]{6})-b1\.\.`)
	_, err := StartLocal(t.Context(), LocalOptions{Dir: dir, DataDir: filepath.Join(dir, "data"), Java: java, Brokers: 3,
		Netns: true, ReadyTimeout: 3 * time.Second, Logf: func(f string, a ...any) {
			line := fmt.Sprintf(f, a...)
			t.Log(line)
			if m := runRe.FindStringSubmatch(line); m != nil {
				run = m[1]
			}
		}})
	if err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("err = %v, want the brokers not ready", err)
	}
	data, _ := os.ReadFile(nsFile)
	own, _ := os.Readlink("/proc/self/ns/net")
	seen := strings.Fields(string(data))
	if slices.Sort(seen); len(slices.Compact(seen)) != 3 || slices.Contains(seen, own) {
		t.Errorf("the brokers ran in the namespaces %q, want 3 of their own (this process: %s)", seen, own)
	}
	pids, _ := os.ReadFile(pidFile)
	for _, f := range strings.Fields(string(pids)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("fake broker %d after the failed start: %v, want gone", pid, err)
		}
	}
	if n := len(strings.Fields(string(pids))); n != 3 {
		t.Errorf("%d fake brokers started, want 3", n)
	}
	if run == "" {
		t.Fatal("the start named no namespaces")
	}
	after, err := netns.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range after {
		if r, ok := netns.RunOf(ns); ok && r == run {
			t.Errorf("namespace %s left after the failed start", ns)
		}
	}
	if _, err := os.Stat(netns.Names{Run: run}.Lock()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file after the failed start: %v, want removed", err)
	}
}

package live_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/live"
)

// TestRunProcessStopsOnBadInput: an engine that exits 2 (a corrupt or
// locked checkpoint, a refused query) is not restarted: the supervisor
// stops at once with the engine's message, instead of looping through its
// failure budget (exit 1 is restarted like a crash).
func TestRunProcessStopsOnBadInput(t *testing.T) {
	k := startKfake(t, nil)
	dir := t.TempDir()
	fake := filepath.Join(dir, "engine.sh")
	starts := filepath.Join(dir, "starts")
	script := "#!/bin/sh\necho x >> " + starts + "\necho 'dedupsim: checkpoint error: /c/offsets/3: line 2: metadata: batchWatermarkMs 9223372036854775807 is outside' >&2\nexit 2\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := loadScenario(t, "replay-append-sink")
	began := time.Now()
	_, err := live.RunProcess(t.Context(), k, s.Config, 1, live.ProcessOptions{Binary: fake, Dir: filepath.Join(dir, "run"), Trigger: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "exit 2") || !strings.Contains(err.Error(), "checkpoint error: /c/offsets/3") {
		t.Fatalf("err = %v, want the engine's refusal", err)
	}
	data, _ := os.ReadFile(starts)
	if n := strings.Count(string(data), "x"); n != 1 {
		t.Fatalf("the engine was started %d times, want 1 (no restart on exit 2)", n)
	}
	if errors.Is(err, live.ErrUnsupported) {
		t.Fatal("reported as unsupported")
	}
	t.Logf("stopped after %v", time.Since(began).Round(time.Millisecond))
}

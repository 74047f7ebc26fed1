package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStrict: --strict fails a run whose table holds duplicates even though
// the API kept its promise and the scenario's expectations are met; the
// console names the table duplicates; a clean table passes; check --strict
// on the failing run's history fails too, and without --strict it passes.
func TestStrict(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	out, errOut, code := run(bin, "run", "-q", "--strict", "--out", dir+"/a", "restamped-retries-event-time-key")
	if code != 1 {
		t.Fatalf("run --strict restamped-retries-event-time-key: exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"Table: 102 events are in the table twice", "API contract: kept", "Expectations: NOT MET",
		"expected table-clean", "got 102", "replay: dedupsim replay --seed 1 --strict restamped-retries-event-time-key"} {
		if !strings.Contains(out, want) {
			t.Errorf("console lacks %q:\n%s", want, out)
		}
	}
	if out, errOut, code := run(bin, "run", "-q", "--out", dir+"/b", "restamped-retries-event-time-key"); code != 0 || !strings.Contains(out, "Table: 102 events are in the table twice") {
		t.Fatalf("without --strict the expectations decide (exit %d, want 0), and the table is still said:\n%s%s", code, out, errOut)
	}
	if out, errOut, code := run(bin, "run", "-q", "--strict", "--out", dir+"/c", "restamped-retries-within-watermark"); code != 0 {
		t.Fatalf("run --strict restamped-retries-within-watermark: exit %d, want 0\n%s%s", code, out, errOut)
	}
	hist := filepath.Join(dir, "a", "restamped-retries-event-time-key-1", "history.json.gz")
	if _, err := os.Stat(hist); err != nil {
		t.Fatalf("a failing run keeps its history: %v", err)
	}
	if _, errOut, code := run(bin, "check", "--strict", hist); code != 1 || !strings.Contains(errOut, "102 events more than once") {
		t.Fatalf("check --strict: exit %d, want 1; stderr %q", code, errOut)
	}
	if _, errOut, code := run(bin, "check", hist); code != 0 {
		t.Fatalf("check without --strict: exit %d, want 0 (the API kept its promise); stderr %q", code, errOut)
	}
	if _, errOut, code := run(bin, "replay", "--seed", "1", "--strict", "--out", dir+"/d", "restamped-retries-event-time-key"); code != 1 {
		t.Fatalf("replay --strict: exit %d, want 1; %s", code, errOut)
	}
	if out, errOut, code := run(bin, "sweep", "-q", "--strict", "--seeds", "2", "--out", dir+"/e", "restamped-retries-event-time-key"); code != 1 || !strings.Contains(out+errOut, "2 of 2") {
		t.Fatalf("sweep --strict: exit %d, want 1 with both seeds failing:\n%s%s", code, out, errOut)
	}
}

package check_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/scenarios"
	"github.com/dedupsim/dedupsim/sim/check"
)

// runWithDelay runs a catalogue scenario (seed 1) with its 30-second
// watermark delay replaced by delayMs.
func runWithDelay(t *testing.T, name string, delayMs int64) check.Report {
	t.Helper()
	data, err := os.ReadFile("../../scenarios/catalogue/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if delayMs >= 0 {
		if !strings.Contains(text, "delay: 30 seconds") {
			t.Fatalf("%s: no 30-second delay to replace", name)
		}
		text = strings.Replace(text, "delay: 30 seconds", fmt.Sprintf("delay: %d milliseconds", delayMs), 1)
	}
	s, err := scenarios.Parse(name+".yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	r, err := scenarios.Run(s, 1, scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Report
}

// TestCatalogueMargins: on the catalogue's retry scenarios, the margin
// states the headroom left or the delay that would have caught the escaped
// copies, and the simulator agrees: run again with that delay no copy
// escapes, with one millisecond less one does.
func TestCatalogueMargins(t *testing.T) {
	// Escaped copies: the delay that would have caught them.
	r := runWithDelay(t, "retry-gap-beyond-delay", -1)
	m := r.Margin
	if m == nil || m.Escaped == 0 || m.Escaped != r.Table.ExtraRows || m.NeededDelayMs <= 30_000 || m.MismatchedEvents != 0 || m.SmallestEscaped == nil || m.LargestCaught == nil {
		t.Fatalf("retry-gap-beyond-delay: margin %+v, table %+v", m, r.Table)
	}
	if got := runWithDelay(t, "retry-gap-beyond-delay", m.NeededDelayMs); got.Table.MoreThanOnce != 0 {
		t.Errorf("with the needed delay %dms the table still holds %d events twice", m.NeededDelayMs, got.Table.MoreThanOnce)
	}
	if got := runWithDelay(t, "retry-gap-beyond-delay", m.NeededDelayMs-1); got.Table.MoreThanOnce == 0 {
		t.Errorf("1 ms below the needed delay %dms no copy escaped: the margin is not the smallest", m.NeededDelayMs)
	}

	// Everything caught: the headroom left.
	r = runWithDelay(t, "restamped-retries-within-watermark", -1)
	m = r.Margin
	head, ok := m.HeadroomMs()
	if m == nil || m.Escaped != 0 || m.CaughtByState == 0 || !ok || head <= 0 || head >= 30_000 || m.LargestCaught == nil || m.GuaranteeDelayMs <= int64(m.LargestCaught.GapMs) {
		t.Fatalf("restamped-retries-within-watermark: margin %+v", m)
	}
	if got := runWithDelay(t, "restamped-retries-within-watermark", m.KeptDelayMs); got.Table.MoreThanOnce != 0 {
		t.Errorf("with the kept delay %dms the table holds %d events twice", m.KeptDelayMs, got.Table.MoreThanOnce)
	}
	if got := runWithDelay(t, "restamped-retries-within-watermark", m.KeptDelayMs-1); got.Table.MoreThanOnce == 0 {
		t.Errorf("1 ms below the kept delay %dms no copy escaped", m.KeptDelayMs)
	}

	// Re-stamped copies under (id, event time): no delay catches them.
	r = runWithDelay(t, "restamped-retries-event-time-key", -1)
	if m := r.Margin; m == nil || m.NeededDelayMs != -1 || m.Escaped != r.Table.ExtraRows || r.Table.Clean() || !r.Verdict.ExactlyOnce {
		t.Fatalf("restamped-retries-event-time-key: margin %+v, table %+v", m, r.Table)
	}
	// The future clock: the table misses nearly everything, dropped as late.
	r = runWithDelay(t, "future-clock-drags-watermark", -1)
	if tb := r.Table; tb.NeverLate < tb.Events/2 || tb.NeverLost != 0 || !tb.Clean() || tb.Exact() {
		t.Fatalf("future-clock-drags-watermark: table %+v", tb)
	}
}

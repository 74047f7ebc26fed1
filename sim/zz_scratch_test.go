package sim

import (
	"bytes"
	"testing"

	"github.com/dedupsim/dedupsim/faults"
)

func TestScratchApprox(t *testing.T) {
	cfg := exportConfig(tableQuery, 30, map[string]faults.Knobs{
		faults.CrashRandom: {"rate": 0.15}, faults.LostUnsyncedWrite: {"probability": 0.5}, faults.TornWrite: {"probability": 0.5},
		faults.ProducerRetry: {"probability": 0.05},
	})
	kinds := map[string]int{}
	for seed := uint64(1); seed <= 40; seed++ {
		h := run(t, cfg, seed)
		qy, st, _ := ExportTrace(h)
		for _, l := range bytes.Split(st, []byte("\n")) {
			if bytes.HasPrefix(l, []byte("# No exec form")) || bytes.HasPrefix(l, []byte("# after-")) {
				kinds[string(l[:min(len(l), 60)])]++
			}
		}
		ok := t.Run("seed", func(t *testing.T) {
			compareReplay(t, h, replayTrace(t, qy, st), ExportOptions{}, -1<<63, 1<<63-1, true)
		})
		if !ok {
			t.Logf("seed %d: mismatch; %s", seed, st[:0])
		}
	}
	t.Logf("%v", kinds)
}

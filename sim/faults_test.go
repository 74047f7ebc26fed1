package sim

import (
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/engine/crashpoint"
	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim/history"
)

// Each fault, in a small focused configuration, fires (its coverage mark)
// and has the effect it stands for, visible in the history.

type focused struct {
	cfg    Config
	seed   uint64
	effect func(t *testing.T, h *history.History)
}

func focusedCases() map[string]focused {
	k := func(fault string, knobs faults.Knobs) map[string]faults.Knobs {
		return map[string]faults.Knobs{fault: knobs}
	}
	cases := map[string]focused{
		faults.ProducerRetry: {cfg: testConfig(tableQuery, k(faults.ProducerRetry, faults.Knobs{"probability": 0.2, "copies_max": 3})), effect: func(t *testing.T, h *history.History) {
			forRetries(t, h, faults.ProducerRetry, func(orig, c history.Copy) {
				if c.EventTimeUs != orig.EventTimeUs || c.AppendedAtMs < orig.AppendedAtMs {
					t.Fatalf("retry %+v of %+v: want the same event time, appended later", c, orig)
				}
			})
			checkExactlyOnce(t, h)
		}},
		faults.ProducerRetryRestamped: {cfg: testConfig(tableQuery, k(faults.ProducerRetryRestamped, faults.Knobs{"probability": 0.2, "gap": "fixed", "gap_ms": "3s"})), effect: func(t *testing.T, h *history.History) {
			forRetries(t, h, faults.ProducerRetryRestamped, func(orig, c history.Copy) {
				// Honest clocks: the copy is stamped at resend, 3 s after the send.
				if d := c.EventTimeUs - orig.EventTimeUs; d < 3_000_000 {
					t.Fatalf("re-stamped retry %+v of %+v: event time only %d µs later", c, orig, d)
				}
				if c.AppendedAtMs-orig.AppendedAtMs < 2999 || c.AppendedAtMs-orig.AppendedAtMs > 3001 {
					t.Fatalf("fixed 3 s gap: appended %d ms apart", c.AppendedAtMs-orig.AppendedAtMs)
				}
			})
			checkExactlyOnce(t, h) // dropDuplicatesWithinWatermark catches them
		}},
		faults.DuplicateAppend: {cfg: testConfig(tableQuery, k(faults.DuplicateAppend, faults.Knobs{"probability": 0.2})), effect: func(t *testing.T, h *history.History) {
			at := map[[3]int64]int{} // (source, partition, offset) -> copy
			for i, c := range h.Copies {
				at[[3]int64{int64(c.Source), int64(c.Partition), c.Offset}] = i
			}
			n := 0
			for _, c := range h.Copies {
				if c.Fault.String() != faults.DuplicateAppend {
					continue
				}
				n++
				prev := h.Copies[at[[3]int64{int64(c.Source), int64(c.Partition), c.Offset - 1}]]
				if prev.Event != c.Event || prev.EventTimeUs != c.EventTimeUs || prev.AppendedAtMs != c.AppendedAtMs || c.Offset == 0 {
					t.Fatalf("duplicate %+v is not adjacent to its copy %+v", c, prev)
				}
			}
			if n == 0 {
				t.Fatal("no duplicate appends")
			}
			checkExactlyOnce(t, h)
		}},
		faults.ClockSkew: {cfg: testConfig(tableQuery, k(faults.ClockSkew, faults.Knobs{"producers_fraction": 1, "offset_max_ms": "30s"})), effect: func(t *testing.T, h *history.History) {
			off, honest := 0, 0
			for _, c := range h.Copies {
				d := c.EventTimeUs/1000 - c.AppendedAtMs
				inFault := c.AppendedAtMs < h.HealAtMs-1000
				switch {
				case inFault && (d > 1000 || d < -2000):
					off++
				case !inFault && c.AppendedAtMs > h.HealAtMs+1000 && (d > 0 || d < -2000):
					t.Fatalf("healed copy %+v: clock still off by %d ms", c, d)
				case !inFault:
					honest++
				}
			}
			if off < len(h.Copies)/3 || honest == 0 {
				t.Fatalf("%d of %d copies off by more than a second, %d honest", off, len(h.Copies), honest)
			}
		}},
		faults.FutureTimestamp: {cfg: testConfig(tableQuery, k(faults.FutureTimestamp, faults.Knobs{"ahead_ms": "1d"})), effect: func(t *testing.T, h *history.History) {
			jumped := false
			for _, b := range h.Batches {
				jumped = jumped || b.NextWatermarkMs > b.AtMs+12*3600_000
			}
			if !jumped {
				t.Fatal("the watermark never jumped a day ahead")
			}
			if h.Coverage[MarkLateDrop] == 0 {
				t.Fatal("no honest event became late")
			}
		}},
		faults.SourceSilence: {cfg: twoSourceConfig(k(faults.SourceSilence, faults.Knobs{"source": 1, "start_frac": 0.25, "duration_ms": "60s"})), effect: func(t *testing.T, h *history.History) {
			start := h.HealAtMs - 120_000
			for _, c := range h.Copies {
				if c.Source == 1 && c.AppendedAtMs >= start+31_000 && c.AppendedAtMs < start+90_000 {
					t.Fatalf("silent source appended %+v", c)
				}
			}
			// Watermark flat while the other source flows.
			var wm []int64
			webRows := 0
			for _, b := range h.Batches {
				if b.AtMs >= start+45_000 && b.AtMs < start+90_000 {
					wm = append(wm, b.WatermarkMs)
					for _, i := range b.Input {
						if h.Copies[i].Source == 0 {
							webRows++
						}
					}
				}
			}
			if len(wm) < 30 || webRows < 1000 || wm[0] != wm[len(wm)-1] || wm[0] == 0 {
				t.Fatalf("during the silence: %d batches, watermarks %d..%d, %d web rows", len(wm), wm[0], wm[len(wm)-1], webRows)
			}
			last := h.Batches[len(h.Batches)-1]
			if last.WatermarkMs <= wm[0] {
				t.Fatal("the watermark did not move after the silence")
			}
		}},
		faults.LaggingInput: {cfg: twoSourceConfig(k(faults.LaggingInput, faults.Knobs{"source": 1, "lag_ms": "30s"})), effect: func(t *testing.T, h *history.History) {
			start := h.HealAtMs - 120_000
			if lag := meanWatermarkLag(h, start+60_000, h.HealAtMs); lag < 38_000 {
				t.Fatalf("watermark %d ms behind processing time under a 30 s lag, want >= 38 s", lag)
			}
			if lag := meanWatermarkLag(h, h.HealAtMs+40_000, h.HealAtMs+60_000); lag > 15_000 {
				t.Fatalf("healed: watermark still %d ms behind", lag)
			}
		}},
		faults.QueryShapeChange: {cfg: testConfig(tableQuery, k(faults.QueryShapeChange, faults.Knobs{"starting_offsets": "earliest"})), effect: func(t *testing.T, h *history.History) {
			if len(h.Restarts) != 1 || !h.Restarts[0].FreshCheckpoint || !strings.Contains(h.Restarts[0].Query, "shuffle_partitions: 6") {
				t.Fatalf("restarts %+v", h.Restarts)
			}
			if h.InitialQuery != tableQuery || h.Partitions != 6 || h.Query != h.Restarts[0].Query {
				t.Fatalf("initial %q final %q partitions %d", h.InitialQuery, h.Query, h.Partitions)
			}
			// The new query's empty state re-emits the log from the start,
			// and the table (new query id, new txnAppId) keeps both.
			twice := 0
			for _, n := range tableCounts(h) {
				if n > 1 {
					twice++
				}
			}
			if twice < 1000 {
				t.Fatalf("%d events in the table twice, want the re-read log", twice)
			}
		}},
		faults.CrashRandom: {cfg: testConfig(tableQuery, k(faults.CrashRandom, faults.Knobs{"rate": 0.2})), effect: func(t *testing.T, h *history.History) {
			for _, c := range h.Crashes {
				if c.Point != "random" {
					t.Fatalf("crash %+v", c)
				}
			}
			if len(h.Restarts) != len(h.Crashes) {
				t.Fatalf("%d crashes, %d restarts", len(h.Crashes), len(h.Restarts))
			}
			checkExactlyOnce(t, h)
		}},
		faults.LostUnsyncedWrite: {cfg: testConfig(tableQuery, map[string]faults.Knobs{faults.CrashRandom: {"rate": 0.3}, faults.LostUnsyncedWrite: nil}), effect: func(t *testing.T, h *history.History) {
			lost := 0
			for _, c := range h.Crashes {
				lost += len(c.LostFiles)
			}
			if lost == 0 {
				t.Fatal("no crash lost a file")
			}
			checkExactlyOnce(t, h) // and the engine recovered every time
		}},
		faults.TornWrite: {cfg: testConfig(tableQuery, map[string]faults.Knobs{faults.CrashRandom: {"rate": 0.3}, faults.TornWrite: {"probability": 1}}), effect: func(t *testing.T, h *history.History) {
			torn := 0
			for _, c := range h.Crashes {
				if c.TornFile != "" {
					torn++
					// WriteAtomic writes under a temp name: the tear never hits
					// a file the engine reads.
					base := c.TornFile[strings.LastIndexByte(c.TornFile, '/')+1:]
					if !strings.HasPrefix(base, ".") || !strings.HasSuffix(base, ".tmp") {
						t.Fatalf("torn %s is not a temp file", c.TornFile)
					}
				}
			}
			if torn == 0 {
				t.Fatal("no torn write")
			}
			checkExactlyOnce(t, h)
		}},
	}
	for _, cp := range crashpoint.All() {
		name := faults.CrashAt(string(cp))
		cases[name] = focused{cfg: testConfig(tableQuery, k(name, faults.Knobs{"rate": 0.1})), effect: func(t *testing.T, h *history.History) {
			for _, c := range h.Crashes {
				if c.Point != string(cp) {
					t.Fatalf("crash %+v", c)
				}
			}
			checkExactlyOnce(t, h) // the table sink skips replays
			switch cp {
			case crashpoint.AfterOffsetsWrite, crashpoint.AfterStateCommit:
				if h.Coverage[MarkReplay] == 0 {
					t.Fatal("no batch was re-run")
				}
			case crashpoint.AfterSinkWrite:
				if h.Coverage[MarkSinkSkipped] == 0 {
					t.Fatal("the table sink never skipped a replayed write")
				}
			}
			crashed := 0
			for _, b := range h.Batches {
				if b.Crashed != "" {
					crashed++
				}
			}
			if reached := cp == crashpoint.AfterSinkWrite || cp == crashpoint.AfterCommit; reached != (crashed > 0) {
				t.Fatalf("%d batch executions recorded as crashed", crashed)
			}
		}}
	}
	return cases
}

func TestEachFaultFires(t *testing.T) {
	cases := focusedCases()
	for _, f := range faults.Catalogue() {
		if f.LiveOnly {
			continue // the simulator refuses it (TestLiveOnlyRefused)
		}
		c, ok := cases[f.Name]
		if !ok {
			t.Errorf("no focused test for fault %s", f.Name)
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			h := run(t, c.cfg, c.seed+1)
			if missing := faults.Missing(h.Faults, h.Coverage); len(missing) > 0 || h.Coverage[f.Name] == 0 {
				t.Fatalf("never fired: %v (coverage %v)", missing, h.Coverage)
			}
			c.effect(t, h)
		})
	}
}

// forRetries calls fn with each copy of fault and the original it repeats.
func forRetries(t *testing.T, h *history.History, fault string, fn func(orig, c history.Copy)) {
	t.Helper()
	orig := map[string]history.Copy{}
	n := 0
	for _, c := range h.Copies {
		switch c.Fault.String() {
		case "":
			orig[c.Event] = c
		case fault:
			o, ok := orig[c.Event]
			if !ok {
				t.Fatalf("copy %+v before its original", c)
			}
			fn(o, c)
			n++
		}
	}
	if n == 0 {
		t.Fatalf("no %s copies", fault)
	}
}

// meanWatermarkLag is how far the watermark trails processing time, on
// average over the batches run in [from, to).
func meanWatermarkLag(h *history.History, from, to int64) int64 {
	sum, n := int64(0), int64(0)
	for _, b := range h.Batches {
		if b.AtMs >= from && b.AtMs < to {
			sum += b.AtMs - b.WatermarkMs
			n++
		}
	}
	if n == 0 {
		return -1
	}
	return sum / n
}

// TestRestampedRetriesEscapeEventTimeKey is the seed articles' failure mode:
// dropDuplicates keyed on (id, event time) lets re-stamped retries through.
func TestRestampedRetriesEscapeEventTimeKey(t *testing.T) {
	q := "dedup: {api: dropDuplicates, keys: [id, ts]}\nwatermark: {column: ts, delay: 10 seconds}\nsink: {kind: table}\n"
	h := run(t, testConfig(q, map[string]faults.Knobs{faults.ProducerRetryRestamped: {"probability": 0.2}}), 1)
	if !h.EventTimeInKey {
		t.Fatal("EventTimeInKey not set")
	}
	twice := 0
	for _, n := range tableCounts(h) {
		if n > 1 {
			twice++
		}
	}
	if twice == 0 {
		t.Fatal("no re-stamped retry got through")
	}
	// Keeping the event time, the same query catches every retry.
	h = run(t, testConfig(q, map[string]faults.Knobs{faults.ProducerRetry: {"probability": 0.2}}), 1)
	checkExactlyOnce(t, h)
}

// TestOfflineRetriesAreLate: copies from clients offline longer than the
// watermark delay keep their old event time and are dropped as late.
func TestOfflineRetriesAreLate(t *testing.T) {
	h := run(t, testConfig(tableQuery, map[string]faults.Knobs{faults.ProducerRetry: {
		"probability": 0.1, "offline_fraction": 1, "offline_min_ms": "1m", "offline_max_ms": "1m"}}), 1)
	if h.Coverage[faults.ProducerRetry+"/offline"] == 0 {
		t.Fatal("no offline retry")
	}
	outcome := map[int]history.Outcome{}
	for _, b := range h.Batches {
		for j, i := range b.Input {
			outcome[int(i)] = b.Outcomes[j]
		}
	}
	for i, c := range h.Copies {
		if c.Fault.String() == faults.ProducerRetry && outcome[i] != history.Late {
			t.Fatalf("offline copy %+v: %s, want late", c, outcome[i])
		}
	}
	checkExactlyOnce(t, h)
}

// TestReplayDuplicatesAppendSink is the seed articles' replay duplicate: a
// crash after the sink write and before the commit re-runs the batch, and
// a plain append sink keeps both deliveries; the MERGE sink does not.
func TestReplayDuplicatesAppendSink(t *testing.T) {
	plan := map[string]faults.Knobs{faults.CrashAfterSinkWrite: {"rate": 0.1}}
	h := run(t, testConfig(appendQuery, plan), 1)
	delivered := map[int64]int{}
	for _, w := range h.Writes {
		if len(w.Rows) > 0 {
			delivered[w.BatchID]++
		}
	}
	twice := 0
	for _, n := range delivered {
		if n > 1 {
			twice++
		}
	}
	inTable := map[int]int{}
	dups := 0
	for _, i := range h.Table {
		inTable[int(i)]++
		if inTable[int(i)] == 2 {
			dups++
		}
	}
	if twice == 0 || dups == 0 {
		t.Fatalf("batches delivered twice: %d, copies in the table twice: %d", twice, dups)
	}
	checkExactlyOnce(t, run(t, testConfig(mergeQuery, plan), 1))
}

// TestShapeChangeStartingOffsets: from the old query's position the new one
// re-emits nothing (no retries cross the change), a MERGE sink absorbs a
// re-read from the start, and starting at the end skips what arrived during
// the redeploy.
func TestShapeChangeStartingOffsets(t *testing.T) {
	plan := func(start string) map[string]faults.Knobs {
		return map[string]faults.Knobs{faults.QueryShapeChange: {"starting_offsets": start}}
	}
	checkExactlyOnce(t, run(t, testConfig(tableQuery, plan("previous")), 1))
	checkExactlyOnce(t, run(t, testConfig(mergeQuery, plan("earliest")), 1))
	h, err := Run(testConfig(tableQuery, plan("latest")), 1)
	if err != nil {
		t.Fatal(err)
	}
	inTable := tableCounts(h)
	missed := 0
	for _, c := range h.Copies {
		if inTable[c.Event] == 0 {
			missed++
			if c.AppendedAtMs < h.Restarts[0].AtMs-6000 || c.AppendedAtMs > h.Restarts[0].AtMs {
				t.Fatalf("missed %+v, appended outside the redeploy before %d", c, h.Restarts[0].AtMs)
			}
		}
	}
	if missed == 0 {
		t.Fatal("starting at latest skipped nothing")
	}
	// The seed article's warning: a fixed txnAppId across a new checkpoint
	// makes the table skip the new query's batches (its ids start at 0
	// again), so events after the change are lost.
	fixed := "dedup: {api: dropDuplicatesWithinWatermark, keys: [id]}\nwatermark: {column: ts, delay: 10 seconds}\nsink: {kind: table, app_id: payments-dedup-v1}\n"
	h = run(t, testConfig(fixed, plan("previous")), 1)
	inTable = tableCounts(h)
	lost := 0
	for _, c := range h.Copies {
		if inTable[c.Event] == 0 {
			lost++
		}
	}
	if lost == 0 || h.Coverage[MarkSinkSkipped] == 0 {
		t.Fatalf("a fixed app id lost %d events across the shape change", lost)
	}
}

// TestDeadInputHoldsWatermark: under min, an input that has never produced
// keeps the global watermark at 0 until it comes back at the heal.
func TestDeadInputHoldsWatermark(t *testing.T) {
	h := run(t, twoSourceConfig(map[string]faults.Knobs{faults.LaggingInput: {"source": 1, "dead": true}}), 1)
	for _, c := range h.Copies {
		if c.Source == 1 && c.AppendedAtMs < h.HealAtMs {
			t.Fatalf("dead input appended %+v", c)
		}
	}
	for _, b := range h.Batches {
		if b.AtMs <= h.HealAtMs && b.WatermarkMs != 0 {
			t.Fatalf("batch %d at %d: watermark %d with a dead input", b.BatchID, b.AtMs, b.WatermarkMs)
		}
	}
	if h.Batches[len(h.Batches)-1].WatermarkMs == 0 {
		t.Fatal("the watermark never moved after the heal")
	}
}

package sim

import (
	"math"
	"slices"
	"time"

	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/sink"
	"github.com/dedupsim/dedupsim/faults"
)

// Memory of a run, measured: peak RSS of `dedupsim run` (simulation,
// checking, reports) under /usr/bin/time -v, with the collector's soft
// memory limit run sets from the prediction (LimitBytes, never under
// MinLimitBytes), fitted as bytes per copy plus bytes per logical event
// and rounded up. A run keeps every copy in its history (56 bytes, its
// row's input index and outcome 5 more, its sink row and table entry 4
// each) and the checker indexes them
// (about 60 bytes a copy: rows, reads, emits, copies by event; the
// margin 12 bytes a row more while it sorts them). A log row is not
// kept: it is rendered from its copy when the engine reads it, and a
// table or append sink keeps only the copy index of each row
// (4 bytes, in the simulator; the inner sink gets no rows); a merge sink keeps its rows and a key index.
// The live heap peaks at the end of the simulation (the history, the
// sink's table, the checkpoint's files: about 175 MiB for 1 M copies);
// the checker's index is a little below. Measured (Go 1.26, this commit,
// on a machine loaded by other work), the largest of 2 runs: 1 M copies
// of 1 M events, no faults, 283,020 KiB (live peak 184 MiB); 0.35 M:
// 165,264 KiB and 0.5 M: 165,080 KiB (under the floor of the limit,
// MinLimitBytes, the heap grows towards it, up to
// min(floor, 2 x grown): see Prediction.AtOnce); 2 M: 530,736 KiB; 0.70 M copies
// of 0.50 M events with retries and duplicate appends, 201,624 KiB;
// dropDuplicates without a watermark (state holds every key), 1 M:
// 534,016 KiB; 1 M with a 200-byte payload column, 310,568 KiB; a merge
// sink, 1 M: 437,616 KiB, with the 200-byte column 684,012 KiB. The model
// predicts each within 1.15x, above it. Before a copy was 56 bytes and an
// outcome a byte (80 bytes and a 16-byte string), copy indices 32 bits
// (64), the margin's sort 12 bytes a row (48) and the floor 128 MiB (256),
// 1 M copies took 352 MB (live peak 250 MiB). Without the limit the collector lets the heap
// reach twice what was live at its last cycle. Before rows were rendered
// on read, 1 M copies took 0.63 to 0.78 GB; before the checker's index was
// flat arrays and history.json was streamed, 1.31 to 1.38 GB. The
// performance work that shrinks a copy must re-measure and update these
// figures (TestPredictMatchesMeasurement pins the model to the 1 M-copy
// measurement, TestPredictMatchesMeasurements to the others and the
// limit to their live peaks).
const (
	// BytesPerCopyMeasured is the cost of one appended copy.
	BytesPerCopyMeasured = 250
	// BytesPerEventMeasured is the cost of one logical event, beyond its
	// copies.
	BytesPerEventMeasured = 35
	// bytesPerKeptKey is one key a state that never evicts holds until
	// the run ends (dropDuplicates without the event time in its key):
	// measured about 260 with the memory store.
	bytesPerKeptKey = 290
	// bytesPerMergeRow is one event's row in a merge sink's table and its
	// key in the sink's index (measured about 160).
	bytesPerMergeRow = 180
	// bytesPerRowByte: each row byte beyond the default row's (further key
	// columns, payload columns) of a row a merge sink keeps (measured
	// 1.1).
	bytesPerRowByte = 1.2
	// bytesPerRenderedByte: each such byte of a row no one keeps, rendered
	// for its batch and collected after (measured 0.13).
	bytesPerRenderedByte = 0.15
	// bytesPerBoundedID is one id of a bounded key space, kept for the run.
	bytesPerBoundedID = 48
	// bytesPerProducer is one producer's clock.
	bytesPerProducer = 48
	// baseBytes is the process before the run: the binary, the runtime,
	// the engine.
	baseBytes = 40 << 20
	// limitShare is LimitBytes's share of the rest.
	limitShare = 0.9
	// MinLimitBytes is the least soft memory limit a run is given
	// (scenarios.SoftLimit): a limit of a few tens of MiB had the
	// collector run all the time for a small run, chasing the runtime's
	// own memory (the catalogue at -j 2: 937 collections instead of 59);
	// at 128 MiB the catalogue at -j 2 collects 57 to 60 times, as at
	// 256 MiB did, and a 1 M-copy run's limit is its own.
	MinLimitBytes = 128 << 20
)

// Prediction is what a run will cost, from its configuration alone, so
// that a run the machine cannot hold is refused before it starts.
type Prediction struct {
	// Events are the logical events the producers create: each source's
	// mean rate times the run's length (fault_phase + heal_phase), summed.
	Events float64
	// CopyFactor is copies per event: the fault phase's retries and
	// duplicate appends add copies (in swarm mode every knob the plan
	// does not pin is taken at the top of its range: an upper bound).
	CopyFactor float64
	// Copies is Events x CopyFactor.
	Copies float64
	// BytesPerCopy is the peak memory per copy, its event's share and its
	// row's extra columns included.
	BytesPerCopy float64
	// FixedBytes is the part that does not grow with the copies: the
	// process, bounded key spaces' ids, producers, and for a run whose
	// soft limit is the floor (MinLimitBytes) the heap the collector lets
	// grow up to it.
	FixedBytes float64
	// PeakBytes is FixedBytes + Copies x BytesPerCopy.
	PeakBytes float64
	// LimitBytes is the Go collector's soft memory limit for the run
	// (debug.SetMemoryLimit; scenarios.SoftLimit sets it for the runs at
	// once), which the figures were measured under: 0.9 of what PeakBytes
	// gives the runtime beyond the process before the run, so that RSS
	// (the heap held near the limit, the binary, the runtime's own) stays
	// under PeakBytes. It is 1.2 to 1.5 times the live heap's peak of
	// each run measured, so the collector, which then collects as the heap
	// nears the limit instead of letting it grow to twice what was live,
	// cycles a few times more often and the runs took no longer.
	LimitBytes float64
	// GrownBytes is what the run's heap grows beyond the process before
	// it (FixedBytes - the process + Copies x BytesPerCopy, the floor's
	// share aside).
	GrownBytes float64
	// FloorBytes is the part of FixedBytes the collector may grow under
	// the soft limit's floor (MinLimitBytes) for a run whose own limit is
	// below it; see AtOnce.
	FloorBytes float64
	// RatePerSec and Duration are the summed mean rate and the run length
	// the events come from.
	RatePerSec float64
	Duration   time.Duration
}

// Predict returns the copies and the peak memory a run of c will need. It
// validates c first (a *FieldError for a value outside its domain).
func (c Config) Predict() (Prediction, error) {
	p, err := c.prepare()
	if err != nil {
		return Prediction{}, err
	}
	run := time.Duration(p.FaultPhase + p.HealPhase)
	faultShare := float64(p.FaultPhase) / float64(run)
	extra, err := extraCopies(p.Plan)
	if err != nil {
		return Prediction{}, err
	}
	pr := Prediction{FixedBytes: baseBytes, Duration: run}
	for _, s := range p.sourceCfgs {
		r := s.Rate.meanRate()
		pr.RatePerSec += r
		pr.Events += r * run.Seconds()
		pr.FixedBytes += float64(s.Producers) * bytesPerProducer
		if s.Keys.Kind == KeysBounded {
			pr.FixedBytes += float64(s.Keys.Size) * bytesPerBoundedID
		}
	}
	pr.CopyFactor = 1 + faultShare*extra
	pr.Copies = pr.Events * pr.CopyFactor
	rowExtra := float64(p.layout.extraBytes())
	perEvent := float64(BytesPerEventMeasured)
	if keepsEveryKey(p) {
		perEvent += bytesPerKeptKey
	}
	if p.q.Sink.Kind == sink.KindMerge {
		perEvent += bytesPerMergeRow + rowExtra*bytesPerRowByte
	}
	pr.BytesPerCopy = BytesPerCopyMeasured + perEvent/pr.CopyFactor + rowExtra*bytesPerRenderedByte
	pr.GrownBytes = pr.FixedBytes - baseBytes + pr.Copies*pr.BytesPerCopy
	pr.LimitBytes = limitShare * pr.GrownBytes
	return pr.AtOnce(1, pr.GrownBytes), nil
}

// AtOnce is p for one of n runs at once in one process, the largest of
// which grows grown bytes (its GrownBytes): the soft limit is one for the
// process, max(n x the largest LimitBytes, MinLimitBytes)
// (scenarios.SoftLimit). When n x LimitBytes is under the floor the
// collector lets the process's heap grow to twice what is live (live is
// under n x grown) until the floor stops it: the n runs then take up to
// max(0, min(floor, 2 n grown) - n grown) more together, and each is
// charged its nth of it in FloorBytes (a fixed part of its peak). For
// n = 1 that is the run alone (Predict); charging every run of n the
// whole growth refused runs that fit (4 runs of 350 k copies at -j 4
// under 560m: 168 MiB each against a 140 MiB share, 135 MiB without).
func (p Prediction) AtOnce(n int, grown float64) Prediction {
	n = max(n, 1)
	p.FixedBytes -= p.FloorBytes
	p.FloorBytes = 0
	if ng := float64(n) * grown; limitShare*ng < MinLimitBytes && ng > 0 {
		p.FloorBytes = max(0, min(MinLimitBytes, 2*ng)-ng) / float64(n)
	}
	p.FixedBytes += p.FloorBytes
	p.PeakBytes = p.FixedBytes + p.Copies*p.BytesPerCopy
	if math.IsInf(p.PeakBytes, 0) || math.IsNaN(p.PeakBytes) {
		p.PeakBytes = math.MaxFloat64
	}
	return p
}

// keepsEveryKey: the query's state never evicts a key (dropDuplicates
// without a watermark, §2.2, or whose key does not hold the watermark's
// event-time column, §3.3), so it holds every event's key until the run
// ends.
func keepsEveryKey(p *prepared) bool {
	q := p.q
	if q.API != query.DropDuplicates {
		return false
	}
	col := q.EventTimeColumn()
	return col == "" || !slices.Contains(q.Keys, col)
}

// extraCopies is the mean number of copies beyond the first that a fault
// phase event gets from the plan: retries (each retry fault appends
// 1..copies_max more with its probability) and duplicate appends of every
// send. Swarm mode takes every unpinned knob of every candidate at the top
// of the range it may draw from.
func extraCopies(plan faults.Plan) (float64, error) {
	knob := func(fault, name string) (float64, bool, error) {
		f, ok := faults.Lookup(fault)
		if !ok {
			return 0, false, nil
		}
		k, ok := f.Knob(name)
		if !ok {
			return 0, false, nil
		}
		given, listed := plan.Faults[fault]
		if v, pinned := given[name]; pinned {
			x, err := faults.ParseValue(fault, name, v)
			return x, true, err
		}
		if !plan.Swarm {
			return k.Default, listed, nil
		}
		if !listed && len(plan.Faults) > 0 {
			return 0, false, nil // swarm over the listed faults only
		}
		hi := k.Max
		if k.SwarmMax > k.Min && k.SwarmMax < hi {
			hi = k.SwarmMax
		}
		return hi, true, nil
	}
	retries := 0.0
	for _, f := range []string{faults.ProducerRetry, faults.ProducerRetryRestamped} {
		p, on, err := knob(f, "probability")
		if err != nil {
			return 0, err
		}
		n, _, err := knob(f, "copies_max")
		if err != nil {
			return 0, err
		}
		if on {
			retries += p * (1 + n) / 2
		}
	}
	dup, on, err := knob(faults.DuplicateAppend, "probability")
	if err != nil {
		return 0, err
	}
	if !on {
		dup = 0
	}
	return (1+retries)*(1+dup) - 1, nil
}

// extraBytes is how much longer a row is than the default layout's
// {"id":...,"ts":...,"_copy":N}: longer column names, further key
// columns, payload columns (fresh ids of about 10 bytes assumed).
func (l *rowLayout) extraBytes() int {
	n := max(0, len(l.idCol)-len("id")) + max(0, len(l.eventCol)-len("ts"))
	for _, k := range l.keyCols {
		n += 2*len(k) + 6 + 10
	}
	for _, c := range l.payload {
		n += len(c.Name) + 4
		switch c.Type {
		case ColumnString:
			n += c.Bytes + 2
		case ColumnLong:
			n += 16
		case ColumnDouble:
			n += 6
		case ColumnBoolean:
			n += 5
		}
	}
	return n
}

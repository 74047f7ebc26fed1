package sim

import (
	"math"
	"time"

	"github.com/dedupsim/dedupsim/faults"
)

// Memory of a run, measured: peak RSS of `dedupsim run` (simulation,
// checking, reports and history.json) under /usr/bin/time -v, fitted as
// bytes per copy plus bytes per logical event and rounded up. A run keeps
// every copy (the history, the log, each batch's input) and every event
// (the table, the checker's per-event index, the reports) until it ends,
// and Go's collector lets the heap grow to about twice what is live
// before it collects, which the figures include. Measured (Go 1.26, this
// commit): 1 M copies of 1 M events, no faults, 1.31 GB (1.31 KB per
// copy); 0.5 M: 0.62 to 0.88 GB from one run to the next (collector
// timing); 2 M: 2.87 GB; 0.9 M copies of 0.5 M events with retries and
// duplicate appends, 0.78 GB; dropDuplicates without a watermark (state
// holds every key), 1 M: 1.49 GB; 1 M with a 200-byte payload column,
// 1.88 GB. The model predicts each within 1.45x, above it. The
// performance work that shrinks a copy must re-measure and update these
// figures (TestPredictMatchesMeasurement pins the model to the 1 M-copy
// measurement).
const (
	// BytesPerCopyMeasured is the cost of one appended copy.
	BytesPerCopyMeasured = 400
	// BytesPerEventMeasured is the cost of one logical event, beyond its
	// copies.
	BytesPerEventMeasured = 1250
	// bytesPerRowByte: each row byte beyond the default row's (further key
	// columns, payload columns) lives in the log's arena, in the state
	// store's keys and in the table's rows (measured 2.4).
	bytesPerRowByte = 2.5
	// bytesPerBoundedID is one id of a bounded key space, kept for the run.
	bytesPerBoundedID = 48
	// bytesPerProducer is one producer's clock.
	bytesPerProducer = 48
	// baseBytes is the process before the run: the binary, the runtime,
	// the engine.
	baseBytes = 40 << 20
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
	// process, bounded key spaces' ids, producers.
	FixedBytes float64
	// PeakBytes is FixedBytes + Copies x BytesPerCopy.
	PeakBytes float64
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
	pr.BytesPerCopy = BytesPerCopyMeasured + BytesPerEventMeasured/pr.CopyFactor + float64(p.layout.extraBytes())*bytesPerRowByte
	pr.PeakBytes = pr.FixedBytes + pr.Copies*pr.BytesPerCopy
	if math.IsInf(pr.PeakBytes, 0) || math.IsNaN(pr.PeakBytes) {
		pr.PeakBytes = math.MaxFloat64
	}
	return pr, nil
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

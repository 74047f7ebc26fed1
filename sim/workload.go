package sim

import (
	"math"
	"math/rand/v2"
	"strconv"
	"unsafe"

	"github.com/dedupsim/dedupsim/faults"
	"github.com/dedupsim/dedupsim/sim/history"
)

// The workload: per source, a population of producers sends logical events
// whose arrival follows a rate profile, with ids from a key space, each
// producer stamping event time with its own clock. Faults of the producer,
// clock and source classes bend it: retries (keeping or re-stamping the
// event time, with fixed, exponential, log-normal or offline-tail gaps),
// duplicate appends, skewed and future clocks, silence, lag.
//
// Every random choice comes from a stream named after the source and the
// purpose, so the original events of a source are the same whatever faults
// are on: retries, duplicates and skew draw from their own streams.
// Times are microseconds of processing time.

// producer is one producer's clock: honest unless skewed or far ahead.
type producer struct {
	offsetUs float64
	driftPpm float64
	aheadUs  int64
	skewed   bool
	future   bool
}

// retryModel is one retry fault on one source.
type retryModel struct {
	fault        uint8 // faultRetry or faultRestamped
	r            *rand.Rand
	p            float64
	copiesMax    int
	gap          string
	gapUs        float64
	sigma        float64
	offlineFrac  float64
	offlineMinUs float64
	offlineMaxUs float64
}

// Copy faults, the Fault field of a copy.
const (
	faultNone uint8 = iota
	faultRetry
	faultRestamped
	faultDup
)

var faultNames = [...]string{"", faults.ProducerRetry, faults.ProducerRetryRestamped, faults.DuplicateAppend}

// faultIDs are the history's Fault values of faultNames.
var faultIDs = [...]history.Fault{history.NoFault, history.MustFault(faults.ProducerRetry),
	history.MustFault(faults.ProducerRetryRestamped), history.MustFault(faults.DuplicateAppend)}

// Flags on a pending copy, for coverage marks at append time.
const (
	flagOffline uint8 = 1 << iota
	flagSkewed
	flagFuture
	flagLagged
)

// gapUs draws the time between two sends.
func (m *retryModel) drawGapUs() (int64, bool) {
	if m.offlineFrac > 0 && m.r.Float64() < m.offlineFrac {
		return logUniformUs(m.r, m.offlineMinUs, m.offlineMaxUs), true
	}
	switch m.gap {
	case "fixed":
		return clampUs(m.gapUs), false
	case "lognormal":
		return clampUs(m.gapUs * math.Exp(m.sigma*m.r.NormFloat64())), false
	}
	return clampUs(m.r.ExpFloat64() * m.gapUs), false
}

// sourceGen generates one source's copies.
type sourceGen struct {
	idx  int
	name string
	cfg  SourceConfig
	top  *topic

	rArr, rKey, rProd, rDelay, rBurst *rand.Rand

	// Arrivals: the next occurrence time, and the rate profile.
	nextUs     int64
	originUs   int64   // diurnal: the sine's rising zero crossing
	perUs      float64 // base rate per µs
	burstStart int64   // bursts: the current or next burst [burstStart, burstEnd)
	burstEnd   int64

	idPrefix  []byte
	counter   int64
	boundedID []string
	producers []producer
	rr        int
	partHash  bool

	// Faults.
	retries       []*retryModel
	dupR          *rand.Rand
	dupP          float64
	silenceFrom   int64
	silenceTo     int64
	silenceMarked bool
	lagUs         int64
	dead, lagOn   bool
}

func (w *world) newSourceGen(i int, cfg SourceConfig) *sourceGen {
	name := cfg.Name
	st := func(purpose string) *rand.Rand { return Stream(w.seed, "src/"+name+"/"+purpose) }
	g := &sourceGen{
		idx: i, name: name, cfg: cfg, top: w.topics[i],
		rArr: st("arrivals"), rKey: st("keys"), rProd: st("producers"), rDelay: st("send-delay"), rBurst: st("bursts"),
		perUs: cfg.Rate.PerSec / 1e6, originUs: w.startUs,
		partHash:    cfg.Partitioner == "key",
		producers:   make([]producer, cfg.Producers),
		silenceFrom: math.MaxInt64, silenceTo: math.MaxInt64,
	}
	if cfg.Keys.Kind == KeysBounded {
		g.boundedID = make([]string, cfg.Keys.Size)
		for k := range g.boundedID {
			g.boundedID[k] = "d" + strconv.Itoa(i) + "-" + strconv.Itoa(k)
		}
	} else {
		g.idPrefix = []byte("e" + strconv.Itoa(i) + "-")
	}
	if cfg.Rate.Profile == RateBursts {
		g.burstStart = w.startUs + int64(g.rBurst.ExpFloat64()*float64(cfg.Rate.BurstEvery.Ms())*1e3)
		g.burstEnd = g.burstStart + cfg.Rate.BurstLength.Ms()*1e3
	}
	g.nextUs = g.next(w.startUs)
	w.setupFaults(g)
	return g
}

// setupFaults draws the source's fault parameters, each from its own
// stream.
func (w *world) setupFaults(g *sourceGen) {
	s := w.set
	fst := func(fault string) *rand.Rand { return Stream(w.seed, "fault/"+fault+"/"+g.name) }
	for _, f := range []struct {
		name string
		code uint8
	}{{faults.ProducerRetry, faultRetry}, {faults.ProducerRetryRestamped, faultRestamped}} {
		if !s.On(f.name) {
			continue
		}
		g.retries = append(g.retries, &retryModel{
			fault: f.code, r: fst(f.name), p: s.Value(f.name, "probability"), copiesMax: s.Int(f.name, "copies_max"),
			gap: s.Choice(f.name, "gap"), gapUs: s.Value(f.name, "gap_ms") * 1e3, sigma: s.Value(f.name, "gap_sigma"),
			offlineFrac:  s.Value(f.name, "offline_fraction"),
			offlineMinUs: s.Value(f.name, "offline_min_ms") * 1e3, offlineMaxUs: s.Value(f.name, "offline_max_ms") * 1e3,
		})
	}
	if s.On(faults.DuplicateAppend) {
		g.dupR, g.dupP = fst(faults.DuplicateAppend), s.Value(faults.DuplicateAppend, "probability")
	}
	if s.On(faults.ClockSkew) {
		r := fst(faults.ClockSkew)
		frac := s.Value(faults.ClockSkew, "producers_fraction")
		offUs := s.Value(faults.ClockSkew, "offset_max_ms") * 1e3
		ppm := s.Value(faults.ClockSkew, "drift_ppm_max")
		for i := range g.producers {
			p := &g.producers[i]
			skewed, off, drift := r.Float64() < frac, (2*r.Float64()-1)*offUs, (2*r.Float64()-1)*ppm
			if skewed {
				p.skewed, p.offsetUs, p.driftPpm = true, off, drift
			}
		}
	}
	if s.On(faults.FutureTimestamp) {
		r := fst(faults.FutureTimestamp)
		n := max(1, int(math.Round(s.Value(faults.FutureTimestamp, "producers_fraction")*float64(len(g.producers)))))
		ahead := s.Ms(faults.FutureTimestamp, "ahead_ms") * 1e3
		for _, i := range r.Perm(len(g.producers))[:n] {
			g.producers[i].future, g.producers[i].aheadUs = true, ahead
		}
	}
	if w.silenceSource == g.idx {
		from := w.startUs + int64(s.Value(faults.SourceSilence, "start_frac")*float64(w.healUs-w.startUs))
		g.silenceFrom = from
		g.silenceTo = min(from+s.Ms(faults.SourceSilence, "duration_ms")*1e3, w.healUs)
	}
	if w.lagSource == g.idx {
		g.lagOn = true
		g.lagUs = s.Ms(faults.LaggingInput, "lag_ms") * 1e3
		g.dead = s.Bool(faults.LaggingInput, "dead")
	}
}

// horizonUs bounds arrival times: far beyond any run (runs end before the
// year 9001, 2^57 µs), and far from overflow. An arrival drawn beyond it,
// as a rate of 1e-14 per second draws one, is never: int64 arithmetic on
// it would wrap to the past.
const horizonUs = int64(1) << 62

// never is the arrival time of an event that does not happen.
const never = int64(math.MaxInt64)

// next returns the next occurrence after t: a Poisson process whose rate
// follows the profile (piecewise-constant for bursts, thinning for the
// diurnal sine). Any rate in (0, 1e7] works: an occurrence beyond
// horizonUs is never.
func (g *sourceGen) next(t int64) int64 {
	r := g.cfg.Rate
	switch r.Profile {
	case RateDiurnal:
		maxPerUs := g.perUs * (1 + r.Amplitude)
		periodUs := float64(r.Period.Ms()) * 1e3
		x := float64(t)
		for range 1 << 20 {
			x += g.rArr.ExpFloat64() / maxPerUs
			if !(x < float64(horizonUs)) {
				return never
			}
			phase := 2 * math.Pi * math.Mod(x-float64(g.originUs), periodUs) / periodUs
			if g.rArr.Float64()*(1+r.Amplitude) < 1+r.Amplitude*math.Sin(phase) {
				return int64(x)
			}
		}
		return int64(x)
	case RateBursts:
		lengthUs := r.BurstLength.Ms() * 1e3
		everyUs := float64(r.BurstEvery.Ms()) * 1e3
		cur := t
		for range 1 << 20 {
			if cur >= horizonUs {
				return never
			}
			for cur >= g.burstEnd {
				g.burstStart = g.burstEnd + int64(g.rBurst.ExpFloat64()*everyUs)
				g.burstEnd = g.burstStart + lengthUs
			}
			rate, segEnd := g.perUs, g.burstStart
			if cur >= g.burstStart {
				rate, segEnd = g.perUs*r.BurstFactor, g.burstEnd
			}
			if dt := g.rArr.ExpFloat64() / rate; dt < float64(horizonUs-cur) {
				if x := cur + int64(dt); x < segEnd {
					return x
				}
			}
			cur = segEnd // memoryless: restart at the boundary
		}
		return cur
	}
	dt := g.rArr.ExpFloat64() / g.perUs
	if !(dt < float64(horizonUs-t)) {
		return never
	}
	return t + int64(dt)
}

// clock is producer p's reading of processing time t.
func (g *sourceGen) clock(p *producer, t int64, inFault bool, startUs int64) (int64, uint8) {
	if !inFault {
		return t, 0
	}
	var flags uint8
	if p.skewed {
		t += int64(p.offsetUs + p.driftPpm*float64(t-startUs)/1e6)
		flags |= flagSkewed
	}
	if p.future {
		t += p.aheadUs
		flags |= flagFuture
	}
	return t, flags
}

// truncate rounds an event time down to the source's timestamp precision
// (a producer clock that only has whole seconds, say); unchanged without one.
func (g *sourceGen) truncate(us int64) int64 {
	p := g.cfg.TimestampPrecision.Ms() * 1e3
	if p <= 0 {
		return us
	}
	r := us % p
	if r < 0 {
		r += p // floor, also before 1970
	}
	return us - r
}

// pending is a copy scheduled for append.
type pending struct {
	atUs    int64
	seq     uint64
	eventUs int64
	event   string
	src     int32
	part    int32
	copyNo  int32
	dupNo   int32 // >= 0: the broker appends a duplicate right after
	fault   uint8
	flags   uint8
}

func (a *pending) before(b *pending) bool {
	return a.atUs < b.atUs || (a.atUs == b.atUs && a.seq < b.seq)
}

// generate creates the source's events that occur up to t (and before the
// producers stop).
func (w *world) generate(g *sourceGen, t int64) {
	for g.nextUs <= t && g.nextUs < w.endUs {
		occ := g.nextUs
		g.nextUs = g.next(occ)
		w.createEvent(g, occ)
	}
}

func (w *world) createEvent(g *sourceGen, occ int64) {
	// Workload draws first, always the same number per event.
	var event string
	var pi int
	if g.boundedID != nil {
		k := g.rKey.IntN(len(g.boundedID))
		event, pi = g.boundedID[k], k%len(g.producers)
	} else {
		event = w.freshID(g)
		pi = g.rProd.IntN(len(g.producers))
	}
	sendUs := occ + g.cfg.SendDelay.sampleUs(g.rDelay)
	inFault := occ < w.healUs
	if inFault && occ >= g.silenceFrom && occ < g.silenceTo {
		if !g.silenceMarked {
			g.silenceMarked = true
			w.cov.Mark(faults.SourceSilence)
		}
		return
	}
	p := &g.producers[pi]
	eventUs, flags := g.clock(p, occ, inFault, w.startUs)
	eventUs = g.truncate(eventUs)
	part := 0
	if g.partHash {
		part = int(fnv32a(event) % uint32(len(g.top.parts)))
	}
	copyNo := int32(0)
	w.schedule(g, sendUs, eventUs, event, &copyNo, faultNone, flags, part, inFault)
	if !inFault {
		return
	}
	for _, m := range g.retries {
		if m.r.Float64() >= m.p {
			continue
		}
		n := 1 + m.r.IntN(m.copiesMax)
		t := sendUs
		for range n {
			gap, offline := m.drawGapUs()
			t += gap
			ev, fl := eventUs, flags
			if m.fault == faultRestamped {
				ev, fl = g.clock(p, t, t < w.healUs, w.startUs)
				ev = g.truncate(ev)
			}
			if offline {
				fl |= flagOffline
			}
			w.schedule(g, t, ev, event, &copyNo, m.fault, fl, part, inFault)
		}
	}
}

// freshID writes "e<source>-<n>" into the id arena and returns it as a string
// over those bytes (never changed afterwards).
func (w *world) freshID(g *sourceGen) string {
	b := w.ids.reserve(32)
	b = append(b, g.idPrefix...)
	b = strconv.AppendInt(b, g.counter, 10)
	g.counter++
	w.ids.commit(b)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// schedule queues one send; a duplicate append is decided with it.
func (w *world) schedule(g *sourceGen, sendUs, eventUs int64, event string, copyNo *int32, fault, flags uint8, part int, inFault bool) {
	if !g.partHash {
		part = g.rr % len(g.top.parts)
		g.rr++
	}
	at := sendUs
	if g.lagOn && sendUs < w.healUs {
		flags |= flagLagged
		if g.dead {
			at = w.healUs
		} else {
			at = sendUs + g.lagUs
		}
	}
	c := pending{atUs: at, seq: w.seq, eventUs: eventUs, event: event, src: int32(g.idx), part: int32(part),
		copyNo: *copyNo, dupNo: -1, fault: fault, flags: flags}
	w.seq++
	*copyNo++
	if g.dupR != nil && inFault && g.dupR.Float64() < g.dupP {
		c.dupNo = *copyNo
		*copyNo++
	}
	if at <= w.endUs {
		w.queue.push(c)
	}
}

// fnv32a is FNV-1a, the partitioner's hash of an event id (all copies of an
// event land in one partition, as Kafka's key partitioner puts them).
func fnv32a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// Stream returns the random stream of one subsystem of a run: a PCG seeded
// from SHA-256 of (seed, name). Every subsystem draws from its own stream,
// so a change in one (another fault mix, a different number of crashes)
// never shifts the numbers another sees: the workload of a seed is the same
// whatever the faults do. Names are paths such as "src/web/arrivals" or
// "fault/crash-random".
func Stream(seed uint64, name string) *rand.Rand {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h := sha256.New()
	h.Write(b[:])
	h.Write([]byte(name))
	sum := h.Sum(nil)
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[0:8]), binary.LittleEndian.Uint64(sum[8:16])))
}

// sampleUs draws one duration in microseconds.
func (d Dist) sampleUs(r *rand.Rand) int64 {
	mean := float64(d.Mean) / 1e3 // ns -> µs
	var x float64
	switch d.Kind {
	case DistFixed:
		return int64(mean)
	case DistExponential:
		x = r.ExpFloat64() * mean
	case DistLogNormal:
		x = mean * math.Exp(d.Sigma*r.NormFloat64())
	case DistUniform:
		x = mean + r.Float64()*(float64(d.Max)/1e3-mean)
	}
	return clampUs(x)
}

// maxGapUs bounds any drawn duration (a log-normal tail can be absurd): a
// year.
const maxGapUs = 366 * 24 * 3600 * 1e6

func clampUs(x float64) int64 {
	if !(x >= 0) {
		return 0
	}
	if x > maxGapUs {
		return int64(maxGapUs)
	}
	return int64(x)
}

// logUniformUs draws log-uniformly in [lo, hi] microseconds.
func logUniformUs(r *rand.Rand, lo, hi float64) int64 {
	if lo > hi {
		lo, hi = hi, lo
	}
	if lo <= 0 {
		lo = 1
	}
	return clampUs(math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo))))
}

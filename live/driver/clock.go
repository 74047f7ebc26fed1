package driver

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dedupsim/dedupsim/engine"
	"github.com/dedupsim/dedupsim/engine/row"
)

// WallClock is the engine's clock in a real run.
type WallClock struct{}

func (WallClock) NowMs() int64 { return time.Now().UnixMilli() }

// ScaledClock is a harness's compressed timeline: processing time Virt0
// at wall time Wall0, running Scale times faster than the wall clock.
type ScaledClock struct {
	Virt0, Wall0 int64
	Scale        float64
}

func (c ScaledClock) NowMs() int64 {
	return c.Virt0 + int64(math.Floor(float64(time.Now().UnixMilli()-c.Wall0)*c.Scale))
}

// maxClockScale bounds --clock's SCALE: a harness compresses hours into
// minutes, not years into milliseconds.
const maxClockScale = 1e6

// ParseClock parses --clock VIRT0:WALL0:SCALE ("": the wall clock).
func ParseClock(s string) (engine.Clock, error) {
	if s == "" {
		return WallClock{}, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("--clock %q: want VIRT0_MS:WALL0_MS:SCALE", s)
	}
	v, err1 := strconv.ParseInt(parts[0], 10, 64)
	w, err2 := strconv.ParseInt(parts[1], 10, 64)
	sc, err3 := strconv.ParseFloat(parts[2], 64)
	if err1 != nil || err2 != nil || err3 != nil || !(sc > 0) || math.IsInf(sc, 0) {
		return nil, fmt.Errorf("--clock %q: want VIRT0_MS:WALL0_MS:SCALE with integer times and a positive scale", s)
	}
	if v < row.MinEventTimeMicros/1000 || v > row.MaxEventTimeMicros/1000 || w < 0 || w > row.MaxEventTimeMicros/1000 || sc > maxClockScale {
		return nil, fmt.Errorf("--clock %q: VIRT0_MS and WALL0_MS must be times in years 0000-9999 (WALL0 from 1970) and SCALE at most %g", s, float64(maxClockScale))
	}
	return ScaledClock{Virt0: v, Wall0: w, Scale: sc}, nil
}

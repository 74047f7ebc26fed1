package query

import "github.com/dedupsim/dedupsim/internal/duration"

// ParseDelay converts a watermark delay to Spark's delayMs: a Spark
// interval string ("10 seconds", "INTERVAL '1' HOUR") or a Go duration
// ("10s", "1d12h"), negative refused as withWatermark refuses it. The
// grammar is package duration's, the one every duration of dedupsim uses.
func ParseDelay(s string) (ms int64, err error) { return duration.Delay(s) }

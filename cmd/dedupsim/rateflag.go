package main

import (
	"fmt"
	"strconv"
	"strings"
)

// rateFlag is a --rate in events (keys) per second, as people write it:
// 50000, 5e4, 50k, 1.5M, with an optional "/s" ("50k/s"). A value it
// cannot read is refused with the notation it takes.
type rateFlag float64

func (r *rateFlag) String() string { return strconv.FormatFloat(float64(*r), 'g', -1, 64) }
func (r *rateFlag) Type() string   { return "rate" }

func (r *rateFlag) Set(s string) error {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "/sec"), "/s")
	mul := 1.0
	switch {
	case strings.HasSuffix(t, "k") || strings.HasSuffix(t, "K"):
		mul, t = 1e3, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mul, t = 1e6, t[:len(t)-1]
	}
	v, err := strconv.ParseFloat(t, 64)
	// NaN, Inf and values out of range parse, and the verb's range check
	// refuses them with the range.
	if err != nil {
		return fmt.Errorf("want events per second: a number (50000, 5e4, 0.5), or with k or M for thousands or millions (50k, 1.5M), optionally followed by /s")
	}
	*r = rateFlag(v * mul)
	return nil
}

package capture

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// BoundKind is how a start or an end of the capture is given.
type BoundKind int

// The kinds of Bound.
const (
	// Earliest is each partition's log start offset (a start only).
	Earliest BoundKind = iota + 1
	// Latest is each partition's end as the capture begins: the last
	// stable offset with read_committed, the high watermark without (an
	// end only: the capture never follows the topic).
	Latest
	// AtOffset is one offset for every partition, or one per partition.
	AtOffset
	// AtTime is the first offset whose record timestamp is at or after a
	// time (Kafka's ListOffsets by timestamp), per partition.
	AtTime
)

// Bound is a --start or --end: half-open, the end's offset is not read.
type Bound struct {
	Kind BoundKind
	// Offset is the offset of every partition (AtOffset, PerPartition nil).
	Offset int64
	// PerPartition maps a partition to its offset (AtOffset); partitions
	// not named use Earliest for a start and Latest for an end.
	PerPartition map[int32]int64
	// TimeMs is the time in Unix milliseconds (AtTime).
	TimeMs int64
}

// Time bounds: years 0001 to 9999, as the rest of dedupsim reads times.
var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// ParseBound reads a --start (start true) or --end flag value: earliest
// (start) or latest (end); an offset N for every partition; P:N,P:N per
// partition; or an RFC 3339 time.
func ParseBound(flag, s string, start bool) (Bound, error) {
	want := "want earliest, an offset N, P:N,P:N per partition or an RFC 3339 time"
	if !start {
		want = "want latest, an offset N, P:N,P:N per partition or an RFC 3339 time"
	}
	switch {
	case s == "earliest" && start, s == "latest" && !start:
		return Bound{Kind: map[bool]BoundKind{true: Earliest, false: Latest}[start]}, nil
	case s == "earliest" || s == "latest":
		return Bound{}, fmt.Errorf("--%s %s: only the %s may be %s; %s", flag, s, map[bool]string{true: "end", false: "start"}[start], s, want)
	case s == "":
		return Bound{}, fmt.Errorf("--%s is empty: %s", flag, want)
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return Bound{}, fmt.Errorf("--%s %d: an offset is >= 0", flag, n)
		}
		return Bound{Kind: AtOffset, Offset: n}, nil
	}
	if strings.Contains(s, "T") && !strings.Contains(s, ",") {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return Bound{}, fmt.Errorf("--%s %q: %v; %s", flag, s, err, want)
		}
		if t.Before(minTime) || t.After(maxTime) {
			return Bound{}, fmt.Errorf("--%s %q: out of range, want a time in years [0001, 9999]", flag, s)
		}
		return Bound{Kind: AtTime, TimeMs: t.UnixMilli()}, nil
	}
	per := map[int32]int64{}
	for _, part := range strings.Split(s, ",") {
		ps, os, ok := strings.Cut(strings.TrimSpace(part), ":")
		p, perr := strconv.ParseInt(ps, 10, 32)
		o, oerr := strconv.ParseInt(os, 10, 64)
		switch {
		case !ok || perr != nil || oerr != nil:
			return Bound{}, fmt.Errorf("--%s %q: %q is not P:N; %s", flag, s, part, want)
		case p < 0 || o < 0:
			return Bound{}, fmt.Errorf("--%s %q: %q: partitions and offsets are >= 0", flag, s, part)
		}
		if _, dup := per[int32(p)]; dup {
			return Bound{}, fmt.Errorf("--%s %q: partition %d given twice", flag, s, p)
		}
		per[int32(p)] = o
	}
	return Bound{Kind: AtOffset, PerPartition: per}, nil
}

// ParsePartitions reads --partitions: comma-separated partition numbers
// ("" is every partition of the topic).
func ParsePartitions(s string) ([]int32, error) {
	if s == "" {
		return nil, nil
	}
	var out []int32
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("--topic-partitions %q: %q is not a partition number (want 0,1,2: whole numbers >= 0)", s, f)
		}
		if slices.Contains(out, int32(p)) {
			return nil, fmt.Errorf("--topic-partitions %q: partition %d given twice", s, p)
		}
		out = append(out, int32(p))
	}
	slices.Sort(out)
	return out, nil
}

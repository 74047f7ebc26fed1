package kafkasource

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
)

// Offsets maps a partition of the source's topic to an offset. In a
// source offset it is the next offset to read, as in Spark's
// KafkaSourceOffset: a batch ending at {"t":{"0":5}} has read partition 0
// up to and including offset 4.
type Offsets map[int32]int64

// Special offsets a StartingOffsets JSON may give for a partition, as in
// Spark's startingOffsets option.
const (
	OffsetEarliest int64 = -2
	OffsetLatest   int64 = -1
)

// Partitions returns the partitions in numeric order.
func (o Offsets) Partitions() []int32 { return slices.Sorted(maps.Keys(o)) }

// JSON encodes o for topic in Spark's Kafka source format,
// {"topic":{"0":123,"1":45}}, partitions in numeric order, no spaces. The
// encoding is canonical: equal offsets give equal bytes, which the engine
// relies on to see that no new data arrived.
func (o Offsets) JSON(topic string) json.RawMessage {
	var b bytes.Buffer
	name, _ := json.Marshal(topic)
	b.WriteByte('{')
	b.Write(name)
	b.WriteString(":{")
	for i, p := range o.Partitions() {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%d":%d`, p, o[p])
	}
	b.WriteString("}}")
	return b.Bytes()
}

// Clone copies o.
func (o Offsets) Clone() Offsets { return maps.Clone(o) }

// ParseOffsets reads a source offset (or a StartingOffsets JSON) for topic.
// The JSON must name exactly that topic; partitions are non-negative
// integers. Offsets below -2 are refused; -2 and -1 (earliest and latest)
// are only meaningful in StartingOffsets, and callers that read a recorded
// offset reject them.
func ParseOffsets(topic string, raw json.RawMessage) (Offsets, error) {
	var m map[string]map[string]int64
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("kafka offsets %s: want {\"topic\":{\"partition\":offset}}: %v", raw, err)
	}
	if len(m) != 1 {
		return nil, fmt.Errorf("kafka offsets %s: want exactly one topic, %q", raw, topic)
	}
	parts, ok := m[topic]
	if !ok {
		return nil, fmt.Errorf("kafka offsets %s: topic %q is not the source's topic %q", raw, slices.Collect(maps.Keys(m))[0], topic)
	}
	out := make(Offsets, len(parts))
	for k, v := range parts {
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil || p < 0 || strconv.FormatInt(p, 10) != k {
			return nil, fmt.Errorf("kafka offsets %s: partition %q is not a partition number", raw, k)
		}
		if v < OffsetEarliest {
			return nil, fmt.Errorf("kafka offsets %s: partition %d has offset %d", raw, p, v)
		}
		out[int32(p)] = v
	}
	return out, nil
}

// parseRecorded reads an offset the source itself produced: no special
// offsets allowed.
func parseRecorded(topic string, raw json.RawMessage) (Offsets, error) {
	o, err := ParseOffsets(topic, raw)
	if err != nil {
		return nil, err
	}
	for p, v := range o {
		if v < 0 {
			return nil, fmt.Errorf("kafka offsets %s: partition %d has offset %d", raw, p, v)
		}
	}
	return o, nil
}

// RateLimit is Spark's KafkaMicroBatchStream.rateLimit for
// maxOffsetsPerTrigger: the limit is split across the partitions that have
// data between from and until, in proportion to each partition's lag
// (until - from); a share below one offset is rounded up, so that a small
// partition is not starved, and a larger one is rounded down, and no
// partition goes past until. The total may therefore exceed limit by up to
// the number of partitions. Partitions missing from from start at
// earliest[p] (Spark reads new partitions from the earliest offset).
// Partitions with no data keep until's offset; so does everything when the
// total lag is below one.
func RateLimit(limit int64, from, until, earliest Offsets) Offsets {
	begin := func(p int32) (int64, bool) {
		if b, ok := from[p]; ok {
			return b, true
		}
		b, ok := earliest[p]
		return b, ok
	}
	sizes := map[int32]int64{}
	var total int64
	for p, end := range until {
		if b, ok := begin(p); ok && end-b > 0 {
			sizes[p] = end - b
			total += end - b
		}
	}
	if float64(total) < 1 {
		return until.Clone()
	}
	out := make(Offsets, len(until))
	for p, end := range until {
		size, ok := sizes[p]
		if !ok {
			out[p] = end
			continue
		}
		b, _ := begin(p)
		prorate := float64(limit) * (float64(size) / float64(total))
		var n int64
		if prorate < 1 {
			n = int64(math.Ceil(prorate))
		} else {
			n = int64(math.Floor(prorate))
		}
		off := int64(math.MaxInt64)
		if n <= math.MaxInt64-b {
			off = b + n
		}
		out[p] = min(end, off)
	}
	return out
}

package sim

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/dedupsim/dedupsim/engine/row"
)

// The simulated partitioned log: one topic per query source, each with
// fixed partitions and offsets, read by the engine through source.Source
// like Spark's Kafka source. Offsets are Spark's Kafka JSON,
// {"topic":{"0":123,"1":45}}, partitions in numeric order; an offset is the
// next offset to read, so a batch reads [start, end) per partition.
//
// Rows are stored compactly: their bytes (JSON and encoded key) live in
// large arena chunks and each row is a pointer-free reference, so a million
// rows cost the garbage collector almost nothing to scan. Rows are
// materialised as row.Row when the engine asks for a range.

// arenaChunk is the size of one arena chunk.
const arenaChunk = 1 << 20

// arena holds row bytes. Bytes are written once and never changed, so
// slices and strings into them stay valid for the life of the run.
type arena struct {
	chunks [][]byte
}

// reserve returns a buffer of capacity at least n at the end of the
// current chunk (a new chunk when it does not fit); commit takes what was
// appended to it.
func (a *arena) reserve(n int) []byte {
	if len(a.chunks) == 0 || cap(a.chunks[len(a.chunks)-1])-len(a.chunks[len(a.chunks)-1]) < n {
		size := arenaChunk
		if n > size {
			size = n
		}
		a.chunks = append(a.chunks, make([]byte, 0, size))
	}
	c := a.chunks[len(a.chunks)-1]
	return c[len(c):len(c)]
}

// commit records that b, returned by reserve and appended to, is used; it
// returns the chunk index and b's offset in it.
func (a *arena) commit(b []byte) (chunk int32, off int32) {
	i := len(a.chunks) - 1
	c := a.chunks[i]
	off = int32(len(c))
	a.chunks[i] = c[:len(c)+len(b)]
	return int32(i), off
}

// rowRef is one stored row: its JSON in an arena chunk, with the length of
// the id and where the event-time text sits (for key encoding).
type rowRef struct {
	eventUs int64
	copyIdx int32 // the row's index in History.Copies (its _copy value)
	chunk   int32
	off     int32
	dataLen int32
	idLen   uint8
	tsOff   uint8 // from the id's closing quote to the event-time value
	tsLen   uint8
}

type topic struct {
	name     string
	parts    [][]rowRef
	arena    *arena
	appended int
	latest   json.RawMessage // cached LatestOffset
	latestN  int             // appended when latest was built
}

// newTopic makes a topic expecting about `expected` rows in all.
func newTopic(name string, partitions int, a *arena, expected int) *topic {
	t := &topic{name: name, parts: make([][]rowRef, partitions), arena: a}
	for i := range t.parts {
		t.parts[i] = make([]rowRef, 0, expected/partitions)
	}
	return t
}

func (t *topic) append(p int, r rowRef) int64 {
	t.parts[p] = append(t.parts[p], r)
	t.appended++
	return int64(len(t.parts[p]) - 1)
}

func (t *topic) ends() []int64 {
	out := make([]int64, len(t.parts))
	for i, p := range t.parts {
		out[i] = int64(len(p))
	}
	return out
}

// offsetJSON encodes per-partition offsets as Spark's Kafka source does.
func (t *topic) offsetJSON(offs []int64) json.RawMessage {
	b := make([]byte, 0, 16+len(t.name)+12*len(offs))
	b = append(b, `{"`...)
	b = append(b, t.name...)
	b = append(b, `":{`...)
	for i, o := range offs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, o, 10)
	}
	return append(b, "}}"...)
}

// parseOffsets reads offsets written by offsetJSON (any JSON spelling of
// the same object is accepted; the engine hands back what it recorded).
func (t *topic) parseOffsets(o json.RawMessage) ([]int64, error) {
	var m map[string]map[string]int64
	if err := json.Unmarshal(o, &m); err != nil {
		return nil, fmt.Errorf("topic %s: offset %s: %w", t.name, o, err)
	}
	po, ok := m[t.name]
	if len(m) != 1 || !ok {
		return nil, fmt.Errorf("topic %s: offset %s names another topic", t.name, o)
	}
	out := make([]int64, len(t.parts))
	if len(po) != len(t.parts) {
		return nil, fmt.Errorf("topic %s: offset %s has %d partitions, the topic %d", t.name, o, len(po), len(t.parts))
	}
	for k, v := range po {
		p, err := strconv.Atoi(k)
		if err != nil || p < 0 || p >= len(t.parts) || strconv.Itoa(p) != k {
			return nil, fmt.Errorf("topic %s: offset %s: no partition %q", t.name, o, k)
		}
		out[p] = v
	}
	return out, nil
}

// logSource is one query's view of one topic, like one Kafka source of a
// query: start is where a query with no committed offset begins (Spark's
// startingOffsets, resolved once and kept, as Spark keeps it in the
// checkpoint's sources/ folder), and keys builds the query's dedup key.
type logSource struct {
	t     *topic
	start []int64
	keys  *keyEncoder
	// rows and keyBuf are reused by the next Rows call: the engine copies
	// the rows into its batch and is done with the keys (the state store
	// copies what it keeps) before it asks again.
	rows    []row.Row
	keyBuf  []byte
	keyEnds []int32
	// lastCopies are the copy indices of the rows the last Rows call
	// returned, in order: the engine's batch input is these, source by
	// source, so the driver need not parse _copy back out of every row.
	lastCopies []int32
}

func newLogSource(t *topic, start []int64, keys *keyEncoder) *logSource {
	if start == nil {
		start = make([]int64, len(t.parts))
	}
	return &logSource{t: t, start: start, keys: keys}
}

func (s *logSource) Description() string { return "KafkaV2[Subscribe[" + s.t.name + "]]" }

// LatestOffset is nil until the topic holds a row.
func (s *logSource) LatestOffset() (json.RawMessage, error) {
	if s.t.appended == 0 {
		return nil, nil
	}
	if s.t.latest == nil || s.t.latestN != s.t.appended {
		s.t.latest, s.t.latestN = s.t.offsetJSON(s.t.ends()), s.t.appended
	}
	return s.t.latest, nil
}

// Rows returns [start, end) of every partition, partition by partition (a
// Kafka RDD has one input partition per topic partition, read in offset
// order). The returned slice is reused by the next call: the engine copies
// the rows out before it asks again.
func (s *logSource) Rows(start, end json.RawMessage) ([]row.Row, error) {
	s.lastCopies = s.lastCopies[:0]
	from := s.start
	if start != nil {
		var err error
		if from, err = s.t.parseOffsets(start); err != nil {
			return nil, err
		}
	}
	if end == nil {
		return nil, nil
	}
	to, err := s.t.parseOffsets(end)
	if err != nil {
		return nil, err
	}
	n := int64(0)
	for p := range to {
		if from[p] < 0 || from[p] > to[p] || to[p] > int64(len(s.t.parts[p])) {
			return nil, fmt.Errorf("%s: partition %d: offsets [%d, %d) not available (%d rows)", s.Description(), p, from[p], to[p], len(s.t.parts[p]))
		}
		n += to[p] - from[p]
	}
	out := s.rows[:0]
	if int64(cap(out)) < n {
		out = make([]row.Row, 0, n)
	}
	// Keys first, into one buffer, then the rows pointing into it (the
	// buffer must not move once a row points into it).
	kb, ends := s.keyBuf[:0], s.keyEnds[:0]
	chunks := s.t.arena.chunks
	for p := range to {
		for _, r := range s.t.parts[p][from[p]:to[p]] {
			kb = s.keys.appendKey(kb, chunks[r.chunk][r.off:r.off+r.dataLen], r)
			ends = append(ends, int32(len(kb)))
		}
	}
	s.keyBuf, s.keyEnds = kb, ends
	i, k := 0, int32(0)
	for p := range to {
		for _, r := range s.t.parts[p][from[p]:to[p]] {
			e := r.off + r.dataLen
			rw := row.Row{Data: chunks[r.chunk][r.off:e:e], Key: kb[k:ends[i]:ends[i]], Decoded: true}
			if s.keys.wm {
				rw.EventTime = r.eventUs
			}
			out = append(out, rw)
			s.lastCopies = append(s.lastCopies, r.copyIdx)
			k = ends[i]
			i++
		}
	}
	s.rows = out
	return out, nil
}

// Available reports whether the log holds end (it always does: the log
// loses nothing); the engine asks before it replays a planned batch.
func (s *logSource) Available(end json.RawMessage) bool {
	if end == nil {
		return true
	}
	to, err := s.t.parseOffsets(end)
	if err != nil {
		return false
	}
	for p, o := range to {
		if o > int64(len(s.t.parts[p])) {
			return false
		}
	}
	return true
}

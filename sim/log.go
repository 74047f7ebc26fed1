package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/sim/history"
)

// The simulated partitioned log: one topic per query source, each with
// fixed partitions and offsets, read by the engine through source.Source
// like Spark's Kafka source. Offsets are Spark's Kafka JSON,
// {"topic":{"0":123,"1":45}}, partitions in numeric order; an offset is the
// next offset to read, so a batch reads [start, end) per partition.
//
// Rows are not stored: a partition holds the copy index of each row in
// offset order (4 bytes a row), and a row's JSON is rendered from its copy
// in the history (event id, event time, index) when the engine reads it,
// byte for byte what the producer appended. The rows then cost nothing
// once the engine and the sink are done with them; kept whole, the log's
// row bytes and references were about 95 bytes a copy for the whole run.
// Event ids live in one arena (large chunks, never changed), so a
// million ids cost the garbage collector almost nothing to scan.

// arenaChunk is the size of one arena chunk.
const arenaChunk = 1 << 20

// arena holds bytes written once and never changed, so slices and strings
// into them stay valid for the life of the run.
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
	return c[len(c):]
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

// rowRef is where one rendered row sits (in an arena chunk, or in a
// buffer: chunk 0), with the length of the id and where the event-time
// text sits (for key encoding).
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
	name string
	// parts holds each partition's rows as copy indices, in offset order.
	parts [][]int32
	// copies are the run's copies (the history's, which grows as the
	// producers append) and enc the source's row layout: row i of a
	// partition is enc's rendering of (*copies)[parts[p][i]].
	copies   *[]history.Copy
	enc      *rowEncoder
	appended int
	latest   json.RawMessage // cached LatestOffset
	latestN  int             // appended when latest was built
}

// newTopic makes a topic over copies, rendered by enc, expecting about
// `expected` rows in all.
func newTopic(name string, partitions int, copies *[]history.Copy, enc *rowEncoder, expected int) *topic {
	t := &topic{name: name, parts: make([][]int32, partitions), copies: copies, enc: enc}
	for i := range t.parts {
		t.parts[i] = make([]int32, 0, expected/partitions)
	}
	return t
}

// append adds copy copyIdx (already in *t.copies) to partition p and
// returns its offset.
func (t *topic) append(p int, copyIdx int) int64 {
	t.parts[p] = append(t.parts[p], int32(copyIdx))
	t.appended++
	return int64(len(t.parts[p]) - 1)
}

// appendRow renders the row of copy ci into b.
func (t *topic) appendRow(b []byte, ci int32) ([]byte, rowRef) {
	c := &(*t.copies)[ci]
	return t.enc.appendRef(b, unsafeBytes(c.Event), c.EventTimeUs, int(ci))
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
	// rows, refs, scratch and keyBuf are reused by the next Rows call:
	// the engine copies the rows into its batch and is done with the keys
	// (the state store copies what it keeps) before it asks again. The
	// rows' bytes are not reused: the engine and the sink may keep them.
	rows    []row.Row
	refs    []rowRef
	scratch []byte
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
	// The rows first, rendered into the scratch buffer and copied into one
	// of their exact size (fresh: rows the sink keeps keep it alive, and
	// nothing more); then the keys into one buffer; then the rows
	// pointing into both (neither buffer moves once a row points into it).
	buf, refs := s.scratch[:0], s.refs[:0]
	for p := range to {
		for _, ci := range s.t.parts[p][from[p]:to[p]] {
			var r rowRef
			buf, r = s.t.appendRow(buf, ci)
			if len(buf) > math.MaxInt32 { // rowRef's offsets are 32-bit
				return nil, errBatchTooLarge(s, n)
			}
			refs = append(refs, r)
		}
	}
	s.scratch, s.refs = buf, refs
	data := make([]byte, len(buf))
	copy(data, buf)
	kb, ends := s.keyBuf[:0], s.keyEnds[:0]
	for _, r := range refs {
		kb = s.keys.appendKey(kb, data[r.off:r.off+r.dataLen], r)
		if len(kb) > math.MaxInt32 {
			return nil, errBatchTooLarge(s, n)
		}
		ends = append(ends, int32(len(kb)))
	}
	s.keyBuf, s.keyEnds = kb, ends
	k := int32(0)
	for i, r := range refs {
		e := r.off + r.dataLen
		rw := row.Row{Data: data[r.off:e:e], Key: kb[k:ends[i]:ends[i]], Decoded: true}
		if s.keys.wm {
			rw.EventTime = r.eventUs
		}
		out = append(out, rw)
		s.lastCopies = append(s.lastCopies, r.copyIdx)
		k = ends[i]
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

// errBatchTooLarge refuses a batch of n rows whose rendered rows or keys
// pass 2 GiB: the simulator addresses them with 32-bit offsets, and would
// otherwise wrap silently.
func errBatchTooLarge(s *logSource, n int64) error {
	return fmt.Errorf("%s: a batch of %d rows renders to more than 2 GiB: lower the source's rate or the trigger_interval", s.Description(), n)
}

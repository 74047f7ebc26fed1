package sim

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/dedupsim/dedupsim/internal/intmath"
	"github.com/dedupsim/dedupsim/internal/radix"
)

// sendQueue holds scheduled copies until processing time reaches them. It
// is a calendar queue: one bucket per trigger interval of send time, each
// sorted by (send time, sequence) once, when it is drained. A push costs a
// map lookup and an append instead of a heap operation per copy, and the
// buckets, filled nearly in order, sort fast.
type sendQueue struct {
	originUs, widthUs int64
	buckets           map[int64]*sendBucket
	next              int64 // lowest bucket that may still hold copies
	free              [][]pending
	keys, keys2       []uint64  // sort scratch
	scratch           []pending // sort scratch
}

type sendBucket struct {
	items  []pending
	head   int
	sorted bool
}

func newSendQueue(originUs, widthUs int64) sendQueue {
	return sendQueue{originUs: originUs, widthUs: max(widthUs, 1), buckets: map[int64]*sendBucket{}}
}

func (q *sendQueue) bucket(atUs int64) int64 {
	return intmath.FloorDiv(atUs-q.originUs, q.widthUs)
}

func (q *sendQueue) push(p pending) {
	k := q.bucket(p.atUs)
	if k < q.next {
		panic(fmt.Sprintf("sim: copy scheduled at %d µs, in bucket %d already drained", p.atUs, k))
	}
	b := q.buckets[k]
	if b == nil {
		b = &sendBucket{sorted: true}
		if n := len(q.free); n > 0 {
			b.items, q.free = q.free[n-1], q.free[:n-1]
		}
		q.buckets[k] = b
	}
	if b.sorted && len(b.items) > b.head && !b.items[len(b.items)-1].before(&p) {
		b.sorted = false
	}
	b.items = append(b.items, p)
}

// drain calls fn, in (send time, sequence) order, with every copy sent by
// tUs.
func (q *sendQueue) drain(tUs int64, fn func(*pending) error) error {
	last := q.bucket(tUs)
	k := q.next
	for ; k <= last; k++ {
		b := q.buckets[k]
		if b == nil {
			continue
		}
		if !b.sorted {
			q.sort(b, k)
		}
		for b.head < len(b.items) && b.items[b.head].atUs <= tUs {
			if err := fn(&b.items[b.head]); err != nil {
				return err
			}
			b.head++
		}
		if b.head < len(b.items) {
			break // the rest of this bucket is later than tUs
		}
		delete(q.buckets, k)
		if len(q.free) < 4 {
			clear(b.items)
			q.free = append(q.free, b.items[:0])
		}
	}
	// Bucket `last` can still receive copies sent after tUs.
	q.next = min(k, last)
	return nil
}

// Packed sort keys: send time within the bucket, then position in the
// bucket. Copies enter a bucket in sequence order and a drained remainder
// is already in (time, sequence) order, so position breaks ties exactly as
// the sequence number does. A bucket's keys use only the position bits its
// length needs (so a 1 s bucket's keys fit in about 34 bits, three passes
// of radix.Sort); posBits and timeBits bound what packing takes.
const (
	posBits  = 24
	timeBits = 64 - posBits
)

// sort orders bucket k's undrained copies by (send time, sequence).
func (q *sendQueue) sort(b *sendBucket, k int64) {
	rest := b.items[b.head:]
	if q.widthUs >= 1<<timeBits || len(rest) >= 1<<posBits {
		slices.SortFunc(rest, func(x, y pending) int {
			if x.before(&y) {
				return -1
			}
			if y.before(&x) {
				return 1
			}
			return 0
		})
		b.sorted = true
		return
	}
	// Sorting 8-byte keys and permuting once beats moving 64-byte copies
	// around in the sort.
	startUs := q.originUs + k*q.widthUs
	keys := q.keys[:0]
	pb := bits.Len(uint(len(rest))) // position bits this bucket needs
	var top uint64
	for i := range rest {
		key := uint64(rest[i].atUs-startUs)<<pb | uint64(i)
		top |= key
		keys = append(keys, key)
	}
	if cap(q.keys2) < len(keys) {
		q.keys2 = make([]uint64, len(keys), cap(keys))
	}
	keys, q.keys2 = radix.Sort(keys, q.keys2[:len(keys)], bits.Len64(top))
	out := q.scratch[:0]
	for _, key := range keys {
		out = append(out, rest[key&(1<<pb-1)])
	}
	copy(rest, out)
	clear(out)
	q.keys, q.scratch = keys, out[:0]
	b.sorted = true
}

package analyze

import (
	"math"
	"math/bits"
)

// rec is what the window keeps of a key: 24 bytes.
type rec struct {
	hash uint64 // hashKey of the encoded key
	// et is the first copy's event time (µs); once the key is promoted
	// (it has copies), the index of its dup record instead.
	et  int64
	arr int64 // first copy's arrival: µs of the arrival column, or its ordinal
}

// window holds the most recent max distinct keys, by first sight, in a
// FIFO ring of records, indexed by an open-addressing table (linear
// probing) of 64-bit slots:
//
//	bits 63-32  the top 32 bits of the key's hash (its tag)
//	bit  31     promoted: the key has copies, rec.et indexes a dup record
//	bits 30-0   the key's ring position + 1 (0: empty slot)
//
// The home slot is taken from the tag too, so probing, deletion and growth
// never read the ring; only a tag match does, to compare the full hash.
// Keys pushed out of the ring are remembered in two rotating Bloom filters
// so that their later copies are recognised as "beyond the window" rather
// than taken for new keys.
//
// Memory: 24 bytes of ring per key plus 8 bytes per table slot (the table
// is kept 37.5% to 75% full: 11-21 bytes per key); once keys are evicted,
// 2 x 2 bytes per max for the filters.
type window struct {
	max    int
	chunks [][]rec // the ring, in chunks of 1<<chunkBits records
	n      int     // live records
	head   int     // oldest record once the ring is full
	table  []uint64
	mask   uint64
	cur    *bloom // evicted keys, newest generation
	prev   *bloom // the generation before
}

const (
	chunkBits = 16
	chunkLen  = 1 << chunkBits
	// MaxKeysLimit is the largest --max-keys: ring positions + 1 fit in
	// the low 31 bits of a slot.
	MaxKeysLimit = 1<<31 - 1
	minTable     = 1 << 10
	posMask      = 1<<31 - 1
	promotedBit  = 1 << 31
)

func newWindow(max int) *window {
	return &window{max: max, table: make([]uint64, minTable), mask: minTable - 1}
}

func (w *window) at(i int) *rec { return &w.chunks[i>>chunkBits][i&(chunkLen-1)] }

func tag(h uint64) uint64 { return h >> 32 }

// find returns the ring position of h and whether it is promoted, or the
// slot where h would go.
func (w *window) find(h uint64) (pos int, slot uint64, promoted, ok bool) {
	t := tag(h)
	for s := t & w.mask; ; s = (s + 1) & w.mask {
		e := w.table[s]
		if e == 0 {
			return 0, s, false, false
		}
		if e>>32 == t && w.at(int(e&posMask)-1).hash == h {
			return int(e&posMask) - 1, s, e&promotedBit != 0, true
		}
	}
}

// promote marks the key in slot (as find returned it) as having copies.
func (w *window) promote(slot uint64) { w.table[slot] |= promotedBit }

// place puts ring position i of a key with tag t in the first free slot of
// its probe sequence.
func (w *window) place(t uint64, i int) {
	s := t & w.mask
	for w.table[s] != 0 {
		s = (s + 1) & w.mask
	}
	w.table[s] = t<<32 | uint64(i+1)
}

// insert adds a key that find did not find; slot is what find returned.
// When the ring is full the oldest key is evicted first, remembered in the
// filters, and returned with its promoted flag.
func (w *window) insert(h, slot uint64, et, arr int64) (old rec, promoted, evicted bool) {
	var i int
	if w.n < w.max {
		i = w.n
		if i>>chunkBits == len(w.chunks) {
			w.chunks = append(w.chunks, make([]rec, min(chunkLen, w.max-i)))
		}
		w.n++
		if uint64(w.n)*4 > uint64(len(w.table))*3 {
			w.grow()
			slot = ^uint64(0)
		}
	} else {
		i = w.head
		w.head++
		if w.head == w.max {
			w.head = 0
		}
		old, evicted = *w.at(i), true
		promoted = w.remove(old.hash, i)
		w.forget(old.hash)
		slot = ^uint64(0)
	}
	*w.at(i) = rec{hash: h, et: et, arr: arr}
	if slot == ^uint64(0) {
		w.place(tag(h), i)
	} else {
		w.table[slot] = tag(h)<<32 | uint64(i+1)
	}
	return old, promoted, evicted
}

// remove deletes ring position i, whose key hashes to h, from the table
// with backward-shift deletion (Knuth's algorithm R), which leaves no
// tombstones. It returns the key's promoted flag.
func (w *window) remove(h uint64, i int) (promoted bool) {
	s := tag(h) & w.mask
	for w.table[s]&posMask != uint64(i+1) {
		s = (s + 1) & w.mask
	}
	promoted = w.table[s]&promotedBit != 0
	for j := s; ; {
		j = (j + 1) & w.mask
		e := w.table[j]
		if e == 0 {
			break
		}
		home := (e >> 32) & w.mask
		// The entry at j may stay iff its home lies cyclically in (s, j].
		if s <= j && s < home && home <= j || s > j && (s < home || home <= j) {
			continue
		}
		w.table[s] = e
		s = j
	}
	w.table[s] = 0
	return promoted
}

func (w *window) grow() {
	old := w.table
	w.table = make([]uint64, 2*len(old))
	w.mask = uint64(len(w.table) - 1)
	for _, e := range old {
		if e != 0 {
			s := (e >> 32) & w.mask
			for w.table[s] != 0 {
				s = (s + 1) & w.mask
			}
			w.table[s] = e
		}
	}
}

// each calls f on every live record, in no particular order.
func (w *window) each(f func(r *rec, promoted bool)) {
	for _, e := range w.table {
		if e != 0 {
			f(w.at(int(e&posMask)-1), e&promotedBit != 0)
		}
	}
}

// forget remembers an evicted key. Each filter generation takes
// max(max, minBloomKeys) keys; then the older generation is dropped, so a
// copy is recognised if its key was among the last 1 to 2 generations of
// evicted keys (at the default --max-keys, the last 20 to 40 million).
func (w *window) forget(h uint64) {
	keys := max(w.max, minBloomKeys)
	if w.cur == nil {
		w.cur = newBloom(keys)
	}
	if w.cur.n >= keys {
		w.cur, w.prev = w.prev, w.cur
		if w.cur == nil {
			w.cur = newBloom(keys)
		} else {
			w.cur.reset()
		}
	}
	w.cur.add(h)
}

// evictedBefore says whether h was probably evicted.
func (w *window) evictedBefore(h uint64) bool {
	return w.cur != nil && w.cur.has(h) || w.prev != nil && w.prev.has(h)
}

// falsePositive is the probability that evictedBefore is true for a key
// never seen.
func (w *window) falsePositive() float64 {
	miss := 1.0
	for _, b := range []*bloom{w.cur, w.prev} {
		if b != nil {
			miss *= 1 - b.falsePositive()
		}
	}
	return 1 - miss
}

// bloom is a Bloom filter with bloomBitsPerKey bits per key it is sized
// for and bloomHashes probes (false positives about 5e-4 when full).
type bloom struct {
	bits []uint64
	m    uint64 // number of bits
	set  uint64 // bits set
	n    int    // keys added
}

const (
	bloomBitsPerKey = 16
	bloomHashes     = 11
	minBloomKeys    = 4096
)

func newBloom(keys int) *bloom {
	m := (uint64(keys)*bloomBitsPerKey + 63) &^ 63
	return &bloom{bits: make([]uint64, m/64), m: m}
}

func (b *bloom) reset() {
	clear(b.bits)
	b.set, b.n = 0, 0
}

// Probes are double hashing, g_i = h + i x h2, mapped onto [0, m) by a
// multiply-high.
func second(h uint64) uint64 { return mix(h^0x9e3779b97f4a7c15) | 1 }

func (b *bloom) probe(h, h2, i uint64) uint64 {
	hi, _ := bits.Mul64(h+i*h2, b.m)
	return hi
}

func (b *bloom) add(h uint64) {
	b.n++
	h2 := second(h)
	for i := range uint64(bloomHashes) {
		p := b.probe(h, h2, i)
		word, bit := p>>6, uint64(1)<<(p&63)
		if b.bits[word]&bit == 0 {
			b.bits[word] |= bit
			b.set++
		}
	}
}

func (b *bloom) has(h uint64) bool {
	h2 := second(h)
	for i := range uint64(bloomHashes) {
		p := b.probe(h, h2, i)
		if b.bits[p>>6]&(1<<(p&63)) == 0 {
			return false
		}
	}
	return true
}

func (b *bloom) falsePositive() float64 {
	return math.Pow(float64(b.set)/float64(b.m), bloomHashes)
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hashKey is the 64-bit hash of an encoded key: FNV-1a, then mixed so the
// low bits index the table well. It is deterministic, so a report does not
// change from run to run.
func hashKey(key []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range key {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return mix(h)
}

package pebblestore

import "github.com/cespare/xxhash/v2"

// keyFilter is a Bloom filter over the keys of a working database (see
// workDB.absent). It is sized for four times the keys it was built with
// (at least minFilterKeys), and reports full once that many keys were
// added, when the store rebuilds it from a scan: the rebuild costs O(keys)
// once per three times as many insertions, and drops the keys deleted
// since. (At twice, the rebuild scans were an eighth of a growing 1 M-key
// run's store time.)
//
// It is a split-block Bloom filter (the layout of Parquet's SBBF and of
// RocksDB's cache-local Bloom filter): a key sets one bit in each of the
// eight 32-bit words of one 32-byte block, so an insert or a probe touches
// one cache line, where a classic filter at 1% touches seven lines spread
// over the whole bit array: at millions of keys those misses were half of
// PutIfAbsent's time. At filterBitsPerKey = 12 the false-positive rate at
// design capacity is about 0.5% (TestKeyFilterFalsePositives); a false
// positive costs one Pebble lookup, never a wrong answer.
type keyFilter struct {
	blocks     [][8]uint32
	added, cap uint
}

const (
	minFilterKeys    = 1 << 16
	filterBitsPerKey = 12
)

// filterSalts are the eight odd multipliers of Parquet's split-block Bloom
// filter, one per word of a block.
var filterSalts = [8]uint32{0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31}

func newKeyFilter(keys int64) *keyFilter {
	n := max(uint(4*keys), minFilterKeys)
	return &keyFilter{blocks: make([][8]uint32, (n*filterBitsPerKey+255)/256), cap: n}
}

// keyHash is the hash the filter and the pending index (pending.go) take
// of a key, computed once per store call.
func keyHash(key []byte) uint64 { return xxhash.Sum64(key) }

// block is the block of a key of hash h, by its high half (Lemire's fast
// range, no modulo), and the low half, which picks the bits.
func (k *keyFilter) block(h uint64) (*[8]uint32, uint32) {
	return &k.blocks[(h>>32)*uint64(len(k.blocks))>>32], uint32(h)
}

// mayHave is false only for keys never added (h: keyHash of the key).
func (k *keyFilter) mayHave(h uint64) bool {
	b, l := k.block(h)
	for i, salt := range filterSalts {
		if b[i]&(1<<((l*salt)>>27)) == 0 {
			return false
		}
	}
	return true
}

func (k *keyFilter) add(h uint64) {
	b, l := k.block(h)
	for i, salt := range filterSalts {
		b[i] |= 1 << ((l * salt) >> 27)
	}
	k.added++
}

func (k *keyFilter) full() bool { return k.added >= k.cap }

package pebblestore

import "github.com/bits-and-blooms/bloom/v3"

// keyFilter is a Bloom filter over the keys of a working database (see
// workDB.absent). It is sized for twice the keys it was built with (at
// least minFilterKeys) at a 1% false-positive rate, and reports full once
// that many keys were added, when the store rebuilds it from a scan: the
// rebuild costs O(keys) once per as many insertions, and drops the keys
// deleted since.
type keyFilter struct {
	f          *bloom.BloomFilter
	added, cap uint
}

const minFilterKeys = 1 << 16

func newKeyFilter(keys int64) *keyFilter {
	n := max(uint(2*keys), minFilterKeys)
	return &keyFilter{f: bloom.NewWithEstimates(n, 0.01), cap: n}
}

// mayHave is false only for keys never added.
func (k *keyFilter) mayHave(key []byte) bool { return k.f.Test(key) }

func (k *keyFilter) add(key []byte) {
	k.f.Add(key)
	k.added++
}

func (k *keyFilter) full() bool { return k.added >= k.cap }

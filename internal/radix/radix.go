// Package radix is the one LSD radix sort of uint64 keys that the
// simulator's send queue and the state store's expiry index use: a copy
// per pass instead of O(log n) comparisons per key. Both pack what they
// sort (a time or an expiry above an index) into distinct keys, so the
// order is the one slices.Sort gives.
package radix

import "slices"

// digit is the bits a pass places: 11 keeps the counts in 16 KiB and
// sorts a simulated 1 s bucket or a batch's expiries in three or four
// passes.
const digit = 11

// Sort sorts keys, all below 1<<width, ascending; tmp is scratch of the
// same length. It returns the sorted slice and the other one, to keep as
// scratch. Under 256 keys it is slices.Sort (a pass's counts cost more
// than the comparisons).
func Sort(keys, tmp []uint64, width int) (sorted, scratch []uint64) {
	if len(keys) < 256 {
		slices.Sort(keys)
		return keys, tmp
	}
	const mask = 1<<digit - 1
	var count [1 << digit]int
	for shift := 0; shift < width; shift += digit {
		clear(count[:])
		for _, k := range keys {
			count[k>>shift&mask]++
		}
		if count[keys[0]>>shift&mask] == len(keys) {
			continue // one digit for every key: this pass moves nothing
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, k := range keys {
			d := k >> shift & mask
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	return keys, tmp
}

package pebblestore

import (
	"encoding/binary"
	"testing"

	"pgregory.net/rapid"
)

// TestKeyFilterNoFalseNegatives: every key added is reported as maybe
// present, whatever the keys and the filter's size.
func TestKeyFilterNoFalseNegatives(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := newKeyFilter(rapid.Int64Range(0, 1<<17).Draw(rt, "keys"))
		keys := rapid.SliceOf(rapid.SliceOfN(rapid.Byte(), 0, 24)).Draw(rt, "added")
		for _, k := range keys {
			f.add(keyHash(k))
		}
		for _, k := range keys {
			if !f.mayHave(keyHash(k)) {
				rt.Fatalf("added %x, mayHave says absent", k)
			}
		}
		if f.added != uint(len(keys)) {
			rt.Fatalf("added %d, counted %d", len(keys), f.added)
		}
	})
}

// TestKeyFilterFalsePositives: filled to its design capacity with the
// engine benchmark's key shape (8-byte big-endian numbers), the filter
// answers "maybe" for under 1% of keys never added.
func TestKeyFilterFalsePositives(t *testing.T) {
	const keys = 200_000
	f := newKeyFilter(keys / 4) // capacity: four times the keys it was built with
	var k [8]byte
	for n := range uint64(keys) {
		binary.BigEndian.PutUint64(k[:], n)
		f.add(keyHash(k[:]))
	}
	if !f.full() {
		t.Fatalf("after %d keys the filter (cap %d) is not full", keys, f.cap)
	}
	fp := 0
	for n := uint64(keys); n < 2*keys; n++ {
		binary.BigEndian.PutUint64(k[:], n)
		if f.mayHave(keyHash(k[:])) {
			fp++
		}
	}
	if rate := float64(fp) / keys; rate > 0.01 {
		t.Fatalf("false-positive rate %.4f at capacity, want <= 0.01", rate)
	} else {
		t.Logf("false-positive rate %.4f at capacity", rate)
	}
}

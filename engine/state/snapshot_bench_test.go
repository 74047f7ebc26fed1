package state

import (
	"encoding/binary"
	"testing"
)

// BenchmarkEncodeSnapshot is the cost of a 1M-key snapshot, written
// synchronously by every MinDeltasForSnapshot-th commit.
func BenchmarkEncodeSnapshot(b *testing.B) {
	m := map[string][]byte{}
	var size int64
	for n := range uint64(1_000_000) {
		var kb [16]byte
		copy(kb[:], "dedupkey")
		binary.BigEndian.PutUint64(kb[8:], n*2654435761)
		m[string(kb[:])] = make([]byte, 8)
		size += 24
	}
	b.ResetTimer()
	for range b.N {
		encodeSnapshot(m, size)
	}
}

// BenchmarkTableEncode is the snapshot of a table built once (1 M keys of
// the engine benchmark's shape: 8-byte big-endian key numbers), without the
// building: the part of a commit that writes a snapshot.
func BenchmarkTableEncode(b *testing.B) {
	t := newTable(0)
	for n := range uint64(1_000_000) {
		var kb [8]byte
		binary.BigEndian.PutUint64(kb[:], n)
		t.put(kb[:], make([]byte, 8), keyHash(kb[:]))
	}
	b.ResetTimer()
	for range b.N {
		t.encode()
	}
}

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

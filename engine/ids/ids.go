// Package ids makes query and run ids. The engine never draws randomness
// itself: drivers pass a generator, seeded for reproducible runs.
package ids

import (
	"fmt"
	"math/rand/v2"
)

// Seeded returns a generator of version-4-shaped UUIDs drawn from a PCG
// stream seeded with seed: the same seed gives the same sequence.
func Seeded(seed uint64) func() string {
	r := rand.New(rand.NewPCG(seed, 0x6465647570736d)) // "dedupsm"
	return func() string {
		hi, lo := r.Uint64(), r.Uint64()
		hi = (hi &^ 0xf000) | 0x4000           // version 4
		lo = (lo &^ (0xc << 60)) | (0x8 << 60) // RFC 4122 variant
		return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x",
			hi>>32, (hi>>16)&0xffff, hi&0xffff, lo>>48, lo&0xffffffffffff)
	}
}

package state

// prefetch asks the CPU to bring the cache line at addr in (PREFETCHT0):
// a hint that neither faults nor waits, whatever addr is.
//
//go:noescape
func prefetch(addr uintptr)

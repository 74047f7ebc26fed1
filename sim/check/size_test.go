package check

import (
	"testing"
	"unsafe"
)

// TestHeldSizes: the checker holds one rd per row read and, for the
// margin, one mref per row of a checkpoint's authoritative batches; 12
// bytes each (the checker's peak was measured with them).
func TestHeldSizes(t *testing.T) {
	if n := unsafe.Sizeof(rd{}); n != 12 {
		t.Errorf("rd is %d bytes, want 12", n)
	}
	if n := unsafe.Sizeof(mref{}); n != 12 {
		t.Errorf("mref is %d bytes, want 12", n)
	}
}

package history

import (
	"testing"
	"unsafe"
)

// TestHeldSizes: a run holds one Copy per copy and one Outcome per row
// read; sim/predict.go's bytes per copy were measured with these sizes.
func TestHeldSizes(t *testing.T) {
	if n := unsafe.Sizeof(Copy{}); n != 56 {
		t.Errorf("a Copy is %d bytes, 56 measured: re-measure sim/predict.go and docs/performance.md", n)
	}
	if n := unsafe.Sizeof(Outcome(0)) + unsafe.Sizeof(Fault(0)); n != 2 {
		t.Errorf("an Outcome and a Fault are %d bytes, not one each", n)
	}
}

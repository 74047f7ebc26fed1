package analyze

import (
	"os"
	"strconv"
	"testing"
)

func TestScratchGen(t *testing.T) {
	p := os.Getenv("GEN_OUT")
	if p == "" {
		t.Skip()
	}
	n, _ := strconv.Atoi(os.Getenv("GEN_N"))
	f, _ := os.Create(p)
	defer f.Close()
	if err := Payments(n).Write(f); err != nil {
		t.Fatal(err)
	}
}

package kafkasource

import (
	"testing"
)

// FuzzDecodeInitial: the initial offsets file (sources/<i>/0) takes any
// bytes; an accepted file names the source's topic with partitions and
// offsets >= 0 and encodes back to itself.
func FuzzDecodeInitial(f *testing.F) {
	for _, s := range []string{"\x00v1\n{\"t\":{\"0\":5,\"1\":0}}", "v1\n{\"t\":{}}", "\x00v1\n{\"u\":{\"0\":1}}", "\x00v1\n{\"t\":{\"0\":-2}}", "\x00v2\n{}", "garbage"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := decodeInitial("t", data)
		if err != nil {
			return
		}
		for p, v := range o {
			if p < 0 || v < 0 {
				t.Fatalf("accepted partition %d offset %d", p, v)
			}
		}
		again, err := decodeInitial("t", encodeInitial("t", o))
		if err != nil || len(again) != len(o) {
			t.Fatalf("round trip: %v %v", again, err)
		}
	})
}

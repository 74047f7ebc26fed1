package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupsim/dedupsim/internal/codec/codectest"
	"github.com/golang/snappy"
)

// lz4Block frames data as Spark's lz4 codec does by default (32 KiB
// blocks).
func lz4Block(_ testing.TB, data []byte) []byte { return codectest.LZ4Block(data, 32<<10) }

func TestLZ4BlockRoundTrip(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("abc"), bytes.Repeat([]byte("dedupsim "), 3000)} {
		framed := lz4Block(t, data)
		// Two streams back to back: Spark's reader reads on to EOF.
		got, err := io.ReadAll(NewLZ4BlockReader(bytes.NewReader(append(framed, framed...))))
		if err != nil || !bytes.Equal(got, append(append([]byte{}, data...), data...)) {
			t.Fatalf("round trip of %d bytes: %v (%d bytes back)", len(data), err, len(got))
		}
	}
}

func TestLZ4BlockRefusesCorruption(t *testing.T) {
	framed := lz4Block(t, bytes.Repeat([]byte("abcd"), 100))
	for name, mutate := range map[string]func([]byte){
		"magic":    func(b []byte) { b[0] = 'X' },
		"method":   func(b []byte) { b[8] = 0x35 },
		"checksum": func(b []byte) { b[17] ^= 1 },
		"payload":  func(b []byte) { b[25] ^= 0xff },
		"length":   func(b []byte) { binary.LittleEndian.PutUint32(b[13:], 1<<30) },
	} {
		b := append([]byte{}, framed...)
		mutate(b)
		out, err := io.ReadAll(NewLZ4BlockReader(bytes.NewReader(b)))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
		// Nothing of the refused block comes out (it once handed out the
		// zeroed buffer of the block that failed).
		if len(out) != 0 {
			t.Errorf("%s: %d bytes of a corrupt block came out", name, len(out))
		}
	}
	if _, err := io.ReadAll(NewLZ4BlockReader(bytes.NewReader(framed[:30]))); !errors.Is(err, ErrCorrupt) {
		t.Errorf("truncated: %v", err)
	}
}

// A real HDFS-store delta of Spark 4.1.1 decodes (its framing ends in the
// end marker, its records in int32 -1).
func TestRealDelta(t *testing.T) {
	b, err := os.ReadFile("../../diagnose/testdata/spark/unbounded-hdfs/checkpoint/state/0/0/1.delta")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(NewLZ4BlockReader(bytes.NewReader(b)))
	if err != nil || len(raw) < 8 || !bytes.HasSuffix(raw, []byte{0xff, 0xff, 0xff, 0xff}) {
		t.Fatalf("%v, %x", err, raw)
	}
}

func snappyJava(blocks ...[]byte) []byte {
	out := append([]byte{}, snappyMagic...)
	out = binary.BigEndian.AppendUint32(out, 1)
	out = binary.BigEndian.AppendUint32(out, 1)
	for _, b := range blocks {
		c := snappy.Encode(nil, b)
		out = binary.BigEndian.AppendUint32(out, uint32(len(c)))
		out = append(out, c...)
	}
	return out
}

func TestSnappyJava(t *testing.T) {
	s := snappyJava([]byte("hello "), []byte("world"))
	got, err := io.ReadAll(NewSnappyJavaReader(bytes.NewReader(append(s, s...))))
	if err != nil || string(got) != "hello worldhello world" {
		t.Fatalf("%q %v", got, err)
	}
	for name, b := range map[string][]byte{
		"no header": []byte("plain"),
		"cut":       s[:len(s)-2],
		"length":    append(append([]byte{}, s[:16]...), 0x7f, 0, 0, 0),
	} {
		if _, err := io.ReadAll(NewSnappyJavaReader(bytes.NewReader(b))); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

// The fixture event logs decode with the codec their names say, to lines of
// JSON starting with SparkListenerLogStart.
func TestRealEventLogs(t *testing.T) {
	paths, _ := filepath.Glob("../../diagnose/testdata/spark/*/eventlog/*")
	parts, _ := filepath.Glob("../../diagnose/testdata/spark/*/eventlog/eventlog_v2_*/events_*")
	seen := map[Codec]bool{}
	for _, p := range append(paths, parts...) {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			continue
		}
		c := FromName(p)
		f, _ := os.Open(p)
		r, err := NewReader(f, c)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		f.Close()
		if err != nil || !strings.HasPrefix(string(b), `{"Event":"SparkListenerLogStart"`) {
			t.Errorf("%s (%s): %v", p, c, err)
		}
		seen[c] = true
	}
	for _, c := range []Codec{None, LZ4, Snappy, Zstd} {
		if !seen[c] {
			t.Errorf("no fixture event log with codec %q", c)
		}
	}
}

func FuzzLZ4Block(f *testing.F) {
	f.Add(lz4Block(f, []byte("seed corpus")))
	f.Add(lz4Block(f, bytes.Repeat([]byte("x"), 1000)))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := io.ReadAll(NewLZ4BlockReader(bytes.NewReader(b)))
		if err == nil && len(out) > 64*len(b)+1024 {
			t.Fatalf("%d bytes from %d", len(out), len(b))
		}
	})
}

func FuzzSnappyJava(f *testing.F) {
	f.Add(snappyJava([]byte("seed corpus")))
	f.Fuzz(func(t *testing.T, b []byte) {
		io.ReadAll(NewSnappyJavaReader(bytes.NewReader(b)))
	})
}

// FuzzSniffDecode: any bytes are either no codec, a codec refused by name,
// or a stream whose every failure is a named ErrCorrupt (never a bare
// "unexpected EOF" that would not say which stream was cut), and never a
// panic. At most 1 MiB is decoded per input.
func FuzzSniffDecode(f *testing.F) {
	for _, s := range [][]byte{
		{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}, []byte("BZh91AY&SY"), {0x04, 0x22, 0x4d, 0x18, 0x64, 0x40, 0xa7},
		[]byte("\xff\x06\x00\x00sNaPpY"), {0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0}, []byte("LZ4Block"), []byte("\xfd7zXZ\x00"),
		lz4Block(f, []byte("seed")), snappyJava([]byte("seed")),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Sniff(b)
		if err != nil || c == None || c == LZF {
			return
		}
		r, err := NewReader(bytes.NewReader(b), c)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: opening: %v is not ErrCorrupt", c, err)
			}
			return
		}
		defer r.Close()
		_, err = io.Copy(io.Discard, io.LimitReader(r, 1<<20))
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: %v is not ErrCorrupt", c, err)
		}
	})
}

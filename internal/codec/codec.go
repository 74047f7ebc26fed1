// Package codec reads the compressed streams Spark writes: its event logs
// (spark.eventLog.compression.codec: lz4, snappy, zstd) and its state store
// files (spark.sql.streaming.stateStore.compression.codec, lz4 by default).
// The codecs are libraries (pierrec/lz4 for LZ4 blocks, golang/snappy,
// klauspost/compress/zstd, OneOfOne/xxhash for the 32-bit seeded checksum);
// what is written here is only the framing Spark's Java libraries put
// around them, which no Go library reads (docs/diagnose.md
// A.2c and B.3):
//
//   - lz4-java's LZ4BlockOutputStream ("LZ4Block" blocks, a 21-byte header
//     each, XXH32 seed 0x9747b28c masked to 28 bits);
//   - snappy-java's SnappyOutputStream (an 8-byte magic and two version
//     ints, then blocks of a big-endian int32 length and a raw snappy block).
//
// Every reader refuses what Spark's would refuse (bad magic, an unknown
// method, a checksum mismatch, a block larger than its header allows) with
// an error naming the byte offset, and never allocates more than one block
// (at most 32 MiB) at a time.
package codec

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/OneOfOne/xxhash"
	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec names a compression codec by Spark's short name.
type Codec string

// Spark's codec short names (CompressionCodec.shortCompressionCodecNames).
const (
	None   Codec = ""
	LZ4    Codec = "lz4"
	Snappy Codec = "snappy"
	Zstd   Codec = "zstd"
	LZF    Codec = "lzf"
	// Not Spark's event log codecs, but what users compress a copied log
	// with (gzip, bzip2, the lz4 and snappy tools' own framings): read too,
	// from their magic bytes.
	Gzip         Codec = "gzip"
	Bzip2        Codec = "bzip2"
	LZ4Frame     Codec = "lz4-frame"
	SnappyFramed Codec = "snappy-framed"
)

// Sniff is the codec head (the first bytes of a stream, 10 or more when
// the stream has them) says: a renamed or downloaded file keeps its
// bytes, so the name is never trusted. A format recognised and not read
// (xz, zip, 7z) is an error naming it.
func Sniff(head []byte) (Codec, error) {
	switch {
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return Zstd, nil
	case bytes.HasPrefix(head, []byte("LZ4Block")):
		return LZ4, nil
	case bytes.HasPrefix(head, snappyMagic):
		return Snappy, nil
	case bytes.HasPrefix(head, []byte("ZV")) && len(head) >= 3 && head[2] <= 1:
		return LZF, nil
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return Gzip, nil
	case len(head) >= 4 && string(head[:3]) == "BZh" && head[3] >= '1' && head[3] <= '9':
		return Bzip2, nil
	case bytes.HasPrefix(head, []byte{0x04, 0x22, 0x4d, 0x18}):
		return LZ4Frame, nil
	case bytes.HasPrefix(head, []byte("\xff\x06\x00\x00sNaPpY")):
		return SnappyFramed, nil
	case bytes.HasPrefix(head, []byte{0x02, 0x21, 0x4c, 0x18}):
		return None, errors.New("an lz4 legacy frame (lz4 -l): not read; decompress it first (lz4 -d)")
	case bytes.HasPrefix(head, []byte("\xfd7zXZ\x00")):
		return None, errors.New("an xz file: not read; decompress it first (xz -d)")
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return None, errors.New("a zip archive: not read; unpack it and give the log inside")
	case bytes.HasPrefix(head, []byte("7z\xbc\xaf\x27\x1c")):
		return None, errors.New("a 7z archive: not read; unpack it and give the log inside")
	}
	return None, nil
}

// ErrCorrupt is wrapped by every error about a damaged stream.
var ErrCorrupt = errors.New("corrupt stream")

// maxBlock bounds one decoded block: lz4-java's level is at most 15
// (32 MiB blocks), snappy-java's default block is 32 KiB; a header asking
// for more is corruption, not a reason to allocate.
const maxBlock = 32 << 20

// FromName is the codec an event log file's name says: the suffix after
// the last dot, with Spark's ".inprogress" taken off first.
func FromName(name string) Codec {
	name = strings.TrimSuffix(name, ".inprogress")
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return None
	}
	switch c := Codec(name[i+1:]); c {
	case LZ4, Snappy, Zstd, LZF:
		return c
	}
	return None
}

// NewReader decodes r with c. The returned closer releases the decoder.
func NewReader(r io.Reader, c Codec) (io.ReadCloser, error) {
	switch c {
	case None:
		return io.NopCloser(r), nil
	case LZ4:
		return io.NopCloser(NewLZ4BlockReader(r)), nil
	case Snappy:
		return io.NopCloser(NewSnappyJavaReader(r)), nil
	case Zstd:
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
		if err != nil {
			return nil, err
		}
		return zstdCloser{d}, nil
	case Gzip:
		g, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%w: gzip header: %v", ErrCorrupt, err)
		}
		return named{g, "gzip", g}, nil
	case Bzip2:
		return named{bzip2.NewReader(r), "bzip2", nil}, nil
	case LZ4Frame:
		return named{lz4.NewReader(r), "lz4 frame", nil}, nil
	case SnappyFramed:
		return named{snappy.NewReader(r), "snappy framed stream", nil}, nil
	case LZF:
		return nil, fmt.Errorf("the lzf codec is not supported (Spark's default is zstd; lz4, snappy and zstd are read): decompress the file first")
	}
	return nil, fmt.Errorf("unknown codec %q: want lz4, snappy or zstd", string(c))
}

// named names the codec in every error but EOF: a library's "unexpected
// EOF" alone would not say that a compressed stream was cut.
type named struct {
	r    io.Reader
	name string
	c    io.Closer
}

func (n named) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	if err != nil && err != io.EOF {
		if errors.Is(err, ErrCorrupt) {
			return k, err
		}
		err = fmt.Errorf("%w: %s: %v", ErrCorrupt, n.name, err)
	}
	return k, err
}

func (n named) Close() error {
	if n.c != nil {
		return n.c.Close()
	}
	return nil
}

type zstdCloser struct{ d *zstd.Decoder }

func (z zstdCloser) Read(p []byte) (int, error) {
	n, err := z.d.Read(p)
	if err != nil && err != io.EOF && !errors.Is(err, ErrCorrupt) {
		err = fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
	}
	return n, err
}
func (z zstdCloser) Close() error { z.d.Close(); return nil }

// lz4-java's LZ4BlockOutputStream constants.
const (
	lz4Magic       = "LZ4Block"
	lz4HeaderLen   = int64(len(lz4Magic) + 13)
	lz4MethodRaw   = 0x10
	lz4MethodLZ4   = 0x20
	lz4Seed        = 0x9747b28c
	lz4ChecksumMsk = 0x0FFFFFFF
)

// LZ4BlockReader decodes lz4-java's LZ4Block stream. Like Spark's reader
// (stopOnEmptyBlock=false) it skips empty blocks and reads concatenated
// streams until EOF.
type LZ4BlockReader struct {
	r   *bufio.Reader
	off int64 // of the next header
	buf []byte
	cmp []byte
	pos int
	err error
}

// NewLZ4BlockReader reads r.
func NewLZ4BlockReader(r io.Reader) *LZ4BlockReader {
	return &LZ4BlockReader{r: bufio.NewReader(r)}
}

func (z *LZ4BlockReader) Read(p []byte) (int, error) {
	for z.pos == len(z.buf) {
		if z.err != nil {
			return 0, z.err
		}
		if z.err = z.next(); z.err != nil {
			// Nothing of a block that failed is handed out.
			z.buf, z.pos = z.buf[:0], 0
		}
	}
	n := copy(p, z.buf[z.pos:])
	z.pos += n
	return n, nil
}

func (z *LZ4BlockReader) corrupt(format string, a ...any) error {
	return fmt.Errorf("%w: LZ4Block at byte %d: %s", ErrCorrupt, z.off, fmt.Sprintf(format, a...))
}

// next reads one block into buf (possibly empty).
func (z *LZ4BlockReader) next() error {
	var h [21]byte
	n, err := io.ReadFull(z.r, h[:])
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return z.corrupt("truncated header (%d of %d bytes)", n, lz4HeaderLen)
	}
	if string(h[:8]) != lz4Magic {
		return z.corrupt("bad magic %q, want %q", h[:8], lz4Magic)
	}
	method, level := int(h[8]&0xF0), int(h[8]&0x0F)
	clen := int64(int32(binary.LittleEndian.Uint32(h[9:])))
	dlen := int64(int32(binary.LittleEndian.Uint32(h[13:])))
	sum := binary.LittleEndian.Uint32(h[17:])
	limit := int64(1) << (10 + level)
	switch {
	case method != lz4MethodRaw && method != lz4MethodLZ4:
		return z.corrupt("unknown method 0x%02x", method)
	case dlen < 0 || dlen > limit || dlen > maxBlock || clen < 0 || clen > maxBlock:
		return z.corrupt("lengths %d/%d out of range for level %d", clen, dlen, level)
	case (dlen == 0) != (clen == 0), method == lz4MethodRaw && clen != dlen:
		return z.corrupt("compressed length %d does not fit decompressed %d", clen, dlen)
	}
	z.buf, z.pos = z.buf[:0], 0
	if dlen == 0 {
		if sum != 0 {
			return z.corrupt("empty block with checksum %#x", sum)
		}
		z.off += lz4HeaderLen
		return nil
	}
	z.cmp = grow(z.cmp, int(clen))
	if _, err := io.ReadFull(z.r, z.cmp); err != nil {
		return z.corrupt("truncated payload (want %d bytes)", clen)
	}
	z.buf = grow(z.buf, int(dlen))
	if method == lz4MethodRaw {
		copy(z.buf, z.cmp)
	} else if k, err := lz4.UncompressBlock(z.cmp, z.buf); err != nil || int64(k) != dlen {
		return z.corrupt("LZ4 payload does not decode to %d bytes", dlen)
	}
	if got := xxhash.Checksum32S(z.buf, lz4Seed) & lz4ChecksumMsk; got != sum {
		return z.corrupt("checksum %#x, header says %#x", got, sum)
	}
	z.off += lz4HeaderLen + clen
	return nil
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// snappy-java's SnappyOutputStream header: magic, version, compatible
// version (SnappyCodec.java).
var snappyMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// SnappyJavaReader decodes snappy-java's stream framing.
type SnappyJavaReader struct {
	r      *bufio.Reader
	off    int64
	header bool
	buf    []byte
	cmp    []byte
	pos    int
	err    error
}

// NewSnappyJavaReader reads r.
func NewSnappyJavaReader(r io.Reader) *SnappyJavaReader {
	return &SnappyJavaReader{r: bufio.NewReader(r)}
}

func (s *SnappyJavaReader) Read(p []byte) (int, error) {
	for s.pos == len(s.buf) {
		if s.err != nil {
			return 0, s.err
		}
		if s.err = s.next(); s.err != nil {
			s.buf, s.pos = s.buf[:0], 0
		}
	}
	n := copy(p, s.buf[s.pos:])
	s.pos += n
	return n, nil
}

func (s *SnappyJavaReader) corrupt(format string, a ...any) error {
	return fmt.Errorf("%w: snappy stream at byte %d: %s", ErrCorrupt, s.off, fmt.Sprintf(format, a...))
}

func (s *SnappyJavaReader) next() error {
	s.buf, s.pos = s.buf[:0], 0
	// Concatenated streams each start with the header again.
	if peek, err := s.r.Peek(len(snappyMagic)); err == nil && bytes.Equal(peek, snappyMagic) {
		var h [16]byte
		if _, err := io.ReadFull(s.r, h[:]); err != nil {
			return s.corrupt("truncated header")
		}
		s.off += 16
		s.header = true
		return nil
	}
	if !s.header {
		if _, err := s.r.Peek(1); err == io.EOF {
			return io.EOF
		}
		return s.corrupt("no snappy-java header (want \\x82SNAPPY\\x00)")
	}
	var l [4]byte
	n, err := io.ReadFull(s.r, l[:])
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return s.corrupt("truncated block length (%d of 4 bytes)", n)
	}
	clen := int64(int32(binary.BigEndian.Uint32(l[:])))
	if clen < 0 || clen > maxBlock {
		return s.corrupt("block length %d out of range [0, 32 MiB]", clen)
	}
	s.cmp = grow(s.cmp, int(clen))
	if _, err := io.ReadFull(s.r, s.cmp); err != nil {
		return s.corrupt("truncated block (want %d bytes)", clen)
	}
	dlen, err := snappy.DecodedLen(s.cmp)
	if err != nil || dlen > maxBlock {
		return s.corrupt("bad snappy block")
	}
	s.buf = grow(s.buf, dlen)
	if _, err := snappy.Decode(s.buf, s.cmp); err != nil {
		return s.corrupt("bad snappy block: %v", err)
	}
	s.off += 4 + clen
	return nil
}

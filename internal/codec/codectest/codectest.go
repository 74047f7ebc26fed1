// Package codectest writes what Spark's compression codecs write, for
// tests of the readers in package codec and of the verbs that read Spark's
// files (inspect, diagnose): one writer, so every test frames data alike.
package codectest

import (
	"bytes"
	"encoding/binary"
	"math/bits"

	"github.com/OneOfOne/xxhash"
	"github.com/pierrec/lz4/v4"
)

// LZ4Block frames data as lz4-java's LZ4BlockOutputStream does with a
// block size of blockSize bytes (a power of two from 64 B to 32 MiB;
// Spark's spark.io.compression.lz4.blockSize is 32 KiB): each chunk is
// one block, LZ4-compressed when that makes it smaller and RAW otherwise,
// with the xxhash32 checksum lz4-java writes, then the empty end block.
func LZ4Block(data []byte, blockSize int) []byte {
	if blockSize < 64 || blockSize > 32<<20 || blockSize&(blockSize-1) != 0 {
		panic("codectest: block size is not a power of two in [64 B, 32 MiB]")
	}
	// lz4-java's compressionLevel: the block size as 2^(10+level).
	level := byte(max(0, bits.Len(uint(blockSize-1))-10))
	var out bytes.Buffer
	hdr := func(method byte, clen, dlen int, sum uint32) {
		out.WriteString("LZ4Block")
		out.WriteByte(method | level)
		binary.Write(&out, binary.LittleEndian, int32(clen))
		binary.Write(&out, binary.LittleEndian, int32(dlen))
		binary.Write(&out, binary.LittleEndian, sum)
	}
	buf := make([]byte, lz4.CompressBlockBound(blockSize))
	for len(data) > 0 {
		chunk := data[:min(len(data), blockSize)]
		data = data[len(chunk):]
		sum := xxhash.Checksum32S(chunk, 0x9747b28c) & 0x0FFFFFFF
		n, err := lz4.CompressBlock(chunk, buf, nil)
		if err == nil && n > 0 && n < len(chunk) {
			hdr(0x20, n, len(chunk), sum)
			out.Write(buf[:n])
		} else {
			hdr(0x10, len(chunk), len(chunk), sum)
			out.Write(chunk)
		}
	}
	hdr(0x10, 0, 0, 0)
	return out.Bytes()
}

// StateRecords is the body of an HDFS-backed state store file (.delta or
// .snapshot) before compression: for each pair the key's length, the key,
// the value's length and the value, big-endian, then the end mark -1.
func StateRecords(kv ...[]byte) []byte {
	var b bytes.Buffer
	for i := 0; i+1 < len(kv); i += 2 {
		binary.Write(&b, binary.BigEndian, int32(len(kv[i])))
		b.Write(kv[i])
		binary.Write(&b, binary.BigEndian, int32(len(kv[i+1])))
		b.Write(kv[i+1])
	}
	binary.Write(&b, binary.BigEndian, int32(-1))
	return b.Bytes()
}

package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

// On-disk format of the memory provider, after Spark's HDFS-backed provider
// (without its LZ4 compression):
//
//	<V>.delta     the changes that turn version V-1 into V
//	<V>.snapshot  the whole of version V
//
// Both are a sequence of records followed by an end marker, all integers
// big-endian int32:
//
//	put:    keyLen, key bytes, valueLen, value bytes
//	remove: keyLen, key bytes, -1           (delta files only)
//	end:    -1
//
// A file that ends before the end marker, or holds a negative length other
// than these -1s, is corrupt.
//
// After the end marker comes dedupsim's trailer (44 bytes), which Spark's
// readers never reach (they stop at the end marker):
//
//	"dedupsim"  8 bytes, the magic
//	kind        1 byte: 'd' delta, 's' snapshot, 'c' changelog
//	0 0 0       3 bytes, reserved
//	operator    int32, partition int32: the store the file belongs to
//	version     int64: the state version the file makes
//	offsets     uint32: CRC-32C of the offset log entry of the batch that
//	            made the version (0 when not known)
//	next wm     int64: the watermark that batch hands on (its commit's
//	            nextBatchWatermarkMs)
//	crc         uint32, CRC-32C (Castagnoli) of every byte before it
//
// The CRC catches damaged bytes; the stamp catches a well-formed file in
// the wrong place, e.g. an old snapshot copied over a newer one, or a
// partition's file copied into another partition's folder, which a
// checksum alone would accept. The batch stamp (BatchStamp) lets the
// engine check the offset and commit logs, whose bytes must stay Spark's,
// against the state the batch wrote: a digit changed in offsets/N or
// commits/N is found although both files still parse. Spark 4.1 has a checksum too, in a
// sidecar file (<V>.delta.crc holding a CRC-32C as JSON,
// spark.sql.streaming.checkpoint.fileChecksum.enabled); dedupsim keeps it
// inside the file so that a file and its checksum are replaced by one
// atomic rename and cannot disagree after a crash, and so that the
// simulator's sequence of filesystem operations (over which it draws its
// faults) stays the same. Spark 3.5 and 4.0 have no checksum at all. A
// run that follows Spark 4.1 writes the sidecars as well (checksum.go).

// ErrCorrupt is wrapped by the errors for a state file that is truncated or
// malformed.
var ErrCorrupt = errors.New("corrupt state file")

// CorruptFileError is a state file that is truncated, malformed, fails its
// checksum, or is stamped for another store or version. It wraps
// ErrCorrupt.
type CorruptFileError struct {
	// Path is the file's path in the checkpoint; Msg what is wrong.
	Path, Msg string
}

func (e *CorruptFileError) Error() string { return ErrCorrupt.Error() + " " + e.Path + ": " + e.Msg }
func (e *CorruptFileError) Unwrap() error { return ErrCorrupt }

// MissingFileError is a state file a version needs that is not there. It
// wraps fsys.ErrNotExist.
type MissingFileError struct {
	// Path is the file's path in the checkpoint.
	Path string
	// Version is the version being loaded.
	Version int64
}

func (e *MissingFileError) Error() string {
	return "missing " + path.Base(e.Path) + " (" + fsys.ErrNotExist.Error() + ")"
}
func (e *MissingFileError) Unwrap() error { return fsys.ErrNotExist }

// Kinds of record file, as stamped in the trailer.
const (
	KindDelta     byte = 'd'
	KindSnapshot  byte = 's'
	KindChangelog byte = 'c'
)

const (
	trailerMagic = "dedupsim"
	// TrailerLen is the size of the trailer after the end marker.
	TrailerLen = len(trailerMagic) + 4 + 4 + 4 + 8 + 4 + 8 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC-32C dedupsim's stamps use.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// BatchStamp ties a state version to the batch that made it: the CRC-32C
// of that batch's offset log entry and the watermark its commit records.
type BatchStamp struct {
	OffsetsCRC      uint32
	NextWatermarkMs int64
}

// Stamper is implemented by providers that write a BatchStamp into the
// files they commit; the engine sets it before each batch's commits.
type Stamper interface {
	SetBatchStamp(BatchStamp)
}

// AppendTrailer appends the trailer of a record file of kind for store id
// at version to b, which holds the records and the end marker, with an
// empty batch stamp.
func AppendTrailer(b []byte, kind byte, id ID, version int64) []byte {
	return AppendStampedTrailer(b, kind, id, version, BatchStamp{})
}

// AppendStampedTrailer is AppendTrailer with a batch stamp.
func AppendStampedTrailer(b []byte, kind byte, id ID, version int64, st BatchStamp) []byte {
	b = append(b, trailerMagic...)
	b = append(b, kind, 0, 0, 0)
	b = appendInt32(b, int32(id.Operator))
	b = appendInt32(b, int32(id.Partition))
	b = binary.BigEndian.AppendUint64(b, uint64(version))
	b = binary.BigEndian.AppendUint32(b, st.OffsetsCRC)
	b = binary.BigEndian.AppendUint64(b, uint64(st.NextWatermarkMs))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// ReadBatchStamp returns the batch stamp of the record file at path,
// kind for store id at version, after checking its trailer as
// CheckTrailer does.
func ReadBatchStamp(path string, data []byte, kind byte, id ID, version int64) (BatchStamp, error) {
	if _, err := CheckTrailer(path, data, kind, id, version); err != nil {
		return BatchStamp{}, err
	}
	t := data[len(data)-TrailerLen:]
	return BatchStamp{OffsetsCRC: binary.BigEndian.Uint32(t[28:]), NextWatermarkMs: int64(binary.BigEndian.Uint64(t[32:]))}, nil
}

// CheckTrailer verifies the trailer of the record file at path, expected
// to be of kind for store id at version, and returns the records (with
// the end marker) before it. Errors are *CorruptFileError.
func CheckTrailer(path string, data []byte, kind byte, id ID, version int64) ([]byte, error) {
	corrupt := func(format string, args ...any) error {
		return &CorruptFileError{Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	if len(data) < TrailerLen+4 {
		return nil, corrupt("%d bytes: too short for the end marker and dedupsim's %d-byte trailer (truncated?)", len(data), TrailerLen)
	}
	t := data[len(data)-TrailerLen:]
	body := data[:len(data)-TrailerLen]
	if string(t[:len(trailerMagic)]) != trailerMagic {
		return nil, corrupt("no dedupsim trailer at byte %d (truncated, or not written by dedupsim)", len(body))
	}
	sum := binary.BigEndian.Uint32(t[TrailerLen-4:])
	if got := crc32.Checksum(data[:len(data)-4], castagnoli); got != sum {
		return nil, corrupt("checksum mismatch (CRC-32C %08x, trailer says %08x): the file is damaged", got, sum)
	}
	gotKind := t[8]
	gotOp := int32(binary.BigEndian.Uint32(t[12:]))
	gotPart := int32(binary.BigEndian.Uint32(t[16:]))
	gotVersion := int64(binary.BigEndian.Uint64(t[20:]))
	if gotKind != kind || gotOp != int32(id.Operator) || gotPart != int32(id.Partition) || gotVersion != version {
		return nil, corrupt("stamped as %s of state/%d/%d version %d, but found where %s of %s version %d belongs (a stale or misplaced copy)",
			kindName(gotKind), gotOp, gotPart, gotVersion, kindName(kind), id.Dir(), version)
	}
	return body, nil
}

func kindName(k byte) string {
	switch k {
	case KindDelta:
		return "the delta"
	case KindSnapshot:
		return "the snapshot"
	case KindChangelog:
		return "the changelog"
	}
	return fmt.Sprintf("kind %q", k)
}

const (
	deltaSuffix    = ".delta"
	snapshotSuffix = ".snapshot"
	endMarker      = -1 // as the key length: end of file; as the value length: remove
)

// parseFileName recognises "<V>.delta" and "<V>.snapshot".
func parseFileName(name string) (version int64, snapshot bool, ok bool) {
	return memoryFiles.Parse(name)
}

// FileNames are the suffixes of a provider's per-version files, deltas (or
// changelogs) and snapshots, and the kind its delta trailers are stamped
// with.
type FileNames struct {
	Delta, Snapshot string
	DeltaKind       byte
}

var memoryFiles = FileNames{Delta: deltaSuffix, Snapshot: snapshotSuffix, DeltaKind: KindDelta}

// DeltaName is the name of version v's delta: "<v><Delta>".
func (n FileNames) DeltaName(v int64) string { return strconv.FormatInt(v, 10) + n.Delta }

// SnapshotName is the name of version v's snapshot: "<v><Snapshot>".
func (n FileNames) SnapshotName(v int64) string { return strconv.FormatInt(v, 10) + n.Snapshot }

// Parse recognises "<V><Delta>" and "<V><Snapshot>" with V written
// canonically (no sign, no leading zeros); anything else (temp files,
// _metadata) is not a store file.
func (n FileNames) Parse(name string) (version int64, snapshot bool, ok bool) {
	var num string
	switch {
	case strings.HasSuffix(name, n.Delta):
		num = strings.TrimSuffix(name, n.Delta)
	case strings.HasSuffix(name, n.Snapshot):
		num, snapshot = strings.TrimSuffix(name, n.Snapshot), true
	default:
		return 0, false, false
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v < 0 || strconv.FormatInt(v, 10) != num {
		return 0, false, false
	}
	return v, snapshot, true
}

// StoreFiles is a listing of one store directory by version.
type StoreFiles struct {
	Deltas, Snapshots map[int64]bool
}

// ListStoreFiles lists dir's store files; an absent dir is empty.
func ListStoreFiles(fs fsys.FS, dir string, n FileNames) (StoreFiles, error) {
	f := StoreFiles{Deltas: map[int64]bool{}, Snapshots: map[int64]bool{}}
	names, err := fs.ReadDir(dir)
	if err != nil {
		if fsys.IsNotExist(err) {
			return f, nil
		}
		return f, fmt.Errorf("list %s: %w", dir, err)
	}
	for _, name := range names {
		if v, snap, ok := n.Parse(name); ok {
			if snap {
				f.Snapshots[v] = true
			} else {
				f.Deltas[v] = true
			}
		}
	}
	return f, nil
}

// NewestSnapshot returns the highest snapshot version <= atMost, or 0.
func (f StoreFiles) NewestSnapshot(atMost int64) int64 {
	best := int64(0)
	for v := range f.Snapshots {
		if v <= atMost && v > best {
			best = v
		}
	}
	return best
}

func appendInt32(b []byte, n int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(n)) }

func checkLen(n int) int32 {
	if n > math.MaxInt32 {
		// A key or value of 2 GiB cannot be framed; it is a programming error.
		panic(fmt.Sprintf("state: key or value of %d bytes exceeds the int32 framing", n))
	}
	return int32(n)
}

// AppendPut appends a put record. The record format is shared by the memory
// provider's delta and snapshot files and the Pebble provider's changelogs
// (Spark's HDFS delta format and its RocksDB changelog v1 format agree).
func AppendPut(b, key, value []byte) []byte {
	b = appendInt32(b, checkLen(len(key)))
	b = append(b, key...)
	b = appendInt32(b, checkLen(len(value)))
	return append(b, value...)
}

// AppendRemove appends a remove record.
func AppendRemove(b, key []byte) []byte {
	b = appendInt32(b, checkLen(len(key)))
	b = append(b, key...)
	return appendInt32(b, endMarker)
}

// AppendEnd appends the end marker.
func AppendEnd(b []byte) []byte { return appendInt32(b, endMarker) }

// WalkRecords calls put or remove for every record of a record file, in
// order. A nil remove makes a remove record corrupt (snapshots hold only
// puts). Keys and values alias data. path names the file in errors, which
// wrap ErrCorrupt; on error a prefix of the records has been applied.
func WalkRecords(path string, data []byte, put func(k, v []byte) error, remove func(k []byte) error) error {
	corrupt := func(off int, format string, args ...any) error {
		return &CorruptFileError{Path: path, Msg: fmt.Sprintf("at byte %d of %d: %s", off, len(data), fmt.Sprintf(format, args...))}
	}
	off := 0
	readInt := func(what string) (int32, error) {
		if len(data)-off < 4 {
			return 0, corrupt(off, "truncated: no %s length and no end marker", what)
		}
		n := int32(binary.BigEndian.Uint32(data[off:]))
		off += 4
		return n, nil
	}
	readBytes := func(n int32, what string) ([]byte, error) {
		if int64(len(data)-off) < int64(n) {
			return nil, corrupt(off, "truncated: %s of %d bytes has only %d", what, n, len(data)-off)
		}
		b := data[off : off+int(n) : off+int(n)]
		off += int(n)
		return b, nil
	}
	for {
		recordStart := off
		keyLen, err := readInt("key")
		if err != nil {
			return err
		}
		if keyLen == endMarker {
			if off != len(data) {
				return corrupt(off, "%d bytes after the end marker", len(data)-off)
			}
			return nil
		}
		if keyLen < 0 {
			return corrupt(recordStart, "negative key length %d", keyLen)
		}
		key, err := readBytes(keyLen, "key")
		if err != nil {
			return err
		}
		valueStart := off
		valueLen, err := readInt("value")
		if err != nil {
			return err
		}
		if valueLen == endMarker {
			if remove == nil {
				return corrupt(valueStart, "remove record in a snapshot")
			}
			if err := remove(key); err != nil {
				return err
			}
			continue
		}
		if valueLen < 0 {
			return corrupt(valueStart, "negative value length %d", valueLen)
		}
		value, err := readBytes(valueLen, "value")
		if err != nil {
			return err
		}
		if err := put(key, value); err != nil {
			return err
		}
	}
}

// applyFile applies the records of a delta (snapshot=false) or snapshot file
// to m and keeps *dataBytes (sum of key and value lengths) up to date. path
// names the file in errors. On error m holds a prefix of the changes and
// must be discarded.
func applyFile(path string, data []byte, snapshot bool, m map[string][]byte, dataBytes *int64) error {
	put := func(key, value []byte) error {
		// Copy the value: a sub-slice would pin the whole file in memory.
		v := cloneValue(value)
		if old, ok := m[string(key)]; ok {
			*dataBytes += int64(len(v) - len(old))
		} else {
			*dataBytes += int64(len(key) + len(v))
		}
		m[string(key)] = v
		return nil
	}
	remove := func(key []byte) error {
		if old, ok := m[string(key)]; ok {
			*dataBytes -= int64(len(key) + len(old))
			delete(m, string(key))
		}
		return nil
	}
	if snapshot {
		remove = nil
	}
	return WalkRecords(path, data, put, remove)
}

// cloneValue copies v; an empty value is stored as nil.
func cloneValue(v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	return append(make([]byte, 0, len(v)), v...)
}

package pebblestore

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/dedupsim/dedupsim/engine/state"
)

// Files of one store directory, after Spark's RocksDB provider with
// changelog checkpointing:
//
//	<V>.changelog  the changes that turn version V-1 into V
//	<V>.zip        the whole of version V: a Pebble checkpoint plus metadata
//
// A changelog is Spark's changelog format v1 (the HDFS delta format, without
// compression), all integers big-endian int32:
//
//	put:    keyLen, key bytes, valueLen, value bytes
//	remove: keyLen, key bytes, -1
//	end:    -1
//
// A file that ends before the end marker, or holds a negative length other
// than these -1s, is corrupt. After the end marker comes dedupsim's
// trailer, a stamp and a CRC-32C (state.AppendTrailer), which Spark's
// changelog reader never reaches.
//
// A snapshot is a zip archive (entries stored, not compressed: sstables are
// compressed already) of the files of a Pebble checkpoint (DB.Checkpoint:
// MANIFEST, OPTIONS, markers, sstables) and an entry "metadata" holding
// {"numKeys":N,"dataBytes":B,"operator":O,"partition":P,"version":V}, like
// the metadata file in Spark's RocksDB snapshot zips. The zip's CRC-32 per
// entry catches damaged bytes; the stamp (operator, partition, version:
// dedupsim's, not Spark's) catches a well-formed zip in the wrong place,
// such as an old snapshot copied over a newer one.

const (
	changelogSuffix = ".changelog"
	zipSuffix       = ".zip"
	metadataEntry   = "metadata"
)

// fileNames are Spark's RocksDB changelog checkpointing names:
// "<V>.changelog" per version and "<V>.zip" snapshots.
var fileNames = state.FileNames{Delta: changelogSuffix, Snapshot: zipSuffix, DeltaKind: state.KindChangelog}

// snapshotMeta is the "metadata" entry of a snapshot zip.
type snapshotMeta struct {
	NumKeys   int64 `json:"numKeys"`
	DataBytes int64 `json:"dataBytes"`
	// The stamp: the store and the version the zip holds. Pointers, so
	// that a zip without them is told apart from one stamped 0.
	Operator  *int   `json:"operator"`
	Partition *int   `json:"partition"`
	Version   *int64 `json:"version"`
}

func stamp(id state.ID, version int64) (op, part *int, v *int64) {
	o, p := id.Operator, id.Partition
	return &o, &p, &version
}

// snapshotFile is one file of a Pebble checkpoint.
type snapshotFile struct {
	name string
	data []byte
}

// encodeSnapshot builds the zip of a checkpoint's files and the metadata.
func encodeSnapshot(meta snapshotMeta, files []snapshotFile) ([]byte, error) {
	size := 512
	for _, f := range files {
		size += len(f.data) + 128
	}
	var buf bytes.Buffer
	buf.Grow(size)
	zw := zip.NewWriter(&buf)
	add := func(name string, data []byte) error {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	mj, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	if err := add(metadataEntry, mj); err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := add(f.name, f.data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeSnapshot reads the snapshot zip of store id at version; errors
// are *state.CorruptFileError naming path.
func decodeSnapshot(path string, data []byte, id state.ID, version int64) (snapshotMeta, []snapshotFile, error) {
	var meta snapshotMeta
	corrupt := func(format string, args ...any) (snapshotMeta, []snapshotFile, error) {
		return meta, nil, &state.CorruptFileError{Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return corrupt("%v", err)
	}
	var files []snapshotFile
	hasMeta := false
	seen := map[string]bool{}
	for _, f := range zr.File {
		name := f.Name
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || seen[name] {
			return corrupt("bad or repeated entry name %q", name)
		}
		seen[name] = true
		rc, err := f.Open()
		if err != nil {
			return corrupt("entry %s: %v", name, err)
		}
		b, err := io.ReadAll(rc) // checks the CRC-32 at the end
		rc.Close()
		if err != nil {
			return corrupt("entry %s: %v", name, err)
		}
		if name == metadataEntry {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&meta); err != nil {
				return corrupt("metadata: %v", err)
			}
			if meta.NumKeys < 0 || meta.DataBytes < 0 {
				return corrupt("metadata: negative numKeys or dataBytes")
			}
			if meta.Operator == nil || meta.Partition == nil || meta.Version == nil {
				return corrupt("metadata: no operator, partition and version stamp (not written by this dedupsim)")
			}
			if *meta.Operator != id.Operator || *meta.Partition != id.Partition || *meta.Version != version {
				return corrupt("stamped as the snapshot of state/%d/%d version %d, but found where the snapshot of %s version %d belongs (a stale or misplaced copy)",
					*meta.Operator, *meta.Partition, *meta.Version, id.Dir(), version)
			}
			hasMeta = true
			continue
		}
		files = append(files, snapshotFile{name: name, data: b})
	}
	if !hasMeta {
		return corrupt("no metadata entry")
	}
	return meta, files, nil
}

package state

import (
	"encoding/json"
	"fmt"
	"hash/crc32"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

// ChecksumSuffix is the suffix of Spark's checksum sidecar: <file>.crc
// next to a state file (ChecksumCheckpointFileManager.CHECKSUM_FILE_SUFFIX).
const ChecksumSuffix = ".crc"

// FileChecksummer is implemented by providers that can write Spark 4.1's
// checksum sidecars next to their format-v1 state files
// (spark.sql.streaming.checkpoint.fileChecksum.enabled; spark-semantics
// §17.7). The engine enables it for a line that writes them; now gives the
// sidecars' timestampMs (the engine's clock).
type FileChecksummer interface {
	EnableFileChecksum(now func() int64)
}

// checksumFile is the sidecar's JSON, Spark's Checksum case class.
type checksumFile struct {
	Algorithm    string `json:"algorithm"`
	Value        int32  `json:"value"`
	MainFileSize int64  `json:"mainFileSize"`
	TimestampMs  int64  `json:"timestampMs"`
	Creator      struct {
		ExecutorID string `json:"executorId"`
		TaskInfo   string `json:"taskInfo"`
	} `json:"creator"`
}

// ChecksumSidecar is the content of the sidecar of a file holding data:
// the CRC-32C of the bytes as a signed int (Java's int of CRC32C.getValue),
// their length, and the time it was written. The creator is the driver
// with no task (ChecksumFileCreatorInfo outside a task): dedupsim runs no
// tasks, and Spark reads the field only for debugging.
func ChecksumSidecar(data []byte, nowMs int64) []byte {
	c := checksumFile{Algorithm: "CRC32C", Value: int32(crc32.Checksum(data, castagnoli)),
		MainFileSize: int64(len(data)), TimestampMs: nowMs}
	c.Creator.ExecutorID = "driver"
	b, _ := json.Marshal(c)
	return b
}

// CheckSidecar reports whether sidecar is the checksum sidecar of data.
func CheckSidecar(data, sidecar []byte) error {
	var c checksumFile
	if err := json.Unmarshal(sidecar, &c); err != nil {
		return err
	}
	if c.Algorithm != "CRC32C" || c.Value != int32(crc32.Checksum(data, castagnoli)) || c.MainFileSize != int64(len(data)) {
		return fmt.Errorf("sidecar %s does not match %d bytes", sidecar, len(data))
	}
	return nil
}

// EnableFileChecksum implements FileChecksummer.
func (lc *Lifecycle[W]) EnableFileChecksum(now func() int64) {
	lc.mu.Lock()
	lc.checksumNow = now
	lc.mu.Unlock()
}

// writeLocked writes a format-v1 state file, and its sidecar when
// checksums are on (after the file, as Spark closes the main stream
// before the checksum stream).
func (lc *Lifecycle[W]) writeLocked(name string, data []byte) error {
	if err := fsys.WriteAtomic(lc.fs, name, data); err != nil {
		return err
	}
	if lc.checksumNow == nil {
		return nil
	}
	return fsys.WriteAtomic(lc.fs, name+ChecksumSuffix, ChecksumSidecar(data, lc.checksumNow()))
}

// removeLocked deletes a format-v1 state file, and its sidecar when
// checksums are on (ChecksumCheckpointFileManager.delete removes both; a
// sidecar already gone is no error).
func (lc *Lifecycle[W]) removeLocked(name string) error {
	if err := lc.fs.Remove(name); err != nil {
		return err
	}
	if lc.checksumNow == nil {
		return nil
	}
	if err := lc.fs.Remove(name + ChecksumSuffix); err != nil && !fsys.IsNotExist(err) {
		return err
	}
	return nil
}

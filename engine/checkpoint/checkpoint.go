// Package checkpoint reads and writes a query's checkpoint folder laid out
// as Spark lays it out (spark-semantics.md §8): metadata, the offset log
// (written before a batch runs: the write-ahead log), the commit log
// (written after), and the stateful operator's schema and metadata files.
// Every write is atomic (fsys.WriteAtomic), so a crash leaves either the old
// file or the whole new one.
package checkpoint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

// Spark's configuration keys pinned in the offset log for the life of the
// checkpoint (OffsetSeq.relevantSQLConfs).
const (
	ConfShufflePartitions = "spark.sql.shuffle.partitions"
	ConfWatermarkPolicy   = "spark.sql.streaming.multipleWatermarkPolicy"
	ConfStateStore        = "spark.sql.streaming.stateStore.providerClass"
)

// Spark's provider class names; dedupsim's memory store plays the
// HDFS-backed provider and the Pebble store plays RocksDB.
const (
	HDFSProviderClass    = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
	RocksDBProviderClass = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
)

// StoreClass maps a query's state_store name to Spark's provider class.
func StoreClass(store string) string {
	if store == "pebble" {
		return RocksDBProviderClass
	}
	return HDFSProviderClass
}

// StoreName maps a provider class back to the state_store name.
func StoreName(class string) string {
	if class == RocksDBProviderClass {
		return "pebble"
	}
	return "memory"
}

// DefaultConf is the rest of what Spark pins, recorded for fidelity; dedupsim
// does not interpret these.
var DefaultConf = map[string]string{
	"spark.sql.streaming.aggregation.stateFormatVersion":            "2",
	"spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion": "2",
	"spark.sql.streaming.join.stateFormatVersion":                   "2",
	"spark.sql.streaming.stateStore.compression.codec":              "lz4",
	"spark.sql.streaming.statefulOperator.useStrictDistribution":    "true",
}

// Metadata is the offset log's metadata line (OffsetSeqMetadata).
type Metadata struct {
	BatchWatermarkMs int64             `json:"batchWatermarkMs"`
	BatchTimestampMs int64             `json:"batchTimestampMs"`
	Conf             map[string]string `json:"conf"`
}

// Offsets is one offset-log entry: metadata plus one offset per source
// (nil = the source had no offset yet, written as "-").
type Offsets struct {
	Metadata Metadata
	Sources  []json.RawMessage
}

// Commit is one commit-log entry.
type Commit struct {
	NextBatchWatermarkMs int64 `json:"nextBatchWatermarkMs"`
}

// Log is a checkpoint folder on a filesystem.
type Log struct{ fs fsys.FS }

// New wraps fs, which is rooted at the checkpoint folder.
func New(fs fsys.FS) *Log { return &Log{fs: fs} }

// FS returns the checkpoint's filesystem.
func (l *Log) FS() fsys.FS { return l.fs }

// QueryID reads the query id from metadata; ok is false when absent.
func (l *Log) QueryID() (id string, ok bool, err error) {
	data, err := l.fs.ReadFile("metadata")
	if fsys.IsNotExist(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var m struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &m); err != nil || m.ID == "" {
		return "", false, fmt.Errorf("checkpoint metadata: not a {\"id\": ...} object: %q", truncate(data))
	}
	return m.ID, true, nil
}

// WriteQueryID writes metadata once.
func (l *Log) WriteQueryID(id string) error {
	b, _ := json.Marshal(struct {
		ID string `json:"id"`
	}{id})
	return fsys.WriteAtomic(l.fs, "metadata", append(b, '\n'))
}

func batchPath(dir string, n int64) string { return dir + "/" + strconv.FormatInt(n, 10) }

// WriteOffsets writes offsets/n (OffsetSeqLog's v1 format).
func (l *Log) WriteOffsets(n int64, o Offsets) error {
	var buf bytes.Buffer
	buf.WriteString("v1\n")
	meta, err := json.Marshal(o.Metadata) // map keys are sorted by encoding/json
	if err != nil {
		return err
	}
	buf.Write(meta)
	for _, s := range o.Sources {
		buf.WriteByte('\n')
		if s == nil {
			buf.WriteString("-")
		} else {
			buf.Write(s)
		}
	}
	return fsys.WriteAtomic(l.fs, batchPath("offsets", n), buf.Bytes())
}

// ReadOffsets reads offsets/n.
func (l *Log) ReadOffsets(n int64) (Offsets, error) {
	name := batchPath("offsets", n)
	data, err := l.fs.ReadFile(name)
	if err != nil {
		return Offsets{}, err
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) < 2 || lines[0] != "v1" {
		return Offsets{}, fmt.Errorf("%s: not an offset log entry (want v1 header and a metadata line)", name)
	}
	var o Offsets
	if err := json.Unmarshal([]byte(lines[1]), &o.Metadata); err != nil {
		return Offsets{}, fmt.Errorf("%s:2: metadata: %v", name, err)
	}
	for i, s := range lines[2:] {
		if s == "-" {
			o.Sources = append(o.Sources, nil)
			continue
		}
		if !json.Valid([]byte(s)) {
			return Offsets{}, fmt.Errorf("%s:%d: source offset is not JSON: %q", name, i+3, s)
		}
		o.Sources = append(o.Sources, json.RawMessage(s))
	}
	return o, nil
}

// WriteCommit writes commits/n.
func (l *Log) WriteCommit(n int64, c Commit) error {
	b, _ := json.Marshal(c)
	return fsys.WriteAtomic(l.fs, batchPath("commits", n), append([]byte("v1\n"), b...))
}

// ReadCommit reads commits/n.
func (l *Log) ReadCommit(n int64) (Commit, error) {
	name := batchPath("commits", n)
	data, err := l.fs.ReadFile(name)
	if err != nil {
		return Commit{}, err
	}
	lines := strings.SplitN(string(data), "\n", 3)
	if len(lines) < 2 || lines[0] != "v1" {
		return Commit{}, fmt.Errorf("%s: not a commit log entry (want v1 header and a metadata line)", name)
	}
	var c Commit
	if err := json.Unmarshal([]byte(lines[1]), &c); err != nil {
		return Commit{}, fmt.Errorf("%s:2: %v", name, err)
	}
	return c, nil
}

// Batches lists the batch ids present in dir ("offsets" or "commits"),
// ascending; temp files and other names are ignored.
func (l *Log) Batches(dir string) ([]int64, error) {
	names, err := l.fs.ReadDir(dir)
	if fsys.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, n := range names {
		id, err := strconv.ParseInt(n, 10, 64)
		if err == nil && id >= 0 {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// Latest returns the highest batch id in dir, or -1.
func (l *Log) Latest(dir string) (int64, error) {
	ids, err := l.Batches(dir)
	if err != nil || len(ids) == 0 {
		return -1, err
	}
	return ids[len(ids)-1], nil
}

// Purge removes offset and commit entries below threshold (Spark purges
// batches older than minBatchesToRetain when it constructs a new batch).
func (l *Log) Purge(threshold int64) error {
	for _, dir := range []string{"offsets", "commits"} {
		ids, err := l.Batches(dir)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if id >= threshold {
				break
			}
			if err := l.fs.Remove(batchPath(dir, id)); err != nil {
				return err
			}
		}
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// readLines is a helper for small line-oriented files.
func readLines(data []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// Package inspect reads a real Spark Structured Streaming checkpoint of a
// dedup query, read-only, and says what is in it
// (docs/diagnose.md part B): the query id; the last batch of
// the offset log and of the commit log, whether a batch is in flight; per
// batch the watermark, the trigger time and each source's offset; the
// settings the offset log pins; each stateful operator's metadata and
// key/value schema; and per state partition the number of keys and the
// range of the stored event time (dropDuplicates with the event time in
// the key) or of expiresAtMicros (dropDuplicatesWithinWatermark), rebuilt
// from the HDFS-backed store's delta and snapshot files or from the RocksDB
// provider's changelog files. RocksDB's own SST files cannot be read
// without RocksDB; where only a snapshot zip is there, its metadata's key
// count is reported instead.
//
// Nothing is ever written: files are opened for reading through an
// os.Root on the checkpoint, and names starting with "." (Hadoop's .crc
// files, temp files) are only counted.
package inspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/internal/filekind"
)

// Report is what inspect says about a checkpoint.
type Report struct {
	Checkpoint string `json:"checkpoint"`
	QueryID    string `json:"queryId"`
	// LastOffsetBatch is the newest offsets/N, LastCommitBatch the newest
	// commits/N (-1: none); Pending: an offset without its commit (the
	// batch re-runs on restart).
	LastOffsetBatch int64 `json:"lastOffsetBatch"`
	LastCommitBatch int64 `json:"lastCommitBatch"`
	Pending         bool  `json:"pending"`
	// BatchWatermarkMs is the watermark the last batch ran with
	// (offsets/N); NextBatchWatermarkMs the one the next batch runs with
	// (commits/N).
	BatchWatermarkMs     int64             `json:"batchWatermarkMs"`
	NextBatchWatermarkMs int64             `json:"nextBatchWatermarkMs"`
	BatchTimestampMs     int64             `json:"batchTimestampMs"`
	SourceOffsets        []string          `json:"sourceOffsets"`
	Conf                 map[string]string `json:"conf"`
	Provider             string            `json:"stateStore"`
	// CheckpointFormat is the state checkpoint format the last commit was
	// written in: 1, or 2 (spark.sql.streaming.stateStore.
	// checkpointFormatVersion=2: commits/N "v2" names the checkpoint id of
	// each partition's state files); 0 before the first commit.
	CheckpointFormat int        `json:"checkpointFormatVersion"`
	Operators        []Operator `json:"operators"`
	Warnings         []string   `json:"warnings,omitempty"`
}

// Operator is one stateful operator's state (state/<id>/).
type Operator struct {
	ID            int    `json:"operatorId"`
	Name          string `json:"operatorName,omitempty"`
	StoreName     string `json:"storeName,omitempty"`
	NumPartitions int    `json:"numPartitions"`
	KeySchema     string `json:"keySchema"`
	ValueSchema   string `json:"valueSchema"`
	// EventTime is the key's event-time column (its field metadata carries
	// spark.watermarkDelayMs), or "expiresAtMicros" for
	// dedupeWithinWatermark's value; "" for neither.
	EventTime string `json:"eventTimeColumn,omitempty"`
	DelayMs   int64  `json:"watermarkDelayMs,omitempty"`
	// Version is the state version read: last committed batch + 1.
	Version    int64       `json:"version"`
	Keys       int64       `json:"keys"`
	Partitions []Partition `json:"partitions"`
	// KeysWithSeveralTimes counts keys (the columns other than the event
	// time) held under more than one event time: re-stamped retries that
	// dropDuplicates on (id, event time) let through.
	KeysWithSeveralTimes int `json:"keysWithSeveralEventTimes"`
	// SeveralTimesExamples are five of those keys (their other columns),
	// the smallest as text.
	SeveralTimesExamples []string `json:"keysWithSeveralEventTimesExamples,omitempty"`
}

// Partition is one state partition at the version read.
type Partition struct {
	ID int `json:"partition"`
	// Keys is -1 when it could not be counted (RocksDB without changelogs:
	// see From).
	Keys int64 `json:"keys"`
	// MinUs and MaxUs bound the event time or expiry held (µs UTC).
	MinUs    int64  `json:"minUs,omitempty"`
	MaxUs    int64  `json:"maxUs,omitempty"`
	HasRange bool   `json:"hasRange"`
	From     string `json:"from"`
	Files    int    `json:"files"`
	// CheckpointID is the id commits/N names for this partition's state
	// (format v2 only).
	CheckpointID string `json:"checkpointId,omitempty"`
	// Ignored counts files of committed versions under another id than
	// the one the commit log and lineage name (format v2: a batch run
	// again after a crash); they are not the state.
	Ignored int `json:"ignoredFiles,omitempty"`
}

// Error is a checkpoint that cannot be read (exit 2).
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Provider class names (the conf pinned in the offset log).
const (
	hdfsProvider    = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
	rocksdbProvider = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
)

// maxLogFile bounds an offsets/commits/metadata file (they are a few KiB).
const maxLogFile = 16 << 20

// Inspect reads the checkpoint at dir.
func Inspect(dir string) (*Report, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, &Error{dir, err}
	}
	defer root.Close()
	c := &reader{root: root, dir: dir, r: &Report{Checkpoint: dir, LastOffsetBatch: -1, LastCommitBatch: -1}}
	if err := c.read(); err != nil {
		return nil, err
	}
	return c.r, nil
}

type reader struct {
	root *os.Root
	dir  string
	r    *Report
	// lastMeta is offsets/<last batch>.
	lastMeta *offsetMeta
	// groups holds, per key without its event time, the times seen
	// (KeysWithSeveralTimes), across the partitions of one operator.
	groups groupSet
	// held is what the partition being rebuilt holds (maxHeld).
	held int64
	// evictMs is the watermark the last committed batch evicted with (its
	// offsets' batchWatermarkMs), 0 when unknown or not yet moved.
	evictMs int64
	// ids are the checkpoint ids the last commit names (format v2).
	ids stateIDs
	// own: the state files read so far are dedupsim's engine's.
	own bool
}

func (c *reader) fail(name string, format string, a ...any) error {
	return &Error{c.dir + "/" + name, fmt.Errorf(format, a...)}
}

// wrap names the file of an error that does not name one yet.
func (c *reader) wrap(name string, err error) error {
	var ie *Error
	if err == nil || errors.As(err, &ie) {
		return err
	}
	return &Error{c.dir + "/" + name, err}
}

// open opens name for reading only if it is a regular file inside the
// checkpoint: a named pipe, a device or a socket planted as a checkpoint
// file is refused (opened without blocking, so that a FIFO cannot hang
// inspect), and so is a symbolic link leading out of the checkpoint (the
// os.Root refuses to follow it).
func (c *reader) open(name string) (*os.File, error) {
	f, err := c.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if fi, lerr := c.root.Lstat(name); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if _, serr := c.root.Stat(name); serr != nil && !errors.Is(serr, fs.ErrNotExist) {
				return nil, c.fail(name, "a symbolic link leading out of the checkpoint: refused (inspect reads only files inside it)")
			}
		}
		return nil, c.wrap(name, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, c.wrap(name, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, c.fail(name, "not a regular file (%s): inspect reads only regular files", filekind.Name(st.Mode()))
	}
	return f, nil
}

// readSmall reads a log, metadata or schema file whole, refusing one
// over maxLogFile.
func (c *reader) readSmall(name string) ([]byte, error) {
	f, err := c.open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxLogFile+1))
	if err != nil {
		return nil, c.wrap(name, err)
	}
	if len(b) > maxLogFile {
		return nil, c.fail(name, "larger than %d MiB: not a checkpoint log file", maxLogFile>>20)
	}
	return b, nil
}

func (c *reader) read() error {
	b, err := c.readSmall("metadata")
	if errors.Is(err, fs.ErrNotExist) {
		return c.fail("metadata", "missing: not a Spark streaming checkpoint (no metadata file)")
	}
	if err != nil {
		return c.wrap("metadata", err)
	}
	var md struct {
		ID *string `json:"id"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), &md); err != nil || md.ID == nil || *md.ID == "" {
		return c.fail("metadata", "want {\"id\":\"<query uuid>\"}")
	}
	c.r.QueryID = *md.ID
	offs, err := c.batchIDs("offsets")
	if err != nil {
		return err
	}
	commits, err := c.batchIDs("commits")
	if err != nil {
		return err
	}
	if len(offs) > 0 {
		c.r.LastOffsetBatch = offs[len(offs)-1]
		m, err := c.offsets(c.r.LastOffsetBatch)
		if err != nil {
			return err
		}
		c.r.SourceOffsets = m.sources
		if m.present {
			c.r.BatchWatermarkMs, c.r.BatchTimestampMs, c.r.Conf = m.BatchWatermarkMs, m.BatchTimestampMs, m.Conf
		}
		c.lastMeta = m
	}
	if len(commits) > 0 {
		c.r.LastCommitBatch = commits[len(commits)-1]
		if err := c.commit(c.r.LastCommitBatch); err != nil {
			return err
		}
	}
	if err := c.ordering(offs); err != nil {
		return err
	}
	c.r.Pending = c.r.LastOffsetBatch > c.r.LastCommitBatch
	if c.r.Pending {
		c.warn("batch %d has offsets but no commit: it is re-run on restart", c.r.LastOffsetBatch)
	}
	c.r.Provider = providerName(c.r.Conf["spark.sql.streaming.stateStore.providerClass"])
	return c.state()
}

func (c *reader) warn(format string, a ...any) {
	c.r.Warnings = append(c.r.Warnings, fmt.Sprintf(format, a...))
}

func providerName(class string) string {
	switch class {
	case hdfsProvider, "":
		return "hdfs"
	case rocksdbProvider:
		return "rocksdb"
	}
	return class
}

// batchIDs lists the numeric names of a log folder, in order; dot files
// (.crc, temp files) are skipped, anything else refused.
func (c *reader) batchIDs(dir string) ([]int64, error) {
	ents, err := fs.ReadDir(c.root.FS(), dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{c.dir + "/" + dir, err}
	}
	var ids []int64
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") {
			if strings.HasSuffix(n, ".tmp") {
				c.warn("%s/%s: a temp file left by a write that did not finish", dir, n)
			}
			continue
		}
		id, err := strconv.ParseInt(strings.TrimSuffix(n, ".compact"), 10, 64)
		if err != nil || id < 0 {
			return nil, c.fail(dir+"/"+n, "not a batch id (want a whole number >= 0)")
		}
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// Domains of the times a checkpoint holds: a watermark starts at 0 and
// only rises to an event time minus a delay; the trigger time is a wall
// clock. Both lie in years 1970-9999 (docs/exit-codes.md: a watermark past
// year 9999 is corrupt).
var (
	maxWatermarkMs = row.MaxEventTimeMicros / 1000
	maxTimestampMs = row.MaxEventTimeMicros / 1000
)

// offsetMeta is what offsets/N holds: the OffsetSeqMetadata (present is
// false when its line is empty, as in very old checkpoints) and the
// source offsets.
type offsetMeta struct {
	present          bool
	BatchWatermarkMs int64
	BatchTimestampMs int64
	Conf             map[string]string
	sources          []string
}

// offsets reads offsets/N: "v1", the OffsetSeqMetadata JSON, one line per
// source (B.2).
func (c *reader) offsets(n int64) (*offsetMeta, error) {
	name := fmt.Sprintf("offsets/%d", n)
	b, err := c.readSmall(name)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 2 || lines[0] != "v1" {
		return nil, c.fail(name, "line 1: want v1 (the offset log version of Spark 3.5 to 4.1)")
	}
	if lines[1] == "" {
		return &offsetMeta{sources: lines[2:]}, nil
	}
	var m struct {
		BatchWatermarkMs *int64            `json:"batchWatermarkMs"`
		BatchTimestampMs *int64            `json:"batchTimestampMs"`
		Conf             map[string]string `json:"conf"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil || m.BatchWatermarkMs == nil || m.BatchTimestampMs == nil {
		return nil, c.fail(name, "line 2: want the OffsetSeqMetadata JSON {\"batchWatermarkMs\":...,\"batchTimestampMs\":...,\"conf\":{...}}")
	}
	if w := *m.BatchWatermarkMs; w < 0 || w > maxWatermarkMs {
		return nil, c.fail(name, "line 2: batchWatermarkMs %d is outside [0, %d] (ms since 1970, up to year 9999): corrupt", w, maxWatermarkMs)
	}
	if ts := *m.BatchTimestampMs; ts < 0 || ts > maxTimestampMs {
		return nil, c.fail(name, "line 2: batchTimestampMs %d is outside [0, %d] (ms since 1970, up to year 9999): corrupt", ts, maxTimestampMs)
	}
	return &offsetMeta{true, *m.BatchWatermarkMs, *m.BatchTimestampMs, m.Conf, lines[2:]}, nil
}

// commit reads commits/N: "v1" or "v2", and the CommitMetadata JSON
// (parseCommit).
func (c *reader) commit(n int64) error {
	name := fmt.Sprintf("commits/%d", n)
	b, err := c.readSmall(name)
	if err != nil {
		return err
	}
	e, err := parseCommit(b)
	if err != nil {
		return c.fail(name, "%v", err)
	}
	c.r.NextBatchWatermarkMs, c.r.CheckpointFormat, c.ids = e.NextBatchWatermarkMs, e.Version, e.IDs
	return nil
}

// v1Why says why a checkpoint is read as format v1.
func (c *reader) v1Why() string {
	if c.r.LastCommitBatch < 0 {
		return "no batch is committed"
	}
	return fmt.Sprintf("commits/%d is v1", c.r.LastCommitBatch)
}

// ordering checks the rules Spark keeps between the logs: batch N is
// committed only after offsets/N is written, and offsets/N+1 only after
// commits/N; the watermark never goes down, so a batch's commit holds a
// nextBatchWatermarkMs at least its batchWatermarkMs, and the batch after
// runs with at least that (spark-semantics §6.3, WatermarkTracker).
func (c *reader) ordering(offs []int64) error {
	last, lastOff := c.r.LastCommitBatch, c.r.LastOffsetBatch
	if last < 0 {
		if lastOff > 0 {
			return c.fail(fmt.Sprintf("offsets/%d", lastOff), "batch %d is planned but no batch is committed: Spark plans batch N+1 only after committing N", lastOff)
		}
		return nil
	}
	i := sort.Search(len(offs), func(i int) bool { return offs[i] >= last })
	if i == len(offs) || offs[i] != last {
		return c.fail(fmt.Sprintf("commits/%d", last), "batch %d has a commit but no offsets/%d: Spark writes the offsets of a batch before its commit", last, last)
	}
	if lastOff > last+1 {
		return c.fail(fmt.Sprintf("offsets/%d", lastOff), "batch %d is planned but the last commit is commits/%d: Spark plans batch N+1 only after committing N", lastOff, last)
	}
	m := c.lastMeta
	if lastOff != last {
		if m.present && m.BatchWatermarkMs < c.r.NextBatchWatermarkMs {
			return c.fail(fmt.Sprintf("offsets/%d", lastOff), "line 2: batchWatermarkMs %d is below the nextBatchWatermarkMs %d of commits/%d: the watermark never goes down", m.BatchWatermarkMs, c.r.NextBatchWatermarkMs, last)
		}
		var err error
		if m, err = c.offsets(last); err != nil {
			return err
		}
	}
	if m.present {
		c.evictMs = m.BatchWatermarkMs
	}
	if m.present && c.r.NextBatchWatermarkMs < m.BatchWatermarkMs {
		return c.fail(fmt.Sprintf("commits/%d", last), "line 2: nextBatchWatermarkMs %d is below the batchWatermarkMs %d of offsets/%d: the watermark never goes down", c.r.NextBatchWatermarkMs, m.BatchWatermarkMs, last)
	}
	return nil
}

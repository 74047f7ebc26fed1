// Package checkpoint reads and writes a query's checkpoint folder laid out
// as Spark lays it out (spark-semantics.md §8): metadata, the offset log
// (written before a batch runs: the write-ahead log), the commit log
// (written after), and the stateful operator's schema and metadata files.
// Every write is atomic (fsys.WriteAtomic), so a crash leaves either the old
// file or the whole new one; the offset and commit logs are write-once
// (fsys.WriteNew), as Spark's HDFSMetadataLog.add refuses a batch id that
// is already there.
//
// Every read is strict: a file that is malformed, holds a value outside its
// domain (a watermark beyond year 9999, a partition count of 0), repeats or
// misses a field, or contradicts the rest of the checkpoint is a
// *CorruptError naming the file. dedupsim never guesses around a damaged
// checkpoint: the user restores it or starts a new one.
package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/row"
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
	// Order is the order of Conf's keys in the file: Spark writes its conf
	// map in Scala HashMap order (sparkver.HashOrder), read back as
	// written. Nil (or not Conf's keys) writes the keys sorted, dedupsim's
	// order with no Spark version.
	Order []string `json:"-"`
}

// MarshalJSON writes the metadata line with the conf keys in Order.
func (m Metadata) MarshalJSON() ([]byte, error) {
	keys := m.Order
	if !sameKeys(keys, m.Conf) {
		keys = make([]string, 0, len(m.Conf))
		for k := range m.Conf {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"batchWatermarkMs":%d,"batchTimestampMs":%d,"conf":`, m.BatchWatermarkMs, m.BatchTimestampMs)
	if m.Conf == nil {
		b.WriteString("null}")
		return b.Bytes(), nil
	}
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(m.Conf[k])
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteString("}}")
	return b.Bytes(), nil
}

// sameKeys reports whether order lists exactly conf's keys, once each.
func sameKeys(order []string, conf map[string]string) bool {
	if order == nil || len(order) != len(conf) {
		return false
	}
	seen := make(map[string]bool, len(order))
	for _, k := range order {
		if _, ok := conf[k]; !ok || seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
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
	// StateUniqueIDs is set in state checkpoint format v2 (commitv2.go):
	// per operator id, per partition, the checkpoint id of each store's
	// new version. The entry is then written as "v2".
	StateUniqueIDs map[string][][]string `json:"stateUniqueIds,omitempty"`
}

// CorruptError is a checkpoint file that cannot be trusted: malformed, a
// value outside its domain, inconsistent with the rest of the checkpoint,
// or missing where the checkpoint needs it. It is bad input (exit status 2
// in the CLI), printed as "checkpoint error: FILE: WHAT".
type CorruptError struct {
	// File is the path relative to the checkpoint folder.
	File string
	Msg  string
	// Err is the underlying error, if any.
	Err error
}

func (e *CorruptError) Error() string { return "checkpoint error: " + e.File + ": " + e.Msg }
func (e *CorruptError) Unwrap() error { return e.Err }

// Corrupt builds a *CorruptError.
func Corrupt(file, format string, args ...any) *CorruptError {
	return &CorruptError{File: file, Msg: fmt.Sprintf(format, args...)}
}

// InUseError is a checkpoint locked by another live process.
type InUseError struct {
	// Dir names the checkpoint folder as the user gave it; Holder is
	// " (pid N)", or says that the holder has not written its pid yet.
	Dir, Holder string
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("checkpoint %s is in use by another process%s", e.Dir, e.Holder)
}

// LockFile is the checkpoint's lock, at its root. Spark has none (a
// checkpoint has one writer by deployment); readers of Spark's layout
// skip names that start with a dot.
const LockFile = ".dedupsim.lock"

// Lock makes the caller the only writer of the checkpoint on fs until
// release is called or the process ends (the kernel drops the lock of a
// killed process). dir names the folder in messages. On a filesystem that
// has no locks (fsys.Mem, the simulator's single-writer disk) it does
// nothing.
func Lock(fs fsys.FS, dir string) (release func() error, err error) {
	l, ok := fs.(fsys.Locker)
	if !ok {
		return func() error { return nil }, nil
	}
	rel, err := l.Lock(LockFile)
	if errors.Is(err, fsys.ErrLocked) {
		// The holder writes its pid just after taking the lock: a writer
		// that has only just started is named as such, not left out.
		holder := " (pid not written yet: it has just started)"
		if m := pidInMessage.FindStringSubmatch(err.Error()); m != nil {
			holder = " (pid " + m[1] + ")"
		}
		return nil, &InUseError{Dir: dir, Holder: holder}
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	return rel, nil
}

var pidInMessage = regexp.MustCompile(`\(pid (\d+)\)`)

// RemoveTemps deletes the temp files (".NAME.*tmp") that writers killed
// mid-write leave in the checkpoint's folders. Call it only while holding
// the lock: a live writer's temp file looks the same.
func RemoveTemps(fs fsys.FS) error {
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		names, err := fs.ReadDir(dir)
		if err != nil {
			return nil // a file, or gone
		}
		for _, n := range names {
			p := n
			if dir != "." {
				p = dir + "/" + n
			}
			if strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".tmp") {
				if err := fs.Remove(p); err != nil {
					return err
				}
				continue
			}
			if depth < 4 && !strings.HasPrefix(n, ".") {
				if err := walk(p, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(".", 0)
}

// Domains of the values a checkpoint holds.
var (
	// A watermark starts at 0 and only moves up to an event time minus a
	// delay, so it lies in [0, the largest event time].
	minWatermarkMs = int64(0)
	maxWatermarkMs = row.MaxEventTimeMicros / 1000
	// Processing time: exec's clock is an event time; the engine's the
	// wall clock or a harness's scaled clock. Both lie in years 0000-9999.
	minTimestampMs = row.MinEventTimeMicros / 1000
	maxTimestampMs = row.MaxEventTimeMicros / 1000
)

// maxFileBytes bounds what is read of a log or metadata file; the real
// ones are a few hundred bytes (an offsets file grows with the number of
// Kafka partitions: a 1 MiB limit leaves room for tens of thousands).
const maxFileBytes = 1 << 20

// Log is a checkpoint folder on a filesystem.
type Log struct{ fs fsys.FS }

// New wraps fs, which is rooted at the checkpoint folder.
func New(fs fsys.FS) *Log { return &Log{fs: fs} }

// FS returns the checkpoint's filesystem.
func (l *Log) FS() fsys.FS { return l.fs }

// read returns the content of name, or the filesystem's error (absent
// files included) unwrapped for the caller to judge.
func (l *Log) read(name string) ([]byte, error) {
	data, err := l.fs.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, Corrupt(name, "%d bytes: not a checkpoint file (they are at most %d bytes)", len(data), maxFileBytes)
	}
	if !utf8.Valid(data) {
		return nil, Corrupt(name, "not UTF-8 text")
	}
	return data, nil
}

// writeOnce writes name unless it exists: rewriting the same bytes is
// allowed (a replayed write), other content is refused, as Spark's offset
// log refuses to add a batch twice.
func (l *Log) writeOnce(name string, data []byte) error {
	err := fsys.WriteNew(l.fs, name, data)
	if !errors.Is(err, fsys.ErrExist) {
		return err
	}
	old, rerr := l.fs.ReadFile(name)
	if rerr == nil && bytes.Equal(old, data) {
		return nil
	}
	return &CorruptError{File: name, Msg: "already written with other content: another process is writing this checkpoint, or it was copied from another run", Err: err}
}

// uuidRe is the form of the ids Spark writes (java.util.UUID.toString).
var uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// QueryID reads the query id from metadata; ok is false when absent.
func (l *Log) QueryID() (id string, ok bool, err error) {
	const name = "metadata"
	data, err := l.read(name)
	if fsys.IsNotExist(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	obj, err := object(oneLine(data))
	if err != nil {
		return "", false, Corrupt(name, "want {\"id\": \"<query id>\"}: %v", err)
	}
	if err := only(obj, "id"); err != nil {
		return "", false, Corrupt(name, "%v", err)
	}
	raw, has := obj["id"]
	if !has {
		return "", false, Corrupt(name, "missing field \"id\"")
	}
	if err := json.Unmarshal(raw, &id); err != nil {
		return "", false, Corrupt(name, "id: want a string, got %s", truncate(raw))
	}
	if !uuidRe.MatchString(id) {
		return "", false, Corrupt(name, "id %q is not a query id (a lower-case UUID)", truncate([]byte(id)))
	}
	return id, true, nil
}

// WriteQueryID writes metadata once.
func (l *Log) WriteQueryID(id string) error {
	b, _ := json.Marshal(struct {
		ID string `json:"id"`
	}{id})
	return l.writeOnce("metadata", append(b, '\n'))
}

func batchPath(dir string, n int64) string { return dir + "/" + strconv.FormatInt(n, 10) }

// EncodeOffsets is the bytes of an offset log entry (OffsetSeqLog's v1
// format). Reading them back and encoding again gives the same bytes.
func EncodeOffsets(o Offsets) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("v1\n")
	meta, err := o.Metadata.MarshalJSON() // conf keys in Order, else sorted
	if err != nil {
		return nil, err
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
	return buf.Bytes(), nil
}

// WriteOffsets writes offsets/n. An existing offsets/n with other content
// is a *CorruptError.
func (l *Log) WriteOffsets(n int64, o Offsets) error {
	b, err := EncodeOffsets(o)
	if err != nil {
		return err
	}
	return l.writeOnce(batchPath("offsets", n), b)
}

// ReadOffsets reads offsets/n. A malformed file, or a watermark or
// timestamp outside its domain, or a pinned setting Spark could not have
// written, is a *CorruptError; an absent file is the filesystem's error.
func (l *Log) ReadOffsets(n int64) (Offsets, error) {
	name := batchPath("offsets", n)
	data, err := l.read(name)
	if err != nil {
		return Offsets{}, err
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 2 || lines[0] != "v1" {
		return Offsets{}, Corrupt(name, "not an offset log entry (want a v1 header line, a metadata line and one line per source)")
	}
	var o Offsets
	if o.Metadata, err = parseMetadata(lines[1]); err != nil {
		return Offsets{}, Corrupt(name, "line 2: metadata: %v", err)
	}
	for i, s := range lines[2:] {
		if s == "-" {
			o.Sources = append(o.Sources, nil)
			continue
		}
		if !json.Valid([]byte(s)) || strings.TrimSpace(s) != s || s == "" {
			return Offsets{}, Corrupt(name, "line %d: source offset is not JSON: %q", i+3, truncate([]byte(s)))
		}
		o.Sources = append(o.Sources, json.RawMessage(s))
	}
	return o, nil
}

func parseMetadata(line string) (Metadata, error) {
	var m Metadata
	obj, err := object([]byte(line))
	if err != nil {
		return m, err
	}
	if err := only(obj, "batchWatermarkMs", "batchTimestampMs", "conf"); err != nil {
		return m, err
	}
	if m.BatchWatermarkMs, err = intField(obj, "batchWatermarkMs", minWatermarkMs, maxWatermarkMs); err != nil {
		return m, err
	}
	if m.BatchTimestampMs, err = intField(obj, "batchTimestampMs", minTimestampMs, maxTimestampMs); err != nil {
		return m, err
	}
	raw, ok := obj["conf"]
	if !ok {
		return m, errors.New("missing field \"conf\"")
	}
	if string(raw) != "null" {
		confObj, err := object(raw)
		if err != nil {
			return m, fmt.Errorf("conf: %v", err)
		}
		m.Conf = make(map[string]string, len(confObj))
		m.Order = keyOrder(raw)
		for k, v := range confObj {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return m, fmt.Errorf("conf %q: want a string, got %s", k, truncate(v))
			}
			if err := checkConf(k, s); err != nil {
				return m, fmt.Errorf("conf %q: %v", k, err)
			}
			m.Conf[k] = s
		}
	}
	return m, nil
}

// confRowChecksum is spark.sql.streaming.stateStore.rowChecksum.enabled
// (sparkver.ConfRowChecksum).
const confRowChecksum = "spark.sql.streaming.stateStore.rowChecksum.enabled"

// checkConf holds the pinned settings dedupsim interprets to the values
// it can run with (the others are recorded for fidelity only).
func checkConf(key, v string) error {
	switch key {
	case ConfShufflePartitions:
		n, err := strconv.Atoi(v)
		if err != nil || strconv.Itoa(n) != v || n < 1 || n > query.MaxShufflePartitions {
			return fmt.Errorf("%q is not a partition count from 1 to %d", v, query.MaxShufflePartitions)
		}
	case ConfWatermarkPolicy:
		if v != query.PolicyMin && v != query.PolicyMax {
			return fmt.Errorf("%q is not a watermark policy (min or max)", v)
		}
	case confRowChecksum:
		if v == "true" {
			return errors.New(`"true": the state rows carry a row checksum (Spark 4.2+), a layout dedupsim does not read (spark-semantics.md §17.6)`)
		}
	case ConfStateStore:
		if v != HDFSProviderClass && v != RocksDBProviderClass {
			return fmt.Errorf("%q is not a state store provider dedupsim has (%s or %s)", v, HDFSProviderClass, RocksDBProviderClass)
		}
	}
	return nil
}

// WriteCommit writes commits/n. An existing commits/n with other content
// is a *CorruptError.
func (l *Log) WriteCommit(n int64, c Commit) error {
	b, _ := json.Marshal(c)
	head := "v1\n"
	if c.StateUniqueIDs != nil {
		head = "v2\n"
	}
	return l.writeOnce(batchPath("commits", n), append([]byte(head), b...))
}

// ReadCommit reads commits/n.
func (l *Log) ReadCommit(n int64) (Commit, error) {
	name := batchPath("commits", n)
	data, err := l.read(name)
	if err != nil {
		return Commit{}, err
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "v1" && lines[0] != "v2" {
		return Commit{}, Corrupt(name, "not a commit log entry (want a v1 or v2 header line and a metadata line)")
	}
	obj, err := object([]byte(lines[1]))
	if err == nil && lines[0] == "v1" {
		err = only(obj, "nextBatchWatermarkMs")
	} else if err == nil {
		err = only(obj, "nextBatchWatermarkMs", "stateUniqueIds")
	}
	var c Commit
	if err == nil {
		c.NextBatchWatermarkMs, err = intField(obj, "nextBatchWatermarkMs", minWatermarkMs, maxWatermarkMs)
	}
	if err == nil && lines[0] == "v2" {
		c.StateUniqueIDs, err = parseStateUniqueIDs(obj["stateUniqueIds"])
	}
	if err != nil {
		return Commit{}, Corrupt(name, "line 2: %v", err)
	}
	return c, nil
}

// Batches lists the batch ids present in dir ("offsets" or "commits"),
// ascending. Hidden names (temp files, Hadoop's .crc files) and names that
// are not numbers are ignored, as Spark ignores them; a number that is not
// written as Spark writes a batch id ("007", "-1", "+3") is a
// *CorruptError, since Spark would read it as a batch.
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
		if strings.HasPrefix(n, ".") {
			continue
		}
		id, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return nil, Corrupt(dir+"/"+n, "batch id out of range")
			}
			continue
		}
		if id < 0 || strconv.FormatInt(id, 10) != n {
			return nil, Corrupt(dir+"/"+n, "not a batch id as Spark writes one (a whole number from 0, no sign or leading zeros)")
		}
		ids = append(ids, id)
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

// PurgeAfter removes offset entries above n: Spark's real-time mode, on a
// restart, deletes the offsets of a batch that never committed and plans
// the batch again from the last commit (MicroBatchExecution.
// initializeExecution, offsetLog.purgeAfter).
func (l *Log) PurgeAfter(n int64) error {
	ids, err := l.Batches("offsets")
	if err != nil {
		return err
	}
	for i := len(ids) - 1; i >= 0 && ids[i] > n; i-- {
		if err := l.fs.Remove(batchPath("offsets", ids[i])); err != nil {
			return err
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

// oneLine is data without its one optional trailing newline.
func oneLine(data []byte) []byte { return bytes.TrimSuffix(data, []byte("\n")) }

// object decodes one JSON object strictly: nothing before or after it,
// no field given twice (encoding/json would keep the last silently).
func object(data []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object, got %q", truncate(data))
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		k, _ := tok.(string)
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("field %q given twice", k)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		out[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return out, nil
}

// keyOrder lists the keys of a JSON object (already checked by object)
// in the order written.
func keyOrder(data []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		k, _ := tok.(string)
		keys = append(keys, k)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
	}
	return keys
}

// only refuses fields other than known.
func only(obj map[string]json.RawMessage, known ...string) error {
	var unknown []string
	for k := range obj {
		if !contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("unknown field %q (known: %s)", unknown[0], strings.Join(known, ", "))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var intRe = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// intField reads a required whole-number field in [lo, hi].
func intField(obj map[string]json.RawMessage, name string, lo, hi int64) (int64, error) {
	raw, ok := obj[name]
	if !ok {
		return 0, fmt.Errorf("missing field %q", name)
	}
	if !intRe.Match(raw) {
		return 0, fmt.Errorf("%s: want a whole number, got %s", name, truncate(raw))
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s %s is outside [%s, %s]", name, truncate(raw), describeMs(name, lo), describeMs(name, hi))
	}
	return n, nil
}

// describeMs writes a bound of a millisecond field for people: the number
// and, for a time, its date.
func describeMs(name string, ms int64) string {
	if strings.HasSuffix(name, "Ms") {
		return fmt.Sprintf("%d (%s)", ms, row.FormatTimestampMs(ms))
	}
	return strconv.FormatInt(ms, 10)
}

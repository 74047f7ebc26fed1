package inspect

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dedupsim/dedupsim/engine/row"
	"github.com/dedupsim/dedupsim/internal/filekind"
)

// Memory and time bounds of reading state files (docs/diagnose.md, part
// B): every length is checked against them before anything is allocated.
const (
	// maxRecordLen bounds one key or value: dedup keys are a few dozen
	// bytes (an id and an event time; the value is empty or one long), so
	// a key of more than 1 MiB is corruption.
	maxRecordLen = 1 << 20
	// maxStateFile bounds a delta, snapshot or changelog file as stored.
	maxStateFile = 256 << 20
	// maxPartitions bounds a partition count or id (Spark's default is
	// 200; a count in the millions is corruption).
	maxPartitions = 1 << 20
)

var (
	// maxDecoded bounds what one state file decodes to.
	maxDecoded int64 = 1 << 30
	// maxHeld bounds the keys and values one partition's rebuilt state
	// holds, with 64 bytes counted per key seen for the event-time groups.
	maxHeld int64 = 1 << 30
)

// groupBytes is what one entry of a groupSet is counted as against maxHeld.
const groupBytes = 64

// groupSet holds, per key without its event time (a SHA-256 of the other
// columns), the first event time seen and whether another one was.
type groupSet map[[32]byte]groupTimes

type groupTimes struct {
	first   int64
	several bool
}

// state reads every operator under state/.
func (c *reader) state() error {
	ents, err := fs.ReadDir(c.root.FS(), "state")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &Error{c.dir + "/state", err}
	}
	for _, e := range ents {
		id, err := strconv.Atoi(e.Name())
		if err != nil || id < 0 {
			continue
		}
		if err := c.isDir("state/" + e.Name()); err != nil {
			return err
		}
		op, err := c.operator(id)
		if err != nil {
			return err
		}
		c.r.Operators = append(c.r.Operators, op)
	}
	sort.Slice(c.r.Operators, func(i, j int) bool { return c.r.Operators[i].ID < c.r.Operators[j].ID })
	return nil
}

// isDir refuses a name that is not a folder inside the checkpoint (a file,
// a FIFO, a symbolic link leading out of it).
func (c *reader) isDir(name string) error {
	fi, err := c.root.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return c.fail(name, "missing")
	}
	if err != nil {
		if li, lerr := c.root.Lstat(name); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
			return c.fail(name, "a symbolic link leading out of the checkpoint: refused (inspect reads only files inside it)")
		}
		return c.wrap(name, err)
	}
	if !fi.IsDir() {
		return c.fail(name, "not a folder (%s)", filekind.Name(fi.Mode()))
	}
	return nil
}

func (c *reader) operator(id int) (Operator, error) {
	op := Operator{ID: id, Version: c.r.LastCommitBatch + 1}
	base := fmt.Sprintf("state/%d", id)
	meta := base + "/_metadata/metadata"
	b, err := c.readSmall(meta)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return op, err
	}
	if err == nil {
		// 4.0+: "v1\n" + {"operatorInfo":{...},"stateStoreInfo":[...]} (B.5).
		var m struct {
			OperatorInfo struct {
				OperatorName string `json:"operatorName"`
			} `json:"operatorInfo"`
			StateStoreInfo []struct {
				StoreName     string `json:"storeName"`
				NumPartitions int    `json:"numPartitions"`
			} `json:"stateStoreInfo"`
		}
		body, ok := strings.CutPrefix(string(b), "v1\n")
		if !ok || json.Unmarshal([]byte(body), &m) != nil {
			return op, c.fail(base+"/_metadata/metadata", "want v1 and the operator metadata JSON")
		}
		op.Name = m.OperatorInfo.OperatorName
		if len(m.StateStoreInfo) > 0 {
			op.StoreName, op.NumPartitions = m.StateStoreInfo[0].StoreName, m.StateStoreInfo[0].NumPartitions
			if op.NumPartitions < 1 || op.NumPartitions > maxPartitions {
				return op, c.fail(meta, "stateStoreInfo numPartitions %d is outside [1, %d]", op.NumPartitions, maxPartitions)
			}
		}
	}
	// The partitions the metadata names (3.5 writes none: the pinned
	// spark.sql.shuffle.partitions is the number of state partitions, B.2)
	// must all be there; a missing one would be keys missing in silence.
	named, by := op.NumPartitions, meta
	if pinned := c.r.Conf["spark.sql.shuffle.partitions"]; pinned != "" {
		n, err := strconv.Atoi(pinned)
		if err != nil || n < 1 || n > maxPartitions {
			return op, c.fail(fmt.Sprintf("offsets/%d", c.r.LastOffsetBatch), "line 2: conf spark.sql.shuffle.partitions %q is not a whole number in [1, %d]", pinned, maxPartitions)
		}
		if named == 0 {
			named, by = n, fmt.Sprintf("offsets/%d (spark.sql.shuffle.partitions)", c.r.LastOffsetBatch)
		}
	}
	parts, err := c.partitionIDs(base)
	if err != nil {
		return op, err
	}
	if named > 0 {
		have := map[int]bool{}
		for _, p := range parts {
			if p >= named {
				return op, c.fail(fmt.Sprintf("%s/%d", base, p), "a partition beyond the %d that %s names (0..%d)", named, by, named-1)
			}
			have[p] = true
		}
		for p := range named {
			if !have[p] {
				return op, c.fail(fmt.Sprintf("%s/%d", base, p), "missing: %s names %d partitions (0..%d); its keys would be missing from the count", by, named, named-1)
			}
		}
	}
	key, val, err := c.schema(base + "/0/_metadata/schema")
	if err != nil {
		return op, err
	}
	op.KeySchema, op.ValueSchema = key.text, val.text
	layout := rowLayout{key: key, val: val, timeField: -1, examples: &op.SeveralTimesExamples}
	for i, f := range key.fields {
		if f.Type == "timestamp" {
			if d, ok := f.Metadata["spark.watermarkDelayMs"]; ok {
				layout.timeField, op.EventTime = i, f.Name
				if v, err := d.Int64(); err == nil {
					op.DelayMs = v
				}
			}
		}
	}
	if layout.timeField < 0 && len(val.fields) == 1 && val.fields[0].Name == "expiresAtMicros" {
		layout.expiry, op.EventTime = true, "expiresAtMicros"
	}
	if op.NumPartitions == 0 {
		op.NumPartitions = len(parts)
	}
	if pinned := c.r.Conf["spark.sql.shuffle.partitions"]; pinned != "" && pinned != strconv.Itoa(op.NumPartitions) {
		c.warn("operator %d has %d state partitions but the offset log pins spark.sql.shuffle.partitions=%s", id, op.NumPartitions, pinned)
	}
	c.groups = groupSet{}
	defer func() { c.groups = nil }()
	ids, err := c.operatorIDs(op, len(parts))
	if err != nil {
		return op, err
	}
	for _, p := range parts {
		var pt Partition
		var err error
		if ids != nil && p >= len(ids) {
			return op, c.fail(fmt.Sprintf("%s/%d", base, p), "a partition beyond the %d that commits/%d names checkpoint ids for", len(ids), c.r.LastCommitBatch)
		}
		if ids != nil {
			pt, err = c.partitionV2(base, p, op.Version, ids[p][0], layout)
		} else {
			pt, err = c.partition(base, p, op.Version, layout)
		}
		if err != nil {
			return op, err
		}
		if pt.Keys > 0 {
			op.Keys += pt.Keys
		}
		op.Partitions = append(op.Partitions, pt)
	}
	for _, g := range c.groups {
		if g.several {
			op.KeysWithSeveralTimes++
		}
	}
	return op, nil
}

func (c *reader) partitionIDs(base string) ([]int, error) {
	ents, err := fs.ReadDir(c.root.FS(), base)
	if err != nil {
		return nil, &Error{c.dir + "/" + base, err}
	}
	var ids []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < 0 || strconv.Itoa(n) != e.Name() {
			continue
		}
		if n > maxPartitions {
			return nil, c.fail(base+"/"+e.Name(), "partition id beyond %d", maxPartitions)
		}
		// A symbolic link, a file or a pipe in a partition's place is
		// refused, not skipped.
		if err := c.isDir(base + "/" + e.Name()); err != nil {
			return nil, err
		}
		ids = append(ids, n)
	}
	sort.Ints(ids)
	return ids, nil
}

// schemaField is one StructType field.
type schemaField struct {
	Name     string                 `json:"name"`
	Type     any                    `json:"type"`
	Metadata map[string]json.Number `json:"metadata"`
}

type schema struct {
	text   string
	fields []schemaFieldT
}

type schemaFieldT struct {
	Name, Type string
	Metadata   map[string]json.Number
}

// schema reads state/<op>/0/_metadata/schema: writeUTF("v2"), then the key
// and the value StructType JSON, each as int32 chunk count + writeUTF
// chunks (v2), or two writeUTF strings (v1) (B.5).
func (c *reader) schema(name string) (schema, schema, error) {
	b, err := c.readSmall(name)
	if err != nil {
		return schema{}, schema{}, &Error{c.dir + "/" + name, fmt.Errorf("the state schema file: %w", err)}
	}
	k, v, err := parseSchema(b)
	if err != nil {
		return k, v, c.fail(name, "%v", err)
	}
	return k, v, nil
}

// parseSchema decodes a schema file's bytes.
func parseSchema(b []byte) (schema, schema, error) {
	if text, ok := bytes.CutPrefix(b, []byte("v2\n")); ok {
		// dedupsim's engine writes the two StructType JSONs as lines.
		lines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
		if len(lines) != 2 {
			return schema{}, schema{}, fmt.Errorf("dedupsim's schema file: want v2, the key schema and the value schema, one a line")
		}
		return schemaParts([2]string{lines[0], lines[1]})
	}
	r := bytes.NewReader(b)
	v, err := readUTF(r)
	if err != nil {
		return schema{}, schema{}, fmt.Errorf("bad header: %v", err)
	}
	var parts [2]string
	switch {
	case v == "v2":
		for i := range parts {
			var n int32
			if err := binary.Read(r, binary.BigEndian, &n); err != nil || n < 0 || n > 1024 {
				return schema{}, schema{}, fmt.Errorf("bad chunk count")
			}
			var sb strings.Builder
			for range n {
				s, err := readUTF(r)
				if err != nil {
					return schema{}, schema{}, fmt.Errorf("bad chunk: %v", err)
				}
				sb.WriteString(s)
			}
			parts[i] = sb.String()
		}
	case strings.HasPrefix(v, "{"):
		// v1 (legacy): two writeUTF strings, no version.
		parts[0] = v
		if parts[1], err = readUTF(r); err != nil {
			return schema{}, schema{}, fmt.Errorf("bad value schema: %v", err)
		}
	default:
		return schema{}, schema{}, fmt.Errorf("schema version %q: want v2 (or the legacy v1)", truncate(v, 20))
	}
	return schemaParts(parts)
}

// schemaParts decodes the key and value StructType JSONs.
func schemaParts(parts [2]string) (schema, schema, error) {
	var out [2]schema
	for i, js := range parts {
		var st struct {
			Fields []schemaField `json:"fields"`
		}
		dec := json.NewDecoder(strings.NewReader(js))
		dec.UseNumber()
		if err := dec.Decode(&st); err != nil {
			return schema{}, schema{}, fmt.Errorf("not a StructType JSON: %v", err)
		}
		out[i].text = js
		for _, f := range st.Fields {
			t, _ := f.Type.(string)
			if t == "" {
				t = "struct"
			}
			out[i].fields = append(out[i].fields, schemaFieldT{f.Name, t, f.Metadata})
		}
	}
	return out[0], out[1], nil
}

func readUTF(r io.Reader) (string, error) {
	var n uint16
	if err := binary.Read(r, binary.BigEndian, &n); err != nil {
		return "", err
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b), nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// rowLayout says how to read the event time or the expiry from the rows.
type rowLayout struct {
	key, val  schema
	timeField int
	expiry    bool
	// prefix is 1 for RocksDB (a version byte before each UnsafeRow).
	prefix int
	// examples, when set, collects the smallest keys seen under a second
	// event time (Operator.SeveralTimesExamples).
	examples *[]string
}

// maxExamples bounds Operator.SeveralTimesExamples.
const maxExamples = 5

// partition rebuilds one partition's state at version.
func (c *reader) partition(base string, p int, version int64, l rowLayout) (Partition, error) {
	dir := fmt.Sprintf("%s/%d", base, p)
	pt := Partition{ID: p, Keys: -1}
	ents, err := fs.ReadDir(c.root.FS(), dir)
	if err != nil {
		return pt, &Error{c.dir + "/" + dir, err}
	}
	files := map[string]map[int64]string{}
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") || e.IsDir() {
			continue
		}
		f, ok, err := parseStateName(n)
		if err != nil {
			return pt, c.fail(dir+"/"+n, "%v", err)
		}
		if !ok {
			continue
		}
		if f.id != "" && f.version > version {
			c.warn("%s/%s: a state version newer than the last commit (a batch in flight)", dir, n)
			continue
		}
		if f.id != "" {
			return pt, c.fail(dir+"/"+n, "a state file named <version>_<checkpoint id> (checkpoint format v2), but %s: the state cannot be located without the ids a v2 commit names", c.v1Why())
		}
		v, kind := f.version, f.kind
		if files[kind] == nil {
			files[kind] = map[int64]string{}
		}
		files[kind][v] = n
		pt.Files++
	}
	for v, n := range files["delta"] {
		if v > version {
			c.warn("%s/%s: a state version newer than the last commit (a batch in flight)", dir, n)
		}
	}
	state := map[string][]byte{}
	c.held = int64(groupBytes * len(c.groups))
	switch {
	case len(files["changelog"]) > 0:
		l.prefix = 1
		from := int64(1)
		for v := from; v <= version; v++ {
			n, ok := files["changelog"][v]
			if !ok {
				return pt, c.fail(dir, "changelog %d.changelog is missing: versions 1..%d are needed (a RocksDB snapshot's SSTs cannot be read without RocksDB)", v, version)
			}
			if err := c.replay(dir+"/"+n, headV1, state); err != nil {
				return pt, err
			}
		}
		pt.From = fmt.Sprintf("changelogs 1..%d", version)
	case len(files["zip"]) > 0:
		return c.zipOnly(dir, files["zip"], version, pt)
	default:
		snap := int64(0)
		for v := range files["snapshot"] {
			if v <= version && v > snap {
				snap = v
			}
		}
		if snap > 0 {
			if err := c.replay(dir+"/"+files["snapshot"][snap], headNone, state); err != nil {
				return pt, err
			}
		}
		for v := snap + 1; v <= version; v++ {
			n, ok := files["delta"][v]
			if !ok {
				return pt, c.fail(dir, "%d.delta is missing: state version %d cannot be rebuilt", v, version)
			}
			if err := c.replay(dir+"/"+n, headNone, state); err != nil {
				return pt, err
			}
		}
		if snap == version {
			pt.From = fmt.Sprintf("snapshot %d", snap)
		} else if snap > 0 {
			pt.From = fmt.Sprintf("snapshot %d + deltas %d..%d", snap, snap+1, version)
		} else {
			pt.From = fmt.Sprintf("deltas 1..%d", version)
		}
	}
	return c.finishPartition(dir, pt, state, l)
}

// finishPartition counts a rebuilt partition's keys and ranges and checks
// them against the watermark.
func (c *reader) finishPartition(dir string, pt Partition, state map[string][]byte, l rowLayout) (Partition, error) {
	pt.Keys = int64(len(state))
	if c.own {
		// dedupsim's engine keeps its own key encoding, not Spark's
		// UnsafeRow: the keys are counted, their event times not read.
		pt.From += " (written by dedupsim: keys counted; its key encoding is not Spark's UnsafeRow, so no event-time range)"
		return pt, nil
	}
	for k, v := range state {
		if err := l.summarise(&pt, []byte(k), v, c.groups); err != nil {
			return pt, c.fail(dir, "%v", err)
		}
	}
	// Eviction runs at the end of every batch, after its input: a key at
	// or below the watermark the last committed batch evicted with cannot
	// be in its state (spark-semantics §3.3, §4.3: event time, or
	// expiresAtMicros, <= watermark is removed).
	if pt.HasRange && c.evictMs > 0 && pt.MinUs <= c.evictMs*1000 {
		return pt, c.fail(dir, "a key's %s %d µs is at or below the watermark %d ms that batch %d evicted with (offsets/%d): Spark removes it, so the state contradicts the logs", l.timeName(), pt.MinUs, c.evictMs, c.r.LastCommitBatch, c.r.LastCommitBatch)
	}
	if held := int64(groupBytes * len(c.groups)); held > maxHeld {
		return pt, c.fail(dir, "the operator's keys take more than %d MiB to hold (%d keys): beyond inspect's memory bound", maxHeld>>20, len(c.groups))
	}
	return pt, nil
}

// zipOnly: a RocksDB partition without changelogs: the snapshot zip's
// metadata says how many keys version V holds, not which.
func (c *reader) zipOnly(dir string, zips map[int64]string, version int64, pt Partition) (Partition, error) {
	n, ok := zips[version]
	if !ok {
		c.warn("%s: no %d.zip and no changelogs: RocksDB's SST files cannot be read without RocksDB", dir, version)
		pt.From = "unreadable without RocksDB"
		return pt, nil
	}
	f, err := c.open(dir + "/" + n)
	if err != nil {
		return pt, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return pt, &Error{c.dir + "/" + dir + "/" + n, err}
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		return pt, c.fail(dir+"/"+n, "not a zip: %v", err)
	}
	for _, zf := range zr.File {
		if zf.Name != "metadata" {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			return pt, c.fail(dir+"/"+n, "metadata: %v", err)
		}
		b, err := io.ReadAll(io.LimitReader(rc, maxLogFile))
		rc.Close()
		if err != nil {
			return pt, c.fail(dir+"/"+n, "metadata: %v", err)
		}
		_, body, _ := strings.Cut(string(b), "\n")
		var m struct {
			NumKeys *int64 `json:"numKeys"`
		}
		if json.Unmarshal([]byte(body), &m) != nil || m.NumKeys == nil {
			return pt, c.fail(dir+"/"+n, "metadata: want v<N> and {\"numKeys\":...}")
		}
		pt.Keys, pt.From = *m.NumKeys, fmt.Sprintf("%s metadata (numKeys; SST files need RocksDB, so no event-time range)", n)
		return pt, nil
	}
	return pt, c.fail(dir+"/"+n, "no metadata entry in the snapshot zip")
}

// replay applies one delta, snapshot or v1 changelog to state: records of
// int32 keyLen, key, int32 valueLen (-1: remove), value; end int32 -1; the
// stream LZ4Block-framed (B.3, B.6). Spark 4.1's <file>.crc sidecar, when
// there, is checked first.
func (c *reader) replay(name string, allowed heads, state map[string][]byte) error {
	raw, err := c.readState(name)
	if err != nil {
		return err
	}
	h, err := replayBytes(raw, allowed, state, &c.held)
	if err != nil {
		return c.fail(name, "%v", err)
	}
	c.own = c.own || h.Dedupsim
	return nil
}

// errDecoded is a state file decoding to more than maxDecoded.
var errDecoded = errors.New("decodes to more than the bound")

// boundedReader fails with errDecoded past n bytes.
type boundedReader struct {
	r io.Reader
	n int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, errDecoded
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	k, err := b.r.Read(p)
	b.n -= int64(k)
	return k, err
}

// replayBytes applies one state file's bytes to state: its header (a
// changelog's version and lineage, when allowed says it may have one),
// then its records; held counts the bytes of keys and values state holds,
// refused past maxHeld.
func replayBytes(raw []byte, allowed heads, state map[string][]byte, held *int64) (changelogHead, error) {
	zr, own, err := stateStream(raw)
	if err != nil {
		return changelogHead{}, err
	}
	br := &boundedReader{zr, maxDecoded}
	r := bufio.NewReader(br)
	h, err := readHead(r, allowed)
	h.Dedupsim = own
	if err == nil {
		if h.Version == 2 || h.Version == 4 {
			err = replayTyped(r, state, held)
		} else {
			err = replayRecords(r, state, held)
		}
	}
	if err != nil && br.n <= 0 {
		return h, fmt.Errorf("the file decodes to more than %d MiB: beyond inspect's bound on one state file", maxDecoded>>20)
	}
	return h, err
}

func replayRecords(r *bufio.Reader, state map[string][]byte, held *int64) error {
	for i := 0; ; i++ {
		kl, err := readInt(r)
		if err != nil {
			return fmt.Errorf("record %d: %v", i, streamErr(err))
		}
		if kl == -1 {
			break
		}
		if kl < 0 || kl > maxRecordLen {
			return fmt.Errorf("record %d: key length %d out of range [0, %d MiB]", i, kl, maxRecordLen>>20)
		}
		k := make([]byte, kl)
		if _, err := io.ReadFull(r, k); err != nil {
			return fmt.Errorf("record %d: key: %v", i, streamErr(err))
		}
		vl, err := readInt(r)
		if err != nil {
			return fmt.Errorf("record %d: value length: %v", i, streamErr(err))
		}
		old, had := state[string(k)]
		if had {
			*held -= int64(len(k) + len(old))
		}
		if vl == -1 {
			delete(state, string(k))
			continue
		}
		if vl < 0 || vl > maxRecordLen {
			return fmt.Errorf("record %d: value length %d out of range [0, %d MiB]", i, vl, maxRecordLen>>20)
		}
		if *held += int64(len(k)) + int64(vl); *held > maxHeld {
			return fmt.Errorf("record %d: the partition's state holds more than %d MiB of keys and values: beyond inspect's memory bound", i, maxHeld>>20)
		}
		v := make([]byte, vl)
		if _, err := io.ReadFull(r, v); err != nil {
			return fmt.Errorf("record %d: value: %v", i, streamErr(err))
		}
		state[string(k)] = v
	}
	if _, err := r.ReadByte(); err != io.EOF {
		if err == nil {
			return fmt.Errorf("data after the end marker")
		}
		return fmt.Errorf("%v", streamErr(err))
	}
	return nil
}

func streamErr(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errors.New("cut off (no end marker)")
	}
	return err
}

func readInt(r io.Reader) (int32, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(b[:])), nil
}

// readState reads a state file whole (one version's changes: small) and
// checks Spark 4.1's checksum sidecar <name>.crc when present.
func (c *reader) readState(name string) ([]byte, error) {
	f, err := c.open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxStateFile+1))
	if err != nil {
		return nil, c.wrap(name, err)
	}
	if len(raw) > maxStateFile {
		return nil, c.fail(name, "larger than %d MiB: beyond inspect's bound on one state file", maxStateFile>>20)
	}
	side, err := c.readSmall(name + ".crc")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err == nil {
		var m struct {
			Algorithm    string `json:"algorithm"`
			Value        int64  `json:"value"`
			MainFileSize int64  `json:"mainFileSize"`
		}
		if json.Unmarshal(side, &m) == nil && m.Algorithm == "CRC32C" {
			got := int32(crc32.Checksum(raw, crc32.MakeTable(crc32.Castagnoli)))
			if int64(got) != m.Value || m.MainFileSize != int64(len(raw)) {
				return nil, c.fail(name, "checksum mismatch with %s.crc (CRC32C %d, sidecar %d; %d bytes, sidecar %d): the file is corrupt", name, got, m.Value, len(raw), m.MainFileSize)
			}
		}
	}
	return raw, nil
}

// summarise adds one key's event time (or expiry) to the partition's range
// and to the groups of keys by their other columns.
func (l rowLayout) summarise(pt *Partition, k, v []byte, groups groupSet) error {
	k, v = k[min(l.prefix, len(k)):], v[min(l.prefix, len(v)):]
	var t int64
	var ok bool
	var err error
	switch {
	case l.timeField >= 0:
		t, ok, err = fixedField(k, len(l.key.fields), l.timeField)
	case l.expiry:
		t, ok, err = fixedField(v, 1, 0)
	default:
		return nil
	}
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	if t < row.MinEventTimeMicros || t > row.MaxEventTimeMicros {
		return fmt.Errorf("a key's %s %d µs is outside years 0000-9999 [%d, %d]: corrupt", l.timeName(), t, row.MinEventTimeMicros, row.MaxEventTimeMicros)
	}
	if !pt.HasRange {
		pt.MinUs, pt.MaxUs, pt.HasRange = t, t, true
	}
	pt.MinUs, pt.MaxUs = min(pt.MinUs, t), max(pt.MaxUs, t)
	if l.timeField >= 0 {
		g, err := otherColumns(k, len(l.key.fields), l.timeField)
		if err != nil {
			return err
		}
		h := sha256.Sum256([]byte(g))
		if e, seen := groups[h]; !seen {
			groups[h] = groupTimes{first: t}
		} else if e.first != t {
			groups[h] = groupTimes{first: e.first, several: true}
			if !e.several && l.examples != nil {
				addExample(l.examples, exampleText(g))
			}
		}
	}
	return nil
}

func (l rowLayout) timeName() string {
	if l.expiry {
		return "expiresAtMicros"
	}
	return "event time"
}

// fixedField reads field i of an UnsafeRow with n fields as int64 (little
// endian, B.4); ok is false when the field is null.
func fixedField(row []byte, n, i int) (int64, bool, error) {
	bits := ((n + 63) / 64) * 8
	off := bits + 8*i
	if n <= 0 || off+8 > len(row) {
		return 0, false, fmt.Errorf("an UnsafeRow of %d bytes is too short for %d fields", len(row), n)
	}
	if row[i/8]&(1<<(i%8)) != 0 {
		return 0, false, nil
	}
	return int64(binary.LittleEndian.Uint64(row[off:])), true, nil
}

// otherColumns is the bytes of every field but skip: the slot for fixed
// fields, the data for variable-length ones (offset and size in the slot).
func otherColumns(row []byte, n, skip int) (string, error) {
	bits := ((n + 63) / 64) * 8
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i == skip {
			continue
		}
		off := bits + 8*i
		if off+8 > len(row) {
			return "", fmt.Errorf("an UnsafeRow of %d bytes is too short for %d fields", len(row), n)
		}
		slot := binary.LittleEndian.Uint64(row[off:])
		o, sz := int(slot>>32), int(slot&math.MaxUint32)
		if o >= bits+8*n && o+sz <= len(row) {
			b.Write(row[o : o+sz])
		} else {
			b.Write(row[off : off+8])
		}
		b.WriteByte(0)
	}
	return b.String(), nil
}

// addExample keeps the maxExamples smallest examples, sorted, so that
// they do not depend on the order the state was read in.
func addExample(ex *[]string, x string) {
	i, found := slices.BinarySearch(*ex, x)
	if found || i >= maxExamples {
		return
	}
	*ex = slices.Insert(*ex, i, x)
	if len(*ex) > maxExamples {
		*ex = (*ex)[:maxExamples]
	}
}

// exampleText shows a key's other columns (otherColumns' form): each
// column as text when it is printable UTF-8, else in hex.
func exampleText(g string) string {
	parts := strings.Split(strings.TrimSuffix(g, "\x00"), "\x00")
	for i, p := range parts {
		if !utf8.ValidString(p) || strings.IndexFunc(p, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
			parts[i] = "0x" + hex.EncodeToString([]byte(p))
		}
	}
	return strings.Join(parts, ", ")
}

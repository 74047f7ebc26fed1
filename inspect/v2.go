package inspect

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/internal/codec"
)

// State checkpoint format v2 (spark.sql.streaming.stateStore.
// checkpointFormatVersion=2, RocksDB with changelog checkpointing;
// docs/spark-semantics.md §8.6, docs/diagnose.md B.7):
//
//   - commits/N is "v2" and {"nextBatchWatermarkMs":W,"stateUniqueIds":
//     {"<operator>":[[<id of store 0 of partition 0>,...],...]}}: per
//     operator, per partition, one checkpoint id (a UUID) per store, naming
//     the state version N+1 that batch N committed;
//   - a partition's files are <V>_<id>.changelog and <V>_<id>.zip (the
//     snapshot), SSTs/<n>-<uuid>.sst the snapshots' shared SST files;
//     several files can have the same version (a batch run again after a
//     crash writes a new id): only the id the commit log names is the
//     state, so files are chosen from it, never by listing;
//   - a changelog (inside the LZ4Block stream) starts with writeUTF("v3")
//     (records as v1) or writeUTF("v4") (records with a type byte, as v2),
//     then writeUTF of the lineage JSON [{"version":V,"checkpointUniqueId":
//     ID},...]: the versions before it, back to the last snapshot known
//     when it was written (or to version 1), ascending.
//
// inspect rebuilds version V of a partition from the changelogs 1..V the
// lineages chain together (each changelog names the id of the version
// before it), checking that they agree; Spark itself starts from the
// newest snapshot in V's lineage, which inspect cannot read (SSTs need
// RocksDB), so where the chain is cut before version 1 the partition's
// keys come from the snapshot's metadata (a snapshot of V) or are not
// counted.

// maxStores bounds the stores of one operator's partition in a commit (a
// stream-stream join has 4; dedup 1).
const maxStores = 64

// maxIDs bounds the checkpoint ids one commit names in all.
const maxIDs = 1 << 20

// uuidRe is java.util.UUID.toString: lower-case hex in 8-4-4-4-12.
var uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// stateIDs is a v2 commit's stateUniqueIds: operator -> partition -> one
// checkpoint id per store.
type stateIDs map[int][][]string

// commitEntry is one commits/N.
type commitEntry struct {
	// Version is the commit log version: 1, or 2 (format v2).
	Version              int
	NextBatchWatermarkMs int64
	// IDs is nil for v1 (and for a v2 commit of a query without state).
	IDs stateIDs
}

// parseCommit decodes the bytes of commits/N: "v1" or "v2", a newline,
// the CommitMetadata JSON (nextBatchWatermarkMs; stateUniqueIds in v2
// only). Errors say the line and the field.
func parseCommit(b []byte) (commitEntry, error) {
	var e commitEntry
	head, body, ok := strings.Cut(string(b), "\n")
	switch {
	case !ok:
		return e, errors.New("line 1: want v1 or v2 (the commit log version) and a line of JSON")
	case head == "v1":
		e.Version = 1
	case head == "v2":
		e.Version = 2
	default:
		return e, fmt.Errorf("line 1: %q: want v1 or v2 (the commit log version)", truncate(head, 20))
	}
	body = strings.TrimSuffix(body, "\n")
	if strings.Contains(body, "\n") {
		return e, errors.New("line 3: data after the commit metadata line")
	}
	obj, err := strictObject([]byte(body))
	if err != nil {
		return e, fmt.Errorf("line 2: %v", err)
	}
	for k := range obj {
		if k != "nextBatchWatermarkMs" && k != "stateUniqueIds" {
			return e, fmt.Errorf("line 2: unknown field %q (known: nextBatchWatermarkMs, stateUniqueIds)", truncate(k, 40))
		}
	}
	raw, ok := obj["nextBatchWatermarkMs"]
	if !ok {
		return e, errors.New("line 2: want {\"nextBatchWatermarkMs\": N >= 0}")
	}
	n, err := wholeNumber(raw)
	if err != nil || n < 0 {
		return e, errors.New("line 2: want {\"nextBatchWatermarkMs\": N >= 0}")
	}
	if n > maxWatermarkMs {
		return e, fmt.Errorf("line 2: nextBatchWatermarkMs %d is outside [0, %d] (ms since 1970, up to year 9999): corrupt", n, maxWatermarkMs)
	}
	e.NextBatchWatermarkMs = n
	raw, ok = obj["stateUniqueIds"]
	if !ok || string(raw) == "null" {
		return e, nil
	}
	if e.Version == 1 {
		return e, errors.New("line 2: stateUniqueIds in a v1 commit: Spark writes them only in v2 (checkpoint format v2)")
	}
	if e.IDs, err = parseStateIDs(raw); err != nil {
		return e, fmt.Errorf("line 2: stateUniqueIds: %v", err)
	}
	return e, nil
}

func parseStateIDs(raw []byte) (stateIDs, error) {
	ops, err := strictObject(raw)
	if err != nil {
		return nil, err
	}
	out := stateIDs{}
	seen := map[string]string{}
	count := 0
	// In operator order, so that the error for a checkpoint with several
	// faults is always the same.
	names := make([]string, 0, len(ops))
	for k := range ops {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		op, err := strconv.Atoi(k)
		if err != nil || op < 0 || strconv.Itoa(op) != k {
			return nil, fmt.Errorf("operator %q: not an operator id (a whole number from 0)", truncate(k, 20))
		}
		var parts [][]string
		if err := json.Unmarshal(ops[k], &parts); err != nil {
			return nil, fmt.Errorf("operator %d: want an array per partition of arrays of ids", op)
		}
		if len(parts) == 0 || len(parts) > maxPartitions {
			return nil, fmt.Errorf("operator %d: %d partitions, want 1 to %d", op, len(parts), maxPartitions)
		}
		for p, stores := range parts {
			if len(stores) == 0 || len(stores) > maxStores {
				return nil, fmt.Errorf("operator %d partition %d: %d ids, want 1 to %d (one per store)", op, p, len(stores), maxStores)
			}
			for _, id := range stores {
				if !uuidRe.MatchString(id) {
					return nil, fmt.Errorf("operator %d partition %d: checkpoint id %q is not a UUID (Spark writes java.util.UUID, lower-case)", op, p, truncate(id, 40))
				}
				where := fmt.Sprintf("operator %d partition %d", op, p)
				if w, dup := seen[id]; dup {
					return nil, fmt.Errorf("%s: checkpoint id %s is named for %s too: each store version has its own", where, id, w)
				}
				seen[id] = where
				if count++; count > maxIDs {
					return nil, fmt.Errorf("more than %d checkpoint ids", maxIDs)
				}
			}
		}
		out[op] = parts
	}
	return out, nil
}

// strictObject decodes one JSON object: nothing after it, no key twice
// (encoding/json would keep the last in silence).
func strictObject(b []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object, got %q", truncate(string(b), 40))
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		k, _ := tok.(string)
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("field %q given twice", truncate(k, 40))
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

var wholeRe = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// wholeNumber reads a JSON whole number that fits an int64.
func wholeNumber(raw json.RawMessage) (int64, error) {
	if !wholeRe.Match(raw) {
		return 0, fmt.Errorf("want a whole number, got %s", truncate(string(raw), 30))
	}
	return strconv.ParseInt(string(raw), 10, 64)
}

// lineageItem is one entry of a changelog's lineage (Spark's LineageItem).
type lineageItem struct {
	Version int64
	ID      string
}

// changelogHead is what a changelog holds before its records.
type changelogHead struct {
	// Version is the changelog format: 1 (no header), 2, 3 or 4.
	Version int
	Lineage []lineageItem
	// Dedupsim: the file is dedupsim's engine's (uncompressed, its
	// trailer after the end marker), not Spark's.
	Dedupsim bool
}

// Which changelog formats a file may hold.
type heads uint8

const (
	headNone heads = 1 << iota // HDFS .delta and .snapshot: no header
	headV1                     // <V>.changelog: v1, or v2 (record types)
	headV2                     // <V>_<id>.changelog: v3 or v4 (lineage)
)

// maxLineage bounds a lineage's entries (a writeUTF string is at most
// 65535 bytes, an entry at least 60).
const maxLineage = 2048

// readHead reads the version and lineage at the start of a decoded
// changelog; a v1 stream (no header) is left untouched.
func readHead(r *bufio.Reader, allowed heads) (changelogHead, error) {
	h := changelogHead{Version: 1}
	p, _ := r.Peek(4)
	if len(p) < 4 || p[0] != 0 || p[1] != 2 || p[2] != 'v' {
		if allowed&(headNone|headV1) == 0 {
			return h, errors.New("no changelog version (want writeUTF(\"v3\") or \"v4\" at the start of a file named <version>_<checkpoint id>)")
		}
		return h, nil
	}
	if allowed&headNone != 0 {
		// A delta or snapshot whose first key is 161 KiB long reads the
		// same; Spark's HDFS store never writes a header.
		return h, nil
	}
	r.Discard(4)
	switch v := p[3]; {
	case v == '2' && allowed&headV1 != 0:
		h.Version = 2
		return h, nil
	case (v == '3' || v == '4') && allowed&headV2 != 0:
		h.Version = int(v - '0')
	case v >= '2' && v <= '4':
		if allowed&headV2 != 0 {
			return h, fmt.Errorf("a v%c changelog in a file named <version>_<checkpoint id>: format v2 writes v3 or v4 (with a lineage)", v)
		}
		return h, fmt.Errorf("a v%c changelog (with a lineage: checkpoint format v2) in a file named <version>.changelog", v)
	default:
		return h, fmt.Errorf("changelog version v%q: Spark writes v1 to v4", rune(v))
	}
	var n uint16
	if err := binary.Read(r, binary.BigEndian, &n); err != nil {
		return h, errors.New("lineage: cut off")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return h, errors.New("lineage: cut off")
	}
	l, err := parseLineage(b)
	if err != nil {
		return h, fmt.Errorf("lineage: %v", err)
	}
	h.Lineage = l
	return h, nil
}

// parseLineage decodes a lineage JSON: [{"version":V,"checkpointUniqueId":
// "<uuid>"},...], every field checked.
func parseLineage(b []byte) ([]lineageItem, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
		return nil, fmt.Errorf("want a JSON array of {\"version\",\"checkpointUniqueId\"}, got %q", truncate(string(b), 40))
	}
	if len(raw) > maxLineage {
		return nil, fmt.Errorf("%d entries, beyond %d", len(raw), maxLineage)
	}
	out := make([]lineageItem, 0, len(raw))
	for i, r := range raw {
		obj, err := strictObject(r)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %v", i, err)
		}
		if len(obj) != 2 {
			return nil, fmt.Errorf("entry %d: want exactly version and checkpointUniqueId", i)
		}
		v, err := wholeNumber(obj["version"])
		if err != nil || v < 1 {
			return nil, fmt.Errorf("entry %d: version: want a whole number >= 1", i)
		}
		var id string
		if json.Unmarshal(obj["checkpointUniqueId"], &id) != nil || !uuidRe.MatchString(id) {
			return nil, fmt.Errorf("entry %d: checkpointUniqueId %s is not a UUID", i, truncate(string(obj["checkpointUniqueId"]), 40))
		}
		out = append(out, lineageItem{v, id})
	}
	return out, nil
}

// checkLineage holds a lineage to what the changelog of version v can
// name: the versions just before v, ascending, contiguous, ending at v-1;
// empty only for version 1.
func checkLineage(v int64, l []lineageItem) error {
	if len(l) == 0 {
		if v != 1 {
			return fmt.Errorf("an empty lineage in the changelog of version %d: only version 1 has none", v)
		}
		return nil
	}
	for i, it := range l {
		if it.Version >= v {
			return fmt.Errorf("lineage entry %d names version %d, not below the changelog's own version %d (a loop)", i, it.Version, v)
		}
		if i > 0 && it.Version != l[i-1].Version+1 {
			return fmt.Errorf("lineage entry %d: version %d after %d (want consecutive versions, ascending)", i, it.Version, l[i-1].Version)
		}
	}
	if last := l[len(l)-1].Version; last != v-1 {
		return fmt.Errorf("the lineage ends at version %d, not at %d (the version before this changelog's)", last, v-1)
	}
	return nil
}

// replayTyped applies v2/v4 records (Spark's StateStoreChangelogWriterV2):
// a type byte (0x01 put, 0x10 delete, 0x11 merge, 0x00 end), int32 key
// length, key, then for a put the int32 value length and value, for a
// delete int32 -1.
func replayTyped(r *bufio.Reader, state map[string][]byte, held *int64) error {
	for i := 0; ; i++ {
		t, err := r.ReadByte()
		if err != nil {
			return fmt.Errorf("record %d: %v", i, streamErr(err))
		}
		switch t {
		case 0x00:
			if _, err := r.ReadByte(); err != io.EOF {
				if err == nil {
					return errors.New("data after the end record")
				}
				return streamErr(err)
			}
			return nil
		case 0x01, 0x10:
		case 0x11:
			return fmt.Errorf("record %d: a merge record: never written for a dedup operator's state", i)
		default:
			return fmt.Errorf("record %d: record type 0x%02x (want 0x00 end, 0x01 put, 0x10 delete)", i, t)
		}
		kl, err := readInt(r)
		if err != nil {
			return fmt.Errorf("record %d: key length: %v", i, streamErr(err))
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
		if t == 0x10 {
			if vl != -1 {
				return fmt.Errorf("record %d: a delete record with value length %d (want -1)", i, vl)
			}
			if had {
				*held -= int64(len(k) + len(old))
				delete(state, string(k))
			}
			continue
		}
		if vl < 0 || vl > maxRecordLen {
			return fmt.Errorf("record %d: value length %d out of range [0, %d MiB]", i, vl, maxRecordLen>>20)
		}
		if had {
			*held -= int64(len(k) + len(old))
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
}

// stateFile is a partition file's name split: <version>[_<id>].<kind>.
type stateFile struct {
	version int64
	id      string // "" in format v1
	kind    string // changelog, zip, delta, snapshot, changelog.crc, ...
}

// parseStateName splits a partition file's name; ok is false for names
// that are not state files (Spark leaves none, but a user's copy may).
// A name with a checkpoint id that is not a UUID is an error.
func parseStateName(n string) (stateFile, bool, error) {
	i := strings.IndexByte(n, '.')
	if i < 0 {
		return stateFile{}, false, nil
	}
	stem, kind := n[:i], n[i+1:]
	ver, id, hasID := strings.Cut(stem, "_")
	v, err := strconv.ParseInt(ver, 10, 64)
	if err != nil || v < 0 || strconv.FormatInt(v, 10) != ver {
		return stateFile{}, false, nil
	}
	if hasID && !uuidRe.MatchString(id) {
		return stateFile{}, false, fmt.Errorf("checkpoint id %q in the file name is not a UUID (format v2 names files <version>_<java.util.UUID>.%s)", truncate(id, 40), kind)
	}
	return stateFile{v, id, kind}, true, nil
}

func v2Name(v int64, id, kind string) string { return fmt.Sprintf("%d_%s.%s", v, id, kind) }

// changelogHeadOf reads only the version and lineage of a changelog.
func (c *reader) changelogHeadOf(name string) (changelogHead, error) {
	raw, err := c.readState(name)
	if err != nil {
		return changelogHead{}, err
	}
	zr, own, err := stateStream(raw)
	if err != nil {
		return changelogHead{}, c.fail(name, "%v", err)
	}
	br := bufio.NewReader(&boundedReader{zr, maxDecoded})
	h, err := readHead(br, headV2)
	h.Dedupsim = own
	if err != nil {
		return h, c.fail(name, "%v", err)
	}
	return h, nil
}

// partitionV2 rebuilds version of one partition of a format-v2 checkpoint
// whose commit log names id for it.
func (c *reader) partitionV2(base string, p int, version int64, id string, l rowLayout) (Partition, error) {
	dir := fmt.Sprintf("%s/%d", base, p)
	pt := Partition{ID: p, Keys: -1, CheckpointID: id}
	ents, err := fs.ReadDir(c.root.FS(), dir)
	if err != nil {
		return pt, &Error{c.dir + "/" + dir, err}
	}
	have := map[string]bool{}
	var named []stateFile
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
		if f.kind != "changelog" && f.kind != "zip" {
			continue // checksum sidecars (<name>.crc)
		}
		if f.id == "" {
			return pt, c.fail(dir+"/"+n, "a state file named without a checkpoint id in a format-v2 checkpoint (commits/%d is v2): Spark never mixes the two", c.r.LastCommitBatch)
		}
		have[n] = true
		named = append(named, f)
		pt.Files++
	}
	if version == 0 {
		pt.Keys, pt.From = 0, "no committed version"
		return pt, nil
	}
	top := v2Name(version, id, "changelog")
	topZip := v2Name(version, id, "zip")
	commitName := fmt.Sprintf("commits/%d", c.r.LastCommitBatch)
	if !have[top] && !have[topZip] {
		return pt, c.fail(dir, "%s names checkpoint id %s for partition %d, but neither %s nor %s is there: the state of version %d is lost", commitName, id, p, top, topZip, version)
	}
	// Walk the changelogs down from version, each lineage naming the id of
	// the version before; the ids later lineages named must agree.
	named4 := map[int64]string{version: id}
	var chain []lineageItem
	var topLineage []lineageItem
	complete := false
	cur := lineageItem{version, id}
	for {
		name := v2Name(cur.Version, cur.ID, "changelog")
		if !have[name] {
			break
		}
		h, err := c.changelogHeadOf(dir + "/" + name)
		if err != nil {
			return pt, err
		}
		if err := checkLineage(cur.Version, h.Lineage); err != nil {
			return pt, c.fail(dir+"/"+name, "%v", err)
		}
		for _, it := range h.Lineage {
			if prev, ok := named4[it.Version]; ok && prev != it.ID {
				return pt, c.fail(dir+"/"+name, "its lineage names %s for version %d, but %s (from %s and the later lineages) names %s: the lineages disagree", it.ID, it.Version, v2Name(version, id, "changelog"), commitName, prev)
			}
			named4[it.Version] = it.ID
		}
		if cur.Version == version {
			topLineage = h.Lineage
		}
		chain = append(chain, cur)
		if cur.Version == 1 {
			complete = true
			break
		}
		cur = h.Lineage[len(h.Lineage)-1]
	}
	// Spark's rule (RocksDB.load): the snapshot of version itself, or
	// else the newest snapshot among the versions of its lineage, or,
	// when the lineage goes back to version 1, none.
	base0 := int64(-1)
	if have[topZip] {
		base0 = version
	} else {
		for i := len(topLineage) - 1; i >= 0; i-- {
			if have[v2Name(topLineage[i].Version, topLineage[i].ID, "zip")] {
				base0 = topLineage[i].Version
				break
			}
		}
		if base0 < 0 {
			if len(topLineage) > 0 && topLineage[0].Version != 1 {
				return pt, c.fail(dir+"/"+top, "its lineage starts at version %d, and no snapshot of a version in it (%s ...) is there: Spark cannot load version %d (CANNOT_FIND_BASE_SNAPSHOT_CHECKPOINT)", topLineage[0].Version, v2Name(topLineage[0].Version, topLineage[0].ID, "zip"), version)
			}
			base0 = 0
		}
	}
	ignored := 0
	for _, f := range named {
		if f.version > version {
			c.warn("%s/%s: a state version newer than the last commit (a batch in flight)", dir, v2Name(f.version, f.id, f.kind))
			continue
		}
		if want, ok := named4[f.version]; ok && want != f.id {
			ignored++
		}
	}
	if ignored > 0 {
		pt.Ignored = ignored
		c.warn("%s: %d state file(s) of committed versions carry a checkpoint id the commit log and lineage do not name (a batch run again after a crash, or a task retried): not the state, ignored as Spark ignores them", dir, ignored)
	}
	if !complete && !have[topZip] && cur.Version > base0 {
		// Spark replays the changelogs after its base snapshot: one the
		// lineage names is not there.
		return pt, c.fail(dir+"/"+v2Name(cur.Version, cur.ID, "changelog"), "missing: the lineage of version %d names it (version %d, id %s), and Spark replays it onto the snapshot of version %d: the state cannot be loaded", version, cur.Version, cur.ID, base0)
	}
	if !complete {
		if have[topZip] {
			return c.zipOnly(dir, map[int64]string{version: topZip}, version, pt)
		}
		c.warn("%s: version %d is the snapshot %s plus changelogs, and the changelogs before the snapshot are gone: RocksDB's SST files cannot be read without RocksDB, so its keys are not counted", dir, version, v2Name(base0, named4[base0], "zip"))
		pt.From = fmt.Sprintf("snapshot %s (SSTs need RocksDB)", v2Name(base0, named4[base0], "zip"))
		return pt, nil
	}
	state := map[string][]byte{}
	c.held = int64(groupBytes * len(c.groups))
	l.prefix = 1
	for i := len(chain) - 1; i >= 0; i-- {
		name := dir + "/" + v2Name(chain[i].Version, chain[i].ID, "changelog")
		raw, err := c.readState(name)
		if err != nil {
			return pt, err
		}
		h, err := replayBytes(raw, headV2, state, &c.held)
		if err != nil {
			return pt, c.fail(name, "%v", err)
		}
		c.own = c.own || h.Dedupsim
	}
	pt.From = fmt.Sprintf("changelogs 1..%d (checkpoint ids from %s and the lineages)", version, commitName)
	return c.finishPartition(dir, pt, state, l)
}

// operatorIDs is the checkpoint id of each partition of op that the last
// commit names (format v2), nil in format v1.
func (c *reader) operatorIDs(op Operator, parts int) ([][]string, error) {
	if c.r.CheckpointFormat != 2 || op.Version == 0 {
		return nil, nil
	}
	name := fmt.Sprintf("commits/%d", c.r.LastCommitBatch)
	ids, ok := c.ids[op.ID]
	if !ok {
		return nil, c.fail(name, "line 2: stateUniqueIds names no checkpoint ids for operator %d (state/%d): in format v2 its state files cannot be located without them", op.ID, op.ID)
	}
	if len(ids) != parts || len(ids) != op.NumPartitions {
		return nil, c.fail(name, "line 2: stateUniqueIds names %d partitions for operator %d, which has %d (state/%d)", len(ids), op.ID, op.NumPartitions, op.ID)
	}
	for p, s := range ids {
		if len(s) != 1 {
			return nil, c.fail(name, "line 2: stateUniqueIds names %d stores for operator %d partition %d: a dedup operator has one (inspect reads one store per operator)", len(s), op.ID, p)
		}
	}
	return ids, nil
}

// dedupsim's engine writes its state files uncompressed, with a 44-byte
// trailer after the end marker ("dedupsim", the file's kind, store and
// version, a batch stamp, a CRC-32C of everything before the CRC:
// docs/spark-semantics.md §14.8); Spark's are LZ4Block streams.
const (
	ownMagic      = "dedupsim"
	ownTrailerLen = 44
)

// stateStream is the decoded stream of a state file's bytes: an LZ4Block
// stream as Spark writes it, or, for a file that carries dedupsim's
// trailer (checked), its uncompressed records. own says which.
func stateStream(raw []byte) (io.Reader, bool, error) {
	n := len(raw)
	if n >= ownTrailerLen+4 && !bytes.HasPrefix(raw, []byte("LZ4Block")) && string(raw[n-ownTrailerLen:n-ownTrailerLen+len(ownMagic)]) == ownMagic {
		want := binary.BigEndian.Uint32(raw[n-4:])
		if got := crc32.Checksum(raw[:n-4], crc32.MakeTable(crc32.Castagnoli)); got != want {
			return nil, true, fmt.Errorf("dedupsim's trailer: CRC-32C %08x, the trailer says %08x: the file is damaged", got, want)
		}
		return bytes.NewReader(raw[:n-ownTrailerLen]), true, nil
	}
	return codec.NewLZ4BlockReader(bytes.NewReader(raw)), false, nil
}

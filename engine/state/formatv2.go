package state

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

// State checkpoint format v2 (Spark's spark.sql.streaming.stateStore.
// checkpointFormatVersion=2, spark-semantics.md §8.9), as the Lifecycle
// writes it when EnableFormatV2 was called:
//
//	<V>_<id>.<delta suffix>     the changes of version V, committed under
//	                            checkpoint id <id> (a UUID the driver's id
//	                            generator gives: never a global random source)
//	<V>_<id>.<snapshot suffix>  a snapshot of that version
//
// A delta starts with Java's writeUTF("v3") and writeUTF of its lineage,
// [{"version":v,"checkpointUniqueId":"id"},...]: the versions before V,
// ascending, back to the newest snapshot (or to version 1), as Spark's
// StateStoreChangelogWriterV3 writes it; then the v1 records, the end
// marker and dedupsim's trailer as in format v1 (files.go). The commit log
// names the id of each store's new version (commits/N "v2" with
// stateUniqueIds), so a version is loaded by (version, id): the files of
// an attempt that crashed before its commit carry another id and are
// never read. Loading follows Spark's RocksDB.load: the snapshot of the
// version itself, else the newest snapshot among the versions of its
// lineage, else (a lineage back to version 1) the empty state, and the
// deltas after it under the ids the lineage names.

// LineageItem is one entry of a delta's lineage (Spark's LineageItem).
type LineageItem struct {
	Version int64  `json:"version"`
	ID      string `json:"checkpointUniqueId"`
}

// CheckpointIDer is implemented by providers that can write format v2.
type CheckpointIDer interface {
	// EnableFormatV2 switches the provider to format v2; newID gives the
	// checkpoint id of every version committed from now on. Call it before
	// the first Load.
	EnableFormatV2(newID func() string)
	// SetLoadIDs names the checkpoint id of version of each store, as the
	// commit log of batch version-1 records them; a Load of that version
	// that cannot reuse the cached copy reads the files of these ids.
	SetLoadIDs(version int64, ids map[ID]string)
	// CommittedIDs returns the checkpoint ids of the stores committed as
	// version (for the commit log).
	CommittedIDs(version int64) map[ID]string
}

// formatV2 is the Lifecycle's format-v2 state.
type formatV2 struct {
	newID       func() string
	loadVersion int64
	loadIDs     map[ID]string
	// committed is, per store, the version and id of its last commit.
	committed map[ID]LineageItem
}

// EnableFormatV2 implements CheckpointIDer.
func (lc *Lifecycle[W]) EnableFormatV2(newID func() string) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.v2 = &formatV2{newID: newID, committed: map[ID]LineageItem{}}
}

// SetLoadIDs implements CheckpointIDer.
func (lc *Lifecycle[W]) SetLoadIDs(version int64, ids map[ID]string) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.v2 != nil {
		lc.v2.loadVersion, lc.v2.loadIDs = version, ids
	}
}

// CommittedIDs implements CheckpointIDer.
func (lc *Lifecycle[W]) CommittedIDs(version int64) map[ID]string {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	out := map[ID]string{}
	if lc.v2 == nil {
		return out
	}
	for id, it := range lc.v2.committed {
		if it.Version == version {
			out[id] = it.ID
		}
	}
	return out
}

// idRe is the form of a checkpoint id: java.util.UUID.toString.
var idRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// V2Name is the name of a format-v2 file: "<v>_<id><suffix>".
func V2Name(v int64, id, suffix string) string {
	return strconv.FormatInt(v, 10) + "_" + id + suffix
}

// v2Files is a listing of one store directory in format v2: per file
// name, its version, and whether it is a snapshot.
type v2Files struct {
	deltas, snapshots map[string]int64
}

func listV2(fs fsys.FS, dir string, n FileNames) (v2Files, error) {
	f := v2Files{deltas: map[string]int64{}, snapshots: map[string]int64{}}
	names, err := fs.ReadDir(dir)
	if err != nil {
		if fsys.IsNotExist(err) {
			return f, nil
		}
		return f, fmt.Errorf("list %s: %w", dir, err)
	}
	for _, name := range names {
		stem, snap := "", false
		switch {
		case strings.HasSuffix(name, n.Delta):
			stem = strings.TrimSuffix(name, n.Delta)
		case strings.HasSuffix(name, n.Snapshot):
			stem, snap = strings.TrimSuffix(name, n.Snapshot), true
		default:
			continue
		}
		num, id, ok := strings.Cut(stem, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || v < 1 || strconv.FormatInt(v, 10) != num || !idRe.MatchString(id) {
			continue
		}
		if snap {
			f.snapshots[name] = v
		} else {
			f.deltas[name] = v
		}
	}
	return f, nil
}

// maxUTF is the longest string Java's writeUTF writes.
const maxUTF = 65535

func appendUTF(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// v2Header is a format-v2 delta's header: writeUTF("v3"), writeUTF of the
// lineage JSON.
func v2Header(lineage []LineageItem) ([]byte, error) {
	if lineage == nil {
		lineage = []LineageItem{}
	}
	js, err := json.Marshal(lineage)
	if err != nil {
		return nil, err
	}
	if len(js) > maxUTF {
		return nil, fmt.Errorf("the lineage of %d versions takes %d bytes, beyond the %d a changelog header holds (writeUTF): a snapshot is overdue", len(lineage), len(js), maxUTF)
	}
	return appendUTF(appendUTF(nil, "v3"), string(js)), nil
}

// splitV2Header reads the header of a format-v2 delta (its trailer cut
// off) and returns the lineage and the records after it; errors are
// *CorruptFileError naming p. version is the delta's own version: the
// lineage must list the versions just before it, ascending, consecutive,
// ending at version-1 (empty only for version 1).
func splitV2Header(p string, body []byte, version int64) ([]LineageItem, []byte, error) {
	corrupt := func(format string, a ...any) ([]LineageItem, []byte, error) {
		return nil, nil, &CorruptFileError{Path: p, Msg: fmt.Sprintf(format, a...)}
	}
	if len(body) < 4 || !bytes.Equal(body[:4], []byte{0, 2, 'v', '3'}) {
		return corrupt("no format-v2 header (want writeUTF(\"v3\") and a lineage)")
	}
	body = body[4:]
	if len(body) < 2 {
		return corrupt("lineage cut off")
	}
	n := int(binary.BigEndian.Uint16(body))
	if len(body) < 2+n {
		return corrupt("lineage cut off (%d of %d bytes)", len(body)-2, n)
	}
	var l []LineageItem
	dec := json.NewDecoder(bytes.NewReader(body[2 : 2+n]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil || dec.More() {
		return corrupt("lineage: want [{\"version\":V,\"checkpointUniqueId\":\"<uuid>\"},...]")
	}
	for i, it := range l {
		switch {
		case !idRe.MatchString(it.ID):
			return corrupt("lineage entry %d: checkpoint id %q is not a UUID", i, it.ID)
		case it.Version < 1 || it.Version >= version:
			return corrupt("lineage entry %d: version %d is not in [1, %d]", i, it.Version, version-1)
		case i > 0 && it.Version != l[i-1].Version+1:
			return corrupt("lineage entry %d: version %d after %d (want consecutive versions)", i, it.Version, l[i-1].Version)
		}
	}
	if len(l) == 0 && version != 1 || len(l) > 0 && l[len(l)-1].Version != version-1 {
		return corrupt("the lineage does not end at version %d", version-1)
	}
	return l, body[2+n:], nil
}

// cachedIDLocked reports whether a cached copy of version with
// checkpoint id cached may serve a Load: in format v2, only if it is the
// version the commit log names.
func (lc *Lifecycle[W]) cachedIDLocked(id ID, cached string, version int64) bool {
	if lc.v2 == nil || lc.v2.loadVersion != version {
		return true
	}
	want, ok := lc.v2.loadIDs[id]
	return !ok || want == cached
}

// loadIDLocked is the checkpoint id of version of id: the one SetLoadIDs
// named, or the one this provider committed.
func (lc *Lifecycle[W]) loadIDLocked(id ID, version int64) (string, error) {
	if c, ok := lc.v2.committed[id]; ok && c.Version == version {
		return c.ID, nil
	}
	if lc.v2.loadVersion == version {
		if s, ok := lc.v2.loadIDs[id]; ok {
			return s, nil
		}
	}
	return "", fmt.Errorf("no checkpoint id is known for version %d of %s (format v2: the commit log of batch %d names it)", version, id.Dir(), version-1)
}

// rebuildV2Locked builds version (> 0) of id in format v2 and returns it
// with the id and lineage of that version.
func (lc *Lifecycle[W]) rebuildV2Locked(id ID, version int64) (W, string, []LineageItem, error) {
	dir := id.Dir()
	var w W
	built := false
	fail := func(err error) (W, string, []LineageItem, error) {
		if built {
			lc.report(id, lc.backend.Dispose(w))
		}
		var zero W
		return zero, "", nil, fmt.Errorf("cannot load state version %d of %s: %w", version, dir, err)
	}
	uid, err := lc.loadIDLocked(id, version)
	if err != nil {
		return fail(err)
	}
	files, err := listV2(lc.fs, dir, lc.names)
	if err != nil {
		return fail(err)
	}
	readDelta := func(v int64, vid string) ([]LineageItem, []byte, error) {
		name := path.Join(dir, V2Name(v, vid, lc.names.Delta))
		data, err := lc.fs.ReadFile(name)
		if err != nil {
			if fsys.IsNotExist(err) {
				return nil, nil, &MissingFileError{Path: name, Version: version}
			}
			return nil, nil, err
		}
		body, err := CheckTrailer(name, data, lc.names.DeltaKind, id, v)
		if err != nil {
			return nil, nil, err
		}
		return splitV2Header(name, body, v)
	}
	// Spark's RocksDB.load: the snapshot of the version itself is the
	// state; else the newest snapshot in its lineage; else, for a lineage
	// back to version 1, the empty state.
	var lineage []LineageItem
	chain := []LineageItem{{version, uid}}
	base := LineageItem{}
	if _, ok := files.snapshots[V2Name(version, uid, lc.names.Snapshot)]; ok {
		base = chain[0]
	} else {
		if lineage, _, err = readDelta(version, uid); err != nil {
			return fail(err)
		}
		chain = append(slices.Clone(lineage), chain...)
		for i := len(chain) - 1; i >= 0; i-- {
			if _, ok := files.snapshots[V2Name(chain[i].Version, chain[i].ID, lc.names.Snapshot)]; ok {
				base = chain[i]
				break
			}
		}
		if base.Version == 0 && chain[0].Version != 1 {
			return fail(&CorruptFileError{Path: path.Join(dir, V2Name(version, uid, lc.names.Delta)),
				Msg: fmt.Sprintf("its lineage starts at version %d and no snapshot of a version in it is there (Spark: CANNOT_FIND_BASE_SNAPSHOT_CHECKPOINT)", chain[0].Version)})
		}
	}
	if base.Version > 0 {
		name := path.Join(dir, V2Name(base.Version, base.ID, lc.names.Snapshot))
		data, err := lc.fs.ReadFile(name)
		if err != nil {
			return fail(err)
		}
		if w, err = lc.backend.ReadSnapshot(id, base.Version, name, data); err != nil {
			return fail(err)
		}
	} else if w, err = lc.backend.Empty(id); err != nil {
		return fail(err)
	}
	built = true
	for _, it := range chain {
		if it.Version <= base.Version {
			continue
		}
		_, records, err := readDelta(it.Version, it.ID)
		if err != nil {
			return fail(err)
		}
		if err := lc.backend.ApplyDelta(w, path.Join(dir, V2Name(it.Version, it.ID, lc.names.Delta)), records); err != nil {
			return fail(err)
		}
	}
	if base.Version == version {
		lineage = nil
	}
	return w, uid, lineage, nil
}

// v2Commit is what a format-v2 commit of a new version writes.
type v2Commit struct {
	id      string
	lineage []LineageItem
	header  []byte
}

// prepareV2Locked names the new version of store id, committed on h (the
// copy of version h.version), and builds its delta's header.
func (lc *Lifecycle[W]) prepareV2Locked(id ID, h *held[W]) (*v2Commit, error) {
	var lineage []LineageItem
	if h.version > 0 {
		lineage = append(slices.Clone(h.lineage), LineageItem{h.version, h.ckptID})
		// Back to the newest snapshot: Spark's lineage stops there.
		files, err := listV2(lc.fs, id.Dir(), lc.names)
		if err != nil {
			return nil, err
		}
		for i := len(lineage) - 1; i > 0; i-- {
			if _, ok := files.snapshots[V2Name(lineage[i].Version, lineage[i].ID, lc.names.Snapshot)]; ok {
				lineage = lineage[i:]
				break
			}
		}
	}
	hdr, err := v2Header(lineage)
	if err != nil {
		return nil, err
	}
	uid := lc.v2.newID()
	if !idRe.MatchString(uid) {
		return nil, fmt.Errorf("checkpoint id %q is not a UUID", uid)
	}
	return &v2Commit{id: uid, lineage: lineage, header: hdr}, nil
}

// maintainV2Locked is maintainLocked in format v2: a snapshot of the new
// version under its id when due, and deletion of the files of versions no
// retained version needs (whatever their ids).
func (lc *Lifecycle[W]) maintainV2Locked(id ID, w W, h *held[W]) {
	dir := id.Dir()
	newVersion := h.version
	files, err := listV2(lc.fs, dir, lc.names)
	if err != nil {
		lc.report(id, err)
		return
	}
	newest := func(atMost int64) int64 {
		best := int64(0)
		for _, v := range files.snapshots {
			if v <= atMost && v > best {
				best = v
			}
		}
		return best
	}
	if newVersion-newest(newVersion-1) >= int64(lc.opts.MinDeltasForSnapshot) {
		name := V2Name(newVersion, h.ckptID, lc.names.Snapshot)
		data, err := lc.backend.Snapshot(w, id, newVersion, lc.stamp)
		if err == nil {
			err = fsys.WriteAtomic(lc.fs, path.Join(dir, name), data)
		}
		if err != nil {
			lc.report(id, fmt.Errorf("write snapshot %s: %w", path.Join(dir, name), err))
		} else {
			files.snapshots[name] = newVersion
		}
	} else {
		lc.report(id, lc.backend.Tidy(w))
	}
	minVersion := newVersion - int64(lc.opts.MinVersionsToRetain) + 1
	if minVersion <= 0 {
		return
	}
	keepFrom := newest(minVersion)
	if keepFrom == 0 {
		return
	}
	var names []string
	for _, m := range []map[string]int64{files.deltas, files.snapshots} {
		for n, v := range m {
			if v < keepFrom {
				names = append(names, n)
			}
		}
	}
	lc.removeOldLocked(id, names)
}

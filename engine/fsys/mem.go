package fsys

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
)

// Mem is an in-memory FS that models what survives a crash, so that the
// simulator can cut the power at any point and restart over what a real disk
// would still hold. It is deterministic and starts no goroutines; it is safe
// for use from several goroutines (one mutex), though the engine uses it from
// one.
//
// Durability model (deliberately simple, close to POSIX on a journalling
// filesystem):
//
//   - A file's content has two layers: the current content (what ReadFile
//     returns, the page cache) and the durable content, which is the current
//     content as of the last File.Sync. Create on an existing file truncates
//     the current content only.
//   - A directory's entries (names → files) have two layers as well: the
//     current entries, changed by Create, Rename and Remove, and the durable
//     entries, which are the current entries as of the last SyncDir of that
//     directory. SyncDir makes all of the directory's entries durable at
//     once. A rename between two directories is durable on each side once
//     that side is synced (syncing only the target can leave the file under
//     both names after a crash, like a hard link).
//   - Directories themselves are durable as soon as MkdirAll returns, and
//     removing an (empty) directory is durable at once and drops its durable
//     entries. This is a simplification: a real disk also needs an fsync of
//     the parent for a new directory to survive.
//
// Crash drops everything that is not durable: the current entries of every
// directory become its durable entries (a created or renamed-in name that
// was never dir-synced disappears, a replaced name reverts to the file it
// named before, a removed name comes back), and every file's content reverts
// to its last Sync (never synced: empty). Files open before the crash become
// unusable. Torn writes (a prefix of unsynced data surviving) are not
// modelled.
//
// With SpillAbove(n), the content of a file that reaches n bytes moves out
// of the Go heap into a temporary file of the host (created in os.TempDir
// and unlinked at once, so nothing is left behind however the process
// ends), read back on ReadFile; the model above is unchanged (see
// SpillAbove).
type Mem struct {
	mu         sync.Mutex
	dirs       map[string]*memDir // by clean path; "." is the root
	epoch      uint64             // bumped by Crash; older handles fail
	spillAbove int                // 0: never spill
}

type memDir struct {
	files   map[string]*memInode // current entries by base name
	durable map[string]*memInode // entries as of the last SyncDir
	subdirs map[string]struct{}  // child directory base names
}

type memInode struct {
	data   blob // current content
	synced blob // content as of the last Sync
	// data and synced may share bytes: both are only ever appended to or
	// replaced, never modified in place, and synced's capacity equals its
	// length; a sealed spill file is never written again.
}

// blob is a file's content: b in the heap, or, when f is set, f.n bytes of
// a spilled (temporary, unlinked) host file.
type blob struct {
	b []byte
	f *spilled
}

// spilled is a spilled blob's place in a host file: n bytes from off in
// seg. Until it is sealed it belongs to one inode's current content alone,
// which appends to it while it is the last thing written to seg; sealed (at
// a Sync, or when a Clone shares it) it is never written again, and several
// blobs (a file's current and synced content, a Clone's) may share it.
type spilled struct {
	seg    *segment
	off    int64
	n      int
	sealed bool
}

// segment is one host file that spilled blobs are written to one after the
// other, across every Mem of the process: creating and unlinking a host
// temp file per spilled file cost two directory operations each (about
// 0.2 ms on ext4, a fifth of a simulated 1 M-copy run that spills a few
// hundred checkpoint files), writing on at the end of an open one costs
// nothing more. A segment takes new blobs until it holds segmentBytes,
// then the next spill opens another; it is closed, and its disk space
// freed, when no blob refers to it and it is not the one taking new blobs.
// Until then it keeps the disk blocks of its dead blobs too.
type segment struct {
	f   *os.File
	end int64 // bytes written (guarded by segMu)
}

const segmentBytes = 64 << 20

var (
	segMu  sync.Mutex // guards cur and every segment's end
	curSeg *segment
)

// read returns the content; the slice may be shared when in the heap
// (copy it before handing it out).
func (b blob) read() ([]byte, error) {
	if b.f == nil {
		return b.b, nil
	}
	buf := make([]byte, b.f.n)
	if _, err := b.f.seg.f.ReadAt(buf, b.f.off); err != nil {
		return nil, fmt.Errorf("fsys.Mem: reading back spilled content from %s: %w", b.f.seg.f.Name(), err)
	}
	return buf, nil
}

// openSpills counts the spill segments open in the process, across every
// Mem (a segment is closed when the collector finds it unreferenced, so
// they can pile up between collections); past maxOpenSpills a file stays
// in the heap, so that spilling never takes the descriptors the process
// needs for its own files (1024, under the smallest usual limit of 4096 a
// process).
var (
	openSpills    atomic.Int64
	maxOpenSpills atomic.Int64
)

func init() { maxOpenSpills.Store(1024) }

// spill writes data, then more, to the end of the current segment (a new
// one when there is none or it is full). It reports false, and the caller
// keeps the bytes in the heap, when the host refuses (no space, no temp
// dir) or the cap on open segments is reached: spilling saves memory and
// changes nothing else.
func spill(data, more []byte) (*spilled, bool) {
	segMu.Lock()
	defer segMu.Unlock()
	seg := curSeg
	if seg != nil && (seg.end >= segmentBytes || openSpills.Load() > maxOpenSpills.Load()) {
		seg, curSeg = nil, nil // full, or the cap was lowered: left to the collector
	}
	if seg == nil {
		var ok bool
		if seg, ok = newSegment(); !ok {
			return nil, false
		}
		curSeg = seg
	}
	sp := &spilled{seg: seg, off: seg.end}
	if !sp.appendLocked(data) || !sp.appendLocked(more) {
		curSeg = nil // what the host refused may have left half-written
		return nil, false
	}
	return sp, true
}

func newSegment() (*segment, bool) {
	if openSpills.Add(1) > maxOpenSpills.Load() {
		openSpills.Add(-1)
		return nil, false
	}
	f, err := os.CreateTemp("", "dedupsim-mem-*")
	if err != nil {
		openSpills.Add(-1)
		return nil, false
	}
	if os.Remove(f.Name()) != nil {
		f.Close()
		openSpills.Add(-1)
		return nil, false
	}
	seg := &segment{f: f}
	runtime.AddCleanup(seg, func(f *os.File) {
		f.Close()
		openSpills.Add(-1)
	}, f)
	return seg, true
}

// appendLocked appends p to sp, the last blob of its segment; segMu held.
func (sp *spilled) appendLocked(p []byte) bool {
	if len(p) == 0 {
		return true
	}
	if _, err := sp.seg.f.WriteAt(p, sp.off+int64(sp.n)); err != nil {
		return false
	}
	sp.n += len(p)
	sp.seg.end = sp.off + int64(sp.n)
	return true
}

// append appends p to sp, unsealed, if it is still the last blob of its
// segment and the host takes the bytes; false: the caller moves it.
func (sp *spilled) append(p []byte) bool {
	segMu.Lock()
	defer segMu.Unlock()
	if sp.off+int64(sp.n) != sp.seg.end {
		return false
	}
	return sp.appendLocked(p)
}

// SpillAbove makes every file that reaches n bytes (n > 0) leave the Go
// heap: the write that takes it to n bytes or more moves its content to a
// temporary host file, unlinked at once, later writes append to that file,
// and ReadFile reads it back; a file still in the heap at a Sync with n
// bytes or more moves then. A write after a Sync of a spilled file copies
// its content to a new spill file first, through the heap (the synced
// bytes are never written again; the engine writes a file once, then
// syncs it, so this is rare). What a Crash keeps
// and loses is the same as without spilling: the current content reverts
// to the synced one. n <= 0 turns spilling off for later writes. It is for
// a long simulation whose checkpoint would not fit the heap.
func (m *Mem) SpillAbove(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.spillAbove = max(n, 0)
}

// Spills reports whether large files leave the heap (SpillAbove > 0).
func (m *Mem) Spills() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.spillAbove > 0
}

var (
	errIsDir       = errors.New("is a directory")
	errNotDir      = errors.New("not a directory")
	errDirNotEmpty = errors.New("directory not empty")
	errCrashed     = errors.New("file handle invalidated by a crash")
)

// NewMem returns an empty in-memory FS holding only the root directory.
func NewMem() *Mem {
	return &Mem{dirs: map[string]*memDir{".": newMemDir()}}
}

func newMemDir() *memDir {
	return &memDir{
		files:   map[string]*memInode{},
		durable: map[string]*memInode{},
		subdirs: map[string]struct{}{},
	}
}

// cleanPath maps a slash path relative to the root to its canonical form:
// "." for the root, otherwise no leading slash and no "." or ".." elements
// (".." cannot climb above the root).
func cleanPath(name string) string {
	p := path.Clean("/" + name)
	if p == "/" {
		return "."
	}
	return p[1:]
}

// split returns the parent directory and the base name of a clean path.
func split(p string) (dir, base string) { return path.Dir(p), path.Base(p) }

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// lookupFile returns the directory holding clean path p and the file there.
func (m *Mem) lookupFile(p string) (*memDir, *memInode) {
	dir, base := split(p)
	d := m.dirs[dir]
	if d == nil {
		return nil, nil
	}
	return d, d.files[base]
}

// Create creates or truncates name. Its parent directory must exist.
func (m *Mem) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := cleanPath(name)
	if _, ok := m.dirs[p]; ok {
		return nil, pathErr("create", name, errIsDir)
	}
	d, ino := m.lookupFile(p)
	if d == nil {
		return nil, pathErr("create", name, fs.ErrNotExist)
	}
	if ino == nil {
		ino = &memInode{}
		d.files[path.Base(p)] = ino
	} else {
		ino.data = blob{} // truncation is not durable until the next Sync
	}
	return &memFile{m: m, ino: ino, epoch: m.epoch, name: name}, nil
}

// ReadFile returns a copy of the current content of name.
func (m *Mem) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := cleanPath(name)
	if _, ok := m.dirs[p]; ok {
		return nil, pathErr("read", name, errIsDir)
	}
	_, ino := m.lookupFile(p)
	if ino == nil {
		return nil, pathErr("open", name, fs.ErrNotExist)
	}
	if ino.data.f != nil {
		data, err := ino.data.read()
		if err != nil {
			return nil, pathErr("read", name, err)
		}
		return data, nil
	}
	return bytes.Clone(ino.data.b), nil
}

// Rename replaces newname with the file oldname. Only files can be renamed.
func (m *Mem) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rename(oldname, newname)
}

func (m *Mem) rename(oldname, newname string) error {
	op, np := cleanPath(oldname), cleanPath(newname)
	if _, ok := m.dirs[op]; ok {
		return &fs.PathError{Op: "rename", Path: oldname, Err: errors.New("renaming directories is not supported by fsys.Mem")}
	}
	od, ino := m.lookupFile(op)
	if ino == nil {
		return pathErr("rename", oldname, fs.ErrNotExist)
	}
	if _, ok := m.dirs[np]; ok {
		return pathErr("rename", newname, errIsDir)
	}
	nd, _ := m.lookupFile(np)
	if nd == nil {
		return pathErr("rename", newname, fs.ErrNotExist)
	}
	if op == np {
		return nil
	}
	delete(od.files, path.Base(op))
	nd.files[path.Base(np)] = ino
	return nil
}

// RenameNoReplace is Rename that fails with an error wrapping ErrExist,
// changing nothing, when newname exists.
func (m *Mem) RenameNoReplace(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := cleanPath(newname)
	_, isDir := m.dirs[p]
	_, ino := m.lookupFile(p)
	if isDir || ino != nil {
		return pathErr("rename", newname, ErrExist)
	}
	return m.rename(oldname, newname)
}

// Remove deletes a file or an empty directory; an absent name is not an
// error. Removing a file is durable after SyncDir of its directory;
// removing a directory is durable at once.
func (m *Mem) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := cleanPath(name)
	if d, ok := m.dirs[p]; ok {
		if p == "." {
			return pathErr("remove", name, errors.New("cannot remove the root"))
		}
		if len(d.files) > 0 || len(d.subdirs) > 0 {
			return pathErr("remove", name, errDirNotEmpty)
		}
		delete(m.dirs, p)
		parent, base := split(p)
		delete(m.dirs[parent].subdirs, base)
		return nil
	}
	d, ino := m.lookupFile(p)
	if ino != nil {
		delete(d.files, path.Base(p))
	}
	return nil
}

// MkdirAll creates dir and its missing parents.
func (m *Mem) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mkdirAll(cleanPath(dir), dir)
}

func (m *Mem) mkdirAll(p, name string) error {
	if _, ok := m.dirs[p]; ok {
		return nil
	}
	parent, base := split(p)
	if err := m.mkdirAll(parent, name); err != nil {
		return err
	}
	pd := m.dirs[parent]
	if _, isFile := pd.files[base]; isFile {
		return pathErr("mkdir", name, errNotDir)
	}
	m.dirs[p] = newMemDir()
	pd.subdirs[base] = struct{}{}
	return nil
}

// ReadDir lists the files and subdirectories of dir, sorted.
func (m *Mem) ReadDir(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := cleanPath(dir)
	d := m.dirs[p]
	if d == nil {
		if _, ino := m.lookupFile(p); ino != nil {
			return nil, pathErr("readdir", dir, errNotDir)
		}
		return nil, pathErr("open", dir, fs.ErrNotExist)
	}
	names := make([]string, 0, len(d.files)+len(d.subdirs))
	for n := range d.files {
		names = append(names, n)
	}
	for n := range d.subdirs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// SyncDir makes the current entries of dir durable.
func (m *Mem) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dirs[cleanPath(dir)]
	if d == nil {
		return pathErr("open", dir, fs.ErrNotExist)
	}
	clear(d.durable)
	for n, ino := range d.files {
		d.durable[n] = ino
	}
	return nil
}

// Exists reports whether name is a file or a directory.
func (m *Mem) Exists(name string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := cleanPath(name)
	if _, ok := m.dirs[p]; ok {
		return true, nil
	}
	_, ino := m.lookupFile(p)
	return ino != nil, nil
}

// Crash simulates a power cut followed by a reboot: everything that was not
// durable is lost (see the type comment) and files open before the crash
// fail on every further call.
func (m *Mem) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epoch++
	for _, d := range m.dirs {
		clear(d.files)
		for n, ino := range d.durable {
			d.files[n] = ino
			// An inode named twice is reset twice; that is harmless. The
			// bytes are shared; see memFile.Sync.
			ino.data = ino.synced
		}
	}
}

// Clone returns a deep copy: later changes to either FS, including a Crash,
// do not affect the other. Files open on m stay bound to m.
func (m *Mem) Clone() *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	inodes := map[*memInode]*memInode{}
	cp := func(ino *memInode) *memInode {
		if c, ok := inodes[ino]; ok {
			return c
		}
		// The copy shares a spill file, which neither writes again.
		if ino.data.f != nil {
			ino.data.f.sealed = true
		}
		c := &memInode{data: blob{b: bytes.Clone(ino.data.b), f: ino.data.f}, synced: blob{b: bytes.Clone(ino.synced.b), f: ino.synced.f}}
		inodes[ino] = c
		return c
	}
	c := &Mem{dirs: make(map[string]*memDir, len(m.dirs)), epoch: m.epoch, spillAbove: m.spillAbove}
	for p, d := range m.dirs {
		nd := newMemDir()
		for n, ino := range d.files {
			nd.files[n] = cp(ino)
		}
		for n, ino := range d.durable {
			nd.durable[n] = cp(ino)
		}
		for n := range d.subdirs {
			nd.subdirs[n] = struct{}{}
		}
		c.dirs[p] = nd
	}
	return c
}

// Files lists the paths of all current files (not directories), sorted.
func (m *Mem) Files() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for p, d := range m.dirs {
		for n := range d.files {
			if p == "." {
				out = append(out, n)
			} else {
				out = append(out, p+"/"+n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// memFile is a handle from Mem.Create. Writes append to the file's current
// content; a handle keeps writing to its file even after a rename or
// remove, as on POSIX.
type memFile struct {
	m      *Mem
	ino    *memInode
	epoch  uint64
	name   string
	closed bool
}

func (f *memFile) check(op string) error {
	if f.closed {
		return pathErr(op, f.name, fs.ErrClosed)
	}
	if f.epoch != f.m.epoch {
		return pathErr(op, f.name, errCrashed)
	}
	return nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("write"); err != nil {
		return 0, err
	}
	d := &f.ino.data
	if d.f != nil && !d.f.sealed {
		if d.f.append(p) {
			return len(p), nil
		}
		// Another blob was spilled after it (or the host refused): back
		// to the heap below, and to the end of a segment.
		d.f.sealed = true
	}
	if d.f != nil {
		// Written after a sync that spilled it: back to the heap, and to
		// the end of a segment below (rare: the engine writes a file once,
		// then syncs it).
		old, err := d.read()
		if err != nil {
			return 0, pathErr("write", f.name, err)
		}
		*d = blob{b: old[:len(old):len(old)]}
	}
	if f.m.spillAbove > 0 && len(d.b)+len(p) >= f.m.spillAbove {
		if sp, ok := spill(d.b, p); ok {
			*d = blob{f: sp}
			return len(p), nil
		}
	}
	d.b = append(d.b, p...)
	return len(p), nil
}

func (f *memFile) Sync() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("sync"); err != nil {
		return err
	}
	if f.ino.data.f == nil && f.m.spillAbove > 0 && len(f.ino.data.b) >= f.m.spillAbove {
		if sp, ok := spill(f.ino.data.b, nil); ok {
			f.ino.data = blob{f: sp}
		}
	}
	if f.ino.data.f != nil {
		f.ino.data.f.sealed = true
		f.ino.synced = f.ino.data
		return nil
	}
	// Share the bytes instead of copying: content is only ever appended
	// to, never changed in place, and the capacity limit makes the next
	// append to data reallocate rather than write past synced's end.
	n := len(f.ino.data.b)
	f.ino.synced = blob{b: f.ino.data.b[:n:n]}
	return nil
}

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	return nil
}

var (
	_ FS               = (*Mem)(nil)
	_ NoReplaceRenamer = (*Mem)(nil)
)

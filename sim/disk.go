package sim

import (
	"bytes"
	"errors"
	"path"
	"sort"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

// ErrInjected is the error of a filesystem operation the simulator failed
// on purpose: the driver process died at that operation.
var ErrInjected = errors.New("sim: injected crash: the driver died at this filesystem operation")

// disk is the simulated disk under the engine's checkpoint: fsys.Mem (which
// keeps unsynced data apart and drops it on Crash) behind a wrapper that
//   - counts operations and, when armed, fails the Nth one (or the Nth
//     fsync) and every one after it: the process died there;
//   - knows which paths hold something not yet durable, so that a power
//     loss can report what it lost;
//   - remembers the last write not yet fsynced, so that a power loss can
//     tear it: keep a prefix of it under its name.
//
// It is not safe for concurrent use (the simulator has no goroutines).
type disk struct {
	mem *fsys.Mem

	ops, syncs       int // operations (and file fsyncs) since reset
	failOp, failSync int // 1-based; 0: not armed
	dead             bool

	// touched are paths created, renamed or removed since their directory
	// was last synced; unsynced are files written since their last fsync.
	touched  map[string]struct{}
	unsynced map[string]struct{}
	last     *lastWrite
}

type lastWrite struct {
	name       string
	start, end int // byte range of the write in the file
}

// spillAbove is the size from which a synced checkpoint file leaves the Go
// heap for a temporary host file (fsys.Mem.SpillAbove): a long run's state
// snapshots and deltas are read back only on a restart, so they need not
// be held in memory; small files (offsets, commits, metadata) stay.
const spillAbove = 64 << 10

func newDisk() *disk {
	m := fsys.NewMem()
	m.SpillAbove(spillAbove)
	return &disk{mem: m, touched: map[string]struct{}{}, unsynced: map[string]struct{}{}}
}

// reset starts counting a new batch and disarms.
func (d *disk) reset() { d.ops, d.syncs, d.failOp, d.failSync = 0, 0, 0, 0 }

// op counts one operation and reports whether it must fail.
func (d *disk) op(isSync bool) error {
	if d.dead {
		return ErrInjected
	}
	d.ops++
	if isSync {
		d.syncs++
	}
	if (d.failOp > 0 && d.ops == d.failOp) || (isSync && d.failSync > 0 && d.syncs == d.failSync) {
		d.dead = true
		return ErrInjected
	}
	return nil
}

func clean(name string) string {
	p := path.Clean("/" + name)
	if p == "/" {
		return "."
	}
	return p[1:]
}

func (d *disk) Create(name string) (fsys.File, error) {
	if err := d.op(false); err != nil {
		return nil, err
	}
	f, err := d.mem.Create(name)
	if err != nil {
		return nil, err
	}
	d.touched[clean(name)] = struct{}{}
	return &diskFile{d: d, f: f, name: clean(name)}, nil
}

func (d *disk) ReadFile(name string) ([]byte, error) {
	if err := d.op(false); err != nil {
		return nil, err
	}
	return d.mem.ReadFile(name)
}

func (d *disk) Rename(oldname, newname string) error {
	if err := d.op(false); err != nil {
		return err
	}
	if err := d.mem.Rename(oldname, newname); err != nil {
		return err
	}
	o, n := clean(oldname), clean(newname)
	d.touched[o], d.touched[n] = struct{}{}, struct{}{}
	if _, ok := d.unsynced[o]; ok {
		delete(d.unsynced, o)
		d.unsynced[n] = struct{}{}
	}
	return nil
}

func (d *disk) Remove(name string) error {
	if err := d.op(false); err != nil {
		return err
	}
	if err := d.mem.Remove(name); err != nil {
		return err
	}
	d.touched[clean(name)] = struct{}{}
	return nil
}

func (d *disk) MkdirAll(dir string) error {
	if err := d.op(false); err != nil {
		return err
	}
	return d.mem.MkdirAll(dir)
}

func (d *disk) ReadDir(dir string) ([]string, error) {
	if err := d.op(false); err != nil {
		return nil, err
	}
	return d.mem.ReadDir(dir)
}

func (d *disk) SyncDir(dir string) error {
	if err := d.op(false); err != nil {
		return err
	}
	if err := d.mem.SyncDir(dir); err != nil {
		return err
	}
	dc := clean(dir)
	for p := range d.touched {
		if _, dirty := d.unsynced[p]; !dirty && path.Dir(p) == dc {
			delete(d.touched, p)
		}
	}
	return nil
}

func (d *disk) Exists(name string) (bool, error) {
	if err := d.op(false); err != nil {
		return false, err
	}
	return d.mem.Exists(name)
}

type diskFile struct {
	d       *disk
	f       fsys.File
	name    string
	written int
}

func (f *diskFile) Write(p []byte) (int, error) {
	if err := f.d.op(false); err != nil {
		return 0, err
	}
	n, err := f.f.Write(p)
	if n > 0 {
		f.d.unsynced[f.name] = struct{}{}
		f.d.last = &lastWrite{name: f.name, start: f.written, end: f.written + n}
		f.written += n
	}
	return n, err
}

func (f *diskFile) Sync() error {
	if err := f.d.op(true); err != nil {
		return err
	}
	if err := f.f.Sync(); err != nil {
		return err
	}
	delete(f.d.unsynced, f.name)
	if f.d.last != nil && f.d.last.name == f.name {
		f.d.last = nil
	}
	return nil
}

func (f *diskFile) Close() error {
	if err := f.d.op(false); err != nil {
		return err
	}
	return f.f.Close()
}

// fileState is a path's content, or absence, for before/after comparison.
type fileState struct {
	exists bool
	data   []byte
}

func (d *disk) candidates() []string {
	set := map[string]struct{}{}
	for p := range d.touched {
		set[p] = struct{}{}
	}
	for p := range d.unsynced {
		set[p] = struct{}{}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func (d *disk) state(p string) fileState {
	data, err := d.mem.ReadFile(p)
	if err != nil {
		return fileState{}
	}
	return fileState{exists: true, data: data}
}

// powerLoss cuts the power: everything not durable is lost (fsys.Mem.Crash).
// When tear is set and a write was not yet synced, a prefix of it survives
// under its name: keep (0 <= keep < write length) bytes of the write, after
// whatever the file held before it. It returns the paths whose content or
// existence the crash changed, sorted, and the torn path ("" for none).
func (d *disk) powerLoss(tear bool, keep func(n int) int) (lost []string, torn string) {
	cands := d.candidates()
	before := make([]fileState, len(cands))
	for i, p := range cands {
		before[i] = d.state(p)
	}
	var tornData []byte
	if tear && d.last != nil {
		if data, err := d.mem.ReadFile(d.last.name); err == nil && d.last.end <= len(data) {
			n := d.last.end - d.last.start
			tornData = data[:d.last.start+keep(n)]
			torn = d.last.name
		}
	}
	d.mem.Crash()
	for i, p := range cands {
		after := d.state(p)
		if after.exists != before[i].exists || !bytes.Equal(after.data, before[i].data) {
			lost = append(lost, p)
		}
	}
	if torn != "" {
		d.writeDurably(torn, tornData)
	}
	d.clearTracking()
	return lost, torn
}

// processDeath is a crash that leaves the page cache alone: what is not
// durable stays so (and a later power loss can still lose it).
func (d *disk) processDeath() {
	d.dead = false
	d.reset()
}

func (d *disk) clearTracking() {
	clear(d.touched)
	clear(d.unsynced)
	d.last = nil
	d.dead = false
	d.reset()
}

// writeDurably puts data at name as a durable file, bypassing the counters
// (it is the disk's doing, not the engine's).
func (d *disk) writeDurably(name string, data []byte) {
	dir := path.Dir(name)
	must(d.mem.MkdirAll(dir))
	f, err := d.mem.Create(name)
	must(err)
	_, err = f.Write(data)
	must(err)
	must(f.Sync())
	must(f.Close())
	must(d.mem.SyncDir(dir))
}

func must(err error) {
	if err != nil {
		panic("sim: simulated disk: " + err.Error())
	}
}

var _ fsys.FS = (*disk)(nil)

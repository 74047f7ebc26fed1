package pebblestore

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dedupsim/dedupsim/engine/fsys"
)

// Issue 10 item 18: the working folders of providers that died without
// Close (SIGKILL) are removed by the next provider; live ones, and young
// folders without a lock file, are left alone.
func TestWorkDirSweep(t *testing.T) {
	parent := t.TempDir()
	mk := func(name string, lockFile bool) string {
		d := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(d, "1"), 0o755); err != nil {
			t.Fatal(err)
		}
		if lockFile {
			if err := os.WriteFile(filepath.Join(d, workLockName), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	dead := mk(workPrefix+"dead", true)
	live := mk(workPrefix+"live", true)
	young := mk(workPrefix+"young", false)
	old := mk(workPrefix+"old", false)
	other := mk("someone-else", false)
	past := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	// A live owner: another open file description holding the flock.
	h, err := os.Open(filepath.Join(live, workLockName))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := syscall.Flock(int(h.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	p, err := New(fsys.NewMem(), Options{WorkDir: parent})
	if err != nil {
		t.Fatal(err)
	}
	exists := func(d string) bool { _, err := os.Stat(d); return err == nil }
	for d, want := range map[string]bool{dead: false, live: true, young: true, old: false, other: true, p.workRoot: true} {
		if exists(d) != want {
			t.Errorf("%s exists = %v, want %v", filepath.Base(d), !want, want)
		}
	}
	// The new provider's own folder is locked: a second provider keeps it.
	root := p.workRoot
	q, err := New(fsys.NewMem(), Options{WorkDir: parent})
	if err != nil {
		t.Fatal(err)
	}
	if !exists(root) {
		t.Fatal("a second provider removed the first one's live folder")
	}
	// Close removes the folder; a provider that never closes (its process
	// killed) leaves it locked until the process ends, simulated here by
	// dropping the lock.
	if err := p.Close(); err != nil || exists(root) {
		t.Fatalf("Close: %v, folder left: %v", err, exists(root))
	}
	qroot := q.workRoot
	q.workLock.Close() // the "process" died: the kernel dropped its lock
	if _, err := New(fsys.NewMem(), Options{WorkDir: parent}); err != nil {
		t.Fatal(err)
	}
	if exists(qroot) {
		t.Fatal("a dead provider's folder survived the next start")
	}
}

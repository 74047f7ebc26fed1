package pebblestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Working folders on the local disk. Each provider with a WorkDir keeps
// its databases in a folder WorkDir/dedupsim-pebble-* of its own, holding
// an flock on the folder's lock file for its whole life; the kernel drops
// the lock when the process dies, however it dies. A provider starting up
// removes every such folder whose lock it can take: its owner is gone (a
// run killed with SIGKILL cannot remove its folder). A folder with no lock
// file, left by a dedupsim from before these locks or by a kill between
// creating the folder and locking it, is removed once it is a day old.
//
// The creation of a folder and its lock and the sweep both run under an
// flock on WorkDir itself (a directory can be flocked: no extra file), so
// a sweep never sees a folder that is being created.

const (
	workPrefix     = "dedupsim-pebble-"
	workLockName   = "dedupsim.lock"
	lockFreeMaxAge = 24 * time.Hour
)

// claimWorkRoot sweeps the dead providers' folders under parent and
// creates a locked folder for this provider. The returned file holds the
// lock; closing it releases the folder.
func claimWorkRoot(parent string) (root string, lock *os.File, err error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", nil, err
	}
	sweep, err := os.Open(parent)
	if err != nil {
		return "", nil, err
	}
	defer sweep.Close()
	if err := syscall.Flock(int(sweep.Fd()), syscall.LOCK_EX); err != nil {
		return "", nil, fmt.Errorf("lock %s: %w", sweep.Name(), err)
	}
	defer syscall.Flock(int(sweep.Fd()), syscall.LOCK_UN)

	sweepDead(parent)

	dir, err := os.MkdirTemp(parent, workPrefix)
	if err != nil {
		return "", nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, workLockName), os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return dir, f, nil
}

// sweepDead removes the working folders under parent that no live
// process holds. Failures (another user's folder) are ignored: the folder
// stays, as it would have without the sweep.
func sweepDead(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, workPrefix+"*"))
	for _, d := range dirs {
		st, err := os.Lstat(d)
		if err != nil || !st.IsDir() {
			continue
		}
		f, err := os.Open(filepath.Join(d, workLockName))
		if errors.Is(err, os.ErrNotExist) {
			if time.Since(st.ModTime()) > lockFreeMaxAge {
				os.RemoveAll(d)
			}
			continue
		}
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(d) // its owner is gone
		}
		f.Close()
	}
}

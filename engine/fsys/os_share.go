package fsys

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// TempName is ".<base>.<random>.tmp" next to name, as Spark's
// CheckpointFileManager names its temp files (".<name>.<uuid>.tmp"): two
// processes writing the same file never share a temp file.
func (o *OS) TempName(name string) string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	return path.Join(path.Dir(name), "."+path.Base(name)+"."+hex.EncodeToString(b[:])+".tmp")
}

// RenameNoReplace moves oldname to newname unless newname exists: a hard
// link, which fails with EEXIST on a taken name, then the removal of
// oldname. Where hard links are not supported it falls back to a check
// and a rename, which is atomic only against writers that hold the
// checkpoint's lock.
func (o *OS) RenameNoReplace(oldname, newname string) error {
	err := os.Link(o.p(oldname), o.p(newname))
	switch {
	case err == nil:
		return os.Remove(o.p(oldname))
	case errors.Is(err, os.ErrExist):
		return &os.PathError{Op: "rename", Path: newname, Err: ErrExist}
	}
	var le *os.LinkError
	if errors.As(err, &le) && (errors.Is(le.Err, syscall.EPERM) || errors.Is(le.Err, syscall.ENOTSUP) || errors.Is(le.Err, syscall.EOPNOTSUPP) || errors.Is(le.Err, syscall.EXDEV)) {
		if ok, err := o.Exists(newname); err != nil {
			return err
		} else if ok {
			return &os.PathError{Op: "rename", Path: newname, Err: ErrExist}
		}
		return os.Rename(o.p(oldname), o.p(newname))
	}
	return err
}

// Lock takes an exclusive flock(2) on the file name (created if absent)
// and writes the holder's process id into it, for the message another
// process gets. The kernel releases the lock when the process ends, even
// by SIGKILL, so a lock is never left behind by a dead process; the file
// itself stays and means nothing when unlocked.
func (o *OS) Lock(name string) (func() error, error) {
	p := o.p(name)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := ""
			if b, rerr := os.ReadFile(p); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
					holder = fmt.Sprintf(" (pid %d)", pid)
				}
			}
			return nil, fmt.Errorf("%s%s: %w", name, holder, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	// The pid is informative only: write it in place, no rename (the lock
	// is on this inode).
	// One fixed-width write replaces the last holder's pid at once, so a
	// reader sees the old pid or the new one, never an empty file.
	f.WriteAt([]byte(fmt.Sprintf("%-19d\n", os.Getpid())), 0)
	return func() error {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return f.Close()
	}, nil
}

var (
	_ TempNamer        = (*OS)(nil)
	_ NoReplaceRenamer = (*OS)(nil)
	_ Locker           = (*OS)(nil)
)

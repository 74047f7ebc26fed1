// Package fsys is the filesystem seam of the engine. Every byte the engine
// persists (checkpoint logs, state files) goes through FS, so that the
// simulator can substitute a disk that loses unsynced writes or tears the
// last one, while production uses the operating system.
package fsys

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
)

// ErrNotExist is returned (possibly wrapped) when a file or directory is absent.
var ErrNotExist = fs.ErrNotExist

// ErrExist is returned (wrapped) by WriteNew when the name is taken.
var ErrExist = fs.ErrExist

// ErrLocked is returned (wrapped) by Locker.Lock when another process
// holds the lock.
var ErrLocked = errors.New("locked by another process")

// File is a file open for writing.
type File interface {
	Write(p []byte) (int, error)
	// Sync makes what was written so far durable.
	Sync() error
	Close() error
}

// FS is the small set of operations the engine needs. Paths use forward
// slashes and are interpreted relative to the FS root.
type FS interface {
	// Create creates or truncates name for writing.
	Create(name string) (File, error)
	// ReadFile returns the whole content of name.
	ReadFile(name string) ([]byte, error)
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// Remove deletes a file; removing an absent file is not an error.
	Remove(name string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string) error
	// ReadDir lists the names in dir, sorted; an absent dir yields ErrNotExist.
	ReadDir(dir string) ([]string, error)
	// SyncDir makes the directory entries of dir (creations, renames) durable.
	SyncDir(dir string) error
	// Exists reports whether name exists.
	Exists(name string) (bool, error)
}

// Optional capabilities. A filesystem that several processes may share
// (the real disk, fsys.OS) implements them; fsys.Mem under the simulator,
// which has one writer by construction, need not, and the helpers below
// then fall back to the plain operations, so that the simulator's
// sequence of filesystem operations (over which it draws its faults) does
// not depend on them.
type (
	// TempNamer gives every temporary file a name no other writer uses,
	// so that two processes writing the same file cannot interleave
	// their bytes in one temp file.
	TempNamer interface {
		TempName(name string) string
	}
	// NoReplaceRenamer renames oldname to newname only if newname does
	// not exist, atomically; otherwise it fails with an error wrapping
	// ErrExist and changes nothing.
	NoReplaceRenamer interface {
		RenameNoReplace(oldname, newname string) error
	}
	// Locker takes an exclusive lock named name, held until release is
	// called or the process ends (however it ends: the kernel drops it).
	// A lock held by someone else fails at once with an error wrapping
	// ErrLocked.
	Locker interface {
		Lock(name string) (release func() error, err error)
	}
)

// tempName is where WriteAtomic stages name: ".<base>.tmp", or a unique
// name when the filesystem gives one.
func tempName(fsys FS, name string) string {
	if t, ok := fsys.(TempNamer); ok {
		return t.TempName(name)
	}
	return path.Join(path.Dir(name), "."+path.Base(name)+".tmp")
}

// WriteAtomic writes data to name so that a reader (or a restart after a
// crash) sees either the old content or the whole new content, never a
// prefix: temp file, fsync, rename, fsync of the directory.
func WriteAtomic(fsys FS, name string, data []byte) error {
	return write(fsys, name, data, false)
}

// WriteNew is WriteAtomic for a file that must not exist yet: when name
// exists, it fails with an error wrapping ErrExist and leaves name alone.
// The check and the rename are one atomic step on a filesystem that
// implements NoReplaceRenamer; on any other (a single-writer one such as
// the simulator's) it is a plain WriteAtomic.
func WriteNew(fsys FS, name string, data []byte) error {
	return write(fsys, name, data, true)
}

func write(fsys FS, name string, data []byte, noReplace bool) error {
	dir := path.Dir(name)
	if err := fsys.MkdirAll(dir); err != nil {
		return err
	}
	tmp := tempName(fsys, name)
	f, err := fsys.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if nr, ok := fsys.(NoReplaceRenamer); ok && noReplace {
		if err := nr.RenameNoReplace(tmp, name); err != nil {
			fsys.Remove(tmp)
			return err
		}
	} else if err := fsys.Rename(tmp, name); err != nil {
		return err
	}
	return fsys.SyncDir(dir)
}

// IsNotExist reports whether err says a file is absent.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

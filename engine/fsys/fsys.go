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

// WriteAtomic writes data to name so that a reader (or a restart after a
// crash) sees either the old content or the whole new content, never a
// prefix: temp file, fsync, rename, fsync of the directory.
func WriteAtomic(fsys FS, name string, data []byte) error {
	dir := path.Dir(name)
	if err := fsys.MkdirAll(dir); err != nil {
		return err
	}
	tmp := path.Join(dir, "."+path.Base(name)+".tmp")
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
	if err := fsys.Rename(tmp, name); err != nil {
		return err
	}
	return fsys.SyncDir(dir)
}

// IsNotExist reports whether err says a file is absent.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

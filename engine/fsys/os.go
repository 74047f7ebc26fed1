package fsys

import (
	"os"
	"path/filepath"
	"sort"
)

// OS is an FS rooted at a directory of the real filesystem.
type OS struct {
	Root string
	// Scratch skips every fsync (File.Sync, SyncDir, MkdirAll's): for a
	// folder the process removes before it ends (exec's temporary
	// checkpoint), which no restart ever reads, so what a crash or a power
	// cut would leave of it does not matter. Writes, renames and their
	// order are the same.
	Scratch bool
}

// NewOS returns an FS rooted at dir.
func NewOS(dir string) *OS { return &OS{Root: dir} }

// NewScratchOS returns an FS rooted at dir that never fsyncs (OS.Scratch).
func NewScratchOS(dir string) *OS { return &OS{Root: dir, Scratch: true} }

// scratchFile is a file of a Scratch OS: Sync does nothing.
type scratchFile struct{ *os.File }

func (scratchFile) Sync() error { return nil }

func (o *OS) p(name string) string { return filepath.Join(o.Root, filepath.FromSlash(name)) }

func (o *OS) Create(name string) (File, error) {
	f, err := os.Create(o.p(name))
	if err != nil {
		// Return an untyped nil: a nil *os.File inside a File interface
		// would compare non-nil.
		return nil, err
	}
	if o.Scratch {
		return scratchFile{f}, nil
	}
	return f, nil
}

func (o *OS) ReadFile(name string) ([]byte, error) { return os.ReadFile(o.p(name)) }

func (o *OS) Rename(oldname, newname string) error { return os.Rename(o.p(oldname), o.p(newname)) }

func (o *OS) Remove(name string) error {
	err := os.Remove(o.p(name))
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

// MkdirAll creates dir and its missing parents, and fsyncs the parent of
// every directory it created, so that a new state/<op>/<partition> folder
// survives a power cut along with the first file written into it.
func (o *OS) MkdirAll(dir string) error {
	full := o.p(dir)
	var created []string
	for d := full; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !os.IsNotExist(err) {
			return err
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(created) == 0 {
		return nil
	}
	if err := os.MkdirAll(full, 0o755); err != nil {
		return err
	}
	if o.Scratch {
		return nil
	}
	for _, d := range created {
		if err := syncPath(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

func syncPath(p string) error {
	d, err := os.Open(p)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (o *OS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(o.p(dir))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

func (o *OS) SyncDir(dir string) error {
	if o.Scratch {
		_, err := os.Stat(o.p(dir)) // an absent dir is still an error
		return err
	}
	return syncPath(o.p(dir))
}

func (o *OS) Exists(name string) (bool, error) {
	_, err := os.Stat(o.p(name))
	if err == nil {
		return true, nil
	}
	if os.IsNotExist(err) {
		return false, nil
	}
	return false, err
}

package fsys

import (
	"os"
	"path/filepath"
	"sort"
)

// OS is an FS rooted at a directory of the real filesystem.
type OS struct{ Root string }

// NewOS returns an FS rooted at dir.
func NewOS(dir string) *OS { return &OS{Root: dir} }

func (o *OS) p(name string) string { return filepath.Join(o.Root, filepath.FromSlash(name)) }

func (o *OS) Create(name string) (File, error) {
	f, err := os.Create(o.p(name))
	if err != nil {
		// Return an untyped nil: a nil *os.File inside a File interface
		// would compare non-nil.
		return nil, err
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

func (o *OS) MkdirAll(dir string) error { return os.MkdirAll(o.p(dir), 0o755) }

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
	d, err := os.Open(o.p(dir))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
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

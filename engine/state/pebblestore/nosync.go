package pebblestore

import "github.com/cockroachdb/pebble/v2/vfs"

// noSyncFS is the local disk with every sync a no-op, for the working
// databases: they are disposable (the changelogs and snapshots written
// through fsys.FS are what is durable; a database is rebuilt from them
// after a crash, and its folder swept, workdir.go), so nothing needs to
// reach the platter. Pebble syncs every sstable it writes, the directory
// of every file it links or renames and the manifest at every edit: with
// a layout by expiry a commit ingests a table per bucket, and those
// fsyncs were most of an on-disk run's wall time.
type noSyncFS struct{ vfs.FS }

func (fs noSyncFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return noSync(fs.FS.Create(name, category))
}

func (fs noSyncFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return noSync(fs.FS.Open(name, opts...))
}

func (fs noSyncFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return noSync(fs.FS.OpenReadWrite(name, category, opts...))
}

func (fs noSyncFS) OpenDir(name string) (vfs.File, error) { return noSync(fs.FS.OpenDir(name)) }

func (fs noSyncFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return noSync(fs.FS.ReuseForWrite(oldname, newname, category))
}

// Unwrap implements vfs.FS.
func (fs noSyncFS) Unwrap() vfs.FS { return fs.FS }

func noSync(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

// noSyncFile is a file whose syncs do nothing.
type noSyncFile struct{ vfs.File }

func (noSyncFile) Sync() error                    { return nil }
func (noSyncFile) SyncData() error                { return nil }
func (noSyncFile) SyncTo(int64) (bool, error)     { return true, nil }
func (noSyncFile) Preallocate(int64, int64) error { return nil }

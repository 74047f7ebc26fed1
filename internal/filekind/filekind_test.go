package filekind

import (
	"io/fs"
	"testing"
)

func TestName(t *testing.T) {
	for _, tc := range []struct {
		m    fs.FileMode
		want string
	}{
		{fs.ModeNamedPipe | 0o644, "a named pipe"},
		{fs.ModeDevice | fs.ModeCharDevice | 0o666, "a character device"},
		{fs.ModeDevice | 0o660, "a block device"},
		{fs.ModeSocket | 0o755, "a socket"},
		{fs.ModeDir | 0o755, "a folder"},
		{fs.ModeSymlink | 0o777, "a symbolic link"},
		{fs.ModeIrregular, "mode ?---------"},
	} {
		if got := Name(tc.m); got != tc.want {
			t.Errorf("Name(%v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}

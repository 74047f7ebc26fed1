// Package filekind names, for an error message, the kind of a file that
// is not a regular one: the verbs that read user files (diagnose's logs,
// inspect's checkpoint files, run's scenario folders) refuse named pipes,
// devices and sockets rather than block on or read from them, and say
// which it was in the same words.
package filekind

import "io/fs"

// Name names m's kind: "a named pipe", "a character device", "a block
// device", "a socket", "a folder", "a symbolic link", or the mode bits
// for anything else.
func Name(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a folder"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "mode " + m.String()
}
